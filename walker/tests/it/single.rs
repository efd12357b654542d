//! The single-shot strategy, with the scripted chat model.

use expect_test::expect_file;
use walkrag_core::{ChatError, Role};
use walkrag_walker::{Event, Single, Step, Strategy, Termination};

use walkrag_walker::testing::{
    block_on, chunk_of, collect, env, markdown_index, render_request, test_index,
    ScriptedChatModel, Turn,
};

const QUESTION: &str = "Who is the mayor of Velmora?";

#[test]
fn answers_from_the_top_k_with_citations_and_streams_tokens() {
    let t = test_index();
    let d1 = chunk_of(&t.index, "d1");
    let model = ScriptedChatModel::new(vec![Turn::Reply(format!(
        "Answer: Ilsa Brandt [{d1}]\nSources: [{d1}]\nExplanation: The mayor of Velmora is Ilsa Brandt [{d1}]."
    ))]);
    let mut events = Vec::new();
    let strategy = Single {
        k: 3,
        ..Single::default()
    };
    let answer =
        block_on(strategy.run(QUESTION, env(&t.index, &model), &mut collect(&mut events))).unwrap();

    assert_eq!(answer.answer, "Ilsa Brandt");
    assert!(answer.found);
    assert_eq!(answer.citations, [d1]);
    assert_eq!(answer.ranked.len(), 3);
    assert_eq!(
        answer.ranked[0], d1,
        "the passage sharing the question's words comes first"
    );
    assert_eq!(answer.termination, Termination::SinglePass);
    assert_eq!(answer.cycles, 1);
    assert_eq!(answer.usage.llm_calls, 1);
    assert!(answer.usage.prompt_tokens > 0 && answer.usage.completion_tokens > 0);

    // Events: the cycle, the retrieval, then the reply token by token.
    assert_eq!(events[0], Event::Cycle { cycle: 1 });
    let Event::Retrieved { query, chunks, .. } = &events[1] else {
        panic!("{:?}", events[1]);
    };
    assert_eq!(query, QUESTION);
    assert_eq!(
        chunks.iter().map(|c| c.chunk_id).collect::<Vec<_>>(),
        answer.ranked
    );
    assert!(chunks.iter().all(|c| c.new));
    let streamed: String = events[2..]
        .iter()
        .map(|e| match e {
            Event::Token { text } => text.as_str(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(streamed, answer.text);

    // The prompt shows the question and exactly the ranked passages, tagged with their ids.
    let requests = model.requests.lock().unwrap();
    let user = requests[0].messages.last().unwrap();
    assert_eq!(user.role, Role::User);
    assert!(user.content.contains(QUESTION));
    for id in &answer.ranked {
        assert!(user.content.contains(&format!("[{id}]")), "{id} shown");
    }

    // The trace holds the retrieval and the call as sent and received.
    let steps = &answer.trace.steps;
    assert!(matches!(&steps[0], Step::Retrieve(r) if r.hits.len() == 3 && r.k == 3));
    assert!(
        matches!(&steps[1], Step::Llm(c) if c.completion == answer.text && c.purpose == "answer")
    );
    assert_eq!(answer.trace.strategy, "single");
    assert_eq!(answer.trace.config["k"], 3);
}

#[test]
fn citations_of_passages_not_shown_are_dropped_and_noted() {
    let t = test_index();
    let d1 = chunk_of(&t.index, "d1");
    let model = ScriptedChatModel::new(vec![Turn::Reply(format!(
        "Answer: Ilsa Brandt [{d1}] [0badcafe.0]"
    ))]);
    let mut events = Vec::new();
    let answer = block_on(
        Single {
            k: 2,
            ..Single::default()
        }
        .run(QUESTION, env(&t.index, &model), &mut collect(&mut events)),
    )
    .unwrap();
    assert_eq!(answer.citations, [d1]);
    assert!(events
        .iter()
        .any(|e| matches!(e, Event::Note { message } if message.contains("0badcafe.0"))));
    assert!(answer
        .trace
        .steps
        .iter()
        .any(|s| matches!(s, Step::Note { message, .. } if message.contains("not shown"))));
}

#[test]
fn a_reply_that_the_passages_do_not_answer_is_not_found() {
    let t = test_index();
    let model = ScriptedChatModel::new(vec![Turn::Reply(
        "Answer: not found\nExplanation: the passages are about a river town.".into(),
    )]);
    let answer = block_on(Single::default().run(
        "What is the population of Mars?",
        env(&t.index, &model),
        &mut |_| {},
    ))
    .unwrap();
    assert!(!answer.found);
    assert_eq!(answer.answer, "not found");
    assert!(answer.citations.is_empty());
}

/// Two invoices that differ in their date, given only in the front matter.
const INVOICES: [(&str, &str); 2] = [
    (
        "march.md",
        "---\ndate: 2024-03-05\ntype: invoice\n---\n# Invoice from Hebdon Civils\n\nTotal due: 14,300 pounds.\n",
    ),
    (
        "june.md",
        "---\ndate: 2024-06-12\ntype: invoice\n---\n# Invoice from Corvell Pumps\n\nTotal due: 3,150 pounds.\n",
    ),
];

/// Answers `question` from the invoices, the model citing the invoice of `cited`.
fn answer_about_invoices(question: &str, cited: &str, total: &str) -> walkrag_walker::Answer {
    let t = markdown_index(&INVOICES);
    let doc = t
        .index
        .documents()
        .iter()
        .find(|d| d.doc.source.ends_with(cited));
    let doc = doc.expect("the invoice is indexed");
    let id = doc.chunks[0].id(&doc.doc);
    let model = ScriptedChatModel::new(vec![Turn::Reply(format!(
        "Answer: {total}\nSources: [{id}]"
    ))]);
    block_on(Single::default().run(question, env(&t.index, &model), &mut |_| {})).unwrap()
}

#[test]
fn an_answer_whose_sources_hold_no_date_the_question_names_is_not_found() {
    let question = "What was the total due on the invoice dated 2024-06-01?";
    let answer = answer_about_invoices(question, "march.md", "14,300 pounds");
    assert!(!answer.found);
    assert_eq!(answer.answer, "not found");
    assert!(answer.citations.is_empty());
    assert!(answer.text.contains("1 June 2024"), "{}", answer.text);
    assert!(answer.trace.steps.iter().any(|s| matches!(
        s,
        Step::Note { message, .. } if message.contains("1 June 2024") && message.contains("14,300 pounds")
    )));

    // The month asked about, held by the cited invoice's front matter: the answer stands.
    let answer = answer_about_invoices(
        "What was due on the June 2024 invoice?",
        "june.md",
        "3,150 pounds",
    );
    assert!(answer.found);
    assert_eq!(answer.answer, "3,150 pounds");
    // A month no cited source holds; a bare year is never checked; one of two dates held is
    // enough (an answer in part).
    let answer = answer_about_invoices(
        "What was due on the March 2024 invoice?",
        "june.md",
        "3,150 pounds",
    );
    assert_eq!(answer.answer, "not found");
    let answer = answer_about_invoices(
        "What was due on the 2023 invoice?",
        "june.md",
        "3,150 pounds",
    );
    assert_eq!(answer.answer, "3,150 pounds");
}

/// `Single`'s answer to a yes/no question where the model writes `written` and weighs
/// "Answer: yes" `yes` nats and "Answer: no" 0.
fn yes_no_answer(written: &str, yes: f32) -> walkrag_walker::Answer {
    let t = test_index();
    let model = ScriptedChatModel::new(vec![Turn::Reply(format!("Answer: {written}\nSources:"))])
        .with_scores(move |item| {
            if item.continuation.ends_with("yes") {
                yes
            } else {
                0.0
            }
        });
    let question = "Were Ilsa Brandt and the mayor of Velmora both born in Kessel?";
    let answer = block_on(Single::default().run(question, env(&t.index, &model), &mut |_| {}));
    let answer = answer.unwrap();
    let scored = model.scored.lock().unwrap();
    if written == "yes" {
        // Both answers weighed after the very prompt the answer was written after.
        let requests = model.requests.lock().unwrap();
        let continuations: Vec<&str> = scored.iter().map(|i| i.continuation.as_str()).collect();
        assert_eq!(continuations, ["Answer: yes", "Answer: no"]);
        assert!(scored.iter().all(|i| i.messages == requests[0].messages));
    } else {
        assert!(scored.is_empty(), "only a written yes is weighed");
    }
    answer
}

#[test]
fn a_yes_stands_only_where_the_model_finds_it_clearly_likelier_than_no() {
    let answer = yes_no_answer("yes", 2.5);
    assert_eq!((answer.answer.as_str(), answer.found), ("yes", true));

    let answer = yes_no_answer("yes", 0.4);
    assert_eq!((answer.answer.as_str(), answer.found), ("no", true));
    assert!(
        answer.text.starts_with("Answer: no\nSources:"),
        "{}",
        answer.text
    );
    assert!(answer.trace.steps.iter().any(|s| matches!(
        s,
        Step::Note { message, .. } if message.contains("0.40 nats") && message.contains("answered \"no\"")
    )));
    assert!(answer
        .trace
        .steps
        .iter()
        .any(|s| matches!(s, Step::Score(_))));

    assert_eq!(yes_no_answer("no", 5.0).answer, "no");
}

#[test]
fn passages_are_dropped_from_the_end_until_the_prompt_fits() {
    const ROOM: usize = 480;
    let t = test_index();
    let mut model = ScriptedChatModel::new(vec![Turn::Reply("Answer: Ilsa Brandt".into())]);
    // Room for the instructions, the worked examples and about two passages.
    model.context_length = ROOM;
    let mut events = Vec::new();
    let answer = block_on(
        Single {
            k: 5,
            ..Single::default()
        }
        .run(QUESTION, env(&t.index, &model), &mut collect(&mut events)),
    )
    .unwrap();
    assert_eq!(answer.answer, "Ilsa Brandt");
    let requests = model.requests.lock().unwrap();
    let sizes: Vec<usize> = requests
        .iter()
        .map(ScriptedChatModel::prompt_tokens)
        .collect();
    assert!(requests.len() > 1, "{sizes:?}");
    assert!(sizes.windows(2).all(|w| w[1] < w[0]), "{sizes:?}");
    assert!(*sizes.last().unwrap() <= ROOM);
    let notes = events
        .iter()
        .filter(|e| matches!(e, Event::Note { message } if message.contains("answering without passage")))
        .count();
    assert_eq!(notes, requests.len() - 1);
    // Only the successful call counts; the refused ones are in the trace.
    assert_eq!(answer.usage.llm_calls, 1);
    let failed = answer
        .trace
        .steps
        .iter()
        .filter(|s| matches!(s, Step::Llm(c) if c.error.is_some()))
        .count();
    assert_eq!(failed, requests.len() - 1);
}

#[test]
fn model_failures_are_typed() {
    let t = test_index();
    let model = ScriptedChatModel::new(vec![Turn::Fail(ChatError::Transient {
        message: "overloaded".into(),
        retry_after: None,
    })]);
    let err =
        block_on(Single::default().run(QUESTION, env(&t.index, &model), &mut |_| {})).unwrap_err();
    assert!(err.is_transient(), "{err}");
    assert!(err.to_string().contains("overloaded"));
}

/// The answer prompt as the model sees it: a change to the prompt files shows up here.
#[test]
fn answer_prompt_snapshot() {
    let t = test_index();
    let model = ScriptedChatModel::new(vec![Turn::Reply("Answer: Ilsa Brandt".into())]);
    block_on(
        Single {
            k: 2,
            ..Single::default()
        }
        .run(QUESTION, env(&t.index, &model), &mut |_| {}),
    )
    .unwrap();
    let request = &model.requests.lock().unwrap()[0];
    expect_file!["snapshots/answer_prompt.txt"].assert_eq(&render_request(request));
    assert_eq!(request.sampling.temperature, 0.0, "answers are greedy");
}

/// With an answer model, the answer step goes to it, not to the chat model, and the trace
/// names it.
#[test]
fn an_answer_model_writes_the_answer() {
    let t = test_index();
    let d1 = chunk_of(&t.index, "d1");
    let chat = ScriptedChatModel::new(Vec::new());
    let answerer = std::sync::Arc::new(ScriptedChatModel::new(vec![Turn::Reply(format!(
        "Answer: Ilsa Brandt\nSources: [{d1}]"
    ))]));
    let strategy = Single {
        k: 2,
        answer_model: Some(walkrag_walker::AnswerModel(answerer.clone())),
    };
    let answer = block_on(strategy.run(QUESTION, env(&t.index, &chat), &mut |_| {})).unwrap();
    assert_eq!(answer.answer, "Ilsa Brandt");
    assert!(chat.requests.lock().unwrap().is_empty());
    assert_eq!(answerer.requests.lock().unwrap().len(), 1);
    assert!(answer.trace.steps.iter().any(
        |s| matches!(s, Step::Llm(c) if c.purpose == "answer" && c.model.as_deref() == Some("test:scripted"))
    ));
    assert_eq!(answer.trace.config["answer_model"], "test:scripted");
}
