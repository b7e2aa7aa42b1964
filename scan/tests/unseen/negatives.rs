//! Sentences that hold no card, phone, email or IBAN but numbers that look
//! like them to a careless eye: order and invoice numbers, dates, times,
//! versions, prices, measurements, ISBNs and barcodes, tracking numbers,
//! hashes, UUIDs, addresses and ports, coordinates, serial numbers,
//! lottery numbers, scores, page and line references, official ids of
//! companies and trips. A finding in one is a false positive.

use super::Lang;
use crate::common::{Rng, luhn_digit};

/// (language, what the numbers are, sentence).
const WRITTEN: &[(Lang, &str, &str)] = &[
    (
        Lang::En,
        "isbn",
        "Cited as Smith (2019), ISBN 0-306-40615-2, pp. 45-67.",
    ),
    (
        Lang::En,
        "ip",
        "Firewall: allow 203.0.113.54/32 to 10.20.30.40 port 5432, deny 0.0.0.0/0.",
    ),
    (
        Lang::En,
        "price",
        "Was 1,299.00 EUR, now 999.00 EUR: save 23% until 24.12.",
    ),
    (
        Lang::En,
        "serial",
        "Replace the unit with S/N 5CG1234XYZ, part no. 853-0021-01.",
    ),
    (
        Lang::En,
        "version",
        "Requires Python >= 3.10, tested on 3.12.7 and 3.13.0.",
    ),
    (
        Lang::De,
        "isbn",
        "Das Buch (ISBN 978-3-16-148410-0) ist leider vergriffen.",
    ),
    (
        Lang::Fr,
        "ip",
        "Le serveur 172.16.254.1:3306 ne répond plus depuis 03h12.",
    ),
    (
        Lang::Es,
        "price",
        "Precio: 1.249,99 € (IVA incl.), envío 4,95 €.",
    ),
    (
        Lang::It,
        "price",
        "Prezzo 1.349,00 €, spedizione gratuita sopra 49,90 €.",
    ),
    (
        Lang::Nl,
        "coords",
        "Locatie: 52°22′N 4°54′E, hoogte 2 m boven NAP.",
    ),
    (
        Lang::Pt,
        "timestamp",
        "Reunião marcada para 07/12/2026 às 14h30 (horário de Brasília).",
    ),
    (
        Lang::Pl,
        "ref",
        "Zgodnie z art. 22 § 1 k.p., strona 14, pkt 3.2.1.",
    ),
    (
        Lang::Hi,
        "lottery",
        "Lottery ticket number 48 27 91 05 13 hai, result kal aayega.",
    ),
    (
        Lang::Ja,
        "serial",
        "製造番号 SN-2026-0417-8832 の製品が対象です。",
    ),
    (
        Lang::En,
        "order",
        "Order 302-4471958-2290416 shipped on 2026-12-03 and should arrive by Friday.",
    ),
    (
        Lang::En,
        "invoice",
        "Invoice INV-2026-004817 is due on 15/01/2027; the total is $1,249.99 including VAT.",
    ),
    (
        Lang::En,
        "timestamp",
        "The build finished at 2026-12-07T14:03:27.118Z after 412.6 s.",
    ),
    (
        Lang::En,
        "version",
        "Upgrading from 1.72.0 to 1.83.1 fixes the regression first seen in 1.80.0.",
    ),
    (
        Lang::En,
        "version",
        "Release 3.0.0-rc.1+build.20261207 is tagged but not published yet.",
    ),
    (
        Lang::En,
        "measure",
        "The clip is 1920x1080 pixels, 24.5 MB, and took 00:03:41 to render.",
    ),
    (
        Lang::En,
        "isbn",
        "ISBN 978-0-306-40615-7, second edition, pages 211-219.",
    ),
    (
        Lang::En,
        "barcode",
        "Scan the UPC 036000291452 on the back of the box.",
    ),
    (
        Lang::En,
        "tracking",
        "UPS tracking 1Z 999 AA1 01 2345 6784, expected Tuesday.",
    ),
    (
        Lang::En,
        "tracking",
        "USPS tracking number: 9400 1118 9922 3344 5566 77.",
    ),
    (
        Lang::En,
        "hash",
        "Commit 9fceb02d0ae598e95dc970b74767f19372d61af8 reverted a1b2c3d.",
    ),
    (
        Lang::En,
        "uuid",
        "Request 123e4567-e89b-12d3-a456-426614174000 failed with HTTP 503.",
    ),
    (
        Lang::En,
        "ip",
        "The service listens on 192.168.10.24:8443 and on [2001:db8::ff00:42]:9090.",
    ),
    (
        Lang::En,
        "coords",
        "Meet at 51.5007, -0.1246 by the bridge at 18:30.",
    ),
    (
        Lang::En,
        "serial",
        "Serial number C02XK1ZQJG5H, model A2338, bought 2025-09-14.",
    ),
    (
        Lang::En,
        "lottery",
        "This week's numbers: 4 - 11 - 23 - 35 - 42 - 49, bonus ball 17.",
    ),
    (
        Lang::En,
        "score",
        "Final score 3-1, with 61,432 in attendance.",
    ),
    (
        Lang::En,
        "ref",
        "See section 4.2.1, page 117, lines 12-48 of the specification.",
    ),
    (
        Lang::En,
        "ref",
        "src/engine/mod.rs:482:17 warning: unused variable `offset`",
    ),
    (
        Lang::En,
        "timestamp",
        "Flight LH 2406 leaves at 07:45 from gate B44, seat 23C.",
    ),
    (
        Lang::En,
        "measure",
        "Temperature dropped to -12.5 °C at 06:00; wind 35 km/h, gusts 61 km/h.",
    ),
    (
        Lang::En,
        "ref",
        "Your reference is 55 210 318; keep it for your records.",
    ),
    (
        Lang::En,
        "id",
        "Ping @lena.b in the payments channel before 16:00 UTC.",
    ),
    (
        Lang::En,
        "timestamp",
        "Batch 2026-12-07_0930 processed 1,048,576 rows in 3.2 s.",
    ),
    (
        Lang::En,
        "price",
        "The index closed at 18,231.44, up 1.27%, on volume of 2,304,118,000.",
    ),
    (
        Lang::En,
        "id",
        "MAC address 3c:22:fb:9a:4e:10 was seen on switch port 24.",
    ),
    (
        Lang::En,
        "measure",
        "Postcode SW1A 1AA; parcel 2.35 kg, 40 x 30 x 15 cm.",
    ),
    (
        Lang::En,
        "ref",
        "Case 2026-CV-004312 was adjourned to 14 January 2027.",
    ),
    (
        Lang::En,
        "hash",
        "Pulled sha256:4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945 in 2.1 s.",
    ),
    (
        Lang::En,
        "measure",
        "Latency p50 12 ms, p99 184 ms, over 1 000 000 requests.",
    ),
    (
        Lang::En,
        "id",
        "The meeting ID is 845 2291 7730 and the passcode is 481927.",
    ),
    (
        Lang::En,
        "id",
        "The bank's BIC is COBADEFFXXX and the VAT number DE 123 456 789.",
    ),
    (
        Lang::En,
        "measure",
        "Between 2019 and 2024 the population grew from 3,644,826 to 3,878,100.",
    ),
    (
        Lang::En,
        "timestamp",
        "Train 1537 departs 13:28 from platform 7, arriving 17:02.",
    ),
    (
        Lang::En,
        "timestamp",
        "Dec 07 09:14:03 web-3 nginx[2211]: 10.0.4.17 - - [07/Dec/2026:09:14:03 +0000] \"GET /v1/orders/88213 HTTP/1.1\" 200 5123",
    ),
    (
        Lang::De,
        "order",
        "Ihre Bestellung Nr. 4711-0815-2026 wurde am 03.12.2026 versandt.",
    ),
    (
        Lang::De,
        "invoice",
        "Rechnungsnummer RE-2026-004711 vom 01.12.2026, Betrag 1.299,00 €.",
    ),
    (
        Lang::De,
        "version",
        "Das Update auf Version 2.14.3 wird am 10.12. um 22:00 Uhr eingespielt.",
    ),
    (
        Lang::De,
        "ref",
        "Aktenzeichen 3 O 123/26, Termin am 14.01.2027 um 10:30 Uhr, Saal 2.017.",
    ),
    (
        Lang::De,
        "ref",
        "Gemäß § 433 Abs. 2 BGB ist der Käufer zur Zahlung verpflichtet.",
    ),
    (
        Lang::De,
        "measure",
        "Lieferung nach 10115 Berlin, Paketgewicht 12,4 kg, Maße 60 × 40 × 40 cm.",
    ),
    (
        Lang::De,
        "lottery",
        "Die Lottozahlen vom Samstag: 3, 11, 19, 27, 38, 45, Superzahl 7.",
    ),
    (
        Lang::De,
        "score",
        "Das Spiel endete 3:1, zur Halbzeit stand es 1:1.",
    ),
    (
        Lang::De,
        "tracking",
        "Die Sendungsnummer 00340434161094042557 steht in der Versandbestätigung.",
    ),
    (
        Lang::De,
        "barcode",
        "Artikel EAN 4006381333931, Preis 24,95 € inkl. MwSt.",
    ),
    (
        Lang::De,
        "id",
        "Kundennummer 100234567, Vertragsnummer V-2026-88412.",
    ),
    (
        Lang::De,
        "timestamp",
        "Der RE 4411 fällt heute zwischen 06:12 und 08:47 Uhr aus.",
    ),
    (
        Lang::De,
        "coords",
        "Koordinaten: 52.520008, 13.404954 (Pariser Platz).",
    ),
    (
        Lang::De,
        "ref",
        "Siehe Seite 42, Zeilen 17 bis 23 der Anlage 3.",
    ),
    (
        Lang::De,
        "measure",
        "Die Temperatur lag bei 21,5 °C, die Luftfeuchte bei 48 %.",
    ),
    (
        Lang::Fr,
        "order",
        "Votre commande n° 2026-12-0458713 a été expédiée le 04/12/2026.",
    ),
    (
        Lang::Fr,
        "invoice",
        "Facture FA-2026-11-00932, montant 1 249,90 € TTC, échéance 31/12/2026.",
    ),
    (
        Lang::Fr,
        "tracking",
        "Le colis 6A12345678901 est en cours d'acheminement.",
    ),
    (
        Lang::Fr,
        "version",
        "Mise à jour 4.2.17 installée le 03/12 à 09h45.",
    ),
    (
        Lang::Fr,
        "id",
        "Référence client 00458 921 773, contrat n° 2026-A-1187.",
    ),
    (
        Lang::Fr,
        "score",
        "Le match s'est terminé sur le score de 2 à 1 devant 45 000 spectateurs.",
    ),
    (
        Lang::Fr,
        "measure",
        "Code postal 75008 Paris, bâtiment B, 3e étage, porte 12.",
    ),
    (
        Lang::Fr,
        "measure",
        "Température : 18,5 °C ; vent 25 km/h ; pression 1013 hPa.",
    ),
    (
        Lang::Fr,
        "timestamp",
        "Le TGV 6611 part à 07h58 de la voie 11 et arrive à 10h02.",
    ),
    (
        Lang::Es,
        "order",
        "Su pedido n.º 408-2291-7753 salió del almacén el 02/12/2026.",
    ),
    (
        Lang::Es,
        "invoice",
        "Factura F2026/004512, importe 1.530,25 €, vencimiento 15/01/2027.",
    ),
    (
        Lang::Es,
        "version",
        "La versión 5.4.1 corrige el error de la 5.3.9.",
    ),
    (
        Lang::Es,
        "score",
        "El partido terminó 2-0 ante 78.214 espectadores.",
    ),
    (
        Lang::Es,
        "measure",
        "Código postal 28013 Madrid, planta 4.ª, puerta 2.",
    ),
    (
        Lang::Es,
        "lottery",
        "En el sorteo de Navidad salió premiado el 72.480.",
    ),
    (
        Lang::Es,
        "timestamp",
        "El vuelo IB 3166 sale a las 07:35 por la puerta J48.",
    ),
    (
        Lang::Es,
        "ref",
        "Referencia catastral 9872023VH5797S0001WX.",
    ),
    (
        Lang::Es,
        "ref",
        "Expediente 2026/000123-CIV, juzgado n.º 4 de Sevilla.",
    ),
    (
        Lang::Pt,
        "order",
        "Pedido nº 1.024.887 enviado em 03/12/2026, prazo de 5 dias úteis.",
    ),
    (
        Lang::Pt,
        "invoice",
        "Nota fiscal 000.145.332, série 1, valor R$ 2.349,90.",
    ),
    (
        Lang::Pt,
        "tracking",
        "Código de rastreio NB123456789BR, postado em 01/12.",
    ),
    (
        Lang::Pt,
        "measure",
        "CEP 01310-100, Avenida Paulista, 1578, 12º andar.",
    ),
    (
        Lang::Pt,
        "score",
        "O time venceu por 3 a 1, público de 62.418 pagantes.",
    ),
    (
        Lang::Pt,
        "version",
        "Versão 10.0.19045.3803 instalada com sucesso.",
    ),
    (
        Lang::Pt,
        "invoice",
        "Linha digitável: 23793.38128 60007.827136 95000.063305 9 94870000018990.",
    ),
    (
        Lang::It,
        "order",
        "Ordine n. 2026/118734 spedito il 03/12/2026.",
    ),
    (
        Lang::It,
        "invoice",
        "Fattura n. 452/2026 del 30/11/2026, totale € 1.220,00 IVA inclusa.",
    ),
    (
        Lang::It,
        "version",
        "La versione 3.11.7 è disponibile dal 5 dicembre.",
    ),
    (
        Lang::It,
        "score",
        "Partita finita 2-2 dopo 4 minuti di recupero.",
    ),
    (
        Lang::It,
        "measure",
        "CAP 20121 Milano, scala B, interno 14.",
    ),
    (
        Lang::It,
        "ref",
        "Protocollo n. 0045123 del 02/12/2026, pratica 2026/PA/771.",
    ),
    (
        Lang::Nl,
        "order",
        "Uw bestelling 1087-3342-9918 is op 04-12-2026 verzonden.",
    ),
    (
        Lang::Nl,
        "invoice",
        "Factuurnummer 2026-00871, bedrag € 1.249,00, te betalen vóór 31-12-2026.",
    ),
    (
        Lang::Nl,
        "measure",
        "Postcode 1012 AB Amsterdam, 3e verdieping.",
    ),
    (
        Lang::Nl,
        "score",
        "De thuisploeg won met 4-1 voor 54.990 toeschouwers.",
    ),
    (
        Lang::Nl,
        "version",
        "Versie 7.2.0 staat klaar voor de uitrol om 23:00 uur.",
    ),
    (
        Lang::Nl,
        "tracking",
        "Track & trace: 3SABCD1234567 bij de bezorger.",
    ),
    (
        Lang::Pl,
        "order",
        "Zamówienie nr 2026/12/004531 zostało wysłane 03.12.2026.",
    ),
    (
        Lang::Pl,
        "invoice",
        "Faktura VAT nr FV/1123/2026, kwota 2 450,00 zł, termin płatności 14 dni.",
    ),
    (
        Lang::Pl,
        "measure",
        "Kod pocztowy 00-950 Warszawa, piętro 3, pokój 312.",
    ),
    (
        Lang::Pl,
        "version",
        "Wersja 2.8.14 wymaga ponownego uruchomienia.",
    ),
    (
        Lang::Pl,
        "score",
        "Mecz zakończył się wynikiem 2:0, na trybunach 27 123 kibiców.",
    ),
    (
        Lang::Hi,
        "invoice",
        "Invoice GST-2026-11-00452, total ₹ 12,49,999 including 18% GST.",
    ),
    (
        Lang::Hi,
        "measure",
        "Pincode 560001, flat 4B, 3rd floor, lift ke paas.",
    ),
    (
        Lang::Hi,
        "score",
        "India ne match 7 wicket se jeeta, score 287/3 in 48.2 overs.",
    ),
    (
        Lang::Hi,
        "timestamp",
        "Train 12951 ka departure 16:35 hai, platform 3.",
    ),
    (
        Lang::Ja,
        "order",
        "ご注文番号 249-3381775-0021 の商品は12月8日に発送予定です。",
    ),
    (
        Lang::Ja,
        "invoice",
        "請求書番号 INV-20261207-0042、合計 ¥128,400（税込）。",
    ),
    (
        Lang::Ja,
        "measure",
        "郵便番号 〒100-0001 東京都千代田区千代田1-1。",
    ),
    (
        Lang::Ja,
        "version",
        "バージョン 16.4.1 へのアップデートは 2026/12/10 03:00 に行います。",
    ),
    (
        Lang::Ja,
        "score",
        "試合は 3対2 で終了、観客数は 41,208 人でした。",
    ),
    (
        Lang::Ja,
        "tracking",
        "お問い合わせ番号 4411-2290-8837 の配送状況をご確認ください。",
    ),
    (
        Lang::Ja,
        "timestamp",
        "会議は 14:00〜15:30、会議室 3-B です。",
    ),
];

