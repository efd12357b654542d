//! The walk strategy's control flow, with the scripted chat model: every termination path,
//! malformed output, and a model that never stops asking.

use expect_test::expect_file;
use walkrag_core::ChatError;
use walkrag_engine::ChunkId;
use walkrag_walker::graph::{EdgeKind, Graph, NodeKind};
use walkrag_walker::testing::{
    block_on, chunk_of, collect, env, render_request, test_index, ScriptedChatModel, Turn,
};
use walkrag_walker::{
    html, Answer, Control, CycleReport, Event, NextSources, Origin, Steer, Step, Strategy,
    Termination, Walk,
};

const QUESTION: &str = "Velmora mayor: which town or village was the mayor born in?";

fn walk(max_cycles: usize) -> Walk {
    Walk {
        k: 3,
        max_cycles,
        ..Walk::default()
    }
}

fn run(strategy: &Walk, turns: Vec<Turn>) -> (Answer, Vec<Event>, ScriptedChatModel) {
    let t = test_index();
    let model = ScriptedChatModel::new(turns);
    let mut events = Vec::new();
    let answer =
        block_on(strategy.run(QUESTION, env(&t.index, &model), &mut collect(&mut events))).unwrap();
    (answer, events, model)
}

fn ids(t: &walkrag_walker::testing::TestIndex, docs: &[&str]) -> Vec<ChunkId> {
    docs.iter().map(|d| chunk_of(&t.index, d)).collect()
}

fn reply(text: String) -> Turn {
    Turn::Reply(text)
}

/// The second hop's read: the birthplace, from `d2`, and the facts suffice.
fn birthplace_read(d2: ChunkId) -> Turn {
    reply(format!(
        "{{\"fact\": \"Ilsa Brandt was born in Kessel.\", \"relevance\": \"birthplace\", \"source\": \"{d2}\"}}\n{{\"sufficient\": true}}"
    ))
}

/// The first hop's read: the mayor, from `d1`, nowhere named to look next.
fn mayor_read(d1: ChunkId) -> Turn {
    reply(format!(
        "{{\"fact\": \"The mayor of Velmora is Ilsa Brandt.\", \"relevance\": \"names the mayor\", \"source\": \"{d1}\"}}\n{{\"sufficient\": false}}"
    ))
}

