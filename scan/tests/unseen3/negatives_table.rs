//! The negative sentences of the third set, by language and class, as
//! agents' users, logs and tool outputs write them; `<token>`s are the
//! numbers `negatives::token` draws afresh each time.

use super::Lang;

pub const TEMPLATES: &[(Lang, &str, &str)] = &[
    // English
    (
        Lang::En,
        "order",
        "Your order <amazon> shipped on <date> via UPS <ups>; order total <amount>.",
    ),
    (
        Lang::En,
        "tracking",
        "USPS tracking <usps> shows the parcel left the facility at <time>, FedEx backup label <fedex>.",
    ),
    (
        Lang::En,
        "invoice",
        "Invoice <invoice> for purchase order <order> is due <date>; remit <amount> and quote EIN <ein>.",
    ),
    (
        Lang::En,
        "log",
        "[<iso>] GET /api/v2/orders/<count> 200 took <ms> (req <uuid>, build <short>)",
    ),
    (
        Lang::En,
        "version",
        "Upgraded node from <version> to <version>; the Docker image digest is sha256:<sha>.",
    ),
    (
        Lang::En,
        "luhn id",
        "Loyalty account <luhn16> was merged into member <luhn16> at <iso>.",
    ),
    (
        Lang::En,
        "device",
        "Replacement handset IMEI <imei>, SIM ICCID <iccid>, MAC <mac>.",
    ),
    (
        Lang::En,
        "series",
        "Batch sizes tried: <series>; best throughput at <resolution> with <size> of cache.",
    ),
    (
        Lang::En,
        "isbn",
        "Please reorder ISBN <isbn> and <isbn>, barcode <ean>, SKU <sku>.",
    ),
    (
        Lang::En,
        "company",
        "Company number <crn> (England and Wales), VAT <vat>, ABN <abn>.",
    ),
    (
        Lang::En,
        "coordinates",
        "Drop-off point at <coord>, gate code 4471, dock 12, ETA <time>.",
    ),
    (
        Lang::En,
        "ids",
        "Rows <stepids> failed validation; see ticket <ticket> and trace <hex>.",
    ),
    // German
    (
        Lang::De,
        "invoice",
        "Rechnung <invoice> vom <date> über <amount>, USt-IdNr. <vat>, Steuernummer <steuernr>.",
    ),
    (
        Lang::De,
        "order",
        "Ihre Bestellung <order> (Kundennummer <count>) wird an 10115 Berlin geliefert, Sendungsnummer <dhl>.",
    ),
    (
        Lang::De,
        "tracking",
        "Paket <ups> ist am <date> um <time> in der Packstation 127 eingetroffen.",
    ),
    (
        Lang::De,
        "luhn id",
        "Die Seriennummer <luhn16> gehört zum Gerät mit IMEI <imei>, Firmware <version>.",
    ),
    (
        Lang::De,
        "timestamp",
        "Zeitstempel <unixms>, Dauer <ms>, Speicher <size>, Auflösung <resolution>.",
    ),
    (
        Lang::De,
        "vat",
        "Bitte die Gutschrift an ATU12345678 statt <vat> ausstellen, BIC <bic>, Betrag <amount>.",
    ),
    // French
    (
        Lang::Fr,
        "company",
        "La société est immatriculée sous le SIRET <siret> (SIREN <siren>), TVA <vat>.",
    ),
    (
        Lang::Fr,
        "order",
        "Commande <order> du <date> : <amount> TTC, livraison au 75008 Paris, colis <ups>.",
    ),
    (
        Lang::Fr,
        "version",
        "La version <version> corrige le ticket <ticket> ; hachage du commit <sha>.",
    ),
    (
        Lang::Fr,
        "invoice",
        "Facture <invoice>, échéance le <date>, référence client <count>, montant <amount>.",
    ),
    (
        Lang::Fr,
        "device",
        "Le boîtier porte l'ICCID <iccid> et l'IMEI <imei>, écoute sur <port>.",
    ),
    // Spanish
    (
        Lang::Es,
        "order",
        "Su pedido <order> con importe <amount> llegará el <date> a 28013 Madrid.",
    ),
    (
        Lang::Es,
        "company",
        "Factura <invoice> emitida por NIF <vat>, RFC <rfc>, CIF B86543219.",
    ),
    (
        Lang::Es,
        "log",
        "El proceso <count> terminó en <ms> con <percent> de CPU a las <time>.",
    ),
    (
        Lang::Es,
        "series",
        "Probamos con lotes de <series> registros y la resolución <resolution>.",
    ),
    // Portuguese
    (
        Lang::Pt,
        "company",
        "CNPJ <cnpj>, CPF do responsável <cpf>, nota fiscal <invoice>, CEP 01310-100.",
    ),
    (
        Lang::Pt,
        "order",
        "Pedido <order> no valor de <amount>, previsão de entrega <date>, rastreio <ups>.",
    ),
    (
        Lang::Pt,
        "luhn id",
        "O cartão de fidelidade <luhn16> e o cupom <luhn19> foram cancelados em <date>.",
    ),
    // Italian
    (
        Lang::It,
        "company",
        "Partita IVA <vat>, codice ordine <order>, CAP 20121 Milano, importo <amount>.",
    ),
    (
        Lang::It,
        "tracking",
        "La spedizione <dhl> è partita il <date> alle <time>, peso 12,5 kg, collo 3 di 4.",
    ),
    (
        Lang::It,
        "version",
        "Aggiornato il firmware da <version> a <version>; durata del test <ms>.",
    ),
    // Dutch
    (
        Lang::Nl,
        "company",
        "KvK-nummer <kvk>, btw-nummer <vat>, factuur <invoice> van <amount>.",
    ),
    (
        Lang::Nl,
        "order",
        "Bestelling <order> wordt op <date> bezorgd in 1012 AB Amsterdam, track & trace <ups>.",
    ),
    (
        Lang::Nl,
        "log",
        "Job <uuid> verwerkte <count> regels in <ms>, geheugen <size>.",
    ),
    // Polish
    (
        Lang::Pl,
        "company",
        "NIP <nip>, REGON <kvk>1, faktura <invoice> na kwotę <amount>.",
    ),
    (
        Lang::Pl,
        "order",
        "Zamówienie <order> z dnia <date>, kod pocztowy 00-950 Warszawa, paczka <dhl>.",
    ),
    // Hindi / Hinglish
    (
        Lang::Hi,
        "company",
        "Hamara GSTIN <gstin> hai aur PAN <pan>, invoice <invoice> ka amount <amount> hai.",
    ),
    (
        Lang::Hi,
        "order",
        "Order <order> <date> ko deliver hoga, PIN code 560001, AWB <fedex>.",
    ),
    (
        Lang::Hi,
        "series",
        "Server ne <series> requests handle kiye, latency <ms> rahi.",
    ),
    // Japanese
    (
        Lang::Ja,
        "invoice",
        "適格請求書発行事業者登録番号 <jpcorp>、請求書番号 <invoice>、合計 <amount>。",
    ),
    (
        Lang::Ja,
        "order",
        "ご注文番号 <order> の商品は <date> に 〒100-0001 へ発送しました。",
    ),
    (
        Lang::Ja,
        "log",
        "処理時間 <ms>、メモリ <size>、解像度 <resolution>、ビルド <short>。",
    ),
    // Russian
    (
        Lang::Ru,
        "company",
        "ИНН <inn>, ОГРН <ogrn>, КПП 773601001, счёт <invoice> на сумму <amount>.",
    ),
    (
        Lang::Ru,
        "order",
        "Заказ <order> от <date> доставлен в пункт выдачи 101000, трек <ups>.",
    ),
    (
        Lang::Ru,
        "log",
        "Версия <version>, время ответа <ms>, идентификатор <uuid>.",
    ),
    // Turkish
    (
        Lang::Tr,
        "company",
        "Vergi no <vkn>, fatura <invoice>, tutar <amount>, posta kodu 34710.",
    ),
    (
        Lang::Tr,
        "order",
        "Siparişiniz <order> <date> tarihinde kargoya verildi, takip no <dhl>.",
    ),
    // Chinese
    (
        Lang::Zh,
        "company",
        "统一社会信用代码 <uscc>，发票号 <invoice>，金额 <amount>。",
    ),
    (
        Lang::Zh,
        "order",
        "订单号<order>已于<date>发货，邮编100000，运单号<fedex>。",
    ),
    (
        Lang::Zh,
        "luhn id",
        "会员卡号<luhn16>与设备序列号<imei>已绑定，时间戳<unixms>。",
    ),
    // Korean
    (
        Lang::Ko,
        "company",
        "사업자등록번호 <krbiz>, 세금계산서 <invoice>, 금액 <amount>.",
    ),
    (
        Lang::Ko,
        "order",
        "주문번호 <order> 상품이 <date> 에 출고되었습니다. 우편번호 06236, 송장 <ups>.",
    ),
    // Arabic
    (
        Lang::Ar,
        "invoice",
        "رقم الفاتورة <invoice> بتاريخ <date>، المبلغ <amount>، الرقم الضريبي <savat>.",
    ),
    (
        Lang::Ar,
        "order",
        "تم شحن الطلب <order> في <time>، رقم التتبع <dhl>، الإحداثيات <coord>.",
    ),
    // Indonesian
    (
        Lang::Id,
        "order",
        "Pesanan <order> senilai <amount> dikirim <date>, resi <fedex>, kode pos 12190.",
    ),
    (
        Lang::Id,
        "log",
        "Build <version> selesai dalam <ms>, ukuran <size>, commit <short>.",
    ),
    // Swedish
    (
        Lang::Sv,
        "company",
        "Organisationsnummer <orgnr>, momsreg.nr <vat>, faktura <invoice> på <amount>.",
    ),
    (
        Lang::Sv,
        "order",
        "Order <order> levereras <date> till 111 22 Stockholm, kolli-id <dhl>.",
    ),
    // Mixed tool output
    (
        Lang::En,
        "tool output",
        "vehicle VIN <vin>, flight <flight>, booking <booking>, seat 14C, gate B22",
    ),
    (
        Lang::En,
        "tool output",
        "ISBN-13 <isbn> · EAN <ean> · weight 1.25 kg · dims 30 x 20 x 4 cm",
    ),
    (
        Lang::En,
        "tool output",
        "stats: p50 <ms>, p99 <ms>, rps <count>, errors <percent>, host <ip>, listen <port>",
    ),
    (
        Lang::En,
        "tool output",
        "commit <sha> merged <iso>; artifact <size>; checksum <hex>",
    ),
];
