//! The national writings of the Americas, Africa, the Middle East and
//! Oceania beyond the first plans, and the numbers of other kinds there
//! that look like them.

use super::{found_whole, none_found};

#[test]
fn americas() {
    found_whole(
        "AR",
        &[
            "011 15-1234-5678",
            "011 15 1234 5678",
            "(011) 15 4123-4567",
            "(0351) 15-412-3456",
            "(011) 4123-4567",
            "011 4123-4567",
            "0351 412-3456",
            "11 4123-4567",
            "+54 9 11 1234-5678",
            "+54 11 4123-4567",
        ],
    );
    found_whole(
        "CL",
        &[
            "9 1234 5678",
            "2 2123 4567",
            "(2) 2123 4567",
            "(32) 212 3456",
            "+56 9 1234 5678",
            "+56 2 2123 4567",
        ],
    );
    found_whole(
        "CO",
        &[
            "300 123 4567",
            "310 1234567",
            "601 234 5678",
            "(601) 234 5678",
            "601 2345678",
            "(601) 2345678",
            "+57 300 123 4567",
        ],
    );
    found_whole(
        "PE",
        &[
            "912 345 678",
            "(01) 234 5678",
            "01 234 5678",
            "+51 912 345 678",
        ],
    );
    found_whole(
        "BR",
        &[
            "(11) 91234 5678",
            "(11)912345678",
            "011 91234-5678",
            "0800 123 4567",
            "+55 (11) 91234-5678",
        ],
    );
    none_found(
        "the Americas",
        &[
            "12.345.678-9",  // a Chilean RUT
            "20-12345678-9", // an Argentine CUIT
            "CUIT 20-12345678-9",
            "12.345.678",       // an Argentine DNI
            "900.123.456-7",    // a Colombian NIT
            "20123456789",      // a Peruvian RUC
            "123.456.789-09",   // a Brazilian CPF
            "01310-100",        // a Brazilian CEP
            "011 16-1234-5678", // not 15 after the area code
            "011 15-1234-567",  // a digit short
            "1 2123 4567",      // no Chilean number from 1
            "RUT 9 1234 5678",
            "RFC 55 1234 5678",
            "CPF 912 345 678",
            "Fatura 11 91234-5678",
            "$ 9 1234 5678", // an amount
        ],
    );
}

#[test]
fn middle_east_and_africa() {
    found_whole(
        "IL",
        &[
            "03-123-4567",
            "052-123-4567",
            "02-6234567",
            "(03) 123 4567",
            "+972 52-123-4567",
        ],
    );
    found_whole(
        "AE",
        &[
            "04 123 4567",
            "050 123 4567",
            "050-1234567",
            "+971 50 123 4567",
        ],
    );
    found_whole("SA", &["011 123 4567", "055-123-4567", "+966 50 123 4567"]);
    found_whole(
        "EG",
        &[
            "02 2345 6789",
            "(02) 2345 6789",
            "010 1234 5678",
            "0100 123 4567",
            "+20 10 1234 5678",
        ],
    );
    found_whole(
        "NG",
        &[
            "0803 123 4567",
            "0803-123-4567",
            "01 234 5678",
            "+234 803 123 4567",
        ],
    );
    found_whole(
        "KE",
        &[
            "0712 345 678",
            "0712 345678",
            "020 123 4567",
            "+254 712 345678",
        ],
    );
    none_found(
        "the Middle East and Africa",
        &[
            "784-1990-1234567-1", // an Emirates identity number
            "22123456789",        // a Nigerian BVN
            "1012345678",         // a Saudi identity number
            "29001011234567",     // an Egyptian national number
            "order 0803 123 4567",
            "AED 050 123 4567",
            "0712 345 678 KES",
            "\u{20a6}0803 123 4567",
        ],
    );
}

#[test]
fn oceania() {
    found_whole(
        "NZ",
        &[
            "09 123 4567",
            "(09) 123-4567",
            "021 123 4567",
            "027 123 456",
            "0800 123 456",
            "+64 21 123 4567",
        ],
    );
}