#[test]
fn follows_a_descriptor_to_the_second_hop_and_answers_from_its_passages() {
    let t = test_index();
    let [d1, d2] = ids(&t, &["d1", "d2"])[..] else {
        unreachable!()
    };
    let model = ScriptedChatModel::new(vec![
        reply(format!(
            "{{\"fact\": \"The mayor of Velmora is Ilsa Brandt.\", \"relevance\": \"names the mayor\", \"source\": \"{d1}\"}}\n\
             {{\"nextSource\": \"Ilsa Brandt\", \"expectedInfo\": \"where Ilsa Brandt was born\"}}\n\
             {{\"sufficient\": false}}"
        )),
        birthplace_read(d2),
        reply(format!("Answer: Kessel\nSources: [{d2}], [{d1}]")),
    ]);
    let mut events = Vec::new();
    let answer =
        block_on(walk(4).run(QUESTION, env(&t.index, &model), &mut collect(&mut events))).unwrap();

    assert_eq!(answer.answer, "Kessel");
    assert_eq!(answer.termination, Termination::Sufficient);
    assert_eq!(answer.cycles, 2);
    assert_eq!(answer.usage.llm_calls, 3);
    assert_eq!(answer.citations, [d2, d1]);
    assert_eq!(&answer.ranked[..2], [d2, d1], "cited chunks rank first");
    assert_eq!(
        answer.ranked.len(),
        6,
        "every chunk read is ranked: {:?}",
        answer.ranked
    );

    // Live events: facts and descriptors as their objects close, then the second cycle.
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| match e {
            Event::Cycle { .. } => "cycle",
            Event::Retrieved { .. } => "retrieved",
            Event::Fact(_) => "fact",
            Event::NextSource(_) => "next_source",
            Event::Token { .. } => "token",
            Event::Note { .. } => "note",
            Event::Action(_) => "action",
        })
        .filter(|k| *k != "token")
        .collect();
    assert_eq!(
        kinds,
        [
            "cycle",
            "retrieved",
            "fact",
            "next_source",
            "cycle",
            "retrieved",
            "retrieved",
            "fact"
        ]
    );
    // Each search says what it was for.
    let Event::Retrieved { origin, .. } = &events[1] else {
        panic!()
    };
    assert_eq!(*origin, Origin::Question);
    // Velmora's record names Ilsa Brandt, the title of d2: a link, followed too, and
    // recorded first (it needed no model call).
    let Event::Retrieved {
        query,
        chunks,
        origin,
        ..
    } = &events[5]
    else {
        panic!()
    };
    assert_eq!(query, walkrag_walker::LINKS_QUERY);
    assert_eq!(*origin, Origin::Link);
    assert_eq!(chunks[0].chunk_id, d2);
    assert_eq!(chunks[0].linked_from, Some(d1));
    let Event::Retrieved {
        query,
        chunks,
        origin,
        ..
    } = &events[6]
    else {
        panic!()
    };
    assert_eq!(*origin, Origin::Model);
    assert_eq!(query, "Ilsa Brandt: where Ilsa Brandt was born");
    assert_eq!(chunks[0].chunk_id, d2);
    assert!(
        chunks.iter().all(|c| c.new),
        "read chunks are never retrieved again"
    );

    // The second read sees the first fact; the answer step sees the passages both facts came
    // from, not the facts (a read step's facts misled the reader: docs/results/reader-copy).
    let requests = model.requests.lock().unwrap();
    assert!(requests[1]
        .messages
        .last()
        .unwrap()
        .content
        .contains(&format!("- The mayor of Velmora is Ilsa Brandt. [{d1}]")));
    let answer_prompt = &requests[2].messages.last().unwrap().content;
    assert!(
        answer_prompt.contains(&format!("[{d1}]")) && answer_prompt.contains(&format!("[{d2}]")),
        "{answer_prompt}"
    );
    assert!(!answer_prompt.contains("Notes taken"), "{answer_prompt}");
    let steps = &answer.trace.steps;
    assert!(steps.iter().any(|s| matches!(
        s,
        Step::Terminate {
            reason: Termination::Sufficient,
            cycle: 2
        }
    )));
    assert_eq!(
        steps
            .iter()
            .filter(|s| matches!(s, Step::Fact(f) if f.trusted))
            .count(),
        2
    );

    // The knowledge graph links question → chunk → fact → descriptor → chunk → answer.
    let graph = Graph::of(&answer, &t.index);
    let has = |from: &str, to: &str, kind: EdgeKind| {
        graph
            .edges
            .iter()
            .any(|e| e.from == from && e.to == to && e.kind == kind)
    };
    let (c1, c2) = (format!("chunk:{d1}"), format!("chunk:{d2}"));
    assert!(
        has("question", &c1, EdgeKind::Retrieved),
        "{:#?}",
        graph.edges
    );
    assert!(has(&c1, "fact:1", EdgeKind::Yielded));
    assert!(has("fact:1", "descriptor:1", EdgeKind::Asked));
    assert!(has("descriptor:1", &c2, EdgeKind::Found));
    assert!(has(&c1, &c2, EdgeKind::Linked));
    assert!(has(&c2, "fact:2", EdgeKind::Yielded));
    assert!(has(&c2, "answer", EdgeKind::Supports));
    assert_eq!(
        graph
            .nodes
            .iter()
            .filter(|n| n.kind == NodeKind::Chunk)
            .count(),
        6
    );
    let chunk = graph.nodes.iter().find(|n| n.id == c2).unwrap();
    assert!(
        chunk.text.contains("born in Kessel"),
        "chunk nodes carry their text"
    );

    // The HTML trace is one self-contained page with every node clickable.
    let page = html::render(&answer, &graph);
    assert!(page.starts_with("<!DOCTYPE html>") && page.contains("<svg"));
    for node in &graph.nodes {
        assert!(
            page.contains(&format!("data-id=\"{}\"", node.id)),
            "{}",
            node.id
        );
    }
    let external = page.matches("http").count();
    assert_eq!(
        external,
        page.matches("http://www.w3.org/2000/svg").count(),
        "no network"
    );
    assert!(!page.contains("<script src"));
}

