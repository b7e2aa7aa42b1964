//! The table tests of the phone module: what it finds, and the numbers
//! of other kinds it leaves.

use super::*;

mod asia;
mod columns_and_units;
mod elsewhere;
mod europe;
mod more_words;

fn find(text: &str) -> Option<&str> {
    crate::detect::first_digit_find(text, at_digit)
}

/// Asserts that each of a country's numbers is found whole, alone and in
/// a sentence with no phone word.
fn found_whole(country: &str, numbers: &[&str]) {
    for number in numbers {
        for text in [number.to_string(), format!("Ligue {number}, por favor.")] {
            assert_eq!(find(&text), Some(*number), "{country}: {text}");
        }
    }
}

/// Asserts that each text is found as written in `found` (`Some` the
/// number, after a phone word) or not at all (`None`).
fn found_as(cases: &[(&str, Option<&str>)]) {
    for (text, want) in cases {
        assert_eq!(find(text), *want, "{text}");
    }
}

/// Asserts that none of the texts, numbers of other kinds, holds a phone
/// number.
fn none_found(what: &str, texts: &[&str]) {
    for text in texts {
        assert_eq!(find(text), None, "{what}: {text}");
    }
}

#[test]
fn positives() {
    for (text, want) in [
        ("Call me on (240) 472-8872 after", "(240) 472-8872"),
        ("(240)472-8872", "(240)472-8872"),
        ("849-997-6509.", "849-997-6509"),
        ("849.997.6509", "849.997.6509"),
        ("849 997 6509", "849 997 6509"),
        ("1-849-997-6509", "1-849-997-6509"),
        ("phone: +44 20 8919 6125", "+44 20 8919 6125"),
        ("+1 283 498 8626", "+1 283 498 8626"),
        ("+12817920919", "+12817920919"),
        ("+1 (283) 498-8626", "+1 (283) 498-8626"),
        ("+49 30 1234567", "+49 30 1234567"),
        ("+33 6 12 34 56 78", "+33 6 12 34 56 78"),
        ("+353-1-234-5678", "+353-1-234-5678"),
        ("phone 2817920919", "2817920919"),
        ("tel: 020 7946 0958", "020 7946 0958"),
        ("Call me on 06 12 34 56 78", "06 12 34 56 78"),
        ("phone (020) 7946 0958", "(020) 7946 0958"),
        ("tel 0044 20 7946 0958", "0044 20 7946 0958"),
        ("0044 20 7946 0958", "0044 20 7946 0958"),
        ("0031 20 123 4567", "0031 20 123 4567"),
        ("+91 98765 43210", "+91 98765 43210"),
        ("+81 3-1234-5678", "+81 3-1234-5678"),
        ("+44 (0)20 7946 0958", "+44 (0)20 7946 0958"),
        // National formats on their own.
        ("020 7946 0958", "020 7946 0958"),
        ("(020) 7946 0958", "(020) 7946 0958"),
        ("ring 07700 900123 now", "07700 900123"),
        ("unter (030) 1234-5678 an", "(030) 1234-5678"),
        ("0151 23456789", "0151 23456789"),
        ("01 23 45 67 89", "01 23 45 67 89"),
        ("au 06.12.34.56.78.", "06.12.34.56.78"),
        ("al 912 345 678", "912 345 678"),
        ("612 34 56 78", "612 34 56 78"),
        ("06 1234 5678", "06 1234 5678"),
        ("312 345 6789", "312 345 6789"),
        ("020-123 4567", "020-123 4567"),
        ("06-12345678", "06-12345678"),
        ("98765 43210", "98765 43210"),
        ("022 2345 6789", "022 2345 6789"),
        ("(11) 91234-5678", "(11) 91234-5678"),
        ("(21) 3456-7890", "(21) 3456-7890"),
        ("電話番号は03-1234-5678です", "03-1234-5678"),
        ("090-1234-5678", "090-1234-5678"),
        ("(02) 1234 5678", "(02) 1234 5678"),
        ("0412 345 678", "0412 345 678"),
        ("Telefon: 030123456789", "030123456789"),
        ("(+34) 612 345 678", "(+34) 612 345 678"),
        ("tel (+91) 98765 43210.", "(+91) 98765 43210"),
        ("(+44)2079460958", "(+44)2079460958"),
        ("móvil 612345678", "612345678"),
        ("mobile 9876543210", "9876543210"),
        ("cellulare 3123456789", "3123456789"),
        ("Ring mig på 020 7946 0958", "020 7946 0958"),
        ("Ring mig på (11) 91234-5678", "(11) 91234-5678"),
        ("phone: 98765-43210", "98765-43210"),
        ("0034 612345678", "0034 612345678"),
    ] {
        assert_eq!(find(text), Some(want), "{text}");
    }
}

