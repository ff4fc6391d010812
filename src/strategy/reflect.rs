//! Reflect: draft → critical review → revision, `strategy.reflect_rounds` times; only the
//! last revision is the reply. Draft and reviews go to the journal, never to the record.

use super::ctx::{ask, finish, push_assistant, push_user, Ctx};
use super::TurnResult;
use crate::prompt::TailSection;
use tracing::warn;

const REVIEW: &str = "Review the answer above critically: factual errors, logic gaps, ambiguity, edge cases, anything unsafe or unclear for this household. Output only the review, as a short list.";
const REVISE: &str = "Now rewrite the answer, fixing what the review found. Output only the final answer for the user, in the user's language, with no mention of the review.";

/// Draft → review → revision (`strategy.reflect_rounds` times); only the last revision
/// is the reply. Draft and reviews go to the journal, not to the conversation record.
pub(super) async fn reflect(c: &Ctx<'_>, extra: Vec<TailSection>) -> TurnResult {
    let mut p = c.prepare(&extra);
    p.meta.purpose = "reflect-draft";
    let draft = TurnResult::from(c.round(&mut p).await);
    if p.env.choice.is_set() || draft.outcome.error.is_some() {
        return finish(c, &mut p, draft).await;
    }
    let mut answer = draft.outcome.reply.clone();
    c.log("reflect", "draft", &answer, None).await;
    for round in 1..=c.st.config().reflect_rounds {
        push_assistant(&mut p.messages, &answer);
        push_user(&mut p.messages, REVIEW.into());
        let review = match ask(c.agent, &p, "reflect-review").await {
            Ok(r) => r.content.unwrap_or_default().trim().to_string(),
            Err(e) => {
                warn!(error = %e, round, "reflect review failed; the draft stands");
                String::new()
            }
        };
        if review.is_empty() {
            break;
        }
        c.log(
            "reflect",
            "review",
            &review,
            Some(serde_json::json!({ "round": round })),
        )
        .await;
        push_assistant(&mut p.messages, &review);
        push_user(&mut p.messages, REVISE.into());
        let revision = match ask(c.agent, &p, "reflect-revision").await {
            Ok(r) => r.content.unwrap_or_default().trim().to_string(),
            Err(e) => {
                warn!(error = %e, round, "reflect revision failed; the draft stands");
                String::new()
            }
        };
        if revision.is_empty() {
            break;
        }
        c.log(
            "reflect",
            "revision",
            &revision,
            Some(serde_json::json!({ "round": round })),
        )
        .await;
        answer = revision;
    }
    draft.saying(answer, false)
}