#[test]
fn a_model_that_never_stops_asking_is_stopped_by_max_cycles() {
    let asks =
        "{\"nextSource\": \"more\", \"expectedInfo\": \"anything\"}\n{\"sufficient\": false}";
    let (answer, _, model) = run(
        &Walk { k: 1, ..walk(3) },
        vec![
            reply(asks.into()),
            reply(asks.into()),
            reply("Answer: not found".into()),
        ],
    );
    assert_eq!(answer.termination, Termination::MaxCycles);
    assert_eq!(answer.cycles, 3);
    let requests = model.requests.lock().unwrap();
    assert_eq!(
        requests.len(),
        3,
        "two reads and the answer: a read of the last cycle could lead nowhere"
    );
    assert!(!answer.found);
    // The last cycle's passage was searched for and goes to the answer unread.
    assert_eq!(answer.ranked.len(), 3, "{:?}", answer.ranked);
    let last = answer.ranked[2];
    let prompt_of = |i: usize| requests[i].messages.last().unwrap().content.clone();
    assert!(!prompt_of(0).contains(&last.to_string()) && !prompt_of(1).contains(&last.to_string()));
    assert!(prompt_of(2).contains(&last.to_string()), "{}", prompt_of(2));
    assert!(answer.trace.steps.iter().any(|s| matches!(
        s,
        Step::Note { message, .. } if message.contains("without a read step")
    )));
}

#[test]
fn no_descriptors_ends_the_walk() {
    let (answer, _, _) = run(
        &walk(4),
        vec![
            reply("{\"sufficient\": false}".into()),
            reply("Answer: not found".into()),
        ],
    );
    assert_eq!(answer.termination, Termination::NoDescriptors);
    assert_eq!(answer.cycles, 1);
}

#[test]
fn sufficient_before_any_trusted_fact_does_not_end_the_walk() {
    let (answer, events, _) = run(
        &walk(4),
        vec![
            reply("{\"sufficient\": true}".into()),
            reply("Answer: not found".into()),
        ],
    );
    assert_ne!(answer.termination, Termination::Sufficient);
    assert!(events.iter().any(|e| matches!(
        e,
        Event::Note { message } if message.contains("walking on")
    )));
}

#[test]
fn sufficient_after_a_trusted_fact_ends_the_walk() {
    let t = test_index();
    let d1 = chunk_of(&t.index, "d1");
    let (answer, _, _) = run(
        &walk(4),
        vec![
            reply(format!(
                "{{\"fact\": \"The mayor of Velmora is Ilsa Brandt.\", \"relevance\": \"r\", \"source\": \"{d1}\"}}\n{{\"sufficient\": true}}"
            )),
            reply("Answer: Ilsa Brandt".into()),
        ],
    );
    assert_eq!(answer.termination, Termination::Sufficient);
    assert_eq!(answer.cycles, 1);
}

#[test]
fn nothing_new_ends_the_walk() {
    // Six records, three read per cycle: the third search finds nothing unread.
    let asks = "{\"nextSource\": \"Velmora\", \"expectedInfo\": \"x\"}";
    let (answer, _, _) = run(
        &Walk { k: 3, ..walk(10) },
        vec![
            reply(asks.into()),
            reply(asks.into()),
            reply("Answer: x".into()),
        ],
    );
    assert_eq!(answer.termination, Termination::NothingNew);
    assert_eq!(answer.cycles, 3);
    assert_eq!(answer.ranked.len(), 6);
}

