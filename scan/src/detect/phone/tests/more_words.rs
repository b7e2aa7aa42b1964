//! Phone words of more languages, and the solid mobiles they admit, with
//! the other numbers the same words stand before.

use super::found_as;

#[test]
fn more_phone_words() {
    found_as(&[
        ("Tel.: 912678026", Some("912678026")),
        ("tel: 612345678", Some("612345678")),
        ("Pode me ligar no 961659654 depois", Some("961659654")),
        // Brazil's mobiles solid: an area code, 9, eight digits.
        ("telefone 21985227218", Some("21985227218")),
        ("celular: 11987654321", Some("11987654321")),
        (
            "\u{43f}\u{43e} \u{43d}\u{43e}\u{43c}\u{435}\u{440}\u{443} 87775683537",
            Some("87775683537"),
        ),
        ("\u{8bf7}\u{56de}\u{62e8} 6971 7353", Some("6971 7353")),
        (
            "\u{644}\u{644}\u{62a}\u{648}\u{627}\u{635}\u{644}: 5897 0530",
            Some("5897 0530"),
        ),
        // The same words before other numbers, and shapes they do not admit.
        ("hotel 912678026", None),
        ("telefone 20985227218", None), // no area code holds a 0
        ("telefone 21785227218", None), // a mobile's third digit is 9
        ("celular: 1709641234567", None),
        (
            "\u{43d}\u{43e}\u{43c}\u{435}\u{440} \u{437}\u{430}\u{43a}\u{430}\u{437}\u{430} 87775683537",
            None,
        ),
        ("\u{62e8}\u{6b3e} 2019 2020", None),
        ("ligar 2048 4096 MB", None),
        (
            "phone=011 2999 6078&message=PNR 4597368184",
            Some("011 2999 6078"),
        ),
    ]);
}
