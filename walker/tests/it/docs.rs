//! The `docs` strategy, with scripted chat models (a main one and a reader), over three small
//! reports whose front matter gives their company, date and type.

use std::sync::Arc;

use expect_test::expect_file;
use walkrag_core::{ChatError, Constraint, ToolCall};
use walkrag_walker::testing::{
    block_on, collect, env, markdown_index, render_request, ScriptedChatModel, TestIndex, Turn,
};
use walkrag_walker::{Answer, Docs, Event, Step, Strategy, Termination};

const NORTHWIND_2022: &str = "---
company: Northwind Traders
date: 2023-03-31
type: annual report
---
# Northwind Traders Annual Report 2022

## Results

Revenue rose to 41 million euros, carried by the tea business.

## Outlook

The board expects a quieter year.
";

const NORTHWIND_2023: &str = "---
company: Northwind Traders
date: 2024-03-29
type: annual report
---
# Northwind Traders Annual Report 2023

## Results

Revenue reached 47 million euros after the opening of two shops in Lyon.

## Outlook

Two more shops are planned for Marseille.
";

const CONTOSO_2023: &str = "---
company: Contoso
date: 2024-02-15
type: annual report
---
# Contoso Annual Report 2023

## Results

Revenue was 12 million euros; the bicycle repair arm made a loss.
";

fn reports() -> TestIndex {
    markdown_index(&[
        ("northwind-2022.md", NORTHWIND_2022),
        ("northwind-2023.md", NORTHWIND_2023),
        ("contoso-2023.md", CONTOSO_2023),
    ])
}

/// A `docs` strategy whose reader is `reader`.
fn docs(reader: &Arc<ScriptedChatModel>) -> Docs {
    Docs {
        reader: Some(reader.clone()),
        ..Docs::default()
    }
}

fn ask(
    docs: &Docs,
    t: &TestIndex,
    model: &ScriptedChatModel,
    question: &str,
) -> (Answer, Vec<Event>) {
    let mut events = Vec::new();
    let answer = block_on(docs.run(question, env(&t.index, model), &mut collect(&mut events)))
        .expect("docs answers");
    (answer, events)
}

fn plan(query: &str, filters: serde_json::Value) -> Turn {
    Turn::Reply(
        serde_json::json!({"action": "query_documents", "query": query, "filters": filters})
            .to_string(),
    )
}

fn notes(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Note { message } => Some(message.clone()),
            _ => None,
        })
        .collect()
}

/// The `purpose` and whether it went to another model, of every LLM call in the trace.
fn calls(answer: &Answer) -> Vec<(String, bool)> {
    answer
        .trace
        .steps
        .iter()
        .filter_map(|s| match s {
            Step::Llm(call) => Some((call.purpose.clone(), call.model.is_some())),
            _ => None,
        })
        .collect()
}

#[test]
fn filters_choose_the_documents_the_reader_reads_and_the_model_answers_from_what_it_said() {
    let t = reports();
    let results_2023 = chunk_of(&t, "northwind-2023.md", "Results").unwrap();
    let reader = Arc::new(ScriptedChatModel::new(vec![Turn::Reply(format!(
        "Revenue reached 47 million euros [{results_2023}]."
    ))]));
    let model = ScriptedChatModel::new(vec![
        plan(
            "revenue",
            serde_json::json!({"company": "nortwind", "date": {"from": "2024"}}),
        ),
        Turn::Reply(format!(
            "Answer: 47 million euros [{results_2023}]\nExplanation: the 2023 report says so."
        )),
    ]);
    let question = "What was Northwind's revenue in its latest report?";
    let (answer, events) = ask(&docs(&reader), &t, &model, question);

    assert_eq!(answer.answer, "47 million euros");
    assert_eq!(answer.citations, [results_2023]);
    assert_eq!(answer.ranked[0], results_2023);
    assert_eq!(answer.termination, Termination::SinglePass);
    // Plan and answer by the model, the one read by the reader (recorded as another model).
    assert_eq!(
        calls(&answer),
        [
            ("plan".to_string(), false),
            ("read".to_string(), true),
            ("answer".to_string(), false)
        ]
    );
    assert_eq!(answer.usage.llm_calls, 3);

    // The plan saw the fields with examples and the documents with their metadata.
    let requests = model.requests.lock().unwrap();
    expect_file!["snapshots/docs_plan_prompt.txt"].assert_eq(&render_request(&requests[0]));
    // Held to the two actions, filtering only on the fields the documents have.
    let Some(Constraint::JsonSchema(schema)) = &requests[0].constraint else {
        panic!("a JSON Schema: {:?}", requests[0].constraint);
    };
    let filters = &schema["anyOf"][0]["properties"]["filters"]["properties"];
    let names: Vec<&String> = filters.as_object().unwrap().keys().collect();
    assert_eq!(
        names,
        ["title", "company", "date", "type", "name"],
        "{schema}"
    );
    assert_eq!(
        schema["anyOf"][1]["properties"]["action"]["const"],
        "search_passages"
    );
    // Only the 2023 report was read, whole, with the query.
    let read = reader.requests.lock().unwrap();
    assert_eq!(read.len(), 1);
    let prompt = &read[0].messages.last().unwrap().content;
    assert!(prompt.starts_with("Document: Northwind Traders Annual Report 2023 (company: Northwind Traders; date: 2024-03-29; type: annual report)"), "{prompt}");
    assert!(prompt.contains("two shops in Lyon") && prompt.contains("Marseille"));
    assert!(prompt.trim_end().ends_with("Question: revenue"), "{prompt}");
    // What it said streamed out as a fact and reached the answer step with its passage.
    let fact = events
        .iter()
        .find_map(|e| match e {
            Event::Fact(f) => Some(f.clone()),
            _ => None,
        })
        .expect("a fact event");
    assert_eq!(fact.chunk_id, Some(results_2023));
    assert!(fact.trusted);
    let answer_prompt = &requests[1].messages.last().unwrap().content;
    assert!(answer_prompt
        .contains("- From Northwind Traders Annual Report 2023: Revenue reached 47 million euros"));
    assert!(answer_prompt.contains(&format!("[{results_2023}]")));
}