#[test]
fn budgets_end_the_walk() {
    let asks = "{\"nextSource\": \"Kessel\", \"expectedInfo\": \"x\"}";
    let tokens = Walk {
        token_budget: Some(1),
        ..walk(4)
    };
    let (answer, _, _) = run(&tokens, vec![reply(asks.into()), reply("Answer: x".into())]);
    assert_eq!(answer.termination, Termination::TokenBudget);
    let time = Walk {
        time_budget: Some(std::time::Duration::ZERO),
        ..walk(4)
    };
    let (answer, _, _) = run(&time, vec![reply(asks.into()), reply("Answer: x".into())]);
    assert_eq!(answer.termination, Termination::TimeBudget);
}

#[test]
fn a_stopped_walk_answers_from_what_it_has() {
    let control = Control::new();
    control.stop();
    let strategy = Walk {
        control: control.clone(),
        ..walk(4)
    };
    let asks = "{\"nextSource\": \"Kessel\", \"expectedInfo\": \"x\"} and more text that is never generated";
    let (answer, _, _) = run(
        &strategy,
        vec![reply(asks.into()), reply("Answer: Kessel".into())],
    );
    assert_eq!(answer.termination, Termination::Stopped);
    assert_eq!(answer.answer, "Kessel", "the answer step is not cut short");
    let read = answer
        .trace
        .steps
        .iter()
        .find_map(|s| match s {
            Step::Llm(c) if c.purpose == "read" => Some(c),
            _ => None,
        })
        .unwrap();
    assert_eq!(read.error.as_deref(), Some("stopped by the user"));
    assert!(
        read.completion.len() < asks.len(),
        "generation was cancelled"
    );
}

/// A read whose model call fails for good loses its cycle, not the walk: the walk answers from
/// the passages it had read, and the trace says why. A transient failure still fails the
/// question (a caller may retry it).
#[test]
fn a_read_that_fails_for_good_ends_the_walk_with_an_answer_from_what_was_read() {
    let t = test_index();
    let d1 = chunk_of(&t.index, "d1");
    let asks = format!(
        "{{\"fact\": \"The mayor of Velmora is Ilsa Brandt.\", \"relevance\": \"names the mayor\", \"source\": \"{d1}\"}}\n\
         {{\"nextSource\": \"Ilsa Brandt\", \"expectedInfo\": \"where she was born\"}}\n{{\"sufficient\": false}}"
    );
    let broken = || ChatError::Permanent("constrained decoding failed: lexer error".into());
    let (answer, _, model) = run(
        &walk(4),
        vec![
            reply(asks.clone()),
            Turn::Fail(broken()),
            reply(format!("Answer: Ilsa Brandt\nSources: [{d1}]")),
        ],
    );
    assert_eq!(answer.termination, Termination::ModelFailed);
    assert_eq!(answer.answer, "Ilsa Brandt");
    assert!(answer.ranked.contains(&d1), "what was read is ranked");
    assert_eq!(model.requests.lock().unwrap().len(), 3);
    assert!(answer.trace.steps.iter().any(|s| matches!(
        s,
        Step::Note { message, .. } if message.contains("the model failed in cycle 2")
    )));

    let transient = ChatError::Transient {
        message: "overloaded".into(),
        retry_after: None,
    };
    let model = ScriptedChatModel::new(vec![reply(asks), Turn::Fail(transient)]);
    let mut events = Vec::new();
    let failed = block_on(walk(4).run(QUESTION, env(&t.index, &model), &mut collect(&mut events)));
    assert!(failed.is_err_and(|e| e.is_transient()));
}

#[test]
fn hints_are_searched_and_shown() {
    let control = Control::new();
    control.hint("cheese market");
    let strategy = Walk { control, ..walk(2) };
    let (_, events, model) = run(
        &strategy,
        vec![
            reply("{\"sufficient\": false}".into()),
            reply("x".into()),
            reply("Answer: x".into()),
        ],
    );
    assert!(model.requests.lock().unwrap()[0]
        .messages
        .last()
        .unwrap()
        .content
        .contains("A hint from the user: cheese market"));
    assert!(events
        .iter()
        .any(|e| matches!(e, Event::Retrieved { query, .. } if query == "cheese market")));
}

