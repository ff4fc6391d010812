//! The words the command parser ([`super::clause`], [`super::judge`]) knows, by role.
//! Everything is matched on normalized text (lower case, single spaces); an ASCII entry
//! must stand as a word of its own, a CJK entry matches anywhere.

// the words that put a command off (later, not yet, until, a time) have a file of their
// own; the parser reads them through this one
pub use super::deferrals::*;

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
    "昨天", "前天", "刚才", "刚刚", "之前", "上次", "以前", "已经", "刚",
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
/// Request forms at the end of a segment ("打开做饭模式好吗").
pub const POLITE_ENDINGS_ZH: &[&str] = &[
    "好吗",
    "行吗",
    "成吗",
    "可以吗",
    "好不好",
    "行不行",
    "可不可以",
    "可以不可以",
    "好嘛",
    "好吧",
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

/// Spoken forms of the built-in mode verbs, counted by the guard besides the verbs a mode
/// lists (they are not shown to the model: its tool description keeps the short list).
pub const SPOKEN_ENTER: &[&str] = &[
    "开启", "启动", "开开", "弄开", "换成", "切到", "切成", "换到",
];
pub const SPOKEN_EXIT: &[&str] = &["停止", "停用", "关掉", "停掉", "退掉", "关上"];
/// Single-character verbs: they also begin 开火, 开心, 关火, 关于, 进度, 换衣服 …, so they
/// count only right next to the mode's name (see [`super::bound`]).
pub const BOUND_ENTER: &[&str] = &["开", "进", "换", "切"];
pub const BOUND_EXIT: &[&str] = &["关", "退"];
/// What may stand between a single-character verb and the name after it: 开个, 开一下,
/// 换成, 切到, 换回, 关掉, 关上, 进到 (了: 关了做饭模式 — then the perfective rule).
pub const BOUND_COMPLEMENTS: &[&str] = &[
    "一下", "一个", "个", "下", "上", "掉", "到", "成", "回", "了",
];
/// What may end a single-character verb after the name: 做饭模式关掉, 做饭模式开一下,
/// 做饭模式关了 — then a particle, a new clause or nothing.
pub const BOUND_TAILS: &[&str] = &["一下", "起来", "下", "上", "掉", "了"];
/// What may stand between the name and a single-character verb after it: 做饭模式给我关了.
pub const BOUND_BETWEEN: &[&str] = &[
    "给我", "帮我", "替我", "赶紧", "快点", "马上", "现在", "先", "快", "就", "也", "给", "再",
    "儿", "可以", "能",
];

/// The household's ways of addressing homebot (a greeting included: 晚上好 is not a time
/// of the command), and spoken fillers: taken out before the words are judged ("homebot
/// 打开做饭模式", "晚上好打开做饭模式", "嗯那个打开做饭模式").
pub const ADDRESS: &[&str] = &[
    "homebot",
    "home bot",
    "小助手",
    "小管家",
    "助手",
    "管家",
    "hey",
    "hi",
    "ok",
    "okay",
    "hello",
    "嘿",
    "喂",
    "哈喽",
    "你好",
    "早上好",
    "中午好",
    "下午好",
    "晚上好",
    "早安",
    "晚安",
];
pub const FILLERS: &[&str] = &[
    "就是说",
    "就是",
    "那个",
    "这个",
    "嗯",
    "呃",
    "um",
    "uh",
    "well",
];

/// After a whole command, a clause that asks about something else starts at its content
/// noun ("打开做饭模式｜宫保鸡丁怎么做"): a continuation that holds a question word after
/// at least two characters, does not open with one of [`BINDS_TO_COMMAND`] and mentions
/// none of [`ABOUT_THE_SWITCH`].
pub const CONTENT_QUESTIONS: &[&str] = &[
    "怎么", "怎样", "如何", "什么", "啥", "哪", "几", "多少", "多久", "吗", "呢",
];
/// Openers that tie a continuation to the command: a consequence, a modifier, a state,
/// a question about it (打开做饭模式｜会怎么样, …以后…, …的按钮…, …了吗, …要多久).
pub const BINDS_TO_COMMAND: &[&str] = &[
    "会",
    "以后",
    "之后",
    "后",
    "的",
    "了",
    "过",
    "要",
    "是",
    "有",
    "能",
    "可",
    "就",
    "还",
    "需",
    "得",
    "时",
    "吗",
    "呢",
    "吧",
    "啊",
    "对",
    "好",
    "行",
    "算",
    "不",
    "没",
    "也",
    "都",
    "才",
    "又",
    "着",
    "和",
    "跟",
    "与",
    "或",
    "比",
    "到",
    "里",
    "中",
    "前",
    "它",
    "这",
    "那",
    "一",
    "怎",
    "为",
    "多",
    "几",
    "啥",
    "什",
    "哪",
    "谁",
    "该",
    "值",
    "有没有",
    "用",
];
/// Words that make a continuation about the switch, not about the cooking (打开做饭模式
/// 按钮在哪, …家里人能看到吗, …电费多少).
pub const ABOUT_THE_SWITCH: &[&str] = &[
    "模式", "它", "会", "能", "可以", "按钮", "开关", "入口", "设置", "菜单", "键", "图标", "界面",
    "页面", "命令", "指令", "电", "费", "钱", "影响", "区别", "效果", "作用", "用处", "好处",
    "坏处", "功能", "意思", "记录", "保存", "隐私", "看到", "听到", "以后", "之后",
];
/// What may follow a verb before its perfective 了 (关掉了, 退出来了): the aspect is
/// still the verb's.
pub const VERB_TAILS: &[&str] = &["掉", "上", "起来", "出来", "下来", "完"];