/// The first chunk of the section `heading` of document `doc`.
fn chunk_of(t: &TestIndex, doc: &str, heading: &str) -> Option<walkrag_engine::ChunkId> {
    let indexed = t
        .index
        .documents()
        .iter()
        .find(|d| d.doc.id.0.ends_with(doc))?;
    let section = indexed
        .doc
        .sections
        .iter()
        .position(|s| s.title() == heading)?;
    indexed
        .chunks
        .iter()
        .find(|c| c.section as usize == section)
        .map(|c| c.id(&indexed.doc))
}

#[test]
fn readers_run_for_every_match_and_what_says_nothing_is_left_out() {
    let t = reports();
    // Both Northwind reports match; each is read; one has nothing to say.
    let reader = Arc::new(ScriptedChatModel::new(vec![
        Turn::Reply("The board expects a quieter year.".into()),
        Turn::Reply("NOT IN DOCUMENT".into()),
    ]));
    let model = ScriptedChatModel::new(vec![
        plan("outlook", serde_json::json!({"name": "Northwind"})),
        Turn::Reply("Answer: a quieter year\nExplanation: the outlook says so.".into()),
    ]);
    let (answer, events) = ask(&docs(&reader), &t, &model, "What is Northwind's outlook?");
    assert_eq!(answer.answer, "a quieter year");
    let read = reader.requests.lock().unwrap();
    assert_eq!(read.len(), 2);
    let titles: Vec<bool> = read
        .iter()
        .map(|r| r.messages.last().unwrap().content.contains("Northwind"))
        .collect();
    assert_eq!(titles, [true, true]);
    let facts = events
        .iter()
        .filter(|e| matches!(e, Event::Fact(_)))
        .count();
    assert_eq!(facts, 1, "the reader with nothing to say adds no fact");
    let answer_prompt = model.requests.lock().unwrap()[1]
        .messages
        .last()
        .unwrap()
        .content
        .clone();
    assert_eq!(
        answer_prompt.matches("- From ").count(),
        1,
        "{answer_prompt}"
    );
    // The documents read are ranked (every chunk of both reports).
    assert!(answer.ranked.len() >= 4);
}

#[test]
fn long_documents_are_read_in_parts_and_past_the_limit_the_parts_nearest_the_query() {
    let t = reports();
    let reader = Arc::new(ScriptedChatModel::new(
        (0..4)
            .map(|_| Turn::Reply("NOT IN DOCUMENT".into()))
            .collect(),
    ));
    let model = ScriptedChatModel::new(vec![plan(
        "shops in Marseille",
        serde_json::json!({"company": "Northwind"}),
    )]);
    let docs = Docs {
        part_tokens: 12,
        max_parts: 2,
        ..docs(&reader)
    };
    let (answer, events) = ask(&docs, &t, &model, "Where will Northwind open shops?");
    // Each report makes several parts of 12 words; 2 are read in all: one per report, the
    // one nearest the query.
    let read = reader.requests.lock().unwrap();
    assert_eq!(read.len(), 2);
    let first = &read
        .iter()
        .find(|r| r.messages.last().unwrap().content.contains("2023 ("))
        .unwrap()
        .messages
        .last()
        .unwrap()
        .content;
    assert!(first.contains(", part "), "{first}");
    assert!(first.contains("Marseille"), "{first}");
    assert!(notes(&events)
        .iter()
        .any(|n| n.contains("more than the 2 read: each document keeps its 1 part nearest")));
    // Nothing said: not found, without an answer call.
    assert!(!answer.found);
    assert_eq!(answer.answer, "not found");
    assert_eq!(model.requests.lock().unwrap().len(), 1);
}

