//! The seven languages the second set adds to the first set's ten:
//! sentences holding a phone, card or IBAN, names, and the words around a
//! body. Chinese, Korean and Japanese text often puts a number right
//! against the characters, with no space; some sentences do.

use sluice_scan::Kind;

use super::Lang;

/// The words a carrier writes around the values, in one language.
pub struct Words {
    pub names: &'static [(&'static str, &'static str)],
    pub subject: &'static str,
    pub ask: &'static str,
    pub quote_header: &'static str,
}

/// Sentences holding one phone, card or IBAN (`{}`).
pub fn sentences(lang: Lang, kind: Kind) -> &'static [&'static str] {
    let [phone, card, iban] = table(lang);
    match kind {
        Kind::Phone => phone,
        Kind::CreditCard => card,
        Kind::Iban => iban,
        other => panic!("no sentences for {other}"),
    }
}

fn table(lang: Lang) -> [&'static [&'static str]; 3] {
    match lang {
        Lang::Ru => [
            &[
                "Мой номер {}, звоните после обеда.",
                "Перезвоните, пожалуйста, по номеру {}.",
                "Тел.: {}",
                "Контактный телефон: {} (спросить Ольгу).",
            ],
            &[
                "Спишите оплату с карты {}.",
                "Номер карты: {}, срок действия 09/28.",
                "Платёж по карте {} не прошёл.",
            ],
            &[
                "Прошу перевести возврат на счёт {}.",
                "IBAN получателя: {}",
                "Реквизиты для оплаты: IBAN {}.",
            ],
        ],
        Lang::Tr => [
            &[
                "Beni {} numarasından arayabilirsiniz.",
                "Cep: {}",
                "Lütfen {} numarasına dönüş yapın.",
                "İletişim numaram değişti, yenisi {}.",
            ],
            &[
                "Ödemeyi {} numaralı kartımdan çekin.",
                "Kart numarası: {}, son kullanma 11/27.",
                "{} numaralı kart ile ödeme reddedildi.",
            ],
            &[
                "İadeyi {} numaralı hesaba yapın.",
                "IBAN: {}",
                "Havale için IBAN numaramız {}.",
            ],
        ],
        Lang::Zh => [
            &[
                "我的手机号是{}，请下午联系。",
                "联系电话：{}",
                "请回拨 {} 找王经理。",
                "电话{}（工作日9点到18点）",
            ],
            &[
                "请用我的卡{}付款。",
                "卡号：{}，有效期 08/28。",
                "信用卡 {} 付款失败了。",
            ],
            &[
                "退款请汇到 IBAN {}。",
                "收款账户：{}",
                "欧洲客户的IBAN是{}。",
            ],
        ],
        Lang::Ko => [
            &[
                "제 번호는 {}입니다.",
                "연락처: {}",
                "{}로 전화 주세요.",
                "휴대폰 {} (평일 오후)",
            ],
            &[
                "카드번호 {}로 결제해 주세요.",
                "결제 카드: {}, 유효기간 07/29",
                "{} 카드 결제가 거절되었습니다.",
            ],
            &[
                "환불은 IBAN {} 계좌로 보내 주세요.",
                "해외 계좌: {}",
                "유럽 거래처 IBAN은 {}입니다.",
            ],
        ],
        Lang::Ar => [
            &[
                "رقم هاتفي {} يمكنكم الاتصال بعد الظهر.",
                "جوال: {}",
                "يرجى الاتصال على الرقم {}",
                "للتواصل: {} (من الأحد إلى الخميس)",
            ],
            &[
                "يرجى الخصم من بطاقتي رقم {}",
                "رقم البطاقة: {} تنتهي في 10/28",
                "تم رفض الدفع بالبطاقة {}",
            ],
            &[
                "يرجى تحويل المبلغ إلى الحساب {}",
                "رقم الآيبان: {}",
                "IBAN المستفيد: {}",
            ],
        ],
        Lang::Id => [
            &[
                "Nomor HP saya {}, hubungi sore hari ya.",
                "WA: {}",
                "Silakan telepon ke {}.",
                "Telp. kantor {} (jam kerja)",
            ],
            &[
                "Tolong tagihkan ke kartu saya {}.",
                "Nomor kartu: {}, berlaku s/d 06/28.",
                "Pembayaran dengan kartu {} ditolak.",
            ],
            &[
                "Mohon transfer refund ke rekening {}.",
                "IBAN: {}",
                "IBAN supplier Eropa kami {}.",
            ],
        ],
        Lang::Sv => [
            &[
                "Ring mig på {} efter lunch.",
                "Mobil: {}",
                "Mitt nya nummer är {}.",
                "Nå oss på {} (vardagar 8–17).",
            ],
            &[
                "Dra beloppet från mitt kort {}.",
                "Kortnummer: {}, giltigt till 04/28.",
                "Betalningen med kort {} nekades.",
            ],
            &[
                "Sätt in återbetalningen på {}.",
                "IBAN: {}",
                "Vårt konto för betalning är IBAN {}.",
            ],
        ],
        other => panic!("{other:?} is one of the first set's languages"),
    }
}

