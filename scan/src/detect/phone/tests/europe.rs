//! Europe's national writings beyond the first plans, and the numbers of
//! other kinds there that look like them.

use super::{found_as, found_whole, none_found};

#[test]
fn russia_and_kazakhstan() {
    found_whole(
        "RU",
        &[
            "8 (495) 123-45-67",
            "8(495)123-45-67",
            "8 912 345-67-89",
            "8 912 345 67 89",
            "8-800-555-35-35",
            "8 (8452) 12-34-56",
            "8 (495) 1234567",
            "(495) 123-45-67",
            "(495)123-45-67",
            "912 345-67-89",
            "912 345 67 89",
            "+7 (495) 123-45-67",
            "+7 912 345-67-89",
            "+7-912-345-67-89",
        ],
    );
    found_whole(
        "KZ",
        &[
            "8 (727) 123-45-67",
            "8 701 123 4567",
            "8 (701) 123 45 67",
            "701 123-45-67",
            "+7 701 123 4567",
        ],
    );
    found_as(&[
        ("тел. 89123456789", Some("89123456789")),
        ("Тел: 8 912 345-67-89", Some("8 912 345-67-89")),
        ("89123456789", None),
    ]);
    none_found(
        "RU and KZ",
        &[
            "912-345-67-89",          // dashed throughout without the trunk
            "521-123-45-67",          // Poland's NIP
            "NIP: 521 123 45 67",     // and spaced, after its word
            "8-912-345 67 89",        // dashes giving way to spaces
            "8 123 456-78-90",        // no area code from 1
            "8 (495) 123-45-67-89",   // a pair too many
            "ИНН 7707083893",         // a tax number
            "ОГРН 1027700132195",     // a company number
            "СНИЛС 123-456-789 01",   // a pension number
            "1 234 567 руб.",         // an amount
            "912 345 67 89 \u{20bd}", // and in roubles
            "order 912 345-67-89",
            "\u{417}\u{430}\u{43a}\u{430}\u{437} 912 345-67-89",
            "\u{441}\u{447}\u{451}\u{442} 8 912 345 67 89",
        ],
    );
}

#[test]
fn nordics() {
    found_whole("NO", &["412 34 567", "+47 412 34 567", "0047 22 12 34 56"]);
    found_whole("DK", &["+45 32 12 34 56", "0045 32 12 34 56"]);
    found_whole(
        "SE",
        &[
            "08-123 456 78",
            "08-123 45 67",
            "070-123 45 67",
            "070 123 45 67",
            "031-12 34 56",
            "08-12 34 56",
            "0771-123 456",
            "+46 70 123 45 67",
            "+46 (0)8 123 456 78",
        ],
    );
    found_whole(
        "FI",
        &[
            "040 123 4567",
            "09 123 4567",
            "050 123 45 67",
            "(09) 1234 567",
            "+358 40 123 4567",
        ],
    );
    found_as(&[
        ("Tlf. 32123456", Some("32123456")),
        ("mobil: 4123-4567", Some("4123-4567")),
        ("telefon 41234567", Some("41234567")),
        ("Tlf. 32 12 34 56", Some("32 12 34 56")),
        ("mobil 41 23 45 67", Some("41 23 45 67")),
        ("tlf 3212 3456", Some("3212 3456")),
        ("telefon 20 30 40 50", None), // a series, even after a phone word
    ]);
    none_found(
        "Nordic ids, amounts and dates",
        &[
            "CVR 32 12 34 56",
            "CVR-nr. 3212 3456",
            "org.nr. 923 456 789",
            "Org nr 923 456 789",
            "konto 3212 3456",
            "32123456",        // eight digits alone
            "4123-4567",       // dashed, without a phone word
            "hotel 41234567",  // "tel" inside a word
            "number 41234567", // nor a word of any number
            "3212 3456 kr",    // an amount
            "kr. 32 12 34 56",
            "32 12 34 56", // four pairs, without a phone word
            "3212 3456",
            "counts 32 12 34 56",
            "20 30 40 50", // a series
            "23 45 67 89",
            "33 33 33 33",
            "12 34 56 78", // no number from 1
            "2019 2020",   // two years
            "1990 2024",
            "08 12 34 56",   // Stockholm's pairs after a space
            "010190-1234",   // a Danish CPR number
            "19900101-1234", // a Swedish personal number
            "900101-1234",
            "1234 56 78901", // a Norwegian account number
            "12.03.2024",    // a date
            "12 03 2024",
            "ISO 9001 2015",
            "faktura 412 34 567",
            "Bestilling 32 12 34 56",
            "personnummer 4123 4567",
        ],
    );
}

