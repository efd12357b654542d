//! The reader: every strategy's answer step. The question, the passages a strategy chose
//! (and the walk's verified facts) in; a typed answer with citations out.
//!
//! The reader first states the kind of answer, then its value, held while it is generated to
//! what the passages allow ([`constrain::typed_answer`]): a phrase is copied from them, yes/no
//! is `yes` or `no`, a comparison copies each side's name and value with the passage it came
//! from, and code ([`compute`]) picks the side wanted or subtracts; the trace shows both
//! values. Replies that no grammar held (a server without constrained decoding) are read
//! tolerantly, as before.

use serde::{Deserialize, Serialize};
use walkrag_core::{ChatError, ChatRequest};
use walkrag_engine::{ChunkId, Index};

use crate::reader::compute::{self, Outcome, Value, Wanted};
use crate::reader::reply::{self, Match, Reply};
use crate::reader::{constrain, language, prompt};
use crate::run::Run;
use crate::search::passages;
use crate::strategy::StrategyError;

/// The most tokens an answer may take: a comparison's two sides, its answer and sources fit
/// well within it; more means the model is rambling.
const ANSWER_MAX_TOKENS: usize = 200;

/// The kind of answer the reader stated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// Words copied from a passage.
    Phrase,
    YesNo,
    /// Two sides' values compared or subtracted.
    Comparison,
    NotFound,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Phrase => "phrase",
            Kind::YesNo => "yes_no",
            Kind::Comparison => "comparison",
            Kind::NotFound => "not_found",
        }
    }

    fn parse(word: &str) -> Option<Self> {
        Some(match word.trim() {
            "phrase" => Kind::Phrase,
            "yes/no" => Kind::YesNo,
            "comparison" => Kind::Comparison,
            "not found" => Kind::NotFound,
            _ => return None,
        })
    }
}

/// One side of a comparison: its name and value as copied from a passage, the value read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Side {
    pub name: String,
    pub value: String,
    /// The value as a date or a number; `None` where it is neither.
    pub read: Option<Value>,
    /// The passage it was copied from.
    pub source: Option<ChunkId>,
}

/// A comparison's sides, what was wanted, and what code made of them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub sides: Vec<Side>,
    pub wanted: Option<Wanted>,
    /// The reader's own answer, which stands only where nothing could be computed.
    pub written: String,
    /// What code computed; `None` where it could not (see `refused`).
    pub computed: Option<Outcome>,
    /// Why nothing was computed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
}

/// The answer step's result.
pub(crate) struct Answered {
    pub reply: Reply,
    pub text: String,
    /// Cited chunks that were shown, in order of citation.
    pub citations: Vec<ChunkId>,
    /// The passages the answer step was shown, in prompt order (after any dropped to fit).
    pub shown: Vec<ChunkId>,
    pub kind: Option<Kind>,
    pub comparison: Option<Comparison>,
}

impl Answered {
    /// "Not found", and why, where no answer step ran.
    pub fn not_found(why: &str) -> Self {
        Answered {
            reply: Reply {
                answer: "not found".into(),
                found: false,
            },
            text: format!("Kind: not found\nAnswer: not found\nExplanation: {why}"),
            citations: Vec::new(),
            shown: Vec::new(),
            kind: Some(Kind::NotFound),
            comparison: None,
        }
    }

    /// The answer when there is nothing to answer from.
    pub fn nothing_found() -> Self {
        Self::not_found("the index returned no passages for this question.")
    }

    /// A reply that needed no passages (a greeting answered directly).
    pub fn direct(reply: String) -> Self {
        Answered {
            reply: Reply {
                answer: reply.clone(),
                found: true,
            },
            text: reply,
            citations: Vec::new(),
            shown: Vec::new(),
            kind: None,
            comparison: None,
        }
    }
}