#[test]
fn runs_into_word_table() {
    for (text, want) in [
        ("2025-03-04T12:30", true),
        ("415 555 0132x", true),
        ("1_", true),
        ("415 555 0132", false),
        ("415 555 0132 x", false),
        ("415-555--0132x", false),
        ("415-555-0132-x", false),
        ("(415) 555-0132x", false),
        ("415:x", false),
    ] {
        let start = text.find(|c: char| c.is_ascii_digit()).expect("a digit");
        assert_eq!(runs_into_word(text.as_bytes(), start), want, "{text}");
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(4096))]
    /// The shortcut never changes what the groups find.
    #[test]
    fn the_word_shortcut_finds_what_reading_the_groups_finds(
        bytes in proptest::collection::vec(
            proptest::sample::select(b"0123456789012345 -./()+_Tx".to_vec()),
            0..40,
        )
    ) {
        for (start, b) in bytes.iter().enumerate() {
            if b.is_ascii_digit() {
                proptest::prop_assert_eq!(
                    at_digit(&bytes, start),
                    at_digit_read(&bytes, start),
                    "{} at {}", String::from_utf8_lossy(&bytes), start
                );
            }
        }
    }
}

#[test]
fn near_misses() {
    for text in [
        "Call extension 4421 for IT",
        "376-85-2672",        // an SSN
        "2026-05-04",         // a date
        "10:30",              // a time
        "37.7749, -122.4194", // coordinates
        "version 3.2.1",
        "4111 1111 1111 1111", // a card
        "149-997-6509",        // area code starts with 1
        "849-097-6509",        // exchange starts with 0
        "2817920919",          // bare digits without a phone word
        "00442079460958",      // dialed abroad, bare, without a phone word
        "0049 12345678",       // two groups
        "02079460958",         // national, bare, without a phone word
        "Order #0123 4567 89",
        "Bestellnummer 0142 1234 5678",
        "01.02.2023 12:30", // a date and a time
        "05.03.2024 14:22:01",
        "06.12.34.56",       // a version
        "010.001.002.003",   // an address with leading zeros
        "0 306 40615 2",     // an ISBN
        "0123-456-7890-12",  // a part number
        "912 345 678 euros", // an amount
        "€ 612 345 678",
        "zip 75001 75002",
        "1090 1014 0000 0712 1981 2874", // groups of a longer number
        "(1) 2345-6789",                 // no area code
        "(11) 81234-5678",               // Brazil's mobiles start with 9
        "612.345.678",                   // dots outside pairs
        "020 7946.0958",                 // mixed with a dot
        "+28 912 345 678",               // unassigned country code
        "+44 20",                        // too short
        "3+44 20 8919 6125",             // arithmetic
        "849-997-6509-22",               // longer dashed token
        "220.137.81.7",                  // an IP address
        "1Z999AA10123456784",
    ] {
        assert_eq!(find(text), None, "{text}");
    }
}

/// Each country's national writings, from its numbering plan, and the
/// same numbers dialed with `+` or `00`: found whole, with no phone word.
#[test]
fn national_plans_per_country() {
    for (country, numbers) in [
        (
            "UK",
            &[
                "020 7946 0958",
                "(020) 7946 0958",
                "0161 496 0123",
                "0161-496-0123",
                "01632 960123",
                "(01632) 960123",
                "07700 900 123",
                "+44 (0) 20 7946 0958",
                "00 44 20 7946 0958",
            ][..],
        ),
        (
            "DE",
            &[
                "030 12345678",
                "030/12345678",
                "089 / 1234567",
                "030 / 1234 5678",
                "030 / 12 34 56 78",
                "0211/12345-67",
                "030 12345-67",
                "(089) 1234567",
                "0171 1234567",
                "0171/1234567",
                "+49 30/1234567",
                "+49 (0)30 12345678",
                "0049 30 12345678",
            ],
        ),
        (
            "FR",
            &[
                "01 23 45 67 89",
                "06.12.34.56.78",
                "06-12-34-56-78",
                "+33 1 23 45 67 89",
                "0033 6 12 34 56 78",
                "+33 (0)6 12 34 56 78",
            ],
        ),
        (
            "ES",
            &[
                "912 345 678",
                "91 234 56 78",
                "612 34 56 78",
                "612 345 678",
                "(+34) 912 345 678",
                "0034 912 345 678",
            ],
        ),
        (
            "IT",
            &[
                "06 1234 5678",
                "011 123 4567",
                "0471 123456",
                "347 123 4567",
                "347 1234567",
                "333-1234567",
                "+39 06 1234 5678",
            ],
        ),
        (
            "NL",
            &[
                "020 123 4567",
                "020-123 4567",
                "020-1234567",
                "06-12345678",
                "06 1234 5678",
                "0229-123456",
                "(020) 123 4567",
                "06 12 34 56 78",
            ],
        ),
        (
            "IN",
            &[
                "98765 43210",
                "098765 43210",
                "0 98765 43210",
                "011 2345 6789",
                "011-23456789",
                "(022) 2345 6789",
                "+91 98765 43210",
                "+91-98765-43210",
            ],
        ),
        (
            "BR",
            &[
                "(11) 91234-5678",
                "(11) 3456-7890",
                "(11)91234-5678",
                "11 91234-5678",
                "11 91234 5678",
                "11 3456-7890",
                "(11) 9 1234-5678",
                "11 9 1234-5678",
                "(21) 987654321",
                "(011) 91234-5678",
                "+55 11 91234-5678",
            ],
        ),
        (
            "JP",
            &[
                "03-1234-5678",
                "090-1234-5678",
                "06-6123-4567",
                "0467-12-3456",
                "01267-2-3456",
                "03(1234)5678",
                "0120-123-456",
                "(03) 1234-5678",
                "+81 3-1234-5678",
                "+81 90-1234-5678",
            ],
        ),
        (
            "AU",
            &[
                "(02) 1234 5678",
                "02 1234 5678",
                "0412 345 678",
                "0412 345678",
                "1300 123 456",
                "1800 123 456",
                "+61 2 1234 5678",
                "+61 412 345 678",
            ],
        ),
        (
            "PL",
            &[
                "512 345 678",
                "512-345-678",
                "22 123 45 67",
                "(22) 123 45 67",
                "+48 512 345 678",
                "0048 22 123 45 67",
            ],
        ),
        (
            "MX",
            &[
                "55 1234 5678",
                "(55) 1234 5678",
                "55-1234-5678",
                "33 1234 5678",
                "222 229 5500",
                "(222) 229-5500",
                "+52 55 1234 5678",
                "+52 1 55 1234 5678",
            ],
        ),
        (
            "CH",
            &[
                "044 668 18 00",
                "079 123 45 67",
                "044/668 18 00",
                "+41 44 668 18 00",
                "0041 44 668 18 00",
                "+41 (0)44 668 18 00",
            ],
        ),
        (
            "ZA",
            &[
                "011 123 4567",
                "082 123 4567",
                "(011) 123-4567",
                "082-123-4567",
                "+27 82 123 4567",
                "+27 (0)82 123 4567",
            ],
        ),
    ] {
        for number in numbers {
            for text in [number.to_string(), format!("Ligue {number}, por favor.")] {
                assert_eq!(find(&text), Some(*number), "{country}: {text}");
            }
        }
    }
}