#[test]
fn malformed_output_is_salvaged_and_untrusted_sources_are_flagged() {
    let t = test_index();
    let d1 = chunk_of(&t.index, "d1");
    // The id with its first digit dropped, as small models write it now and then.
    let near = &d1.to_string()[1..];
    let model = ScriptedChatModel::new(vec![
        reply(format!(
            "Sure! Here are the facts:\n```json\n{{\"fact\": \"Velmora's mayor is Ilsa Brandt.\", \"relevance\": \"r\", \"source\": \"[{d1}]\",}}\n\
             {{\"fact\": \"Kessel is far away.\", \"relevance\": \"r\", \"source\": \"0badcafe.9\"}}\n```\n\
             | fact | relevance | source |\n|---|---|---|\n| Ilsa Brandt is an engineer. | r | {d1} |\n\
             {{\"fact\": \"Velmora is a river town.\", \"relevance\": \"r\", \"source\": \"{near}\"}}\n\
             {{\"nextSource\": \"Ilsa Brandt\", \"expectedInfo\": \"birthpl"
        )),
        reply("{\"sufficient\": true}".into()),
        reply("Answer: Kessel".into()),
    ]);
    let mut events = Vec::new();
    let answer =
        block_on(walk(4).run(QUESTION, env(&t.index, &model), &mut collect(&mut events))).unwrap();
    let facts: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            Event::Fact(f) => Some(f),
            _ => None,
        })
        .collect();
    assert_eq!(facts.len(), 4);
    assert!(facts[0].trusted && facts[2].trusted);
    assert!(
        facts[3].trusted && facts[3].repaired,
        "a near miss of a shown id is read as it"
    );
    assert_eq!(facts[3].chunk_id, Some(d1));
    assert!(!facts[1].trusted, "0badcafe.9 was never shown");
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::NextSource(d) if d.next_source == "Ilsa Brandt")),
        "the object cut off at the end is closed and read"
    );
    assert!(events
        .iter()
        .any(|e| matches!(e, Event::Note { message } if message.contains("not trusted"))));
    let answer_prompt = model.requests.lock().unwrap()[2]
        .messages
        .last()
        .unwrap()
        .content
        .clone();
    assert!(
        !answer_prompt.contains("Kessel is far away"),
        "untrusted facts are not evidence"
    );
    assert!(answer
        .trace
        .steps
        .iter()
        .any(|s| matches!(s, Step::Unread { text, .. } if text.contains("Here are the facts"))));
    assert_eq!(answer.termination, Termination::Sufficient);
}

/// The read prompt as the model sees it.
#[test]
fn read_prompt_snapshot() {
    let (_, _, model) = run(
        &walk(1),
        vec![
            reply("{\"sufficient\": false}".into()),
            reply("Answer: x".into()),
        ],
    );
    let request = &model.requests.lock().unwrap()[0];
    expect_file!["snapshots/read_prompt.txt"].assert_eq(&render_request(request));
}

#[test]
fn a_pause_after_each_cycle_can_hint_and_stop() {
    let control = Control::new();
    let mut seen = Vec::new();
    let (tx, rx) = std::sync::mpsc::channel();
    control.pause_with(Box::new(move |report: &CycleReport<'_>| {
        tx.send((report.cycle, report.descriptors.len())).unwrap();
        match report.cycle {
            1 => Steer::Hint("cheese market".into()),
            _ => Steer::Stop,
        }
    }));
    let strategy = Walk { control, ..walk(5) };
    let asks = "{\"nextSource\": \"Ilsa Brandt\", \"expectedInfo\": \"birthplace\"}";
    let (answer, events, model) = run(
        &strategy,
        vec![
            reply(asks.into()),
            reply(asks.into()),
            reply("Answer: Kessel".into()),
        ],
    );
    seen.extend(rx.try_iter());
    assert_eq!(seen, [(1, 1), (2, 1)]);
    assert_eq!(answer.termination, Termination::Stopped);
    assert_eq!(answer.cycles, 2);
    let queries: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            Event::Retrieved { query, .. } => Some(query.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(queries[1], "cheese market", "the hint is searched first");
    let second_read = model.requests.lock().unwrap()[1]
        .messages
        .last()
        .unwrap()
        .content
        .clone();
    assert!(second_read.contains("A hint from the user: cheese market"));
}