/// The answer step: the question, optional notes (facts gathered) and the passages of `shown`
/// in; a typed, cited answer out, streamed as `token` events. When the prompt does not fit
/// the model, the last passages are dropped until it does.
pub(crate) async fn answer(
    run: &mut Run<'_>,
    cycle: usize,
    question: &str,
    facts: Option<&str>,
    shown: &[ChunkId],
) -> Result<Answered, StrategyError> {
    let mut shown = shown.to_vec();
    // A stop asks for the answer from what was found: the answer itself is not cut.
    let control = std::mem::take(&mut run.control);
    let completion = loop {
        let request = request(run.env.index, question, facts, &shown);
        match run.chat_answer(cycle, request).await {
            Err(ChatError::ContextTooLong { needed, limit }) if shown.len() > 1 => {
                let dropped = shown.pop().expect("more than one passage");
                run.note(
                    cycle,
                    format!(
                        "the prompt needs {needed} tokens, the model takes {limit}: answering \
                         without passage {dropped}"
                    ),
                );
            }
            result => break result,
        }
    };
    run.control = control;
    let text = completion?.text;
    let (matched, unknown) = reply::match_ids(&text, &shown);
    let mut citations = Vec::new();
    for m in matched {
        if let Match::Repaired(id) = m {
            run.note(
                cycle,
                format!("the answer cites a near miss of {id}'s id, read as {id}"),
            );
        }
        citations.push(m.id());
    }
    for token in unknown {
        run.note(
            cycle,
            format!("the answer cites {token}, a passage it was not shown; citation dropped"),
        );
    }
    let typed = read_typed(&text, &shown);
    let mut reply = reply::parse(&text);
    let comparison = typed.comparison.map(|mut c| {
        c.written = reply.answer.clone();
        let values = [c.sides[0].read.as_ref(), c.sides[1].read.as_ref()];
        match c.wanted.map(|w| compute::compute(values, w)) {
            Some(Ok(outcome)) => {
                reply.answer = match &outcome {
                    Outcome::Pick { side } => c.sides[*side].name.clone(),
                    Outcome::Difference { text } => text.clone(),
                };
                reply.found = true;
                run.note(
                    cycle,
                    format!("computed: {} → {}", describe(&c), reply.answer),
                );
                c.computed = Some(outcome);
            }
            Some(Err(why)) => {
                run.note(
                    cycle,
                    format!(
                        "nothing computed ({why}): {}; the reader's answer stands",
                        describe(&c)
                    ),
                );
                c.refused = Some(why.to_string());
            }
            None => c.refused = Some("no comparison named".into()),
        }
        c
    });
    if typed.kind == Some(Kind::NotFound) {
        reply.found = false;
    }
    Ok(Answered {
        reply,
        text,
        citations,
        shown,
        kind: typed.kind,
        comparison,
    })
}

/// The answer step's request: instructions, worked examples, the passages, any notes and the
/// question, held to the typed grammar built from the passages shown.
fn request(index: &Index, question: &str, facts: Option<&str>, shown: &[ChunkId]) -> ChatRequest {
    let rendered = passages::render(index, shown);
    // Facts are notes beside the passages, never instead of them: a small model's facts are
    // often the question's own words.
    let notes = match facts {
        Some(facts) => {
            format!("\nNotes taken while reading (check them against the passages):\n{facts}\n")
        }
        None => String::new(),
    };
    let mut user = prompt::render(
        prompt::ANSWER_USER,
        &[
            ("passages", rendered.as_str()),
            ("notes", notes.as_str()),
            ("question", question),
        ],
    );
    // Told only when the question is clearly in another language: English prompts stay as
    // they are. (A copied phrase is in the passages' language; yes/no stays English.)
    if let Some(language) = language::not_english(question) {
        user.push_str(&format!(
            "\nThe question is in {language}: where you write words of your own, write them in \
             {language} (keep the words \"Kind:\", \"Answer:\" and \"Sources:\")."
        ));
    }
    let ids: Vec<String> = shown.iter().map(ToString::to_string).collect();
    let copy = copy_text(index, shown);
    let values = compute::values_in(&copy);
    ChatRequest {
        constraint: Some(constrain::typed_answer(&ids, &copy, &values)),
        ..prompt::request_with_examples(
            prompt::ANSWER_SYSTEM,
            prompt::ANSWER_EXAMPLES,
            user,
            ANSWER_MAX_TOKENS,
        )
    }
}

