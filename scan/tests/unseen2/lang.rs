//! The languages of the second set: the first set's ten (whose sentences
//! it reuses) and seven more written here (`lang_new`), with sentences for
//! emails of its own in every language (some as a `mailto:` link, some in
//! angle brackets).

use sluice_scan::Kind;

use super::first_lang::Lang as First;
use super::lang_new;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Lang {
    En,
    De,
    Fr,
    Es,
    Pt,
    It,
    Nl,
    Pl,
    /// Hindi and English mixed, mostly in Latin script, as typed in India.
    Hi,
    Ja,
    Ru,
    Tr,
    /// Simplified Chinese, numbers often written against the characters.
    Zh,
    Ko,
    Ar,
    /// Indonesian (Malaysians read it too).
    Id,
    Sv,
}

impl Lang {
    pub const ALL: [Lang; 17] = [
        Lang::En,
        Lang::De,
        Lang::Fr,
        Lang::Es,
        Lang::Pt,
        Lang::It,
        Lang::Nl,
        Lang::Pl,
        Lang::Hi,
        Lang::Ja,
        Lang::Ru,
        Lang::Tr,
        Lang::Zh,
        Lang::Ko,
        Lang::Ar,
        Lang::Id,
        Lang::Sv,
    ];

    pub fn code(self) -> &'static str {
        match self {
            Lang::En => "en",
            Lang::De => "de",
            Lang::Fr => "fr",
            Lang::Es => "es",
            Lang::Pt => "pt",
            Lang::It => "it",
            Lang::Nl => "nl",
            Lang::Pl => "pl",
            Lang::Hi => "hi",
            Lang::Ja => "ja",
            Lang::Ru => "ru",
            Lang::Tr => "tr",
            Lang::Zh => "zh",
            Lang::Ko => "ko",
            Lang::Ar => "ar",
            Lang::Id => "id",
            Lang::Sv => "sv",
        }
    }

    /// The first set's language this one is, if it is one of its ten.
    fn first(self) -> Option<First> {
        Some(match self {
            Lang::En => First::En,
            Lang::De => First::De,
            Lang::Fr => First::Fr,
            Lang::Es => First::Es,
            Lang::Pt => First::Pt,
            Lang::It => First::It,
            Lang::Nl => First::Nl,
            Lang::Pl => First::Pl,
            Lang::Hi => First::Hi,
            Lang::Ja => First::Ja,
            _ => return None,
        })
    }

    /// Sentences that hold one value of `kind` where `{}` stands.
    pub fn sentences(self, kind: Kind) -> &'static [&'static str] {
        if kind == Kind::Email {
            return email_sentences(self);
        }
        match self.first() {
            Some(first) => first.sentences(kind),
            None => lang_new::sentences(self, kind),
        }
    }

    /// People's names as written in the language (for records, senders).
    pub fn names(self) -> &'static [(&'static str, &'static str)] {
        match self.first() {
            Some(first) => first.names(),
            None => lang_new::words(self).names,
        }
    }

    /// A help-desk subject line.
    pub fn subject(self) -> &'static str {
        match self.first() {
            Some(first) => first.subject(),
            None => lang_new::words(self).subject,
        }
    }

    /// What a user asks a model to do with the text that follows.
    pub fn ask(self) -> &'static str {
        match self.first() {
            Some(first) => first.ask(),
            None => lang_new::words(self).ask,
        }
    }

    /// The line an email client puts above a quoted reply.
    pub fn quote_header(self) -> &'static str {
        match self.first() {
            Some(first) => first.quote_header(),
            None => lang_new::words(self).quote_header,
        }
    }
}

fn email_sentences(lang: Lang) -> &'static [&'static str] {
    match lang {
        Lang::En => &[
            "Please write to <{}> from now on.",
            "[Email me](mailto:{}) if the file is too big.",
            "Send the signed copy to {} today.",
            "Reach our billing team at {}.",
        ],
        Lang::De => &[
            "Bitte schreiben Sie an <{}>.",
            "Antwort bitte an {} statt an die alte Adresse.",
            "<a href=\"mailto:{}\">E-Mail senden</a>",
            "Meine E-Mail-Adresse lautet {}.",
        ],
        Lang::Fr => &[
            "Écrivez-moi à <{}>.",
            "Merci d'envoyer le devis à {}.",
            "[Nous contacter](mailto:{})",
            "Mon adresse e-mail : {}",
        ],
        Lang::Es => &[
            "Escríbeme a <{}>.",
            "Mándame la factura a {}, por favor.",
            "<a href=\"mailto:{}\">Contactar</a>",
            "Correo: {}",
        ],
        Lang::Pt => &[
            "Me manda um e-mail em <{}>.",
            "Favor enviar o boleto para {}.",
            "[Fale conosco](mailto:{})",
            "E-mail de contato: {}",
        ],
        Lang::It => &[
            "Scrivetemi a <{}>.",
            "Inviate la fattura a {} per favore.",
            "<a href=\"mailto:{}\">Scrivici</a>",
            "Indirizzo e-mail: {}",
        ],
        Lang::Nl => &[
            "Mail gerust naar <{}>.",
            "Stuur de offerte naar {}.",
            "[Mail ons](mailto:{})",
            "E-mailadres: {}",
        ],
        Lang::Pl => &[
            "Proszę pisać na <{}>.",
            "Fakturę proszę wysłać na {}.",
            "<a href=\"mailto:{}\">Napisz do nas</a>",
            "Adres e-mail: {}",
        ],
        Lang::Hi => &[
            "Mujhe <{}> pe mail karo.",
            "Invoice {} pe bhej dena.",
            "[Mail karein](mailto:{})",
            "मेरा ईमेल पता {} है।",
        ],
        Lang::Ja => &[
            "メールは<{}>までお願いします。",
            "請求書は {} に送ってください。",
            "[お問い合わせ](mailto:{})",
            "メール：{}",
        ],
        Lang::Ru => &[
            "Пишите на <{}>.",
            "Счёт пришлите на {}, пожалуйста.",
            "<a href=\"mailto:{}\">Написать нам</a>",
            "Эл. почта: {}",
        ],
        Lang::Tr => &[
            "Bana <{}> adresinden ulaşabilirsiniz.",
            "Faturayı {} adresine gönderin lütfen.",
            "[Bize yazın](mailto:{})",
            "E-posta: {}",
        ],
        Lang::Zh => &[
            "请发邮件到<{}>。",
            "发票请寄到 {}，谢谢。",
            "<a href=\"mailto:{}\">联系我们</a>",
            "邮箱：{}",
        ],
        Lang::Ko => &[
            "메일은 <{}>로 보내 주세요.",
            "견적서를 {} 주소로 보내 주세요.",
            "[문의하기](mailto:{})",
            "이메일: {}",
        ],
        Lang::Ar => &[
            "راسلونا على <{}>",
            "يرجى إرسال الفاتورة إلى {}",
            "<a href=\"mailto:{}\">راسلنا</a>",
            "البريد الإلكتروني: {}",
        ],
        Lang::Id => &[
            "Kirim email ke <{}> ya.",
            "Tolong kirim invoice ke {}.",
            "[Hubungi kami](mailto:{})",
            "Email: {}",
        ],
        Lang::Sv => &[
            "Mejla mig på <{}>.",
            "Skicka fakturan till {}.",
            "[Kontakta oss](mailto:{})",
            "E-post: {}",
        ],
    }
}