#[test]
fn with_facts_but_nowhere_named_it_searches_with_the_question_and_facts() {
    let t = test_index();
    let d1 = chunk_of(&t.index, "d1");
    let fact = format!(
        "{{\"fact\": \"The mayor of Velmora is Ilsa Brandt.\", \"relevance\": \"r\", \"source\": \"{d1}\"}}\n{{\"sufficient\": false}}"
    );
    let turns = || {
        vec![
            reply(fact.clone()),
            reply("{\"sufficient\": true}".into()),
            reply("Answer: x".into()),
        ]
    };
    // Links would find Ilsa Brandt's record too; this is about the facts' search alone.
    let unlinked = Walk {
        follow_links: false,
        ..walk(4)
    };
    let model = ScriptedChatModel::new(turns());
    let mut events = Vec::new();
    let answer =
        block_on(unlinked.run(QUESTION, env(&t.index, &model), &mut collect(&mut events))).unwrap();
    assert_eq!(answer.termination, Termination::Sufficient);
    assert_eq!(answer.cycles, 2);
    assert!(events
        .iter()
        .any(|e| matches!(e, Event::Retrieved { query, .. }
        if query == &format!("{QUESTION}: The mayor of Velmora is Ilsa Brandt."))));

    let off = Walk {
        expand_from_facts: false,
        ..unlinked
    };
    let model = ScriptedChatModel::new(turns());
    let answer = block_on(off.run(QUESTION, env(&t.index, &model), &mut |_| {})).unwrap();
    assert_eq!(answer.termination, Termination::NoDescriptors);
}

#[test]
fn a_fact_its_source_does_not_support_is_not_trusted() {
    let t = test_index();
    let d1 = chunk_of(&t.index, "d1");
    let model = ScriptedChatModel::new(vec![
        // Born in Kessel: said of Velmora's record, which never mentions it.
        reply(format!(
            "{{\"fact\": \"Ilsa Brandt was born in Kessel in 1971 and trained as an engineer.\", \"relevance\": \"birthplace\", \"source\": \"{d1}\"}}\n\
             {{\"fact\": \"Velmora is a river town.\", \"relevance\": \"the town\", \"source\": \"{d1}\"}}\n\
             {{\"sufficient\": true}}"
        )),
        reply("Answer: not found".into()),
    ]);
    let answer = block_on(walk(2).run(QUESTION, env(&t.index, &model), &mut |_| {})).unwrap();
    let facts: Vec<_> = answer
        .trace
        .steps
        .iter()
        .filter_map(|s| match s {
            Step::Fact(f) => Some(f),
            _ => None,
        })
        .collect();
    assert!(facts[0].unsupported && !facts[0].trusted, "{:?}", facts[0]);
    assert_eq!(facts[0].chunk_id, Some(d1), "the source itself was shown");
    assert!(facts[1].trusted && !facts[1].unsupported, "{:?}", facts[1]);
    assert!(answer.trace.steps.iter().any(|s| matches!(
        s,
        Step::Note { message, .. } if message.contains("its words are not in its source")
    )));
    // Neither fact reaches the answer step: it reads the passages.
    let requests = model.requests.lock().unwrap();
    let answer_prompt = &requests[1].messages.last().unwrap().content;
    assert!(
        !answer_prompt.contains("- Velmora is a river town."),
        "{answer_prompt}"
    );
    assert!(
        !answer_prompt.contains("- Ilsa Brandt was born in Kessel in 1971"),
        "{answer_prompt}"
    );
}