/// What a copied phrase may be taken from: each shown passage's location and text.
fn copy_text(index: &Index, shown: &[ChunkId]) -> String {
    shown
        .iter()
        .filter_map(|&id| index.row_of(id))
        .map(|row| {
            let c = index.chunk(row);
            format!("{} {}", passages::location(&c), c.text())
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// `name = value [source]` for each side, and what was wanted.
fn describe(c: &Comparison) -> String {
    let sides: Vec<String> = c
        .sides
        .iter()
        .map(|s| {
            let read = s.read.as_ref().map_or("?".to_string(), ToString::to_string);
            let source = s.source.map(|id| format!(" [{id}]")).unwrap_or_default();
            format!("{} = {} ({read}){source}", s.name, s.value)
        })
        .collect();
    let wanted = c.wanted.map_or("nothing", |w| Wanted::WORDS[w as usize]);
    format!("{}; wanted: {wanted}", sides.join(", "))
}

/// The typed parts of a reply.
#[derive(Debug, Default)]
struct Typed {
    kind: Option<Kind>,
    comparison: Option<Comparison>,
}

/// Reads `Kind:` and, for a comparison, both sides and what is wanted. A reply without a
/// kind (no grammar held it) is untyped.
fn read_typed(text: &str, shown: &[ChunkId]) -> Typed {
    fn field<'a>(line: &'a str, label: &str) -> Option<&'a str> {
        line.strip_prefix(label).map(str::trim)
    }
    let mut kind = None;
    let mut sides: Vec<Side> = Vec::new();
    let mut wanted = None;
    for line in text.lines().map(str::trim) {
        if let Some(k) = field(line, "Kind:") {
            kind = Kind::parse(k);
        } else if let Some(name) = field(line, "First:").or_else(|| field(line, "Second:")) {
            sides.push(Side {
                name: reply::strip_ids(name).trim().to_string(),
                value: String::new(),
                read: None,
                source: None,
            });
        } else if let (Some(v), Some(side)) = (field(line, "Value:"), sides.last_mut()) {
            side.value = v.to_string();
            side.read = compute::parse(v);
        } else if let (Some(from), Some(side)) = (field(line, "From:"), sides.last_mut()) {
            side.source = reply::match_ids(from, shown).0.first().map(|m| m.id());
        } else if let Some(w) = field(line, "Wanted:") {
            wanted = Wanted::parse(w);
        }
    }
    let comparison = (kind == Some(Kind::Comparison) && sides.len() == 2).then(|| Comparison {
        sides,
        wanted,
        written: String::new(),
        computed: None,
        refused: None,
    });
    Typed { kind, comparison }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_comparison_reply() {
        let a = ChunkId::parse("3f1c9a20.0").unwrap();
        let b = ChunkId::parse("b7d40e15.0").unwrap();
        let typed = read_typed(
            "Kind: comparison\nFirst: Harlow Footbridge\nValue: opened in 1884\nFrom: [3f1c9a20.0]\n\
             Second: Kessin Viaduct\nValue: 1879\nFrom: [b7d40e15.0]\nWanted: earlier\n\
             Answer: Harlow Footbridge\nSources: [3f1c9a20.0], [b7d40e15.0]",
            &[a, b],
        );
        assert_eq!(typed.kind, Some(Kind::Comparison));
        let c = typed.comparison.expect("a comparison");
        assert_eq!(c.wanted, Some(Wanted::Earlier));
        assert_eq!(c.sides[0].name, "Harlow Footbridge");
        assert_eq!(c.sides[0].source, Some(a));
        assert_eq!(
            c.sides[1].read,
            Some(Value::Date {
                year: 1879,
                month: None,
                day: None
            })
        );
        let values = [c.sides[0].read.as_ref(), c.sides[1].read.as_ref()];
        assert_eq!(
            compute::compute(values, Wanted::Earlier),
            Ok(Outcome::Pick { side: 1 })
        );
    }

    #[test]
    fn each_worked_example_is_a_reply_the_reader_reads_as_written() {
        let turns = prompt::examples(prompt::ANSWER_EXAMPLES);
        let mut kinds = Vec::new();
        for pair in turns.chunks(2) {
            let (user, reply) = (&pair[0].content, &pair[1].content);
            let shown: Vec<ChunkId> = reply::match_ids(user, &[])
                .1
                .iter()
                .filter_map(|t| ChunkId::parse(t))
                .collect();
            let typed = read_typed(reply, &shown);
            let parsed = reply::parse(reply);
            kinds.push(typed.kind.expect("a kind"));
            // A phrase is copied from the example's passages, as the grammar demands.
            if typed.kind == Some(Kind::Phrase) {
                assert!(user.contains(&parsed.answer), "{reply}");
            }
            if let Some(c) = typed.comparison {
                let values = [c.sides[0].read.as_ref(), c.sides[1].read.as_ref()];
                let Ok(Outcome::Pick { side }) = compute::compute(values, c.wanted.unwrap()) else {
                    panic!("{reply}");
                };
                assert_eq!(c.sides[side].name, parsed.answer);
                assert!(c.sides.iter().all(|s| s.source.is_some()), "{reply}");
            }
        }
        assert_eq!(
            kinds,
            [Kind::Comparison, Kind::NotFound, Kind::YesNo, Kind::Phrase]
        );
    }

    #[test]
    fn an_untyped_reply_has_no_kind() {
        let typed = read_typed("Answer: Dundee\nSources: [3f1c9a20.0]", &[]);
        assert_eq!(typed.kind, None);
        assert!(typed.comparison.is_none());
    }
}
