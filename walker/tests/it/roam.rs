//! The `roam` strategy, with the scripted chat model, over a small Markdown report.

use expect_test::expect_file;
use walkrag_core::{Constraint, ToolCall};
use walkrag_walker::testing::{
    block_on, collect, env, redact_section_ids, render_request, report_index, section_of,
    ScriptedChatModel, TestIndex, Turn,
};
use walkrag_walker::{Answer, Event, Roam, Step, Strategy, Termination};

const QUESTION: &str = "How many vessels does the cooperative operate?";

fn ask(roam: &Roam, t: &TestIndex, model: &ScriptedChatModel, question: &str) -> Answer {
    block_on(roam.run(
        question,
        env(&t.index, model),
        &mut collect(&mut Vec::new()),
    ))
    .unwrap()
}

fn expand(ids: &[String]) -> Turn {
    let ids: Vec<String> = ids.iter().map(|id| format!("\"{id}\"")).collect();
    Turn::Reply(format!(
        "{{\"action\": \"expand_sections\", \"ids\": [{}]}}",
        ids.join(", ")
    ))
}

fn done() -> Turn {
    Turn::Reply(r#"{"action": "answer"}"#.into())
}

/// The user message of request `i`: the outline, what happened last turn, the question.
fn prompt(model: &ScriptedChatModel, i: usize) -> String {
    model.requests.lock().unwrap()[i]
        .messages
        .last()
        .unwrap()
        .content
        .clone()
}

#[test]
fn several_sections_open_at_once_and_their_text_appears_in_place() {
    let t = report_index();
    let (vessels_id, vessels) = section_of(&t.index, "Vessels");
    let (revenue_id, revenue) = section_of(&t.index, "Revenue");
    let (vessels, revenue) = (vessels.unwrap(), revenue.unwrap());
    let model = ScriptedChatModel::new(vec![
        expand(&[vessels_id.to_string(), revenue_id.to_string()]),
        done(),
        Turn::Reply(format!(
            "Answer: nine [{vessels}]\nExplanation: the fleet has nine vessels."
        )),
    ]);
    let mut events = Vec::new();
    let answer =
        block_on(Roam::default().run(QUESTION, env(&t.index, &model), &mut collect(&mut events)))
            .unwrap();

    assert_eq!(answer.answer, "nine");
    assert_eq!(answer.citations, [vessels]);
    // Cited, then the rest of what was opened, in the order opened.
    assert_eq!(answer.ranked, [vessels, revenue]);
    assert_eq!(answer.termination, Termination::Sufficient);
    assert_eq!((answer.cycles, answer.usage.llm_calls), (2, 3));

    // First turn: the chapters show the start of their text, deeper sections are closed.
    let first = prompt(&model, 0);
    assert!(
        first.contains(&format!("[{vessels_id}] Vessels (closed)")),
        "{first}"
    );
    // Under the outline, the leads: closed sections holding the question's nearest
    // passages, each with a line of it.
    let (outline, leads) = first
        .split_once("each with one line of its passage:\n")
        .expect("leads listed");
    assert!(!outline.contains("nine vessels"));
    assert!(
        leads.starts_with(&format!(
            "[{vessels_id}] Vessels: The cooperative operates nine vessels"
        )),
        "{leads}"
    );
    // Open, a section is no longer a lead.
    let second_leads = prompt(&model, 1);
    assert!(!second_leads.contains(&format!("[{vessels_id}] Vessels: ")));
    // Second turn: both opened sections show their text where their stubs were.
    let second = prompt(&model, 1);
    assert!(second.contains(&format!(
        "[{vessels_id}] Vessels (open)\nThe cooperative operates nine vessels"
    )));
    assert!(second.contains(&format!("[{revenue_id}] Revenue (open)\nRevenue rose")));
    assert!(second.contains(&format!("Opened: {vessels_id}, {revenue_id}.")));
    // The answer step reads the opened sections, in the order opened.
    let shown = prompt(&model, 2);
    assert!(shown.find(&vessels.to_string()) < shown.find(&revenue.to_string()));

    // A model without tools is held to the closed sections shown, or to answering.
    let requests = model.requests.lock().unwrap();
    let Some(Constraint::JsonSchema(schema)) = &requests[0].constraint else {
        panic!("a JSON Schema: {:?}", requests[0].constraint);
    };
    let ids = &schema["anyOf"][0]["properties"]["ids"]["items"]["enum"];
    assert!(
        ids.as_array()
            .unwrap()
            .contains(&vessels_id.to_string().into()),
        "{schema}"
    );
    assert_eq!(
        schema["anyOf"][1]["properties"]["action"]["const"],
        "answer"
    );
    let snapshot = redact_section_ids(&t.index, &render_request(&requests[1]));
    expect_file!["snapshots/roam_prompt.txt"].assert_eq(&snapshot);
    drop(requests);

    // The leads' search, then the opening: retrievals in the trace and the event stream.
    let searches = walkrag_walker::testing::searches(&answer);
    assert_eq!(searches.len(), 2);
    assert_eq!(searches[0].query, QUESTION);
    let opened = searches[1];
    assert_eq!(opened.hits.len(), 2);
    assert!(opened.query.starts_with("expand_sections "));
    assert!(events
        .iter()
        .any(|e| matches!(e, Event::Retrieved { cycle: 1, .. })));
}

#[test]
fn an_unknown_id_is_an_error_the_model_can_recover_from() {
    let t = report_index();
    let (vessels_id, vessels) = section_of(&t.index, "Vessels");
    let model = ScriptedChatModel::new(vec![
        expand(&["ffff0000".into(), "Fleet".into()]),
        expand(&[vessels_id.to_string()]),
        done(),
        Turn::Reply("Answer: nine\nExplanation: nine vessels.".into()),
    ]);
    let answer = ask(&Roam::default(), &t, &model, QUESTION);
    let second = prompt(&model, 1);
    assert!(
        second.contains(
            "No section has the id ffff0000, Fleet: ids are the 8 characters in square brackets."
        ),
        "{second}"
    );
    assert!(prompt(&model, 2).contains(&format!("[{vessels_id}] Vessels (open)")));
    assert_eq!(answer.ranked, [vessels.unwrap()]);
    assert!(answer.trace.steps.iter().any(|s| matches!(
        s,
        Step::Note { message, .. } if message.contains("unknown sections: ffff0000, Fleet")
    )));
}

#[test]
fn past_the_budget_the_least_recently_used_section_closes_again() {
    let t = report_index();
    let (revenue_id, _) = section_of(&t.index, "Revenue");
    let (crew_id, crew) = section_of(&t.index, "Crew");
    let (costs_id, _) = section_of(&t.index, "Costs");
    let model = ScriptedChatModel::new(vec![
        expand(&[revenue_id.to_string()]),
        expand(&[costs_id.to_string(), crew_id.to_string()]),
        done(),
        Turn::Reply("Answer: two weeks\nExplanation: rotations.".into()),
    ]);
    // The test embedder counts words: Revenue has 10, Costs 10, Crew 8.
    let roam = Roam {
        budget_tokens: 20,
        ..Roam::default()
    };
    let answer = ask(&roam, &t, &model, "How long are crew rotations?");
    let third = prompt(&model, 2);
    assert!(third.contains(&format!("Closed to stay within the budget: {revenue_id}.")));
    assert!(third.contains(&format!("[{revenue_id}] Revenue (closed)")));
    assert!(third.contains(&format!("[{crew_id}] Crew (open)")));
    assert!(answer.ranked.contains(&crew.unwrap()));
    assert!(!answer.ranked.iter().any(|c| c.section == revenue_id));
}

#[test]
fn in_a_conversation_opened_sections_stay_open_for_the_next_question() {
    let t = report_index();
    let (vessels_id, vessels) = section_of(&t.index, "Vessels");
    let model = ScriptedChatModel::new(vec![
        expand(&[vessels_id.to_string()]),
        done(),
        Turn::Reply("Answer: nine\nExplanation: nine vessels.".into()),
        done(),
        Turn::Reply("Answer: the Marta Lind\nExplanation: the newest.".into()),
    ]);
    let roam = Roam::conversation();
    ask(&roam, &t, &model, QUESTION);
    let answer = ask(&roam, &t, &model, "Which vessel is the newest?");
    // The follow-up starts with Vessels open, and answers from it without opening anything.
    assert!(prompt(&model, 3).contains(&format!(
        "[{vessels_id}] Vessels (open)\nThe cooperative operates nine vessels"
    )));
    assert_eq!(answer.answer, "the Marta Lind");
    assert_eq!(answer.ranked, [vessels.unwrap()]);
    assert_eq!(roam.opened.unwrap().lock().unwrap().ids(), [vessels_id]);
    // Without a conversation every question starts closed.
    let fresh = ScriptedChatModel::new(vec![done(), Turn::Reply("Answer: x".into())]);
    ask(&Roam::default(), &t, &fresh, "Which vessel is the newest?");
    assert!(prompt(&fresh, 0).contains(&format!("[{vessels_id}] Vessels (closed)")));
}

#[test]
fn a_tool_calling_model_opens_sections_with_the_tool() {
    let t = report_index();
    let (vessels_id, vessels) = section_of(&t.index, "Vessels");
    let (crew_id, _) = section_of(&t.index, "Crew");
    let model = ScriptedChatModel::new(vec![
        Turn::Tools(vec![ToolCall {
            id: "c1".into(),
            name: "expand_sections".into(),
            arguments: format!("{{\"ids\": [\"{vessels_id}\", \"{crew_id}\"]}}"),
        }]),
        Turn::Tools(vec![ToolCall {
            id: "c2".into(),
            name: "answer".into(),
            arguments: "{}".into(),
        }]),
        Turn::Reply("Answer: nine\nExplanation: nine vessels.".into()),
    ])
    .with_tools();
    let answer = ask(&Roam::default(), &t, &model, QUESTION);
    assert_eq!(answer.termination, Termination::Sufficient);
    assert_eq!(answer.ranked[0], vessels.unwrap());
    let requests = model.requests.lock().unwrap();
    let tools: Vec<&str> = requests[0].tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(tools, ["expand_sections", "answer"]);
    assert!(requests[0].constraint.is_none());
    assert!(requests[1]
        .messages
        .last()
        .unwrap()
        .content
        .contains(&format!("[{crew_id}] Crew (open)")));
}

#[test]
fn not_found_names_the_sections_read_and_nothing_opened_falls_back_to_search() {
    let t = report_index();
    let (crew_id, _) = section_of(&t.index, "Crew");
    let model = ScriptedChatModel::new(vec![
        expand(&[crew_id.to_string()]),
        // The same section again: nothing new to read, the walk ends.
        expand(&[crew_id.to_string()]),
        Turn::Reply("Answer: not found\nExplanation: no dividend is mentioned.".into()),
    ]);
    let answer = ask(&Roam::default(), &t, &model, "What dividend was paid?");
    assert!(!answer.found);
    assert_eq!(answer.termination, Termination::NothingNew);
    assert!(answer
        .text
        .ends_with(&format!("Sections read: [{crew_id}] Crew")));

    let model = ScriptedChatModel::new(vec![
        done(),
        Turn::Reply("Answer: 2025\nExplanation: the outlook.".into()),
    ]);
    let answer = ask(
        &Roam::default(),
        &t,
        &model,
        "When does the southern route open?",
    );
    assert!(answer.trace.steps.iter().any(|s| matches!(
        s,
        Step::Note { message, .. } if message.contains("no section was opened")
    )));
    assert!(!answer.ranked.is_empty());
}

#[test]
fn a_lead_deeper_than_the_outline_shows_may_be_opened() {
    let t = walkrag_walker::testing::markdown_index(&[(
        "guide.md",
        "# Guide\n\n## Setup\n\nInstall it first.\n\n### Options\n\nThere are options.\n\n\
         #### Ports\n\nThe server listens on port 8080 by default.\n\n## Usage\n\nRun it.\n",
    )]);
    let (ports_id, ports) = section_of(&t.index, "Ports");
    let ports = ports.unwrap();
    let question = "Which port does the server listen on by default?";
    let model = ScriptedChatModel::new(vec![
        expand(&[ports_id.to_string()]),
        done(),
        Turn::Reply(format!("Answer: 8080 [{ports}]")),
    ]);
    let answer = ask(&Roam::default(), &t, &model, question);
    assert_eq!(answer.answer, "8080");
    assert_eq!(answer.ranked, [ports]);
    let first = prompt(&model, 0);
    let (outline, leads) = first
        .split_once("each with one line of its passage:\n")
        .expect("leads listed");
    // Ports sits below what the outline shows; as a lead it is listed, and may be opened.
    assert!(!outline.contains(&ports_id.to_string()), "{outline}");
    assert!(
        leads.contains(&format!(
            "[{ports_id}] Ports: The server listens on port 8080 by default"
        )),
        "{first}"
    );
    let requests = model.requests.lock().unwrap();
    let Some(Constraint::JsonSchema(schema)) = &requests[0].constraint else {
        panic!("a JSON Schema: {:?}", requests[0].constraint);
    };
    let ids = &schema["anyOf"][0]["properties"]["ids"]["items"]["enum"];
    assert!(ids
        .as_array()
        .unwrap()
        .contains(&ports_id.to_string().into()));
}
