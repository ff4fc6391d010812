//! The words that put a switch off: a time later than now (晚点, 十分钟后, tonight), a time
//! of day, until something is done (等我洗完菜再…), not yet (先不, 暂时不), 再 after a
//! precondition, and what may follow a deferral. Read through [`super::words`].

/// Deferrals: a time later than now. Before or after the verb (晚点再关做饭模式, 关闭做饭
/// 模式晚点), or as the clause right after the command (关闭做饭模式｜等会儿), the command
/// is for later, and homebot switches only now. (以后 is not here: 以后先做计划 means "from
/// now on", 打开做饭模式以后 "after opening it".)
pub const LATER_ZH: &[&str] = &[
    "晚点",
    "晚些",
    "晚一点",
    "晚一些",
    "迟点",
    "迟些",
    "迟一点",
    "回头",
    "过会",
    "过一会",
    "待会",
    "呆会",
    "等会",
    "等一会",
    "一会",
    "等下",
    "等一下",
    "等等",
    "稍后",
    "稍等",
    "下次",
    "下回",
    "改天",
    "改日",
    "明天",
    "明早",
    "明晚",
    "后天",
    "过几天",
    "过两天",
    "下周",
    "下礼拜",
    "下个星期",
];
/// Deferrals: until something else is done (等我洗完菜再打开…, 打开做饭模式｜等大家到了).
/// Like the not-yet words, they defer whatever follows them.
pub const UNTIL_ZH: &[&str] = &[
    "等我",
    "等你",
    "等他",
    "等她",
    "等大家",
    "等人",
    "等到",
    "等吃完",
    "等做完",
    "等洗完",
];
pub const LATER_EN: &[&str] = &[
    "later",
    "tomorrow",
    "next time",
    "in a minute",
    "in a bit",
    "in a while",
    "in a moment",
    "after dinner",
    "after lunch",
    "not yet",
    "not now",
];
/// Deferrals by a time of day: 今晚打开做饭模式 is a plan for tonight, not a command for
/// now. Before or after the verb, or as the clause after it (关闭做饭模式｜晚上再说); not
/// in `said_now`, where "今晚我来做饭" says the cooking starts. (今天 is not here: it
/// includes now.)
pub const TIME_OF_DAY_ZH: &[&str] = &[
    "今晚", "今夜", "晚上", "傍晚", "夜里", "半夜", "凌晨", "下午", "中午", "上午", "早上", "今早",
];
pub const TIME_OF_DAY_EN: &[&str] = &["tonight", "this evening", "this afternoon"];
/// A time from now in Chinese: a number (digits, 一 … 十, 两, 几, 半, 个), one of these
/// units and [`FROM_NOW_ZH`] after it or 过 before it — 十分钟后, 半小时以后, 过五分钟.
/// (分 alone is not a unit: 十分好用 is "very handy".)
pub const DURATION_UNITS_ZH: &[&str] = &["分钟", "小时", "钟头", "刻钟", "秒钟", "秒", "天"];
pub const DURATION_DIGITS_ZH: &str = "0123456789一二两三四五六七八九十百千几半个";
pub const FROM_NOW_ZH: &[&str] = &["以后", "之后", "过后", "后"];
/// A time from now in English: "in" / "after" / "within" with one of these units at most
/// three words on ("in ten minutes", "in half an hour", "after 10 mins").
pub const FROM_NOW_EN: &[&str] = &["in", "after", "within"];
pub const DURATION_UNITS_EN: &[&str] = &[
    "second", "seconds", "sec", "secs", "minute", "minutes", "min", "mins", "hour", "hours", "hr",
    "hrs",
];
/// 再 before the verb defers it when something comes before 再 in the text — a
/// precondition or a time ("吃完饭再关…", "等等再关…", "吃完了｜再关…"): "X 再 V" is "V
/// after X". Alone, or after nothing but these, the name or 把, 再 is "again": "再打开做饭
/// 模式", "现在再打开做饭模式".
pub const AGAIN: &str = "再";
pub const NOW_BEFORE_AGAIN: &[&str] = &[
    "现在", "马上", "立刻", "立即", "赶紧", "赶快", "快点", "快", "那就", "那", "就", "请", "帮我",
    "给我", "替我", "麻烦", "你", "可以", "能", "把",
];
/// The switch as the time of something else: the verb (and the name after it) followed by
/// one of these is a subordinate clause — "退出做饭模式前记得保存", "关闭做饭模式之后提醒我
/// 关火", "打开做饭模式时提醒我洗手" — not a command.
pub const TEMPORAL_CLAUSE_ZH: &[&str] = &[
    "之前", "以前", "之后", "以后", "过后", "时候", "前", "后", "时",
];

/// Deferrals: not yet (先不关, 暂时不用开, 还不要退出). Checked before negations, whose
/// 不 / 别 they contain.
pub const NOT_YET_ZH: &[&str] = &[
    "先不",
    "先别",
    "还不",
    "还别",
    "暂时不",
    "暂时别",
    "暂且不",
    "暂不",
    "先等等",
    "先等一下",
    "不急",
    "别急",
    "不着急",
    "先缓缓",
    "缓一缓",
    "还早",
];
/// What may follow a deferral word in the clause after the command and keep it a mere
/// deferral (关闭做饭模式｜等会儿再说) — besides the command's own verbs and names.
pub const DEFERRAL_TAILS: &[&str] = &[
    "再说",
    "再讲",
    "再弄",
    "再搞",
    "再看",
    "再决定",
    "再来",
    "再",
    "儿",
    "吧",
    "啦",
    "呀",
    "啊",
    "哦",
    "了",
    "好了",
    "一下",
    "就行",
    "要",
    "please",
];