/// The EAN-13 check digit of 12 digits.
fn ean_digit(body: &str) -> char {
    let sum: u32 = body
        .bytes()
        .enumerate()
        .map(|(i, b)| u32::from(b - b'0') * if i % 2 == 0 { 1 } else { 3 })
        .sum();
    char::from(b'0' + ((10 - sum % 10) % 10) as u8)
}

fn hex(rng: &mut Rng, n: usize) -> String {
    (0..n)
        .map(|_| char::from_digit(rng.below(16) as u32, 16).expect("a hex digit"))
        .collect()
}

/// Sentences whose numbers are drawn afresh: barcodes with their check
/// digits, hashes, UUIDs, timestamps, company and trip ids.
fn drawn(rng: &mut Rng) -> Vec<(Lang, &'static str, String)> {
    let mut out = Vec::new();
    for (lang, prefix) in [
        (Lang::De, "400"),
        (Lang::It, "800"),
        (Lang::Fr, "300"),
        (Lang::En, "501"),
    ] {
        let body = rng.fill(&format!("{prefix}#########"));
        let ean = format!("{body}{}", ean_digit(&body));
        let price = rng.fill("##,##");
        out.push((
            lang,
            "barcode",
            format!("SKU {} · EAN {ean} · {price} €", rng.fill("AB-####")),
        ));
    }
    for _ in 0..3 {
        let uuid = format!(
            "{}-{}-4{}-a{}-{}",
            hex(rng, 8),
            hex(rng, 4),
            hex(rng, 3),
            hex(rng, 3),
            hex(rng, 12)
        );
        out.push((
            Lang::En,
            "uuid",
            format!("trace_id={uuid} span_id={} status=OK", hex(rng, 16)),
        ));
        out.push((
            Lang::En,
            "hash",
            format!(
                "Merged {} into main ({} files changed).",
                hex(rng, 40),
                rng.below(40) + 2
            ),
        ));
        let ts = format!(
            "{}.{:03}+01:00",
            super::carriers::time(rng),
            rng.below(1000)
        );
        out.push((
            Lang::En,
            "timestamp",
            format!("Last sync {ts}, next run in 15 min."),
        ));
    }
    for _ in 0..3 {
        // A French company's SIRET: its SIREN and the whole both pass Luhn.
        let siren = rng.fill("%########");
        let siren = format!(
            "{}{}",
            &siren[..8],
            char::from(luhn_digit(&siren.as_bytes()[..8]))
        );
        let nic = rng.fill("0000#");
        let whole = format!("{siren}{nic}");
        let last = luhn_digit(&whole.as_bytes()[..13]);
        let siret = format!(
            "{} {} {} {}{}",
            &siren[..3],
            &siren[3..6],
            &siren[6..],
            &nic[..4],
            char::from(last)
        );
        out.push((
            Lang::Fr,
            "id",
            format!("Numéro SIRET {siret} de la société."),
        ));
        let nip = rng.fill("5##-###-##-##");
        out.push((
            Lang::Pl,
            "id",
            format!("NIP firmy: {nip}, REGON {}.", rng.fill("#########")),
        ));
        let pnr = rng.fill("4#########");
        out.push((
            Lang::Hi,
            "id",
            format!("PNR {pnr} confirm ho gaya, coach B2 berth 41."),
        ));
        let upi = rng.fill("4###########");
        out.push((
            Lang::Hi,
            "id",
            format!("UPI ref no. {upi} successful, ₹ 1,250 paid."),
        ));
        let od = rng.fill("OD4#################");
        out.push((
            Lang::Hi,
            "order",
            format!("Order ID {od} ka delivery 12 Dec tak hoga."),
        ));
    }
    out
}

/// Every negative sentence: (language, what its numbers are, text).
pub fn sentences(rng: &mut Rng) -> Vec<(Lang, &'static str, String)> {
    let mut out: Vec<_> = WRITTEN
        .iter()
        .map(|&(lang, what, text)| (lang, what, text.to_string()))
        .collect();
    out.extend(drawn(rng));
    out
}
