//! The header of the table column a number sits in. A contacts export
//! names its phone column once, in its first line (`id,name,phone`), not
//! beside each number, so a cell of that column has its phone word there,
//! out of reach of the words looked for before the number.
//!
//! Only a table that starts the text is read (a CSV body or upload): its
//! first line is the header, its cells split by the delimiter before the
//! number's cell (`,`, `;` or a tab), quotes honoured. The header cell must
//! be a phone word whole (`phone`, `Mobile`, `tel`, `telefono`, `전화`,
//! `phone_number`, ...): a header that merely holds one (`contact_id`,
//! `phone_ext`, `hotel`) names another column.

use crate::chars::before;

/// How far back the line's start and forward the header's end are looked
/// for: a row or header longer than this is not read as a table's.
const MAX_LINE: usize = 1024;

/// Header cells that name a phone column, lower case, `_` and `-` read as
/// spaces.
const HEADERS: &[&str] = &[
    "phone",
    "phone number",
    "phone no",
    "phonenumber",
    "telephone",
    "tel",
    "tel.",
    "mobile",
    "mobile phone",
    "mobile number",
    "cell",
    "cellphone",
    "cell phone",
    "contact",
    "contact number",
    "fax",
    "whatsapp",
    "msisdn",
    "gsm",
    "handphone",
    "telefon",
    "telefonnummer",
    "handy",
    "mobil",
    "mobilnummer",
    "telefono",
    "tel\u{e9}fono",
    "telefone",
    "celular",
    "m\u{f3}vil",
    "movil",
    "cellulare",
    "t\u{e9}l\u{e9}phone",
    "telefoon",
    "telefoonnummer",
    "puhelin",
    "tlf",
    "\u{442}\u{435}\u{43b}\u{435}\u{444}\u{43e}\u{43d}",
    "\u{647}\u{627}\u{62a}\u{641}",
    "\u{62c}\u{648}\u{627}\u{644}",
    "\u{5d8}\u{5dc}\u{5e4}\u{5d5}\u{5df}",
    "\u{c804}\u{d654}",
    "\u{c804}\u{d654}\u{bc88}\u{d638}",
    "\u{96fb}\u{8a71}",
    "\u{96fb}\u{8a71}\u{756a}\u{53f7}",
    "\u{7535}\u{8bdd}",
    "\u{624b}\u{673a}",
    "\u{624b}\u{6a5f}",
    "\u{643a}\u{5e2f}",
];

/// Whether the number starting at `start` is a cell of a table that
/// starts the text and whose header names the cell's column as a phone's.
pub(super) fn phone_column(text: &[u8], start: usize) -> bool {
    // The cell's start: the number, or the quote that opens it.
    let cell = if before(text, start) == b'"' {
        start - 1
    } else {
        start
    };
    let Some(line) = line_start(text, cell) else {
        return false;
    };
    if line == 0 {
        return false;
    }
    let header = &text[..line.min(MAX_LINE)];
    let Some(header_end) = memchr::memchr(b'\n', header) else {
        return false;
    };
    let header = &header[..header_end];
    let delim = match before(text, cell) {
        b',' | b';' | b'\t' => before(text, cell),
        b'\n' => match header.iter().find(|b| matches!(b, b',' | b';' | b'\t')) {
            Some(&d) => d,
            None => return false,
        },
        _ => return false,
    };
    let column = cells(&text[line..cell], delim).count() - 1;
    cells(header, delim).nth(column).is_some_and(names_phone)
}

/// The start of the line holding `at`, if within [`MAX_LINE`].
fn line_start(text: &[u8], at: usize) -> Option<usize> {
    let from = at.saturating_sub(MAX_LINE);
    match memchr::memrchr(b'\n', &text[from..at]) {
        Some(i) => Some(from + i + 1),
        None => (from == 0).then_some(0),
    }
}

/// The cells of a line, split at `delim` outside double quotes.
fn cells(line: &[u8], delim: u8) -> impl Iterator<Item = &[u8]> {
    let mut quoted = false;
    line.split(move |&b| {
        if b == b'"' {
            quoted = !quoted;
        }
        b == delim && !quoted
    })
}

/// Whether a header cell is a phone word whole.
fn names_phone(cell: &[u8]) -> bool {
    let mut cell = cell.trim_ascii();
    if let [b'"', inner @ .., b'"'] = cell {
        cell = inner.trim_ascii();
    }
    if cell.is_empty() || cell.len() > 32 {
        return false;
    }
    let mut name = [0u8; 32];
    for (slot, &b) in name.iter_mut().zip(cell) {
        *slot = match b.to_ascii_lowercase() {
            b'_' | b'-' => b' ',
            other => other,
        };
    }
    let name = &name[..cell.len()];
    HEADERS.iter().any(|h| h.as_bytes() == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether the first occurrence of `number` in `text` is in a phone
    /// column.
    fn in_phone_column(text: &str, number: &str) -> bool {
        phone_column(text.as_bytes(), text.find(number).expect(number))
    }

    #[test]
    fn headers_that_name_the_column() {
        for (text, number, want) in [
            ("id,name,phone\r\n1,Ana,612345678\r\n", "612345678", true),
            (
                "id;nombre;Tel\u{e9}fono\n1;Ana;612345678\n",
                "612345678",
                true,
            ),
            ("phone,name\n612345678,Ana\n", "612345678", true),
            ("id\tphone_number\n1\t91234567\n", "91234567", true),
            ("id,\"Mobile\"\n1,\"9123 4567\"\n", "9123 4567", true),
            (
                "\u{c774}\u{b984},\u{c804}\u{d654}\n\u{ae40},01012345678\n",
                "01012345678",
                true,
            ),
            // A quoted cell with the delimiter inside keeps the count.
            ("note,phone\n\"a, b\",91234567\n", "91234567", true),
            // Another column, or a header that merely holds the word.
            ("id,phone\n91234567,x\n", "91234567", false),
            ("contact_id,name\n91234567,x\n", "91234567", false),
            ("phone_ext,name\n91234567,x\n", "91234567", false),
            ("hotel,name\n91234567,x\n", "91234567", false),
            // The header line itself, no table, or a table not at the start.
            ("phone,91234567\n", "91234567", false),
            ("call me at\n91234567\n", "91234567", false),
            ("report\nid,phone\n1,91234567\n", "91234567", false),
            // More cells than the header has.
            ("phone\n1,91234567\n", "91234567", false),
        ] {
            assert_eq!(in_phone_column(text, number), want, "{text:?}");
        }
    }
}