#[test]
fn western_europe() {
    found_whole(
        "BE",
        &[
            "0470 12 34 56",
            "02 123 45 67",
            "050 12 34 56",
            "0470/12.34.56",
            "02/123.45.67",
            "0470/12 34 56",
            "+32 470 12 34 56",
            "+32 (0)2 123 45 67",
        ],
    );
    found_whole(
        "AT",
        &[
            "01 234 56 78",
            "0664 123 45 67",
            "0664 1234567",
            "0316 123456",
            "01/234 56 78",
            "0316/12 34 56",
            "+43 664 1234567",
            "0043 1 234 56 78",
        ],
    );
    found_whole(
        "IE",
        &[
            "01 234 5678",
            "087 123 4567",
            "(01) 234 5678",
            "021 4123456",
            "+353 87 123 4567",
        ],
    );
    found_whole(
        "PT",
        &[
            "912 345 678",
            "212 345 678",
            "21 123 4567",
            "+351 912 345 678",
            "00351 21 123 4567",
        ],
    );
    found_whole(
        "FR",
        &[
            "0 800 123 456",
            "0 800 12 34 56",
            "+33 (0)1 23 45 67 89",
            "+33 1 23 45 67 89",
        ],
    );
    none_found(
        "Western Europe",
        &[
            "0470.12.34.56", // dots without the slash
            "0403.170.701",  // a Belgian company number
            "KBO 0403.170.701",
            "n\u{b0} d'entreprise 0403 170 701",
            "250 000 000",     // an amount
            "NIF 212 345 678", // a tax number
            "1000-001 Lisboa", // a postcode
            "0 30 1234567",    // the trunk apart before two
            "0 800 123",       // too short
        ],
    );
}

#[test]
fn central_and_south_eastern_europe() {
    found_whole("CZ", &["601 123 456", "221 123 456", "+420 601 123 456"]);
    found_whole(
        "GR",
        &[
            "210 123 4567",
            "694 123 4567",
            "2310 123456",
            "210 1234567",
            "+30 694 123 4567",
        ],
    );
    found_whole(
        "TR",
        &[
            "0532 123 45 67",
            "0 532 123 45 67",
            "0 (532) 123 45 67",
            "(0212) 123 45 67",
            "0212 123 4567",
            "532 123 45 67",
            "+90 532 123 45 67",
        ],
    );
    found_whole(
        "HU",
        &[
            "06 1 234 5678",
            "06-1-234-5678",
            "06 30 123 4567",
            "06-20/123-4567",
            "06 62 123 456",
            "+36 30 123 4567",
        ],
    );
    found_as(&[
        ("mobil 601123456", Some("601123456")),
        ("telefonu 5321234567", Some("5321234567")),
        ("mobile 6941234567", Some("6941234567")),
    ]);
    none_found(
        "CZ, GR and TR",
        &[
            "123 456 789",     // nine digits from 1
            "200 000 000",     // an amount
            "123456789/0800",  // a Czech bank account
            "AFM 094 123 456", // a Greek tax number
            "\u{391}\u{3a6}\u{39c} 523 456 789",
            "2010 123456",        // a year first
            "12345678901",        // a Turkish identity number
            "0 532 123",          // too short
            "532-123-45-67",      // dashed throughout without the trunk
            "1 234 567 K\u{10d}", // an amount
            "Zam\u{f3}wienie 512 345 678",
            "Objedn\u{e1}vka 601 123 456",
            "Sipari\u{15f} no 0532 123 45 67",
            "I\u{10c}O 221 123 456",
            "06 1 234 56789", // Hungary's groups, too long
            "06 01 234 5678", // no area code from 0
            "06 2 234 5678",  // only Budapest's is of one digit
            "06.30.123.4567", // dots
            "06 30-123 4567", // separators that change
            "order 06 30 123 4567",
        ],
    );
}