#[test]
fn links_in_the_passages_lead_to_the_second_hop_when_the_model_names_none() {
    let t = test_index();
    let [d1, d2] = ids(&t, &["d1", "d2"])[..] else {
        unreachable!()
    };
    // Facts but no descriptor; Velmora's record names "Ilsa Brandt", the title of d2.
    let model = ScriptedChatModel::new(vec![
        reply(format!(
            "{{\"fact\": \"The mayor of Velmora is Ilsa Brandt.\", \"relevance\": \"r\", \"source\": \"{d1}\"}}"
        )),
        reply(format!(
            "{{\"fact\": \"Ilsa Brandt was born in Kessel.\", \"relevance\": \"r\", \"source\": \"{d2}\"}}\n{{\"sufficient\": true}}"
        )),
        reply(format!("Answer: Kessel [{d2}]")),
    ]);
    let strategy = Walk {
        k: 2,
        expand_from_facts: false,
        ..walk(3)
    };
    let answer = block_on(strategy.run(QUESTION, env(&t.index, &model), &mut |_| {})).unwrap();
    assert_eq!(answer.termination, Termination::Sufficient);
    assert_eq!(answer.cycles, 2);
    let links: Vec<_> = answer
        .trace
        .steps
        .iter()
        .filter_map(|s| match s {
            Step::Retrieve(r) if r.origin == Origin::Link => Some(r),
            _ => None,
        })
        .collect();
    assert_eq!(links.len(), 1);
    assert_eq!(links[0].hits[0].chunk_id, d2);
    assert_eq!(links[0].hits[0].linked_from, Some(d1));
    assert_eq!(answer.ranked[0], d2, "cited");
    // Off: nowhere to look.
    let model = ScriptedChatModel::new(vec![
        reply(format!(
            "{{\"fact\": \"The mayor of Velmora is Ilsa Brandt.\", \"relevance\": \"r\", \"source\": \"{d1}\"}}"
        )),
        reply("Answer: not found".into()),
    ]);
    let off = Walk {
        follow_links: false,
        ..strategy
    };
    let answer = block_on(off.run(QUESTION, env(&t.index, &model), &mut |_| {})).unwrap();
    assert_eq!(answer.termination, Termination::NoDescriptors);
}

/// The answer step declares its constraint, a grammar citing only the passages shown; the
/// free read step declares none. A model that takes constraints off (a server that cannot
/// constrain) is recorded as such in the trace, and its replies are read as before.
#[test]
fn each_call_declares_its_constraint_and_the_trace_says_when_it_was_not_enforced() {
    use std::sync::Arc;
    use walkrag_core::Unconstrained;

    let t = test_index();
    let d1 = chunk_of(&t.index, "d1");
    let model = Arc::new(ScriptedChatModel::new(vec![
        reply(format!(
            "{{\"fact\": \"The mayor of Velmora is Ilsa Brandt.\", \"relevance\": \"names the mayor\", \"source\": \"{d1}\"}}\n{{\"sufficient\": true}}"
        )),
        reply(format!("Answer: Ilsa Brandt\nSources: [{d1}]")),
    ]));
    let free = Unconstrained(Arc::clone(&model));
    let mut events = Vec::new();
    let answer =
        block_on(walk(2).run(QUESTION, env(&t.index, &free), &mut collect(&mut events))).unwrap();
    assert_eq!(answer.answer, "Ilsa Brandt");
    let calls: Vec<_> = answer
        .trace
        .steps
        .iter()
        .filter_map(|s| match s {
            Step::Llm(call) => Some(call),
            _ => None,
        })
        .collect();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].constraint, None, "the read step is free");
    assert_eq!(calls[1].constraint.as_deref(), Some("lark"), "the answer");
    assert!(
        calls[1]
            .unconstrained
            .as_deref()
            .is_some_and(|r| r.contains("taken off")),
        "{:?}",
        calls[1].unconstrained
    );
    // The model itself was asked without the constraint.
    let requests = model.requests.lock().unwrap();
    assert!(requests.iter().all(|r| r.constraint.is_none()));
}

/// A walk whose second hop can come only from its next sources: two passages a search, no
/// links, three cycles.
fn hop_by(next_sources: NextSources) -> Walk {
    Walk {
        k: 2,
        next_sources,
        follow_links: false,
        ..walk(3)
    }
}