pub fn words(lang: Lang) -> &'static Words {
    match lang {
        Lang::Ru => &Words {
            names: &[
                ("Ольга", "Смирнова"),
                ("Дмитрий", "Иванов"),
                ("Анна", "Кузнецова"),
                ("Sergei", "Volkov"),
                ("Екатерина", "Попова"),
                ("Алексей", "Соколов"),
            ],
            subject: "Изменение контактных и платёжных данных",
            ask: "Кратко перескажи сообщение клиента и подготовь ответ:",
            quote_header: "4 дек. 2026 г., в 17:02, Служба поддержки написал(а):",
        },
        Lang::Tr => &Words {
            names: &[
                ("Mehmet", "Yılmaz"),
                ("Ayşe", "Kaya"),
                ("Emre", "Demir"),
                ("Zeynep", "Çelik"),
                ("Burak", "Şahin"),
                ("Elif", "Öztürk"),
            ],
            subject: "İletişim ve ödeme bilgilerimin güncellenmesi",
            ask: "Bu müşteri mesajını özetle ve bir yanıt taslağı yaz:",
            quote_header: "4 Ara 2026 Cum, saat 17:02 tarihinde Müşteri Hizmetleri şunu yazdı:",
        },
        // Family name first, as written.
        Lang::Zh => &Words {
            names: &[
                ("王", "伟"),
                ("李", "芳"),
                ("张", "静"),
                ("Chen", "Wei"),
                ("刘", "秀英"),
                ("Huang", "Jie"),
            ],
            subject: "更新联系方式和付款信息",
            ask: "请总结这条客户消息并起草回复：",
            quote_header: "在 2026年12月4日 周五 17:02，客服中心 写道：",
        },
        Lang::Ko => &Words {
            names: &[
                ("김", "민준"),
                ("이", "서연"),
                ("박", "지호"),
                ("Choi", "Ji-woo"),
                ("정", "하은"),
                ("강", "도윤"),
            ],
            subject: "연락처 및 결제 정보 변경 요청",
            ask: "다음 고객 메시지를 요약하고 답장 초안을 작성해 주세요:",
            quote_header: "2026년 12월 4일 (금) 오후 5:02, 고객센터 님이 작성:",
        },
        Lang::Ar => &Words {
            names: &[
                ("محمد", "العتيبي"),
                ("فاطمة", "الزهراني"),
                ("Ahmed", "Hassan"),
                ("نورة", "القحطاني"),
                ("Omar", "Farouk"),
                ("ليلى", "منصور"),
            ],
            subject: "تحديث بيانات الاتصال والدفع",
            ask: "لخّص رسالة العميل التالية واكتب مسودة رد:",
            quote_header: "في الجمعة، 4 ديسمبر 2026 في 17:02، كتب خدمة العملاء:",
        },
        Lang::Id => &Words {
            names: &[
                ("Budi", "Santoso"),
                ("Siti", "Rahmawati"),
                ("Agus", "Wijaya"),
                ("Dewi", "Lestari"),
                ("Nur", "Aisyah"),
                ("Rizky", "Pratama"),
            ],
            subject: "Perubahan data kontak dan pembayaran",
            ask: "Ringkas pesan pelanggan ini dan buat draf balasan:",
            quote_header: "Pada Jum, 4 Des 2026 pukul 17.02 Layanan Pelanggan menulis:",
        },
        Lang::Sv => &Words {
            names: &[
                ("Erik", "Johansson"),
                ("Anna", "Lindqvist"),
                ("Lars", "Ekström"),
                ("Sofia", "Åberg"),
                ("Björn", "Nyström"),
                ("Ingrid", "Holm"),
            ],
            subject: "Ändring av kontakt- och betalningsuppgifter",
            ask: "Sammanfatta kundens meddelande och skriv ett svar:",
            quote_header: "Den fre 4 dec. 2026 kl. 17:02 skrev Kundtjänst:",
        },
        other => panic!("{other:?} is one of the first set's languages"),
    }
}
