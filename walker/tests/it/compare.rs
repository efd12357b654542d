//! The answer step's computed comparison: a question offering two sides is answered by the
//! side whose value, weighed out of its passage, is the one the question wants.

use walkrag_core::ScoreItem;
use walkrag_walker::testing::{block_on, chunk_of, env, index_of, ScriptedChatModel, Turn};
use walkrag_walker::{Answer, Origin, Single, Step, Strategy};

const BANDS: &str = r#"{"id": "b1", "title": "The Vellows", "text": "The Vellows are a folk band formed in 1994 in Kessel. Their third album came out in 2009."}
{"id": "b2", "title": "Orla Dene", "text": "Orla Dene is a folk band formed in 2003 in Velmora, with 5 members. It toured in 1990s halls in 2011."}
"#;

const QUESTION: &str = "Which folk band was formed first, The Vellows or Orla Dene?";

/// Weighs how the sides are compared (`wanted` likeliest after the question, every choice
/// alike after the question that says nothing) and each side's founding year likeliest.
fn scorer(wanted: &'static str) -> impl Fn(&ScoreItem) -> f32 + Send + Sync + 'static {
    move |item| {
        let user = &item.messages.last().expect("a prompt").content;
        match item.continuation.as_str() {
            "earlier" | "later" | "larger" | "smaller" | "neither" => {
                if user.contains("Which is it") || user.contains("Is it true of") {
                    -2.0
                } else if item.continuation == wanted {
                    -1.0
                } else {
                    -3.0
                }
            }
            "1994" | "2003" => -1.0,
            _ => -4.0,
        }
    }
}

fn answered(question: &str, written: &str, wanted: &'static str) -> (Answer, Vec<ScoreItem>) {
    answered_from(question, written, wanted, Single::default())
}

fn answered_from(
    question: &str,
    written: &str,
    wanted: &'static str,
    strategy: Single,
) -> (Answer, Vec<ScoreItem>) {
    let t = index_of(BANDS);
    let model = ScriptedChatModel::new(vec![Turn::Reply(format!("Answer: {written}\nSources:"))])
        .with_scores(scorer(wanted));
    let answer = block_on(strategy.run(question, env(&t.index, &model), &mut |_| {}));
    let scored = model.scored.lock().unwrap().clone();
    (answer.unwrap(), scored)
}

fn notes(answer: &Answer) -> Vec<&str> {
    answer
        .trace
        .steps
        .iter()
        .filter_map(|s| match s {
            Step::Note { message, .. } => Some(message.as_str()),
            _ => None,
        })
        .collect()
}

#[test]
fn the_side_with_the_wanted_value_answers_whatever_was_written() {
    let t = index_of(BANDS);
    let (b1, b2) = (chunk_of(&t.index, "b1"), chunk_of(&t.index, "b2"));
    let (answer, scored) = answered(QUESTION, "Orla Dene", "earlier");
    assert_eq!(
        (answer.answer.as_str(), answer.found),
        ("The Vellows", true)
    );
    assert_eq!(answer.citations, [b1, b2]);
    assert!(answer.text.starts_with("Answer: The Vellows\nSources:"));
    let computed = notes(&answer).join("\n");
    assert!(
        computed.contains("states 1994 for The Vellows")
            && computed.contains("states 2003 for Orla Dene")
            && computed.contains("written: \"Orla Dene\""),
        "{computed}"
    );
    // Each side's values are the years of its own passage, weighed as written there.
    let years = |side: &str| -> Vec<&str> {
        scored
            .iter()
            .filter(|i| {
                i.messages[1]
                    .content
                    .trim_end()
                    .ends_with(&format!("for {side}?"))
            })
            .map(|i| i.continuation.as_str())
            .collect()
    };
    assert_eq!(years("The Vellows"), ["1994", "2009"]);
    assert_eq!(years("Orla Dene"), ["2003", "2011"]);

    // Asked for the later one, the other side; a written answer that agrees stands as written.
    let (answer, _) = answered(QUESTION, "Orla Dene", "later");
    assert_eq!(answer.answer, "Orla Dene");
    assert!(notes(&answer).iter().any(|n| n.ends_with("as written")));
}

#[test]
fn the_written_answer_stands_where_no_date_or_number_decides() {
    let (answer, _) = answered(QUESTION, "Orla Dene", "neither");
    assert_eq!(answer.answer, "Orla Dene");
    assert!(!notes(&answer).iter().any(|n| n.starts_with("computed")));

    // A question with one side, or an answer naming neither side, is not weighed at all.
    let (answer, scored) = answered(
        "Which folk band was formed in Kessel?",
        "The Vellows",
        "earlier",
    );
    assert_eq!(answer.answer, "The Vellows");
    assert!(scored.is_empty());
    let (answer, scored) = answered(QUESTION, "Kessel", "earlier");
    assert_eq!(answer.answer, "Kessel");
    assert!(scored.is_empty());
}

#[test]
fn a_yes_no_question_about_two_names_is_answered_from_their_values() {
    let question = "Was The Vellows formed before Orla Dene?";
    let (answer, _) = answered(question, "no", "earlier");
    assert_eq!((answer.answer.as_str(), answer.found), ("yes", true));
    assert!(
        notes(&answer)
            .iter()
            .any(|n| n.contains("The Vellows has the earlier") && n.contains("written: \"no\"")),
        "{:?}",
        notes(&answer)
    );
    let (answer, _) = answered("Was The Vellows formed after Orla Dene?", "yes", "later");
    assert_eq!(answer.answer, "no");
    // Asked something else of the two ("both folk bands?"), the written answer stands.
    let (answer, _) = answered(question, "no", "neither");
    assert_eq!(answer.answer, "no");
}

#[test]
fn a_side_no_passage_shown_is_about_is_searched_by_its_name() {
    let t = index_of(BANDS);
    let (b1, b2) = (chunk_of(&t.index, "b1"), chunk_of(&t.index, "b2"));
    let one = Single {
        k: 1,
        ..Single::default()
    };
    let (answer, _) = answered_from(QUESTION, "Orla Dene", "earlier", one);
    assert_eq!(answer.answer, "The Vellows");
    assert_eq!(answer.citations, [b1, b2]);
    assert_eq!(
        answer.shown.len(),
        2,
        "the side found is among the passages shown"
    );
    let searched: Vec<&str> = answer
        .trace
        .steps
        .iter()
        .filter_map(|s| match s {
            Step::Retrieve(r) if r.origin == Origin::Name => Some(r.query.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(searched.len(), 1);
    assert!(["The Vellows", "Orla Dene"].contains(&searched[0]));
}