/// What the national layouts must not take: numbers of other kinds with
/// the same digits and separators.
#[test]
fn national_plans_near_misses() {
    for (what, texts) in [
        (
            "order and invoice numbers, ids",
            &[
                "order 512 345 678",
                "Bestellnr. 0171/1234567",
                "invoice 0211/12345-67",
                "user id 55 1234 5678",
                "ref: 22 123 45 67",
                "id 1234 5678 90",
                "ticket 0123 4567 89",
                "SKU 300 123 4567",
            ][..],
        ),
        (
            "amounts and measures",
            &[
                "512 345 678 zł",
                "1 234 567 890",
                "€ 512 345 678",
                "55 1234 5678 MXN",
                "R$ 11 3456-7890",
                "total 222 123 4567",
                "512 345 678 bytes",
                "CHF 044 668 18 00",
            ],
        ),
        (
            "dates and timestamps",
            &[
                "05/12/2024",
                "2024/05/12",
                "12/05/2024 10:30",
                "030/12/2024",
                "01/02/2023 0930",
                "2024-05-12 10:30:00",
                "06/12/2024 14:30",
                "1709641234",
                "20240512 103000",
            ],
        ),
        (
            "versions, paths and ratios",
            &[
                "10.0.19045.2965",
                "v2.10.0 512.345.678",
                "/var/log/2024/05/12/0001.log",
                "0123/4567/89",
                "1/2 3/4",
                "0.12.345.6789",
            ],
        ),
        (
            "ports, hex and tracking numbers",
            &[
                "ports 8080 8443 9090",
                "0x1234 5678 9abc",
                "9400 1000 0000 0000 0000 00",
                "1Z 999 AA1 0123 4567 84",
            ],
        ),
        (
            "ISBNs and barcodes",
            &[
                "978-3-16-148410-0",
                "ISBN 0-306-40615-2",
                "3-16-148410-0",
                "4006381 333931",
            ],
        ),
        (
            "shapes outside the plans",
            &[
                "(11) 81234-5678", // Brazil's mobiles start with 9
                "11 1234-5678",    // nor its fixed lines with 0 or 1
                "10 3456-7890",    // no area code holds a 0
                "12 3456 7890",    // Brazil's fixed lines end after a dash
                "0123-4-5678",     // Japan's numbers have ten digits
                "0467-12-34567",   // and end in four
                "0 30 1234567",    // the trunk apart
                "123 456 789",     // nine digits from 1
                "0123 45 67 89",   // pairs after an area code alone
                "00 99 12345678",  // no such country code
                "98765-43210",     // a range, without a phone word
                "\u{a5} 612 345 678",
                "\u{a3}020 7946 0958",
                "\u{20b9} 98765 43210",
            ],
        ),
    ] {
        for text in texts {
            assert_eq!(find(text), None, "{what}: {text}");
        }
    }
}
