//! Sentences full of numbers that are none of the four kinds: order,
//! invoice and tracking numbers, timestamps, dates, versions, ids,
//! amounts, postcodes, ISBNs and barcodes, hashes, coordinates, SKUs,
//! national account and tax numbers, 16-digit references that fail Luhn,
//! short codes, ports and measurements; in every language of the set
//! (this file's six and `negatives_more`'s eleven).
//!
//! Each is written out except for its tokens: `<luhnbad>` (sixteen digits
//! in fours, starting 4 or 5, failing Luhn), `<luhnbad-solid>` (the same
//! unspaced), `<hex40>` and `<hex64>` (a commit and a SHA-256).

use super::Lang;
use super::negatives_more;
use crate::common::{Rng, grouped, luhn_digit};

/// (language, class, sentence with tokens).
pub type Negative = (Lang, &'static str, &'static str);

const SENTENCES: &[Negative] = &[
    (
        Lang::En,
        "order",
        "Order 1187-44-2093 shipped on 2026-12-03 in 3 parcels (12.4 kg total).",
    ),
    (
        Lang::En,
        "tracking",
        "UPS tracking 1Z 999 AA1 01 2345 6784, estimated delivery 09/12 between 10:00 and 14:00.",
    ),
    (
        Lang::En,
        "version",
        "Upgraded the runner from v2.311.0 to v2.319.1; node 20.11.1, npm 10.2.4, @types/node 20.11.5.",
    ),
    (
        Lang::En,
        "luhn_fail",
        "Reference <luhnbad> is the payment batch id, not a card.",
    ),
    (
        Lang::En,
        "timestamp",
        "The job ran 2026-12-06T23:59:59.999Z to 2026-12-07T00:04:12.031Z (epoch 1765065599 to 1765065852).",
    ),
    (
        Lang::En,
        "isbn",
        "ISBN 978-0-306-40615-7, 2nd edition, 412 pp., printed 2019.",
    ),
    (
        Lang::En,
        "coordinates",
        "Meet at 51.507351, -0.127758 (Trafalgar Sq), elevation 23 m.",
    ),
    (
        Lang::En,
        "hash",
        "Commit <hex40> fixed the build; artifact sha256 <hex64>.",
    ),
    (
        Lang::En,
        "amount",
        "Total due: $1,284,500.75 across 37 invoices; 2.5% late fee after 30 days.",
    ),
    (
        Lang::En,
        "port",
        "The service listens on 127.0.0.1:8443 and the metrics on :9090; timeout 30000 ms.",
    ),
    (
        Lang::En,
        "account",
        "Sort code 20-00-00, account 55779911 (domestic transfers only).",
    ),
    (
        Lang::En,
        "booking",
        "Flight BA0117 departs 18:55, gate A22, seat 34K; booking ref Q7XK2M.",
    ),
    (
        Lang::En,
        "sku",
        "Stock: SKU 88-4410-27, 1,250 units at bin 04-12-B; reorder point 300.",
    ),
    (
        Lang::En,
        "meeting_id",
        "Meeting ID 842 1937 5560, passcode 771204.",
    ),
    (
        Lang::De,
        "invoice",
        "Rechnung Nr. 2026-004711 vom 07.12.2026 über 1.234,56 € (inkl. 19 % MwSt.).",
    ),
    (
        Lang::De,
        "tax",
        "USt-IdNr. DE 123 456 789, Steuernummer 143/815/08156, HRB 98765 Amtsgericht München.",
    ),
    (
        Lang::De,
        "postcode",
        "Lieferadresse: Friedrichstraße 123, 10117 Berlin, Lieferung KW 50.",
    ),
    (
        Lang::De,
        "tracking",
        "DHL-Sendungsnummer 00340434161094042557, Paketgewicht 4,2 kg.",
    ),
    (
        Lang::De,
        "version",
        "Firmware 4.17.2-r3 (Build 20261201.1432) auf allen 24 Geräten ausgerollt.",
    ),
    (
        Lang::De,
        "luhn_fail",
        "Vorgangsnummer <luhnbad-solid> bitte bei Rückfragen angeben.",
    ),
    (
        Lang::De,
        "barcode",
        "Maße 120 x 80 x 45 cm, Gewicht 18,5 kg, EAN 4006381333931.",
    ),
    (
        Lang::De,
        "date",
        "Termin am Mo, 14.12.2026 von 09:30 bis 11:00 Uhr, Raum 3.142.",
    ),
    (
        Lang::De,
        "order",
        "Bestellung 302-4471193-8815520 wurde am 05.12. storniert.",
    ),
    (
        Lang::De,
        "measurement",
        "Zählerstand 048213,7 kWh am 01.12.2026, Zählernummer 1ESY1160123456.",
    ),
    (
        Lang::Fr,
        "invoice",
        "Facture n° FA-2026-11-0387 du 30/11/2026, montant 2 450,00 € TTC.",
    ),
    (
        Lang::Fr,
        "tax",
        "SIRET 732 829 320 00074, code APE 6201Z, TVA FR 40 732829320.",
    ),
    (
        Lang::Fr,
        "tracking",
        "Colis suivi n° 6A12345678901, livré au 12 rue de la Paix, 75002 Paris.",
    ),
    (
        Lang::Fr,
        "version",
        "Version 3.12.0 publiée le 02/12/2026 ; correctif 3.12.1 prévu semaine 50.",
    ),
    (
        Lang::Fr,
        "order",
        "Commande n° 100045872 : 3 articles, réf. SKU-FR-44871-B, 89,90 € la pièce.",
    ),
    (
        Lang::Fr,
        "short_code",
        "Rendez-vous le 15/12 à 14h30, bâtiment B, porte 204, code d'accès 4821.",
    ),
    (
        Lang::Fr,
        "measurement",
        "Température relevée : 21,5 °C, humidité 48 %, pression 1013,25 hPa.",
    ),
    (
        Lang::Fr,
        "sku",
        "Lot 2026-48-0193, DLUO 31/03/2027, 1 200 unités.",
    ),
    (
        Lang::Fr,
        "luhn_fail",
        "Référence de paiement <luhnbad> (ne pas confondre avec le numéro de carte).",
    ),
    (
        Lang::Fr,
        "booking",
        "Vol AF1234 le 18/12, départ 07h05, terminal 2E, siège 12C.",
    ),
    (
        Lang::Es,
        "order",
        "Pedido n.º 4050-2291-77 enviado el 03/12/2026, 2 bultos, 7,3 kg.",
    ),
    (
        Lang::Es,
        "tax",
        "NIF B-12345678, factura F2026/0912 por 3.456,78 € IVA incluido.",
    ),
    (
        Lang::Es,
        "postcode",
        "Código postal 28013 Madrid, calle Mayor 45, 3.º izq.",
    ),
    (
        Lang::Es,
        "tracking",
        "Envío Correos PK7Y2P0301234560128002K, entrega 9-11 de diciembre.",
    ),
    (
        Lang::Es,
        "version",
        "Versión 1.22.3 (compilación 20261204) instalada en 48 equipos.",
    ),
    (
        Lang::Es,
        "coordinates",
        "Coordenadas 40.416775, -3.703790, altitud 667 m.",
    ),
    (
        Lang::Es,
        "amount",
        "Importe: 12.500,00 MXN, tipo de cambio 18,4215, comisión 1,5 %.",
    ),
    (
        Lang::Es,
        "luhn_fail",
        "Referencia de la transferencia <luhnbad-solid>.",
    ),
    (
        Lang::Es,
        "timestamp",
        "Hora de llegada 23:45:10 UTC-3, vuelo AR1132, asiento 23F.",
    ),
    (
        Lang::Pt,
        "order",
        "Pedido nº 7702-1458-33 saiu para entrega em 04/12/2026.",
    ),
    (
        Lang::Pt,
        "postcode",
        "CEP 01310-100, Av. Paulista, 1578 - Bela Vista, São Paulo - SP.",
    ),
    (
        Lang::Pt,
        "invoice",
        "Nota fiscal 000.123.456, série 1, valor R$ 12.345,67.",
    ),
    (
        Lang::Pt,
        "tracking",
        "Código de rastreio NB123456789BR, postado em 01/12.",
    ),
    (
        Lang::Pt,
        "account",
        "Linha digitável: 34191.79001 01043.510047 91020.150008 1 90000000012345.",
    ),
    (
        Lang::Pt,
        "version",
        "Versão 5.4.1-beta2 lançada; 1.024 downloads na primeira hora.",
    ),
    (
        Lang::Pt,
        "id",
        "Protocolo de atendimento 2026120712345678, guarde para referência.",
    ),
    (
        Lang::Pt,
        "measurement",
        "Temperatura 31,5 °C, umidade 78%, vento 12 km/h.",
    ),
    (
        Lang::Pt,
        "tax",
        "CNPJ 12.345.678/0001-95 consta como inativo.",
    ),
    (
        Lang::It,
        "order",
        "Ordine n. 2026/AB/00871 del 02.12.2026, consegna prevista 10-12 dicembre.",
    ),
    (
        Lang::It,
        "tax",
        "Partita IVA 01234567890, codice fiscale RSSMRA85M01H501Z.",
    ),
    (
        Lang::It,
        "postcode",
        "CAP 20121 Milano, via Manzoni 12, interno 4.",
    ),
    (
        Lang::It,
        "invoice",
        "Fattura elettronica n. 000347, importo 1.580,40 €, IVA 22%.",
    ),
    (
        Lang::It,
        "tracking",
        "Raccomandata n. 15487963254-1 spedita il 27/11.",
    ),
    (
        Lang::It,
        "version",
        "Versione 2.8.14 del gestionale, patch 2.8.15 in arrivo.",
    ),
    (
        Lang::It,
        "coordinates",
        "Coordinate 41.902782, 12.496366; quota 21 m s.l.m.",
    ),
    (
        Lang::It,
        "luhn_fail",
        "Codice pratica <luhnbad>, non è un numero di carta.",
    ),
    (
        Lang::It,
        "date",
        "Orario: lun-ven 08:30-12:30 / 14:00-18:00, sabato 09:00-12:00.",
    ),
];

