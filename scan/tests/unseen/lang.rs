//! The languages of the set and what is written in each: sentences that
//! hold one value (`{}`), people's names, and the words around the bodies.

use sluice_scan::Kind;

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
}

impl Lang {
    pub const ALL: [Lang; 10] = [
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
        }
    }

    /// Sentences that hold one value of `kind` where `{}` stands.
    pub fn sentences(self, kind: Kind) -> &'static [&'static str] {
        let [phone, card, email, iban] = self.table();
        match kind {
            Kind::Phone => phone,
            Kind::CreditCard => card,
            Kind::Email => email,
            Kind::Iban => iban,
            other => panic!("no sentences for {other}"),
        }
    }

    fn table(self) -> [&'static [&'static str]; 4] {
        match self {
            Lang::En => [
                &[
                    "You can reach me on {} most afternoons.",
                    "Please call back on {} (ask for the night desk).",
                    "Mobile: {}",
                    "My number changed, it is now {}, the old one is gone.",
                ],
                &[
                    "Charge the deposit to my card {}, expiry 08/29.",
                    "The card ending in the digits below was declined: {}",
                    "Card number {} - please refund to this one.",
                ],
                &[
                    "Send the invoice to {} and copy my assistant.",
                    "My address is {}, not the one on file.",
                    "Contact: {}",
                ],
                &[
                    "Please wire the balance to {} before Friday.",
                    "Our account for the refund: {}",
                    "IBAN {} (account holder as on the contract).",
                ],
            ],
            Lang::De => [
                &[
                    "Sie erreichen mich tagsüber unter {}.",
                    "Bitte rufen Sie mich zurück: {}",
                    "Tel.: {} (Mo–Fr 9–17 Uhr)",
                    "Meine neue Handynummer lautet {}.",
                ],
                &[
                    "Buchen Sie die Anzahlung bitte von meiner Karte {} ab.",
                    "Kartennummer: {}, gültig bis 11/28.",
                    "Die Zahlung mit der Kreditkarte {} wurde abgelehnt.",
                ],
                &[
                    "Schreiben Sie mir gern an {}.",
                    "Meine E-Mail-Adresse hat sich geändert: {}",
                    "Rückfragen bitte an {} richten.",
                ],
                &[
                    "Bitte überweisen Sie den Betrag auf das Konto {}.",
                    "Unsere Bankverbindung: IBAN {}, Verwendungszweck Rechnung.",
                    "Die Erstattung geht an {}.",
                ],
            ],
            Lang::Fr => [
                &[
                    "Vous pouvez me joindre au {} en journée.",
                    "Merci de me rappeler au {}.",
                    "Tél. : {}",
                    "Mon portable : {}, de préférence le soir.",
                ],
                &[
                    "Veuillez débiter l'acompte sur ma carte {}.",
                    "Numéro de carte : {}, date d'expiration 04/27.",
                    "Le paiement par la carte {} a été refusé.",
                ],
                &[
                    "Écrivez-moi à {} pour la suite.",
                    "Ma nouvelle adresse électronique est {}.",
                    "Courriel : {}",
                ],
                &[
                    "Merci de virer le solde sur le compte {}.",
                    "Nos coordonnées bancaires : IBAN {}",
                    "Le remboursement sera versé sur {}.",
                ],
            ],
            Lang::Es => [
                &[
                    "Puede llamarme al {} por las mañanas.",
                    "Mi móvil es el {}, escríbame por WhatsApp.",
                    "Tel.: {}",
                    "Si no contesto, deje un mensaje en el {}.",
                ],
                &[
                    "Cargue la reserva a mi tarjeta {}, por favor.",
                    "Número de tarjeta: {}, caduca 06/28.",
                    "El pago con la tarjeta {} fue rechazado.",
                ],
                &[
                    "Envíeme la factura a {}.",
                    "Mi correo es {}, el anterior ya no funciona.",
                    "Correo electrónico: {}",
                ],
                &[
                    "Haga la transferencia a la cuenta {}.",
                    "Datos bancarios: IBAN {}",
                    "El reembolso se abonará en {}.",
                ],
            ],
            Lang::Pt => [
                &[
                    "Pode me ligar no {} depois das 14h.",
                    "Meu celular é {}, chama no WhatsApp.",
                    "Telefone: {}",
                    "Ligue para {} e fale com a recepção.",
                ],
                &[
                    "Cobre o sinal no meu cartão {}, por favor.",
                    "Número do cartão: {}, validade 02/30.",
                    "A compra no cartão {} foi recusada.",
                ],
                &[
                    "Mande o boleto para {}.",
                    "Meu e-mail novo é {}.",
                    "E-mail para contato: {}",
                ],
                &[
                    "Transfira o valor para o IBAN {}.",
                    "Dados bancários: {}",
                    "O reembolso vai para a conta {}.",
                ],
            ],
            Lang::It => [
                &[
                    "Mi può chiamare al {} dopo pranzo.",
                    "Il mio cellulare è {}.",
                    "Tel. {}",
                    "Per urgenze: {} (segreteria).",
                ],
                &[
                    "Addebiti la caparra sulla mia carta {}.",
                    "Numero carta: {}, scadenza 09/27.",
                    "Il pagamento con la carta {} è stato rifiutato.",
                ],
                &[
                    "Mi scriva pure a {}.",
                    "Il mio indirizzo email è cambiato: {}",
                    "Per informazioni: {}",
                ],
                &[
                    "Effettui il bonifico sul conto {}.",
                    "Coordinate bancarie: IBAN {}",
                    "Il rimborso verrà accreditato su {}.",
                ],
            ],
            Lang::Nl => [
                &[
                    "U kunt mij bereiken op {}.",
                    "Bel me even terug op {}, graag na vijven.",
                    "Tel.: {}",
                    "Mijn mobiele nummer is {}.",
                ],
                &[
                    "Schrijf de aanbetaling af van mijn creditcard {}.",
                    "Kaartnummer: {}, geldig tot 03/29.",
                    "De betaling met kaart {} is geweigerd.",
                ],
                &[
                    "Mail me op {}.",
                    "Mijn nieuwe e-mailadres is {}.",
                    "E-mail: {}",
                ],
                &[
                    "Maak het bedrag over naar {} o.v.v. het factuurnummer.",
                    "Rekeningnummer: {}",
                    "De terugbetaling gaat naar IBAN {}.",
                ],
            ],
            Lang::Pl => [
                &[
                    "Proszę dzwonić pod numer {}.",
                    "Mój numer komórki to {}.",
                    "Tel. {}",
                    "W razie pytań: {} (od 8 do 16).",
                ],
                &[
                    "Proszę obciążyć moją kartę {}.",
                    "Numer karty: {}, ważna do 05/28.",
                    "Płatność kartą {} została odrzucona.",
                ],
                &[
                    "Proszę pisać na adres {}.",
                    "Mój nowy e-mail to {}.",
                    "Kontakt mailowy: {}",
                ],
                &[
                    "Proszę przelać kwotę na rachunek {}.",
                    "Numer konta: {}",
                    "Zwrot zostanie przelany na {}.",
                ],
            ],
            Lang::Hi => [
                &[
                    "Mera number {} hai, shaam ko call karna.",
                    "Bhai {} pe WhatsApp kar do.",
                    "मेरा फ़ोन नंबर {} है।",
                    "Office ka landline {} hai, extension reception se poochh lena.",
                ],
                &[
                    "Card number {} hai, payment fail ho raha hai.",
                    "Mere card {} se deduct ho gaya par order nahi aaya.",
                    "कृपया मेरे कार्ड {} से भुगतान करें।",
                ],
                &[
                    "Mail {} pe bhej do please.",
                    "मेरा ईमेल {} है, wahan details bhejna.",
                    "Official id: {}",
                ],
                &[
                    "Refund is account mein bhejo: {}",
                    "Europe wale client ka IBAN {} hai.",
                    "IBAN {} par transfer kar dijiye.",
                ],
            ],
            Lang::Ja => [
                &[
                    "電話番号は {} です。",
                    "お手数ですが {} までお電話ください。",
                    "携帯：{}",
                    "連絡先 {}（平日10時〜18時）",
                ],
                &[
                    "カード番号は {} です。",
                    "クレジットカード {} で決済できませんでした。",
                    "お支払いはカード（{}）でお願いします。",
                ],
                &[
                    "メールアドレス：{} までご連絡ください。",
                    "返信は {} にお願いします。",
                    "担当者のメール {} 宛てに送ってください。",
                ],
                &[
                    "送金先のIBANは {} です。",
                    "海外口座 {} へ振り込んでください。",
                    "返金先：IBAN {}",
                ],
            ],
        }
    }

    /// People's names as written in the language (for records, senders).
    pub fn names(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Lang::En => &[
                ("Olivia", "Hartley"),
                ("James", "O'Connor"),
                ("Priya", "Raman"),
                ("Liam", "Fletcher"),
                ("Grace", "Okafor"),
                ("Noah", "Whitmore"),
            ],
            Lang::De => &[
                ("Jürgen", "Müller"),
                ("Anna", "Schäfer"),
                ("Lukas", "Weiß"),
                ("Sophie", "Krüger"),
                ("Felix", "Groß"),
                ("Marie", "Köhler"),
            ],
            Lang::Fr => &[
                ("Élodie", "Lefèvre"),
                ("Hélène", "Dubois"),
                ("François", "Garnier"),
                ("Amélie", "Rousseau"),
                ("Noël", "Béranger"),
                ("Chloé", "Moreau"),
            ],
            Lang::Es => &[
                ("José", "García"),
                ("María", "Fernández"),
                ("Íñigo", "Muñoz"),
                ("Lucía", "Martín"),
                ("Andrés", "Gómez"),
                ("Sofía", "Pérez"),
            ],
            Lang::Pt => &[
                ("João", "Gonçalves"),
                ("Ana", "Conceição"),
                ("Luís", "Araújo"),
                ("Beatriz", "Simões"),
                ("Thiago", "Magalhães"),
                ("Letícia", "Brandão"),
            ],
            Lang::It => &[
                ("Niccolò", "Rossi"),
                ("Giulia", "Bianchi"),
                ("Lorenzo", "Esposito"),
                ("Chiara", "Colombo"),
                ("Mattia", "Ricci"),
                ("Francesca", "Galli"),
            ],
            Lang::Nl => &[
                ("Daan", "de Vries"),
                ("Sanne", "van Dijk"),
                ("Bram", "Jansen"),
                ("Fleur", "Bakker"),
                ("Sem", "Visser"),
                ("Lotte", "Smit"),
            ],
            Lang::Pl => &[
                ("Łukasz", "Wójcik"),
                ("Agnieszka", "Kowalczyk"),
                ("Paweł", "Zieliński"),
                ("Małgorzata", "Woźniak"),
                ("Grzegorz", "Lewandowski"),
                ("Zofia", "Dąbrowska"),
            ],
            Lang::Hi => &[
                ("Rahul", "Sharma"),
                ("Ananya", "Iyer"),
                ("Vikram", "Patel"),
                ("Sneha", "Reddy"),
                ("अमित", "वर्मा"),
                ("Kavya", "Nair"),
            ],
            Lang::Ja => &[
                ("太郎", "山田"),
                ("花子", "佐藤"),
                ("健", "鈴木"),
                ("美咲", "高橋"),
                ("Haruto", "Tanaka"),
                ("Yui", "Watanabe"),
            ],
        }
    }

    /// A help-desk subject line.
    pub fn subject(self) -> &'static str {
        match self {
            Lang::En => "Change of contact and payment details",
            Lang::De => "Änderung meiner Kontakt- und Zahlungsdaten",
            Lang::Fr => "Modification de mes coordonnées",
            Lang::Es => "Cambio de datos de contacto y pago",
            Lang::Pt => "Atualização de dados cadastrais",
            Lang::It => "Aggiornamento dei miei dati",
            Lang::Nl => "Wijziging contact- en betaalgegevens",
            Lang::Pl => "Zmiana danych kontaktowych",
            Lang::Hi => "Refund aur contact details update",
            Lang::Ja => "連絡先と支払い情報の変更について",
        }
    }

    /// What a user asks a model to do with the text that follows.
    pub fn ask(self) -> &'static str {
        match self {
            Lang::En => "Summarise this customer message and draft a reply:",
            Lang::De => "Fasse die Kundennachricht zusammen und entwirf eine Antwort:",
            Lang::Fr => "Résume ce message client et propose une réponse :",
            Lang::Es => "Resume este mensaje del cliente y redacta una respuesta:",
            Lang::Pt => "Resuma a mensagem do cliente e escreva uma resposta:",
            Lang::It => "Riassumi il messaggio del cliente e prepara una risposta:",
            Lang::Nl => "Vat dit klantbericht samen en schrijf een antwoord:",
            Lang::Pl => "Streść wiadomość klienta i przygotuj odpowiedź:",
            Lang::Hi => "Is customer message ka summary do aur reply likho:",
            Lang::Ja => "次のお客様のメッセージを要約し、返信案を作成してください：",
        }
    }

    /// The line an email client puts above a quoted reply.
    pub fn quote_header(self) -> &'static str {
        match self {
            Lang::De => "Am 04.12.2026 um 17:02 schrieb Kundenservice:",
            Lang::Fr => "Le ven. 4 déc. 2026 à 17:02, Service client a écrit :",
            Lang::Es => "El vie, 4 dic 2026 a las 17:02, Atención al cliente escribió:",
            Lang::Pt => "Em sex., 4 de dez. de 2026 às 17:02, Atendimento escreveu:",
            Lang::It => "Il giorno ven 4 dic 2026 alle ore 17:02 Assistenza ha scritto:",
            Lang::Nl => "Op vr 4 dec 2026 om 17:02 schreef Klantenservice:",
            Lang::Pl => "W dniu 4.12.2026 o 17:02 Obsługa klienta pisze:",
            Lang::Ja => "2026年12月4日(金) 17:02 カスタマーサポート:",
            Lang::En | Lang::Hi => "On Fri, 4 Dec 2026 at 17:02, Customer Care wrote:",
        }
    }
}
