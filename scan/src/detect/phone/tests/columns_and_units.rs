//! The shapes that need a phone word, found in a phone column of a table
//! as after the word; the seven-digit and Latvian shapes; and the series
//! and units of tool output that the spaced layouts must leave.

use super::{at_digit, found_as, none_found};

/// The first phone number in `text`, from any digit run (a table's rows
/// start with other numbers).
fn find_any(text: &str) -> Option<&str> {
    let bytes = text.as_bytes();
    (0..bytes.len())
        .filter(|&i| bytes[i].is_ascii_digit() && (i == 0 || !bytes[i - 1].is_ascii_digit()))
        .find_map(|i| at_digit(bytes, i))
        .map(|(s, e)| &text[s..e])
}

#[test]
fn a_phone_column_names_its_cells() {
    for (text, want) in [
        ("id,name,phone\r\n1,Ana,612345678\r\n", Some("612345678")),
        (
            "id;nombre;tel\u{e9}fono\n7;Ana;0966457787\n",
            Some("0966457787"),
        ),
        ("id,phone\n1,6714 6233\n", Some("6714 6233")),
        ("name,Mobile\nLars,35 02 31 84\n", Some("35 02 31 84")),
        (
            "name,\u{c804}\u{d654}\n\u{ae40},01049353593\n",
            Some("01049353593"),
        ),
        ("id,phone\n1,\"534 5270\"\n", Some("534 5270")),
        // Another column of the same table, or a header that only holds
        // the word.
        (
            "id,phone,note\n1,x,a note that leaves the header's words behind\n61234567,x,y\n",
            None,
        ),
        (
            "phone_id,size\n1,a row that leaves the header's words behind\n2048 4096,x\n",
            None,
        ),
        (
            "contact_id,name\n1,a row that leaves the header's words behind\n612345678,x\n",
            None,
        ),
        // The column's number still refuses the other kinds' signs.
        ("id,phone\n1,2019 2020\n", None),
        ("id,phone\n1,612 345 678 euros\n", None),
    ] {
        assert_eq!(find_any(text), want, "{text:?}");
    }
}

#[test]
fn seven_digits_and_latvia_after_a_phone_word() {
    found_as(&[
        ("S\u{ed}mi: 534 5270", None), // Icelandic, no word it knows
        ("phone: 534 5270", Some("534 5270")),
        ("Tel. 428-8547", Some("428-8547")),
        ("mobile 20 527 830", Some("20 527 830")),
        ("call 25 445 347", Some("25 445 347")),
    ]);
    none_found(
        "seven and eight digits",
        &[
            "534 5270",       // without a phone word
            "20 527 830",     // without a phone word
            "phone 123 4567", // no number from 1
            "phone 500 0000", // round
            "contact 20 000 000",
            "call 25 445 000",
            "phone 128 4096 MB",
        ],
    );
}

#[test]
fn series_and_units_of_tool_output() {
    none_found(
        "series and units",
        &[
            "256 512 768",
            "sizes: 300 400 500",
            "555 555 555",
            "latency 345 678 912 ms",
            "took 612 345 678 us",
            "612 345 678 px",
            "912 345 678 MB",
            "812 345 678 rpm",
            "700 123 456 fps",
            "phone 9123 4567 MB",
        ],
    );
    // A unit only whole: a word that starts like one is not a unit.
    found_as(&[
        ("612 345 678 msg me", Some("612 345 678")),
        ("Tel. 612 345 678 sms", Some("612 345 678")),
    ]);
}