/// With next sources asked, one short call after the read writes the follow-up question the
/// cycle's passages raise: its prompt holds the worked examples, the passages and the
/// question, its reply is held to one question line, and the question is searched as the
/// model's next source.
#[test]
fn an_asked_follow_up_question_is_searched_as_the_next_source() {
    let t = test_index();
    let [d1, d2] = ids(&t, &["d1", "d2"])[..] else {
        unreachable!()
    };
    let strategy = hop_by(NextSources::Asked);
    let follow_up = "Where was Ilsa Brandt born?";
    let model = ScriptedChatModel::new(vec![
        mayor_read(d1),
        reply(format!("Follow-up: {follow_up}")),
        birthplace_read(d2),
        reply(format!("Answer: Kessel\nSources: [{d2}]")),
    ]);
    let mut events = Vec::new();
    let answer =
        block_on(strategy.run(QUESTION, env(&t.index, &model), &mut collect(&mut events))).unwrap();
    assert_eq!(answer.answer, "Kessel");
    assert_eq!(answer.usage.llm_calls, 4, "read, ask, read, answer");

    let requests = model.requests.lock().unwrap();
    let ask = &requests[1];
    assert!(
        matches!(&ask.constraint, Some(walkrag_core::Constraint::Regex(p)) if p.starts_with("Follow-up: ")),
        "{:?}",
        ask.constraint
    );
    // The system prompt, three worked examples, then the cycle's passages and the question.
    assert_eq!(ask.messages.len(), 8);
    let user = &ask.messages.last().unwrap().content;
    assert!(user.contains(&format!("[{d1}]")), "{user}");
    assert!(
        user.trim_end().ends_with(&format!("Question: {QUESTION}")),
        "{user}"
    );
    drop(requests);

    let searches = walkrag_walker::testing::retrievals(&answer);
    assert_eq!(searches.len(), 2, "{searches:?}");
    let (origin, query, hits) = &searches[1];
    assert_eq!(
        (*origin, query.as_str(), hits[0]),
        (Origin::Model, follow_up, d2)
    );
    assert!(events
        .iter()
        .any(|e| matches!(e, Event::NextSource(d) if d.next_source == follow_up)));
}

/// With `names`, a read that names nowhere to look still hops: the first unread names of the
/// cycle's passages are searched with the question, found by a name, with no extra model
/// call; without them the walk ends for want of a next source.
#[test]
fn the_walk_searches_its_passages_unread_names_when_asked() {
    let t = walkrag_walker::testing::index_of(
        r#"{"id": "d1", "title": "Velmora", "text": "Velmora is a river town; its mayor was born in the Kessel Highlands."}
{"id": "d2", "title": "Mountains", "text": "The Kessel Highlands rise north of the river plain."}
{"id": "d3", "title": "Orchards", "text": "Apple orchards surround the valley."}
"#,
    );
    let [d1, d2] = [chunk_of(&t.index, "d1"), chunk_of(&t.index, "d2")];
    let question = "Velmora mayor: where was the mayor born?";
    let turns = || {
        vec![
            reply(format!(
                "{{\"fact\": \"Velmora's mayor was born in the Kessel Highlands.\", \"relevance\": \"r\", \"source\": \"{d1}\"}}"
            )),
            reply(format!("Answer: the Kessel Highlands [{d1}]")),
        ]
    };
    let strategy = Walk {
        k: 1,
        max_cycles: 2,
        expand_from_facts: false,
        follow_links: false,
        names: 2,
        ..Walk::default()
    };
    let model = ScriptedChatModel::new(turns());
    let answer = block_on(strategy.run(question, env(&t.index, &model), &mut |_| {})).unwrap();
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
    assert_eq!(answer.cycles, 2);
    assert_eq!(
        answer.usage.llm_calls, 2,
        "one read, and the answer reads the hop's passage"
    );
    assert!(answer.ranked.contains(&d2));
    let without = Walk {
        names: 0,
        ..strategy
    };
    let model = ScriptedChatModel::new(turns());
    let answer = block_on(without.run(question, env(&t.index, &model), &mut |_| {})).unwrap();
    assert_eq!(answer.termination, Termination::NoDescriptors);
}