#[test]
fn no_match_reads_the_nearest_documents_and_unknown_fields_are_named() {
    let t = reports();
    let reader = Arc::new(ScriptedChatModel::new(
        (0..3)
            .map(|_| Turn::Reply("Revenue was 12 million euros.".into()))
            .collect(),
    ));
    let model = ScriptedChatModel::new(vec![
        plan(
            "bicycle repair",
            serde_json::json!({"company": "Fabrikam", "region": "EMEA"}),
        ),
        Turn::Reply("Answer: 12 million euros\nExplanation: read.".into()),
    ]);
    let docs = Docs {
        max_documents: 2,
        ..docs(&reader)
    };
    let (answer, events) = ask(&docs, &t, &model, "How did the bicycle repair arm do?");
    let notes = notes(&events);
    assert!(notes
        .iter()
        .any(|n| n == "no document has the field region: filter left out"));
    assert!(notes
        .iter()
        .any(|n| n.starts_with("no document matches the filters")));
    let read = reader.requests.lock().unwrap();
    assert_eq!(read.len(), 2, "at most max_documents");
    // The nearest document to the query comes first.
    assert!(read[0].messages.last().unwrap().content.contains("Contoso"));
    assert_eq!(answer.answer, "12 million euros");
}

#[test]
fn tool_calling_models_search_passages_without_a_reader() {
    let t = reports();
    let reader = Arc::new(ScriptedChatModel::new(Vec::new()));
    let model = ScriptedChatModel::new(vec![
        Turn::Tools(vec![ToolCall {
            id: "call_1".into(),
            name: "search_passages".into(),
            arguments: r#"{"query": "bicycle repair loss"}"#.into(),
        }]),
        Turn::Reply("Answer: a loss\nExplanation: the passage says so.".into()),
    ])
    .with_tools();
    let (answer, _) = ask(
        &docs(&reader),
        &t,
        &model,
        "Did the bicycle arm make money?",
    );
    assert_eq!(answer.answer, "a loss");
    assert!(reader.requests.lock().unwrap().is_empty());
    let requests = model.requests.lock().unwrap();
    let tools: Vec<&str> = requests[0].tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(tools, ["query_documents", "search_passages"]);
    assert!(requests[0].constraint.is_none());
    let searched = answer.trace.steps.iter().find_map(|s| match s {
        Step::Retrieve(r) if r.query == "bicycle repair loss" => Some(r.hits.len()),
        _ => None,
    });
    assert_eq!(searched, Some(Docs::default().k));
    // The passages found are what the answer step is shown.
    let answer_prompt = &requests[1].messages.last().unwrap().content;
    assert!(answer_prompt.contains("bicycle repair arm made a loss"));
}

#[test]
fn a_failing_reader_is_noted_and_the_others_still_count() {
    let t = reports();
    let reader = Arc::new(ScriptedChatModel::new(vec![
        Turn::Fail(ChatError::Permanent("the reader is down".into())),
        Turn::Reply("Revenue rose to 41 million euros.".into()),
    ]));
    let model = ScriptedChatModel::new(vec![
        plan("revenue", serde_json::json!({"company": "Northwind"})),
        Turn::Reply("Answer: 41 million euros\nExplanation: one report says so.".into()),
    ]);
    let (answer, events) = ask(&docs(&reader), &t, &model, "Northwind revenue?");
    assert_eq!(answer.answer, "41 million euros");
    assert!(notes(&events)
        .iter()
        .any(|n| n.starts_with("reading Northwind Traders") && n.contains("the reader is down")));
    // The failed call is in the trace with its error.
    let failed = answer
        .trace
        .steps
        .iter()
        .filter(|s| matches!(s, Step::Llm(c) if c.error.is_some()))
        .count();
    assert_eq!(failed, 1);
}

#[test]
fn a_plan_without_a_tool_reads_the_documents_nearest_the_question() {
    let t = reports();
    let reader = Arc::new(ScriptedChatModel::new(
        (0..3)
            .map(|_| Turn::Reply("NOT IN DOCUMENT".into()))
            .collect(),
    ));
    let model = ScriptedChatModel::new(vec![Turn::Reply("I cannot tell.".into())]);
    let (answer, events) = ask(&docs(&reader), &t, &model, "Who founded Contoso?");
    assert!(notes(&events)
        .iter()
        .any(|n| n.starts_with("the plan named no tool")));
    assert_eq!(reader.requests.lock().unwrap().len(), 3);
    assert!(!answer.found);
    // Without a reader model, the main model reads.
    let model = ScriptedChatModel::new(vec![
        plan("founder", serde_json::json!({"company": "Contoso"})),
        Turn::Reply("NOT IN DOCUMENT".into()),
    ]);
    let (answer, _) = ask(&Docs::default(), &t, &model, "Who founded Contoso?");
    assert_eq!(
        calls(&answer),
        [("plan".to_string(), false), ("read".to_string(), false)]
    );
}
