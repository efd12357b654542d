//! Self-ask next sources ([`crate::NextSources::Asked`]): after a read step that does not
//! end the walk, one short call writes the follow-up question its passages raise ("Where was
//! Tomas Belvik born?"), and that question is searched. The read step's `nextSource` asks a
//! small model to describe where to look, and it names the passages it was shown instead;
//! rewriting the question around the name a passage gives is a task it can do. The reply is
//! held to one question line while it is generated.

use walkrag_core::{ChatRequest, Constraint};
use walkrag_engine::ChunkId;

use crate::reader::prompt;
use crate::run::Run;
use crate::search::passages;
use crate::strategy::StrategyError;
use crate::trace::{Descriptor, Origin};

/// Passages of the cycle shown to the call, in the search's order: the hop's names are in
/// its best passages, and a short prompt keeps the call cheap.
const ASK_PASSAGES: usize = 2;
/// Most tokens of the reply: one question.
const ASK_MAX_TOKENS: usize = 60;
/// The reply's first words, written by the grammar.
const PREFIX: &str = "Follow-up:";

/// The one-line reply: the prefix, then a question of 6 to 160 characters.
fn constraint() -> Constraint {
    Constraint::Regex(format!("{PREFIX} [^\\n?]{{6,160}}\\?"))
}

/// The follow-up question of a reply: its first line, less the prefix (a server that cannot
/// hold the reply to the grammar may write more). `None` when nothing is left.
fn follow_up_of(text: &str) -> Option<String> {
    let line = text.trim().lines().next()?.trim();
    let question = line.strip_prefix(PREFIX).unwrap_or(line).trim();
    (!question.is_empty()).then(|| question.to_string())
}

/// The lower-case words of `text`.
fn words(text: &str) -> std::collections::HashSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// Whether `follow_up` has a word `question` does not: one without is the question again,
/// or a part of it, and searching it finds what the question's own search ranks next, not
/// what the passages point to.
fn asks_more(follow_up: &str, question: &str) -> bool {
    let asked = words(question);
    words(follow_up).iter().any(|w| !asked.contains(w))
}

/// Asks the model for the follow-up question that `new` (the cycle's passages) raise about
/// `question`; `None` when it wrote none, or one with no word the question lacks (noted).
pub(crate) async fn follow_up(
    run: &mut Run<'_>,
    cycle: usize,
    question: &str,
    new: &[ChunkId],
) -> Result<Option<Descriptor>, StrategyError> {
    let shown: Vec<ChunkId> = new.iter().take(ASK_PASSAGES).copied().collect();
    let user = prompt::render(
        prompt::ASK_USER,
        &[
            ("passages", &passages::render(run.env.index, &shown)),
            ("question", question),
        ],
    );
    let request = ChatRequest {
        constraint: Some(constraint()),
        ..prompt::request_with_examples(
            prompt::ASK_SYSTEM,
            prompt::ASK_EXAMPLES,
            user,
            ASK_MAX_TOKENS,
        )
    };
    let completion = run.chat(cycle, "ask", request, false).await?;
    let Some(next_source) = follow_up_of(&completion.text) else {
        return Ok(None);
    };
    if !asks_more(&next_source, question) {
        run.note(
            cycle,
            format!("the follow-up question {next_source:?} has no word the question lacks: not searched"),
        );
        return Ok(None);
    }
    Ok(Some(Descriptor {
        cycle,
        next_source,
        expected_info: String::new(),
        origin: Origin::Model,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reply_is_the_question_after_the_prefix() {
        assert_eq!(
            follow_up_of("Follow-up: Where was Tomas Belvik born?").as_deref(),
            Some("Where was Tomas Belvik born?")
        );
        // A server's reply not held to the grammar: its first line, prefix or not.
        assert_eq!(
            follow_up_of("  When did the Linden Clock Museum open?\nBecause ...").as_deref(),
            Some("When did the Linden Clock Museum open?")
        );
        assert_eq!(follow_up_of("Follow-up:  "), None);
        assert_eq!(follow_up_of(""), None);
    }

    #[test]
    fn a_follow_up_asks_more_only_with_a_word_the_question_lacks() {
        let question = "What is a term for the institution allowing church courts?";
        assert!(!asks_more(
            "What is the term for the institution allowing church courts?",
            question
        ));
        assert!(!asks_more("what is a term for the institution", question));
        assert!(asks_more(
            "What is the term for the Anglican institution?",
            question
        ));
    }

    #[test]
    fn example_replies_keep_to_the_grammar_and_ask_more() {
        let turns = prompt::examples(prompt::ASK_EXAMPLES);
        for pair in turns.chunks(2) {
            let [user, reply] = pair else {
                panic!("an example without its reply")
            };
            // What the grammar allows: the prefix, one line, a question mark at the end and
            // nowhere else.
            let asked = reply.content.strip_prefix("Follow-up: ").unwrap();
            assert!((6..=161).contains(&asked.len()), "{asked}");
            assert!(!asked.contains('\n'));
            assert_eq!(asked.find('?'), Some(asked.len() - 1), "{asked}");
            let question = user.content.rsplit("Question: ").next().unwrap();
            assert!(asks_more(asked, question), "{asked}");
        }
    }
}
