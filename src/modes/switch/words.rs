//! The words the command parser ([`super::clause`], [`super::judge`]) knows, by role.
//! Everything is matched on normalized text (lower case, single spaces); an ASCII entry
//! must stand as a word of its own, a CJK entry matches anywhere.

/// Where a clause ends when the text has punctuation.
pub const BOUNDARIES: &[char] = &[
    '，', ',', '。', '.', '！', '!', '？', '?', '；', ';', '：', ':', '\n', '、',
];
pub const EN_BOUNDARIES: &[&str] = &[" and ", " but ", " then ", " so "];

/// Sentence-final particles: a run of them with more words after it ends a clause
/// ("我已经洗好菜了｜打开做饭模式", "退出做饭模式吧｜我吃完了").
pub const PARTICLES: &[char] = &['了', '吧', '啦', '呀', '啊', '哦', '吗', '呢'];
/// A particle character that belongs to a word, or a 了 after a verb whose object is
/// the rest ("他说了｜打开…" would turn a report into a command): no clause ends there.
pub const PARTICLE_WORDS: &[&str] = &[
    "了解",
    "为了",
    "除了",
    "罢了",
    "了不起",
    "说了",
    "讲了",
    "问了",
    "忘了",
    "酒吧",
    "吧台",
    "网吧",
    "吗啡",
];

/// Once the name and the verb have both been said, one of these starts a new clause
/// ("打开做饭模式｜今晚吃什么", "打开做饭模式｜教我怎么做红烧肉"). What is not here binds
/// to the command ("打开做饭模式会怎样", "打开做饭模式以后…"), so an unknown continuation
/// is judged with it — when in doubt, refuse.
pub const NEW_CLAUSE_ZH: &[&str] = &[
    // a time
    "今晚",
    "今天",
    "明天",
    "晚上",
    "中午",
    "早上",
    "现在",
    "待会",
    "等会",
    "等一下",
    "一会",
    // a person
    "我",
    "你",
    "他",
    "她",
    "咱",
    "大家",
    // a request of its own
    "教我",
    "帮我",
    "告诉我",
    "给我",
    "请",
    "麻烦",
    // what comes next
    "然后",
    "接着",
    "再",
    "顺便",
    "另外",
    // thanks
    "谢谢",
    "多谢",
    "辛苦",
];
pub const NEW_CLAUSE_EN: &[&str] = &[
    "i", "i'm", "we", "we're", "you", "he", "she", "they", "tonight", "today", "thanks", "thank",
];

/// Question forms and polite-request forms of A-not-A, checked before negations.
pub const A_NOT_A_REQUESTS: &[&str] = &["能不能", "可不可以", "行不行", "好不好", "可以不可以"];
pub const A_NOT_A_QUESTIONS: &[&str] = &["要不要", "会不会", "是不是", "有没有", "该不该"];

pub const NEGATIONS_ZH: &[&str] = &[
    "不要",
    "不用",
    "不想",
    "不必",
    "不可以",
    "不能",
    "不许",
    "不准",
    "不该",
    "不应该",
    "不需要",
    "无需",
    "无须",
    "禁止",
    "请勿",
    "勿",
    "别",
    "甭",
    "没有",
    "没",
    "未",
    "不",
];
pub const NEGATIONS_EN: &[&str] = &[
    "don't",
    "dont",
    "do not",
    "doesn't",
    "does not",
    "not",
    "never",
    "no need to",
    "shouldn't",
    "should not",
    "can't",
    "cannot",
    "won't",
    "will not",
    "mustn't",
    "must not",
    "wouldn't",
    "stop trying to",
];

pub const HOW_ZH: &[&str] = &["怎么", "如何", "怎样", "咋"];
pub const HOW_EN: &[&str] = &["how"];
pub const INTERROGATIVES_ZH: &[&str] = &[
    "为什么",
    "为何",
    "什么时候",
    "何时",
    "是什么",
    "什么意思",
    "啥意思",
    "什么",
    "啥",
    "哪",
    "几点",
    "多久",
    "多长时间",
    "是否",
    "会不会",
    "是不是",
    "有没有",
    "要不要",
    "该不该",
];
pub const INTERROGATIVES_EN: &[&str] = &[
    "why", "what", "when", "where", "which", "who", "whether", "if",
];
/// An English clause opening with one of these (and no request form) is a question.
pub const AUX_EN: &[&str] = &[
    "will", "would", "does", "did", "is", "are", "was", "were", "do", "has", "have", "should",
    "shall", "am",
];
pub const QUESTION_FINALS_ZH: &[&str] = &["吗", "呢", "嘛", "么"];
pub const PERFECTIVE_QUESTIONS: &[&str] = &["了吗", "过吗", "了没", "过没", "了么"];
/// Perfective aspect right after the verb, or after the name that follows it: a state
/// ("做饭模式结束了", "打开过做饭模式"), not a request — unless a request word asks for it.
pub const PERFECTIVE: &[char] = &['了', '过'];
pub const PAST_MARKERS_ZH: &[&str] = &[
    "昨天", "前天", "刚才", "刚刚", "之前", "上次", "以前", "已经",
];
pub const PAST_MARKERS_EN: &[&str] = &["yesterday", "already", "earlier", "last time"];

/// Before the verb: someone's words or opinion is reported, not a request to the bot.
pub const REPORTS_ZH: &[&str] = &["说", "讲", "问", "提到", "觉得", "认为", "以为"];
/// Polite openers that contain a reporting word.
pub const REPORT_OPENERS_ZH: &[&str] = &["请问"];
pub const REPORTS_EN: &[&str] = &[
    "said", "says", "say", "told", "tells", "asked", "asks", "think", "thinks", "thought",
];
/// A hypothesis, not a request: before the verb, or anywhere for 的话.
pub const CONDITIONALS_ZH: &[&str] = &["如果", "要是", "假如", "假设", "万一", "一旦"];
pub const CONDITIONAL_ANYWHERE_ZH: &[&str] = &["的话"];
pub const CONDITIONALS_EN: &[&str] = &["unless", "in case", "suppose", "supposing"];

pub const REQUESTS_ZH: &[&str] = &[
    "可以", "能否", "能", "请", "帮我", "帮忙", "麻烦", "给我", "替我", "你来", "好吗", "行吗",
    "成吗",
];
pub const REQUESTS_EN: &[&str] = &[
    "can you",
    "could you",
    "would you",
    "will you",
    "can we",
    "could we",
    "please",
    "let's",
    "lets",
    "i want to",
    "i'd like to",
    "go ahead and",
];
/// A later clause with one of these takes the command back.
pub const RETRACTIONS: &[&str] = &[
    "算了",
    "不用了",
    "不要了",
    "不对",
    "取消",
    "当我没说",
    "先不要",
    "先别",
    "never mind",
    "nevermind",
    "forget it",
    "cancel that",
    "just kidding",
    "scratch that",
];

/// What may follow a phrase that is a whole command ("直接做吧", "先计划一下就行").
pub const PHRASE_TAILS: &[&str] = &[
    "一下",
    "就行",
    "就好",
    "就可以",
    "好了",
    "了",
    "吧",
    "啦",
    "呀",
    "啊",
    "哦",
    "please",
    "now",
];