/// Every negative sentence, its tokens filled.
pub fn sentences(rng: &mut Rng) -> Vec<(Lang, &'static str, String)> {
    SENTENCES
        .iter()
        .chain(negatives_more::SENTENCES)
        .map(|&(lang, class, template)| (lang, class, expand(rng, template)))
        .collect()
}

fn expand(rng: &mut Rng, template: &str) -> String {
    let mut out = template.to_string();
    while let Some(at) = out.find('<') {
        let end = at + out[at..].find('>').expect("a closed token");
        let value = match &out[at + 1..end] {
            "luhnbad" => grouped(&luhn_bad(rng), &[4; 4], " "),
            "luhnbad-solid" => luhn_bad(rng),
            "hex40" => hex(rng, 40),
            "hex64" => hex(rng, 64),
            other => panic!("no token {other}"),
        };
        out.replace_range(at..=end, &value);
    }
    out
}

/// Sixteen digits starting 4 or 5 whose last is not the Luhn digit.
pub fn luhn_bad(rng: &mut Rng) -> String {
    let mut digits = String::from(if rng.below(2) == 0 { "4" } else { "5" });
    while digits.len() < 15 {
        digits.push(rng.digit() as char);
    }
    let right = luhn_digit(digits.as_bytes()) - b'0';
    let wrong = (right + 1 + rng.below(9) as u8) % 10;
    digits.push(char::from(b'0' + wrong));
    digits
}

fn hex(rng: &mut Rng, n: usize) -> String {
    const DIGITS: &[u8] = b"0123456789abcdef";
    (0..n).map(|_| char::from(*rng.pick(DIGITS))).collect()
}
