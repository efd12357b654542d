//! The `links` baseline: the question's search, one hop of links, one model call.

use walkrag_walker::testing::{
    block_on, chunk_of, collect, env, test_index, ScriptedChatModel, Turn,
};
use walkrag_walker::{Event, Linked, Origin, Step, Strategy, Termination, LINKS_QUERY};

/// Finds Velmora first (its words), whose record names Ilsa Brandt.
const QUESTION: &str = "Who is the mayor of Velmora?";

#[test]
fn follows_the_links_of_the_best_passage_then_answers_with_one_call() {
    let t = test_index();
    let (d1, d2) = (chunk_of(&t.index, "d1"), chunk_of(&t.index, "d2"));
    let model = ScriptedChatModel::new(vec![Turn::Reply(format!(
        "Answer: Kessel\nSources: [{d2}]"
    ))]);
    let strategy = Linked {
        k: 1,
        ..Linked::default()
    };
    let mut events = Vec::new();
    let answer =
        block_on(strategy.run(QUESTION, env(&t.index, &model), &mut collect(&mut events))).unwrap();

    assert_eq!(answer.answer, "Kessel");
    assert_eq!(answer.usage.llm_calls, 1, "no model call before the answer");
    assert_eq!(answer.termination, Termination::MaxCycles);
    assert_eq!(answer.cycles, 2);
    // Velmora's record names Ilsa Brandt, the title of d2: the hop reads it.
    assert_eq!(answer.citations, [d2]);
    assert_eq!(answer.ranked, [d2, d1]);
    let retrievals: Vec<(&str, Vec<_>)> = events
        .iter()
        .filter_map(|e| match e {
            Event::Retrieved { query, chunks, .. } => Some((
                query.as_str(),
                chunks.iter().map(|c| (c.chunk_id, c.linked_from)).collect(),
            )),
            _ => None,
        })
        .collect();
    assert_eq!(
        retrievals,
        [
            (QUESTION, vec![(d1, None)]),
            (LINKS_QUERY, vec![(d2, Some(d1))])
        ]
    );
    // The answer step was shown both passages, the question's first.
    let requests = model.requests.lock().unwrap();
    let prompt = &requests[0].messages.last().unwrap().content;
    let (at1, at2) = (
        prompt.find(&format!("[{d1}]")).unwrap(),
        prompt.find(&format!("[{d2}]")).unwrap(),
    );
    assert!(at1 < at2, "{prompt}");
    assert_eq!(answer.trace.strategy, "links");
    assert!(answer.trace.steps.iter().any(|s| matches!(
        s,
        Step::Terminate {
            reason: Termination::MaxCycles,
            ..
        }
    )));
}

#[test]
fn stops_when_the_passages_link_nowhere_new() {
    let t = test_index();
    let model = ScriptedChatModel::new(vec![Turn::Reply("Answer: not found\nSources:".into())]);
    // Orchards names no document: nothing to follow.
    let strategy = Linked {
        k: 1,
        max_cycles: 3,
        ..Linked::default()
    };
    let answer = block_on(strategy.run(
        "apple orchards valley mountain pass",
        env(&t.index, &model),
        &mut collect(&mut Vec::new()),
    ))
    .unwrap();
    assert_eq!(answer.termination, Termination::NothingNew);
    assert_eq!(answer.cycles, 1);
    assert_eq!(answer.usage.llm_calls, 1);
    assert!(!answer.found);
}

/// With `names`, a hop also searches the unread names written in the passages (here one that
/// titles nothing), each with the question, recorded as found by a name.
#[test]
fn a_hop_searches_the_names_written_in_the_passages() {
    let t = walkrag_walker::testing::index_of(
        r#"{"id": "d1", "title": "Velmora", "text": "Velmora is a river town; its mayor was born in the Kessel Highlands."}
{"id": "d2", "title": "Mountains", "text": "The Kessel Highlands rise north of the river plain."}
{"id": "d3", "title": "Orchards", "text": "Apple orchards surround the valley."}
"#,
    );
    let (d1, d2) = (chunk_of(&t.index, "d1"), chunk_of(&t.index, "d2"));
    let model = ScriptedChatModel::new(vec![Turn::Reply(format!(
        "Answer: the Kessel Highlands\nSources: [{d1}]"
    ))]);
    let question = "Velmora mayor: where was the mayor born?";
    let strategy = Linked {
        k: 1,
        names: 2,
        ..Linked::default()
    };
    let answer = block_on(strategy.run(
        question,
        env(&t.index, &model),
        &mut collect(&mut Vec::new()),
    ))
    .unwrap();
    let retrievals = walkrag_walker::testing::retrievals(&answer);
    assert_eq!(
        retrievals,
        [
            (Origin::Question, question.to_string(), vec![d1]),
            (
                Origin::Name,
                format!("Kessel Highlands: {question}"),
                vec![d2]
            ),
        ]
    );
    assert_eq!(answer.usage.llm_calls, 1, "no model call before the answer");
    assert!(answer.ranked.contains(&d2));
}
