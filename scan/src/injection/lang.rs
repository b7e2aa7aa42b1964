//! Override and extraction phrases in languages other than English, one
//! family per language: a verb of dismissal near a word for "instructions" or
//! "rules" (either order, as the language puts it), and "reveal your system
//! prompt". Stems rather than inflected forms, so conjugations and politeness
//! levels match.

use super::rules::RuleSpec;
use super::signal::SignalKind::MultilingualOverride;

const fn rule(
    name: &'static str,
    weight: f64,
    anchors: &'static [&'static str],
    pattern: &'static str,
) -> RuleSpec {
    RuleSpec {
        name,
        kind: MultilingualOverride,
        weight,
        anchors,
        pattern,
        unicode: true,
    }
}

pub const RULES: &[RuleSpec] = &[
    rule(
        "es_override",
        0.9,
        &[
            "ignor",
            "olvid",
            "descart",
            "omit",
            "caso omiso",
            "no sigas",
            "no obedezcas",
        ],
        r"\b(?:ignor\w*|olvid\w*|descart\w*|omit\w*|haz caso omiso (?:a|de)|no sigas|no obedezcas)\s+(?:\w+\s+){0,3}?(?:instrucci[oó]n\w*|indicaci[oó]n\w*|[oó]rdenes|reglas|directrices|normas)\b",
    ),
    rule(
        "pt_override",
        0.9,
        &[
            "ignor",
            "esque",
            "desconsider",
            "descart",
            "não siga",
            "nao siga",
        ],
        r"\b(?:ignor\w*|esque[cç]\w*|desconsider\w*|descart\w*|n[aã]o siga)\s+(?:\w+\s+){0,3}?(?:instru[cç][oõ]es|instru[cç][aã]o|regras|diretrizes|ordens|orienta[cç][oõ]es)\b",
    ),
    rule(
        "fr_override",
        0.9,
        &[
            "ignor",
            "oubli",
            "ne tiens pas compte",
            "ne tenez pas compte",
            "fais abstraction",
            "faites abstraction",
            "néglig",
            "neglig",
        ],
        // French shares "instructions" and "ignore" with English: an article
        // or determiner of its own is required.
        r"\b(?:ignor\w*|oubli\w*|ne (?:tiens|tenez) pas compte|(?:fais|faites) abstraction)\s+(?:\w+\s+){0,2}?(?:les|vos|tes|ces|des|de|d'|toutes)\s*(?:\w+\s+)?(?:instructions|consignes|r[èe]gles|directives|ordres)\b",
    ),
    rule(
        "it_override",
        0.9,
        &[
            "ignor",
            "dimentic",
            "trascur",
            "non considerare",
            "non seguire",
        ],
        r"\b(?:ignor\w*|dimentic\w*|trascur\w*|non considerare|non seguire)\s+(?:\w+\s+){0,3}?(?:istruzion\w*|regole|direttive|indicazioni|ordini)\b",
    ),
    rule(
        "de_override",
        0.9,
        &[
            "ignorier",
            "vergiss",
            "vergessen",
            "missacht",
            "übergeh",
            "nicht beachten",
            "beachte",
        ],
        r"\b(?:ignorier\w*|vergiss|vergessen\w*|missacht\w*|[üu]bergeh\w*|beachte\s+nicht)\s+(?:\w+\s+){0,3}?(?:anweisung\w*|instruktion\w*|regeln|vorgaben|befehle|richtlinien|systemprompt\w*)\b|\b(?:anweisung\w*|regeln|vorgaben|befehle|richtlinien)\s+(?:\w+\s+){0,2}?(?:ignorieren|vergessen|nicht beachten|missachten)\b",
    ),
    rule(
        "nl_override",
        0.9,
        &["negeer", "ignoreer", "vergeet", "veronachtza"],
        r"\b(?:negeer|ignoreer|vergeet|veronachtzaam)\w*\s+(?:\w+\s+){0,3}?(?:instructies|regels|aanwijzingen|opdrachten|richtlijnen)\b",
    ),
    rule(
        "pl_override",
        0.9,
        &["zignoruj", "ignoruj", "zapomnij", "pomiń", "pomin"],
        r"\b(?:zignoruj|ignoruj|zapomnij|pomi[nń])\w*\s+(?:\w+\s+){0,3}?(?:instrukcj\w*|polece[nń]\w*|zasad\w*|regu[lł]\w*)\b",
    ),
    rule(
        "cs_override",
        0.9,
        &["ignoruj", "zapome", "nedbej"],
        r"\b(?:ignoruj|zapome[nň]|nedbej)\w*\s+(?:\w+\s+){0,3}?(?:instrukc\w*|pokyn\w*|pravidl\w*)\b",
    ),
    rule(
        "sv_da_no_override",
        0.9,
        &["ignorer", "glöm", "glem", "bortse"],
        r"\b(?:ignorera|ignorer|gl[öo]m|glem|bortse fra)\w*\s+(?:\w+\s+){0,3}?(?:instruktioner\w*|instruksjoner\w*|instruktionerne|anvisningar\w*|regler\w*|instruksene)\b",
    ),
    rule(
        "ru_uk_override",
        0.9,
        &[
            "игнорир",
            "гнорир",
            "гноруй",
            "забудь",
            "забуд",
            "не обращай",
            "отбрось",
            "пренебреги",
            "ігнор",
            "забудь",
        ],
        r"(?:игнорир\w*|проигнорир\w*|забудь\w*|забуд\w*|не обращай внимания на|отбрось|пренебреги|ігнор\w*|проігнор\w*)\s+(?:\w+\s+){0,3}?(?:инструкци\w*|указани\w*|правил\w*|команд\w*|директив\w*|інструкці\w*|вказівк\w*|настанов\w*)",
    ),
    rule(
        "el_override",
        0.9,
        &["αγνόησ", "αγνοησ", "ξέχασ", "ξεχασ"],
        r"(?:αγν[όο]ησ\w*|ξ[έε]χασ\w*)\s+(?:\w+\s+){0,3}?(?:οδηγ[ίι]ε\w*|εντολ\w*|κανόν\w*|κανον\w*)",
    ),
    rule(
        "tr_override",
        0.9,
        &["yok say", "görmezden", "gormezden", "unut", "dikkate alma"],
        r"(?:talimat\w*|komut\w*|kural\w*|y[öo]nerge\w*)\s+(?:\w+\s+){0,2}?(?:yok say\w*|g[öo]rmezden gel\w*|unut\w*|dikkate alma\w*)",
    ),
    rule(
        "ar_override",
        0.9,
        &["تجاهل", "انس", "أهمل", "اهمل"],
        r"(?:تجاهل|انس|أهمل|اهمل)\w*\s+(?:\S+\s+){0,3}?(?:\w*التعليمات|\w*تعليمات|الأوامر|القواعد|الإرشادات)",
    ),
    rule(
        "fa_override",
        0.9,
        &["نادیده", "فراموش"],
        r"(?:دستورالعمل|دستور|قوانین|قواعد)\S*\s+(?:\S+\s+){0,3}?(?:را\s+)?(?:نادیده بگیر|فراموش کن)",
    ),
    rule(
        "he_override",
        0.9,
        &["התעלם", "שכח"],
        r"(?:התעלם|שכח)\S*\s+(?:\S+\s+){0,3}?\S*(?:הוראות|הנחיות|כללים)",
    ),
    rule(
        "hi_override",
        0.9,
        &["अनदेखा", "नज़रअंदाज़", "नजरअंदाज", "भूल"],
        r"(?:निर्देश|नियम|आदेश)\S*\s+(?:\S+\s+){0,3}?(?:अनदेखा|नज़रअंदाज़|नजरअंदाज|भूल)",
    ),
    rule(
        "id_ms_override",
        0.9,
        &["abaikan", "lupakan", "acuhkan"],
        r"\b(?:abaikan|lupakan|acuhkan)\s+(?:\w+\s+){0,3}?(?:instruksi|perintah|petunjuk|aturan|arahan)\b",
    ),
    rule(
        "vi_override",
        0.9,
        &["bỏ qua", "phớt lờ", "quên", "bỏ"],
        r"(?:bỏ qua|phớt lờ|quên|bỏ)\s+(?:\S+\s+){0,4}?(?:hướng dẫn|chỉ dẫn|chỉ thị|quy tắc|lệnh)",
    ),
    rule(
        "zh_override",
        0.9,
        &[
            "忽略",
            "无视",
            "忽视",
            "忘记",
            "忘掉",
            "不要理会",
            "不要遵守",
            "無視",
            "忽視",
            "忘記",
        ],
        r"(?:忽略|无视|忽视|忘记|忘掉|不要理会|不要遵守|無視|忽視|忘記|不要理會)[^。！？\n]{0,12}(?:指令|指示|说明|說明|规则|規則|提示|命令|设定|設定)",
    ),
    rule(
        "ja_override",
        0.9,
        &["無視", "忘れ"],
        r"(?:指示|命令|ルール|指令|プロンプト|規則)[^。！？\n]{0,8}(?:無視|忘れ)",
    ),
    rule(
        "ko_override",
        0.9,
        &["무시", "잊어", "잊고"],
        r"(?:지시|명령|지침|규칙|프롬프트)[^.!?\n]{0,10}(?:무시|잊어|잊고)",
    ),
    // "Reveal your system prompt" and its kin.
    rule(
        "es_pt_extraction",
        0.8,
        &["sistema"],
        r"\b(?:revela|muestra|mu[eé]strame|imprime|repite|dime|escribe|mostra|mostre|revele|imprima|repita|diga)\w*\s+(?:\w+\s+){0,2}?(?:prompt|mensaje|mensagem|instrucciones|instru[cç][oõ]es)\s+(?:del|de|do)\s+sistema\b",
    ),
    rule(
        "fr_it_extraction",
        0.8,
        &["système", "systeme", "sistema"],
        r"\b(?:r[ée]v[èe]le|montre|affiche|imprime|r[ée]p[èe]te|donne|dis|rivela|mostra|stampa|ripeti|dimmi|scrivi)\w*\s+(?:\w+\s+){0,2}?(?:prompt|message|messaggio|instructions|istruzioni)\s+(?:syst[èe]me|du syst[èe]me|di sistema|del sistema)\b",
    ),
    rule(
        "de_extraction",
        0.8,
        &[
            "systemprompt",
            "system-prompt",
            "systemanweisung",
            "systemnachricht",
        ],
        r"\b(?:zeig|gib|verrate|wiederhole|nenne|schreib|drucke|sag)\w*\s+(?:\w+\s+){0,3}?(?:system-?prompt|systemanweisung\w*|systemnachricht)\w*\b",
    ),
    rule(
        "ru_extraction",
        0.8,
        &["системн"],
        r"(?:покажи|выведи|раскрой|повтори|напиши|скажи|дай)\w*\s+(?:\w+\s+){0,2}?системн\w+\s+(?:промпт|подсказк|инструкци|сообщени)\w*",
    ),
    rule(
        "zh_ja_extraction",
        0.8,
        &[
            "系统提示",
            "系統提示",
            "系统消息",
            "初始指令",
            "システムプロンプト",
            "提示词",
        ],
        r"(?:输出|显示|告诉我|打印|重复|泄露|透露|給我|告訴我|顯示|表示|教えて|出力)[^。！？\n]{0,10}(?:系统提示|系統提示|系统消息|初始指令|提示词|システムプロンプト)|(?:システムプロンプト|系统提示词?)[^。！？\n]{0,10}(?:を表示|を教えて|を出力|是什么)",
    ),
];
