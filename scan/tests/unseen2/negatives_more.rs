//! The negative sentences of the set's other eleven languages (see
//! `negatives` for what they hold and their tokens).

use super::Lang;
use super::negatives::Negative;

pub const SENTENCES: &[Negative] = &[
    (
        Lang::Nl,
        "order",
        "Bestelnummer 1049-3381-2207, verzonden op 04-12-2026.",
    ),
    (
        Lang::Nl,
        "postcode",
        "Postcode 1012 AB Amsterdam, huisnummer 221-3.",
    ),
    (Lang::Nl, "tax", "KvK 12345678, btw-nummer NL123456789B01."),
    (
        Lang::Nl,
        "tracking",
        "Track & Trace 3SABCD1234567, bezorging tussen 17:00 en 21:00.",
    ),
    (
        Lang::Nl,
        "invoice",
        "Factuur 2026-0815 van € 2.345,60, betaaltermijn 14 dagen.",
    ),
    (
        Lang::Nl,
        "version",
        "Versie 14.2.1 (build 8871) staat op 120 laptops.",
    ),
    (
        Lang::Nl,
        "luhn_fail",
        "Kenmerk <luhnbad-solid> vermelden bij betaling.",
    ),
    (
        Lang::Nl,
        "measurement",
        "Afmetingen 210 x 297 mm, 80 g/m², 500 vel per pak.",
    ),
    (
        Lang::Pl,
        "order",
        "Zamówienie nr 2026/12/004589 zostało wysłane 05.12.2026.",
    ),
    (
        Lang::Pl,
        "tax",
        "NIP 123-456-32-18, REGON 123456785, KRS 0000123456.",
    ),
    (
        Lang::Pl,
        "postcode",
        "Kod pocztowy 00-950 Warszawa, ul. Marszałkowska 104/122.",
    ),
    (
        Lang::Pl,
        "tracking",
        "Numer przesyłki InPost 620123456789012345678901.",
    ),
    (
        Lang::Pl,
        "invoice",
        "Faktura VAT FV/2026/12/0031 na kwotę 4 321,09 zł.",
    ),
    (
        Lang::Pl,
        "version",
        "Wersja 7.3.0, kompilacja 20261206-1830.",
    ),
    (
        Lang::Pl,
        "measurement",
        "Temperatura −12,5 °C, ciśnienie 1021 hPa, wiatr 24 km/h.",
    ),
    (Lang::Pl, "luhn_fail", "Identyfikator płatności <luhnbad>."),
    (
        Lang::Hi,
        "order",
        "Order ID 405-8823451-1120937 ka delivery 9 Dec tak hoga.",
    ),
    (
        Lang::Hi,
        "booking",
        "PNR 4521873690, train 12951, coach B3, seat 42.",
    ),
    (
        Lang::Hi,
        "postcode",
        "Pincode 560034, Koramangala 5th Block, Bengaluru.",
    ),
    (
        Lang::Hi,
        "tax",
        "GSTIN 29ABCDE1234F1Z5, invoice INV/2026-27/00412, amount ₹ 1,23,456.00.",
    ),
    (
        Lang::Hi,
        "id",
        "UPI transaction ID 433912875610, 07-12-2026 14:22.",
    ),
    (
        Lang::Hi,
        "short_code",
        "Aadhaar ke last 4 digits 7283 hain, baaki masked.",
    ),
    (
        Lang::Hi,
        "version",
        "App version 8.4.12 (build 80412) Play Store pe hai.",
    ),
    (
        Lang::Hi,
        "luhn_fail",
        "Ref no. <luhnbad-solid> se payment track karo.",
    ),
    (
        Lang::Ja,
        "order",
        "注文番号 250-4471936-2281057、12月9日お届け予定です。",
    ),
    (Lang::Ja, "postcode", "〒100-0005 東京都千代田区丸の内1-9-1"),
    (
        Lang::Ja,
        "invoice",
        "請求書番号 INV-2026-000482、金額 ¥128,000（税込）。",
    ),
    (
        Lang::Ja,
        "tracking",
        "追跡番号 4567-8901-2345、ヤマト運輸で発送済み。",
    ),
    (
        Lang::Ja,
        "version",
        "バージョン 3.4.1 にアップデートしました（ビルド 20261205）。",
    ),
    (
        Lang::Ja,
        "date",
        "会議は 2026/12/10 15:00〜16:30、会議室 12-B です。",
    ),
    (
        Lang::Ja,
        "tax",
        "法人番号 1234567890123、登記日 2019年4月1日。",
    ),
    (
        Lang::Ja,
        "luhn_fail",
        "参照番号 <luhnbad> はカード番号ではありません。",
    ),
    (
        Lang::Ru,
        "order",
        "Заказ № 48213-7764 от 03.12.2026, доставка 10.12.2026.",
    ),
    (
        Lang::Ru,
        "tax",
        "ИНН 7701234567, КПП 770101001, ОГРН 1157746123456.",
    ),
    (
        Lang::Ru,
        "postcode",
        "Индекс 101000, г. Москва, ул. Мясницкая, д. 26, кв. 14.",
    ),
    (
        Lang::Ru,
        "tracking",
        "Трек-номер RA123456789RU, вес 1,25 кг.",
    ),
    (
        Lang::Ru,
        "invoice",
        "Счёт № 2026-1187 на сумму 125 400,00 ₽, НДС 20 %.",
    ),
    (Lang::Ru, "version", "Версия 12.4.7, сборка 20261203.2."),
    (
        Lang::Ru,
        "account",
        "Расчётный счёт 40702810938000012345, БИК 044525225, корр. счёт 30101810400000000225.",
    ),
    (Lang::Ru, "luhn_fail", "Номер обращения <luhnbad-solid>."),
    (
        Lang::Ru,
        "coordinates",
        "Координаты 55.751244, 37.618423, высота 156 м.",
    ),
    (
        Lang::Tr,
        "order",
        "Sipariş no 8837214560, 05.12.2026 tarihinde kargoya verildi.",
    ),
    (
        Lang::Tr,
        "tax",
        "Vergi no 1234567890, Kadıköy Vergi Dairesi.",
    ),
    (
        Lang::Tr,
        "amount",
        "Fatura tutarı 12.450,75 TL, KDV %20 dahil.",
    ),
    (
        Lang::Tr,
        "postcode",
        "Posta kodu 34710 Kadıköy/İstanbul, daire 7.",
    ),
    (
        Lang::Tr,
        "tracking",
        "Kargo takip no 7301234567891, teslimat 2-3 iş günü.",
    ),
    (
        Lang::Tr,
        "version",
        "Sürüm 4.2.0 yayınlandı, derleme 20261206.",
    ),
    (Lang::Tr, "luhn_fail", "İşlem referansı <luhnbad>."),
    (
        Lang::Tr,
        "date",
        "Toplantı 14.12.2026 saat 10:30, salon B-204.",
    ),
    (
        Lang::Zh,
        "order",
        "订单号 202612071830452217，预计12月9日送达。",
    ),
    (
        Lang::Zh,
        "tracking",
        "快递单号 SF1234567890123，顺丰已揽收。",
    ),
    (
        Lang::Zh,
        "invoice",
        "发票号码 04412345，金额 ¥3,280.00，税率 13%。",
    ),
    (
        Lang::Zh,
        "postcode",
        "邮编 100871，北京市海淀区颐和园路5号。",
    ),
    (
        Lang::Zh,
        "version",
        "版本 2.6.18 已发布，构建号 20261207.3。",
    ),
    (Lang::Zh, "tax", "统一社会信用代码 91310000MA1FL1234X。"),
    (
        Lang::Zh,
        "luhn_fail",
        "交易流水号 <luhnbad-solid>，请勿与卡号混淆。",
    ),
    (
        Lang::Zh,
        "date",
        "会议时间 2026-12-10 14:00—15:30，3号楼 1205 室。",
    ),
    (
        Lang::Ko,
        "order",
        "주문번호 20261207-0004521, 배송 예정일 12월 9일.",
    ),
    (Lang::Ko, "tax", "사업자등록번호 123-45-67890, 대표 김민준."),
    (
        Lang::Ko,
        "postcode",
        "우편번호 06236, 서울특별시 강남구 테헤란로 152.",
    ),
    (
        Lang::Ko,
        "tracking",
        "송장번호 6123-4567-8901 (CJ대한통운).",
    ),
    (Lang::Ko, "amount", "금액 1,250,000원, 부가세 포함."),
    (Lang::Ko, "version", "버전 5.3.2 업데이트, 빌드 20261206."),
    (Lang::Ko, "luhn_fail", "거래 참조번호 <luhnbad>."),
    (
        Lang::Ko,
        "date",
        "회의 2026.12.10(목) 14:00~15:30, 12층 회의실.",
    ),
    (
        Lang::Ar,
        "order",
        "رقم الطلب 7714-2209-33 تم شحنه بتاريخ 2026/12/05.",
    ),
    (
        Lang::Ar,
        "tax",
        "الرقم الضريبي 300012345600003، فاتورة رقم 2026-0481.",
    ),
    (
        Lang::Ar,
        "amount",
        "المبلغ الإجمالي 4,750.00 ريال شامل ضريبة القيمة المضافة 15%.",
    ),
    (
        Lang::Ar,
        "postcode",
        "الرمز البريدي 12271، الرياض، مبنى 7420.",
    ),
    (Lang::Ar, "tracking", "رقم الشحنة 1Z8V92W40312345678."),
    (Lang::Ar, "version", "الإصدار 3.1.4، رقم البناء 20261203."),
    (Lang::Ar, "luhn_fail", "مرجع العملية <luhnbad-solid>."),
    (
        Lang::Ar,
        "date",
        "الموعد يوم 2026-12-12 الساعة 10:30 صباحاً، قاعة 3.",
    ),
    (
        Lang::Id,
        "order",
        "Nomor pesanan INV/20261207/MPL/3381920457 sedang dikemas.",
    ),
    (
        Lang::Id,
        "tax",
        "NPWP 01.234.567.8-901.000 atas nama PT Maju Jaya.",
    ),
    (
        Lang::Id,
        "postcode",
        "Kode pos 12190, Jl. Jend. Sudirman Kav. 52-53, Jakarta Selatan.",
    ),
    (
        Lang::Id,
        "amount",
        "Total Rp 1.250.000, ongkir Rp 18.000, diskon 10%.",
    ),
    (
        Lang::Id,
        "tracking",
        "No. resi JNE 0123456789012345, estimasi 2-3 hari.",
    ),
    (Lang::Id, "version", "Versi aplikasi 4.82.1 (build 48201)."),
    (Lang::Id, "luhn_fail", "Kode referensi <luhnbad>."),
    (
        Lang::Id,
        "coordinates",
        "Koordinat -6.200000, 106.816666, ketinggian 8 m.",
    ),
    (
        Lang::Sv,
        "order",
        "Ordernummer 558-2291-043, skickad 2026-12-04.",
    ),
    (
        Lang::Sv,
        "tax",
        "Organisationsnummer 556677-8899, momsreg.nr SE556677889901.",
    ),
    (
        Lang::Sv,
        "postcode",
        "Postnummer 114 55 Stockholm, Strandvägen 7A, lgh 1102.",
    ),
    (
        Lang::Sv,
        "account",
        "Bankgiro 5050-1055, OCR 12345678901234.",
    ),
    (
        Lang::Sv,
        "tracking",
        "Kollinummer 00370733740123456789, PostNord.",
    ),
    (Lang::Sv, "version", "Version 9.1.3 rullas ut vecka 50."),
    (Lang::Sv, "luhn_fail", "Referens <luhnbad-solid>."),
    (
        Lang::Sv,
        "measurement",
        "Mått 60 x 40 x 35 cm, vikt 12,4 kg.",
    ),
];
