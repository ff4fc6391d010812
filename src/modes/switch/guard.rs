//! The check itself (`validate`): the mode's names and the action's verbs — their spoken
//! forms, single characters only next to a name — judged in the user's words, with three
//! verdicts ([`super::unsure::decide`]): switch (`Ok`), refuse, or ask (a refusal whose
//! kind is [`WordsRefusalKind::Unsure`]: the caller asks the person).

use super::super::manifest::ModeManifest;
use super::clause::Lexicon;
use super::judge::Verdict;
use super::unsure::Decision;
use super::{verbs_for, SwitchAction, WordsRefusal, WordsRefusalKind};

/// Check the user's words against the mode's names and the action's verbs.
pub fn validate(
    manifest: &ModeManifest,
    action: SwitchAction,
    user_text: &str,
) -> Result<(), WordsRefusal> {
    let mut names: Vec<String> = vec![super::clause::normalize(&manifest.display_name)];
    names.extend(manifest.aliases.iter().map(|a| super::clause::normalize(a)));
    let verbs = verbs_for(manifest, action);
    let lex = lexicon(names.clone(), &verbs, action);
    let verdict = match super::unsure::decide(user_text, &lex) {
        Decision::Switch => return Ok(()),
        Decision::Ask(why) => {
            return Err(refusal(
                manifest,
                action,
                WordsRefusalKind::Unsure(why),
                names,
                verbs,
            ))
        }
        Decision::Refuse(v) => v,
    };
    let kind = match verdict {
        Verdict::Command => return Ok(()),
        Verdict::Retracted => WordsRefusalKind::Retracted,
        Verdict::Deferred => WordsRefusalKind::Deferred,
        Verdict::Negated => WordsRefusalKind::Negated,
        Verdict::HowQuestion => WordsRefusalKind::HowQuestion,
        Verdict::Question => WordsRefusalKind::Question,
        Verdict::Reported => WordsRefusalKind::Reported,
        Verdict::NoVerb => WordsRefusalKind::NoVerb,
        Verdict::NotNamed => WordsRefusalKind::NotNamed,
    };
    Err(refusal(manifest, action, kind, names, verbs))
}

fn refusal(
    manifest: &ModeManifest,
    action: SwitchAction,
    kind: WordsRefusalKind,
    names: Vec<String>,
    verbs: Vec<String>,
) -> WordsRefusal {
    WordsRefusal {
        kind,
        action,
        mode_id: manifest.id.clone(),
        display_name: manifest.display_name.clone(),
        names,
        verbs,
        returns: false,
    }
}

/// What the guard counts for `action`: the mode's `verbs` and their spoken forms (开启,
/// 关掉 …); a single character (the built-in 开, 关 …, or one a mode lists) only next to
/// a name.
pub(super) fn lexicon(names: Vec<String>, verbs: &[String], action: SwitchAction) -> Lexicon {
    let (spoken, bound) = match action {
        SwitchAction::Enter => (super::words::SPOKEN_ENTER, super::words::BOUND_ENTER),
        SwitchAction::Exit => (super::words::SPOKEN_EXIT, super::words::BOUND_EXIT),
    };
    let single = |v: &String| v.chars().count() == 1 && !v.is_ascii();
    let mut lex = Lexicon {
        names,
        verbs: verbs.iter().filter(|v| !single(v)).cloned().collect(),
        phrases: Vec::new(),
        bound: verbs.iter().filter(|v| single(v)).cloned().collect(),
    };
    lex.verbs.extend(spoken.iter().map(|v| v.to_string()));
    lex.bound.extend(bound.iter().map(|v| v.to_string()));
    lex
}
