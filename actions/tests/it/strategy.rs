//! The `actions` strategy end to end: an index of the notes API's action records (fake word
//! embedder), a scripted model, the real executor and the notes server on 127.0.0.1.

use std::path::Path;
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use walkrag_actions::{
    Actions, AlwaysNo, AlwaysYes, AuditLog, Catalog, Confirm, Conversation, Credentials,
    ExecutorConfig, RequestPreview, VALUE_MARGIN,
};
use walkrag_core::{ChatRequest, Constraint, Role, ScoreItem, ToolCall};
use walkrag_engine::lexical::{reciprocal_rank_fusion, Bm25};
use walkrag_walker::graph::Graph;
use walkrag_walker::html;
use walkrag_walker::testing::{env, index_of, render_request, ScriptedChatModel, TestIndex, Turn};
use walkrag_walker::{ActionStep, Answer, Event, ScoreCall, Step, Strategy, Termination};

use crate::server::{export_body, Server};
use crate::{executor, notes};

/// The notes API's records in an index.
fn notes_index() -> TestIndex {
    index_of(&notes().records_jsonl(Path::new("/specs/notes.yaml")))
}

/// The strategy on the notes server. The scripts below start at the pick, so the guess of
/// operation ids before the search is off; so is nearness in a weighed pick, which leaves
/// the pick to the scripted readings. Both are tested on their own.
fn strategy(server: &Server, config: ExecutorConfig, confirm: Arc<dyn Confirm>) -> Actions {
    let mut actions = Actions::new(notes(), executor(server, config), confirm);
    actions.guess = false;
    actions.nearness_weight = Some(0.0);
    actions
}

/// A model line calling `operation` with `params`.
fn call(operation: &str, params: Value) -> Turn {
    let line = json!({"action": "execute_action", "operation_id": operation, "params": params});
    Turn::Reply(line.to_string())
}

/// The pick that starts a request for a model without native tools: `operation`, or
/// `"none"`.
fn pick(operation: &str) -> Turn {
    Turn::Reply(json!({"operation_id": operation}).to_string())
}

fn respond(text: &str) -> Turn {
    Turn::Reply(json!({"action": "respond", "text": text}).to_string())
}

/// Runs one request; returns the answer and the events.
async fn run(
    actions: &Actions,
    index: &TestIndex,
    model: &ScriptedChatModel,
    request: &str,
) -> (Answer, Vec<Event>) {
    let mut events = Vec::new();
    let answer = actions
        .run(request, env(&index.index, model), &mut |e| events.push(e))
        .await
        .expect("the strategy answers");
    (answer, events)
}

/// The action steps of a trace.
fn actions_of(answer: &Answer) -> Vec<ActionStep> {
    answer
        .trace
        .steps
        .iter()
        .filter_map(|step| match step {
            Step::Action(action) => Some(action.clone()),
            _ => None,
        })
        .collect()
}

/// The executed steps of a trace.
fn executed(answer: &Answer) -> Vec<ActionStep> {
    actions_of(answer)
        .into_iter()
        .filter(|a| a.action == "execute_action")
        .collect()
}

/// The text of every prompt the model was sent.
fn prompts(model: &ScriptedChatModel) -> Vec<String> {
    model
        .requests
        .lock()
        .unwrap()
        .iter()
        .map(|r: &ChatRequest| serde_json::to_string(r).unwrap())
        .collect()
}

/// A confirmation that says `yes` and keeps what it was shown.
fn recording(yes: bool) -> (Arc<dyn Confirm>, Arc<Mutex<Vec<RequestPreview>>>) {
    let seen: Arc<Mutex<Vec<RequestPreview>>> = Arc::default();
    let kept = Arc::clone(&seen);
    let confirm = move |preview: &RequestPreview| {
        kept.lock().unwrap().push(preview.clone());
        yes
    };
    (Arc::new(confirm), seen)
}

#[tokio::test]
async fn a_read_a_create_an_update_and_a_delete_are_carried_out() {
    let server = Server::start().await;
    let index = notes_index();
    let (confirm, seen) = recording(true);
    let actions = strategy(&server, ExecutorConfig::default(), confirm);

    let model = ScriptedChatModel::new(vec![
        pick("getNote"),
        call("getNote", json!({"noteId": "1"})),
        respond("Note 1 is called Shopping."),
    ]);
    let (read, events) = run(&actions, &index, &model, "Show me note 1").await;
    let model = ScriptedChatModel::new(vec![
        pick("createNote"),
        call(
            "createNote",
            json!({"title": "Groceries", "status": "draft"}),
        ),
        respond("Created note 2."),
    ]);
    let (created, _) = run(
        &actions,
        &index,
        &model,
        "Create a draft note titled Groceries",
    )
    .await;
    let model = ScriptedChatModel::new(vec![
        pick("replaceNote"),
        call("replaceNote", json!({"noteId": "1", "title": "Errands"})),
        respond("Note 1 is now Errands."),
    ]);
    let (updated, _) = run(&actions, &index, &model, "Rename note 1 to Errands").await;
    let model = ScriptedChatModel::new(vec![
        pick("deleteNote"),
        call("deleteNote", json!({"noteId": "1"})),
        respond("Deleted."),
    ]);
    let (deleted, _) = run(&actions, &index, &model, "Delete note 1").await;

    let requests = server.requests();
    let sent: Vec<(&str, &str)> = requests
        .iter()
        .map(|r| (r.method.as_str(), r.path.as_str()))
        .collect();
    assert_eq!(
        sent,
        [
            ("GET", "/v1/notes/1"),
            ("POST", "/v1/notes"),
            ("PUT", "/v1/notes/1"),
            ("DELETE", "/v1/notes/1")
        ]
    );
    assert_eq!(
        requests[1].json(),
        json!({"title": "Groceries", "status": "draft"})
    );
    assert_eq!(requests[2].json(), json!({"title": "Errands"}));
    // Confirmation for the three changes, not the read; each saw method, URL and body.
    let seen = seen.lock().unwrap().clone();
    let asked: Vec<String> = seen
        .iter()
        .map(|p| format!("{} {}", p.method, p.url))
        .collect();
    let base = &server.base_url;
    assert_eq!(
        asked,
        [
            format!("POST {base}/notes"),
            format!("PUT {base}/notes/1"),
            format!("DELETE {base}/notes/1")
        ]
    );
    assert!(seen[0].body.as_deref().unwrap().contains("Groceries"));
    for (answer, confirmed, status) in [
        (&read, None, 200),
        (&created, Some(true), 201),
        (&updated, Some(true), 200),
        (&deleted, Some(true), 204),
    ] {
        assert!(answer.found, "{}", answer.answer);
        assert_eq!(answer.termination, Termination::Responded);
        // The pick, the call, the reply.
        assert_eq!(answer.usage.llm_calls, 3);
        let step = &executed(answer)[0];
        assert_eq!(step.confirmed, confirmed, "{step:?}");
        assert_eq!(step.status, Some(status));
        assert_eq!(step.outcome, "response");
        assert!(step.request.as_ref().unwrap()["url"]
            .as_str()
            .unwrap()
            .starts_with(base));
    }
    assert_eq!(read.answer, "Note 1 is called Shopping.");
    // The model read the response before replying.
    let second = model_prompt_of(&read, 1);
    assert!(second.contains("HTTP 200 OK from GET"), "{second}");
    assert!(second.contains("Shopping"), "{second}");
    // Found operations are ranked; the called one is cited.
    assert!(!read.ranked.is_empty());
    assert_eq!(read.citations.len(), 1);
    let index_doc = index.index.resolve(&read.citations[0].to_string());
    assert!(index_doc.is_some());
    // Events: the search, the actions, then the answer.
    let kinds: Vec<String> = events
        .iter()
        .map(|e| match e {
            Event::Retrieved { .. } => "retrieved".to_string(),
            Event::Action(a) => format!("{}:{}", a.action, a.outcome),
            Event::Token { .. } => "token".into(),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "retrieved",
            "find_actions:found",
            "pick:picked",
            "execute_action:response",
            "respond:responded",
            "token"
        ]
    );
}

/// The user messages of the `n`th model call of an answer, as text.
fn model_prompt_of(answer: &Answer, n: usize) -> String {
    let calls: Vec<_> = answer
        .trace
        .steps
        .iter()
        .filter_map(|s| match s {
            Step::Llm(call) if call.purpose == "act" => Some(call),
            _ => None,
        })
        .collect();
    calls[n]
        .messages
        .iter()
        .map(|m| m.content.clone())
        .collect::<Vec<_>>()
        .join("\n---\n")
}

#[tokio::test]
async fn a_refused_confirmation_sends_nothing() {
    let server = Server::start().await;
    let index = notes_index();
    let actions = strategy(&server, ExecutorConfig::default(), Arc::new(AlwaysNo));
    let model = ScriptedChatModel::new(vec![
        pick("deleteNote"),
        call("deleteNote", json!({"noteId": "1"})),
        respond("I did not delete note 1."),
    ]);

    let (answer, _) = run(&actions, &index, &model, "Delete note 1").await;

    assert_eq!(server.count(), 0, "nothing reached the server");
    assert!(!answer.found);
    let step = &executed(&answer)[0];
    assert_eq!(step.outcome, "declined");
    assert_eq!(step.confirmed, Some(false));
    assert_eq!(step.request.as_ref().unwrap()["method"], "DELETE");
    assert!(model_prompt_of(&answer, 1).contains("The user declined; nothing was sent"));
}

#[tokio::test]
async fn a_missing_required_input_is_asked_for_by_name_and_nothing_is_sent() {
    let server = Server::start().await;
    let index = notes_index();
    let (confirm, seen) = recording(true);
    let actions = strategy(&server, ExecutorConfig::default(), confirm);

    // Left out by the model.
    let model = ScriptedChatModel::new(vec![
        pick("createNote"),
        call("createNote", json!({"status": "draft"})),
    ]);
    let (answer, _) = run(&actions, &index, &model, "Create a new draft note").await;
    assert_eq!(answer.termination, Termination::AskedUser);
    assert!(!answer.found);
    assert_eq!(
        answer.usage.llm_calls, 2,
        "the pick and the call; asked without another model call"
    );
    assert!(
        answer.answer.contains("title (The note's title)"),
        "{}",
        answer.answer
    );
    assert_eq!(executed(&answer)[0].asked, ["title"]);
    assert_eq!(executed(&answer)[0].outcome, "missing");

    // Made up by the model: the user never said which note.
    let model = ScriptedChatModel::new(vec![
        pick("deleteNote"),
        call("deleteNote", json!({"noteId": "7"})),
    ]);
    let mut conversation = Conversation::new();
    let mut events = Vec::new();
    let asked = actions
        .turn(
            &mut conversation,
            "Delete my note",
            env(&index.index, &model),
            &mut |e| events.push(e),
        )
        .await
        .unwrap();
    assert_eq!(asked.termination, Termination::AskedUser);
    let step = &executed(&asked)[0];
    assert_eq!(step.asked, ["noteId"]);
    assert_eq!(
        step.repairs,
        ["noteId: \"7\" is not a value the user gave; left out"]
    );
    assert!(asked.answer.contains("noteId"), "{}", asked.answer);
    assert_eq!(server.count(), 0);
    assert!(seen.lock().unwrap().is_empty(), "nothing to confirm");

    // The user answers; the found operation is still available and the request goes out.
    let model = ScriptedChatModel::new(vec![
        call("deleteNote", json!({"noteId": "1"})),
        respond("Deleted note 1."),
    ]);
    let answered = actions
        .turn(
            &mut conversation,
            "It is note 1",
            env(&index.index, &model),
            &mut |e| events.push(e),
        )
        .await
        .unwrap();
    assert!(answered.found);
    assert!(conversation.available().contains(&"deleteNote".to_string()));
    let request = server.only_request();
    assert_eq!(
        (request.method.as_str(), request.path.as_str()),
        ("DELETE", "/v1/notes/1")
    );
    // The second turn's prompt holds the first exchange.
    let prompt = model_prompt_of(&answered, 0);
    assert!(
        prompt.contains("Delete my note") && prompt.contains("It is note 1"),
        "{prompt}"
    );
    assert_eq!(seen.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn a_value_outside_the_enum_is_left_out_and_the_missing_title_asked_for_at_once() {
    let server = Server::start().await;
    let index = notes_index();
    let actions = strategy(&server, ExecutorConfig::default(), Arc::new(AlwaysYes));
    // A value outside the enum (no decoder held the reply to it) and no title.
    let model = ScriptedChatModel::new(vec![
        pick("createNote"),
        call("createNote", json!({"status": "finished"})),
    ]);
    let (answer, _) = run(&actions, &index, &model, "Create a note, finished already").await;
    assert_eq!(answer.termination, Termination::AskedUser);
    assert_eq!(
        answer.usage.llm_calls, 2,
        "asked without another model call"
    );
    assert!(
        answer.answer.contains("title (The note's title)"),
        "{}",
        answer.answer
    );
    let step = &executed(&answer)[0];
    assert_eq!(step.asked, ["title"]);
    assert_eq!(
        step.repairs,
        ["status: \"finished\" is not a value the user gave; left out"]
    );
    assert_eq!(server.count(), 0);
}

#[tokio::test]
async fn a_call_cut_short_by_the_token_limit_is_read_up_to_its_cut() {
    // A small model repeating a list's items until its token limit (held-out 28's l28): the
    // call is read up to its last complete item, the made-up items are dropped and the
    // required input it never reached is asked for.
    let server = Server::start().await;
    let index = notes_index();
    let (confirm, seen) = recording(true);
    let actions = strategy(&server, ExecutorConfig::default(), confirm);
    let cut = r#"{"action": "execute_action", "operation_id": "createNote", "params": {"tags": ["groceries", "tag1", "tag1", "tag1", "ta"#;
    let model = ScriptedChatModel::new(vec![pick("createNote"), Turn::Reply(cut.into())]);
    let (answer, _) = run(&actions, &index, &model, "Create a note tagged groceries").await;
    assert_eq!(
        answer.termination,
        Termination::AskedUser,
        "{}",
        answer.answer
    );
    assert_eq!(answer.usage.llm_calls, 2, "read at once, not sent back");
    let step = &executed(&answer)[0];
    assert_eq!(step.asked, ["title"]);
    assert!(
        actions_of(&answer).iter().all(|a| a.action != "unreadable"),
        "{:?}",
        actions_of(&answer)
    );
    assert_eq!(server.count(), 0);
    assert!(seen.lock().unwrap().is_empty());
}

#[tokio::test]
async fn unknown_operations_404s_and_500s_come_back_to_the_model() {
    let server = Server::start().await;
    let index = notes_index();
    let actions = strategy(&server, ExecutorConfig::default(), Arc::new(AlwaysYes));
    let model = ScriptedChatModel::new(vec![
        pick("none"),
        call("fetchNote", json!({"noteId": "99"})),
        call("getNote", json!({"noteId": "99"})),
        call("get_/health", json!({})),
        respond("Note 99 does not exist and the service is down."),
    ]);

    let (answer, _) = run(&actions, &index, &model, "Show note 99, then check health").await;

    assert_eq!(answer.termination, Termination::Responded);
    assert!(!answer.found, "no request succeeded");
    let outcomes: Vec<(String, Option<u16>)> = executed(&answer)
        .into_iter()
        .map(|s| (s.outcome, s.status))
        .collect();
    assert_eq!(
        outcomes,
        [
            ("unknown_operation".to_string(), None),
            ("response".to_string(), Some(404)),
            ("response".to_string(), Some(500)),
        ]
    );
    assert!(model_prompt_of(&answer, 1).contains("There is no operation \"fetchNote\""));
    assert!(model_prompt_of(&answer, 2).contains("HTTP 404 Not Found"));
    assert!(model_prompt_of(&answer, 3).contains("HTTP 500 Internal Server Error"));
    assert!(model_prompt_of(&answer, 3).contains("the database is down"));
    assert_eq!(server.count(), 2);
}

#[tokio::test]
async fn a_huge_response_is_cut_before_the_model_reads_it() {
    let server = Server::start().await;
    let index = notes_index();
    let actions = strategy(&server, ExecutorConfig::default(), Arc::new(AlwaysYes));
    let model = ScriptedChatModel::new(vec![
        pick("exportNotes"),
        respond("Here is the start of the export."),
    ]);

    let (answer, _) = run(&actions, &index, &model, "Export every note as text").await;

    assert!(answer.found);
    // The export takes no inputs: its call is written without the model, whose one turn
    // reads the response.
    let prompt = model_prompt_of(&answer, 0);
    assert!(
        prompt.contains("[response cut: showed the first 16384 of 1200000 bytes"),
        "{}",
        &prompt[prompt.len().saturating_sub(300)..]
    );
    assert!(
        prompt.len() < 20_000 + 4_000,
        "the prompt holds only the budget"
    );
    assert!(export_body().len() > 1_000_000);
}

#[tokio::test]
async fn a_credential_reaches_the_server_but_no_prompt_trace_event_or_log() {
    const TOKEN: &str = "sk-walkrag-ACTIONS-SECRET-5550123";
    let (logs, _capture) = crate::secrets::Logs::capture();
    let server = Server::start().await;
    let index = notes_index();
    let credentials = Credentials::new()
        .with_header_line(&format!("Authorization: Bearer {TOKEN}"))
        .unwrap();
    let config = ExecutorConfig {
        credentials,
        ..ExecutorConfig::default()
    };
    let actions = strategy(&server, config, Arc::new(AlwaysYes));
    // The server echoes the request's headers back.
    let model = ScriptedChatModel::new(vec![
        pick("getNote"),
        call("getNote", json!({"noteId": "echo"})),
        respond("Done."),
    ]);

    let (answer, events) = run(&actions, &index, &model, "Show the note echo").await;

    assert_eq!(
        server.only_request().header("authorization"),
        Some(format!("Bearer {TOKEN}").as_str())
    );
    let mut places = prompts(&model);
    places.push(serde_json::to_string(&answer.trace).unwrap());
    places.push(serde_json::to_string(&answer).unwrap());
    places.extend(events.iter().map(|e| serde_json::to_string(e).unwrap()));
    places.push(format!("{:?}", actions.apis()[0].executor));
    places.push(logs.text());
    assert!(logs.text().contains("sending"), "the executor logged");
    for place in &places {
        assert!(!place.contains(TOKEN), "the credential leaked: {place}");
        assert!(
            !place.contains("ACTIONS-SECRET"),
            "part of the credential leaked"
        );
    }
    // The echo came back with the credential replaced.
    assert!(model_prompt_of(&answer, 1).contains("***"));
}

#[tokio::test]
async fn a_dry_run_builds_the_request_and_sends_nothing() {
    let server = Server::start().await;
    let index = notes_index();
    let audit = AuditLog::new();
    let (confirm, seen) = recording(true);
    let config = ExecutorConfig {
        dry_run: true,
        confirm_dry_runs: true,
        audit: Some(audit.clone()),
        ..ExecutorConfig::default()
    };
    let actions = strategy(&server, config, confirm);
    let model = ScriptedChatModel::new(vec![
        pick("createNote"),
        call("createNote", json!({"title": "Plans"})),
    ]);

    let (answer, _) = run(&actions, &index, &model, "Create a note titled Plans").await;

    assert_eq!(server.count(), 0);
    assert_eq!(answer.termination, Termination::DryRun);
    assert!(answer.found);
    assert!(
        answer.answer.starts_with("Dry run: nothing was sent"),
        "{}",
        answer.answer
    );
    assert!(answer.answer.contains("POST "), "{}", answer.answer);
    assert_eq!(answer.usage.llm_calls, 2, "the pick and the call");
    assert_eq!(seen.lock().unwrap().len(), 1, "asked as a real run would");
    let log = audit.entries();
    assert_eq!(log.len(), 1);
    assert!(log[0].confirmation_asked && log[0].confirmed && !log[0].sent);
    assert!(!log[0].is_unconfirmed_change());
}

#[tokio::test]
async fn refused_inputs_go_back_to_the_model_a_bounded_number_of_times() {
    let server = Server::start().await;
    let index = notes_index();
    let actions = strategy(&server, ExecutorConfig::default(), Arc::new(AlwaysYes));
    let bad = || call("listNotes", json!({"status": "published", "limit": "many"}));
    let model = ScriptedChatModel::new(vec![pick("listNotes"), bad(), bad(), bad(), bad(), bad()]);

    let (answer, _) = run(&actions, &index, &model, "List many published notes").await;

    assert_eq!(
        answer.usage.llm_calls, 4,
        "the pick, two corrections, then it gives up"
    );
    assert_eq!(answer.termination, Termination::Responded);
    assert!(answer.answer.contains("could not build a valid request"));
    assert!(
        model_prompt_of(&answer, 1).contains("limit:"),
        "the problem is named"
    );
    assert_eq!(server.count(), 0);

    // Searching on and on: two searches, then refusals that count as mistakes.
    let search = || Turn::Reply(r#"{"action": "find_actions", "query": "notes"}"#.into());
    let model = ScriptedChatModel::new(
        std::iter::once(pick("none"))
            .chain((0..10).map(|_| search()))
            .collect(),
    );
    let (answer, _) = run(&actions, &index, &model, "Do something with notes").await;
    assert_eq!(answer.termination, Termination::Responded);
    assert_eq!(
        answer.usage.llm_calls, 6,
        "a pick of none, two searches, three refused"
    );
    let outcomes: Vec<String> = actions_of(&answer).into_iter().map(|a| a.outcome).collect();
    assert_eq!(
        outcomes,
        ["found", "none", "found", "found", "not_run", "not_run", "not_run"]
    );
    assert!(!answer.found);

    // Whatever the model does, a request ends within max_turns.
    let unreadable = || Turn::Reply(r#"{"action": "dance"}"#.into());
    let ask_again = || Turn::Reply(r#"{"action": "find_actions", "query": "x"}"#.into());
    let mut turns = vec![pick("none")];
    for _ in 0..5 {
        turns.push(unreadable());
        turns.push(ask_again());
    }
    let model = ScriptedChatModel::new(turns);
    let (answer, _) = run(&actions, &index, &model, "Do something with notes").await;
    assert_eq!(answer.termination, Termination::MaxCycles);
    assert_eq!(answer.usage.llm_calls, 1 + actions.max_turns);
    assert!(!answer.found);
}

#[tokio::test]
async fn a_repeated_change_is_not_sent_twice() {
    let server = Server::start().await;
    let index = notes_index();
    let actions = strategy(&server, ExecutorConfig::default(), Arc::new(AlwaysYes));
    let create = || call("createNote", json!({"title": "Plans"}));
    let model = ScriptedChatModel::new(vec![
        pick("createNote"),
        create(),
        create(),
        respond("Created."),
    ]);

    let (answer, _) = run(&actions, &index, &model, "Create a note titled Plans").await;

    assert_eq!(server.count(), 1);
    assert_eq!(executed(&answer)[1].outcome, "repeated");
    assert!(answer.found);
}

#[tokio::test]
async fn tool_calling_models_get_the_actions_as_tools() {
    let server = Server::start().await;
    let index = notes_index();
    let actions = strategy(&server, ExecutorConfig::default(), Arc::new(AlwaysYes));
    let tool = |id: &str, name: &str, arguments: Value| ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: arguments.to_string(),
    };
    let model = ScriptedChatModel::new(vec![
        Turn::Tools(vec![tool(
            "c1",
            "execute_action",
            json!({"operation_id": "getNote", "params": {"noteId": "1"}}),
        )]),
        Turn::Tools(vec![tool(
            "c2",
            "respond",
            json!({"text": "Note 1 is Shopping."}),
        )]),
    ])
    .with_tools();

    let (answer, _) = run(&actions, &index, &model, "Show me note 1").await;

    assert_eq!(answer.answer, "Note 1 is Shopping.");
    assert!(answer.found);
    let requests = model.requests.lock().unwrap().clone();
    let names: Vec<&str> = requests[0].tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        ["execute_action", "find_actions", "ask_user", "respond"]
    );
    let enum_ids = &requests[0].tools[0].parameters["properties"]["operation_id"]["enum"];
    assert!(
        enum_ids.as_array().unwrap().contains(&json!("getNote")),
        "{enum_ids}"
    );
    let second = &requests[1].messages;
    let assistant = second.iter().find(|m| m.role == Role::Assistant).unwrap();
    assert_eq!(assistant.tool_calls[0].id, "c1");
    let result = second.iter().find(|m| m.role == Role::Tool).unwrap();
    assert_eq!(result.tool_call_id.as_deref(), Some("c1"));
    assert!(result.content.contains("HTTP 200 OK"), "{}", result.content);
    assert_eq!(server.only_request().path, "/v1/notes/1");
}

#[tokio::test]
async fn the_first_search_is_the_request_itself_and_cards_reach_the_model() {
    let server = Server::start().await;
    let index = notes_index();
    let actions = strategy(&server, ExecutorConfig::default(), Arc::new(AlwaysYes));
    // A reply before any operation is called is sent back once; the second is taken, and the
    // user is told that nothing was sent (the model's words may claim otherwise).
    let model = ScriptedChatModel::new(vec![
        pick("none"),
        respond("Note deleted."),
        respond("Nothing to do."),
    ]);

    let (answer, _) = run(&actions, &index, &model, "delete a note").await;
    let steps = actions_of(&answer);
    let outcomes: Vec<&str> = steps.iter().map(|a| a.outcome.as_str()).collect();
    assert_eq!(outcomes, ["found", "none", "premature", "responded"]);
    assert!(steps[2].result.starts_with("Nothing has been done yet"));
    assert_eq!(answer.usage.llm_calls, 3);

    let first = &answer.trace.steps[0];
    let Step::Retrieve(retrieval) = first else {
        panic!("the first step is a search: {first:?}");
    };
    assert_eq!(retrieval.query, "delete a note");
    assert!(retrieval.hits.len() <= actions.ranked_k * 3);
    let prompt = model_prompt_of(&answer, 0);
    assert!(
        prompt.contains("Reply with exactly one JSON object"),
        "{prompt}"
    );
    assert!(
        prompt.contains("deleteNote — DELETE /notes/{noteId}"),
        "{prompt}"
    );
    assert!(prompt.ends_with("Request: delete a note"), "{prompt}");
    assert!(!answer.found, "nothing was carried out");
    assert_eq!(
        answer.answer,
        "Nothing to do.\n(No API request was made for this.)"
    );
    // The pick comes first: the cards and the request, and the model held to the ids on
    // them (or none).
    let requests = model.requests.lock().unwrap();
    expect_test::expect_file!["snapshots/pick_prompt.txt"].assert_eq(&render_request(&requests[0]));
    let Some(Constraint::JsonSchema(pick)) = &requests[0].constraint else {
        panic!("the pick is held to a schema");
    };
    let ids = pick["properties"]["operation_id"]["enum"]
        .as_array()
        .unwrap();
    assert!(ids.contains(&json!("deleteNote")) && ids.contains(&json!("none")));
    // The turn after a pick of none is held to the protocol: a call of an operation found,
    // its inputs copied from the request, or a search, a question or a reply.
    let Some(Constraint::JsonSchema(turn)) = &requests[1].constraint else {
        panic!("the turn is held to a schema");
    };
    let branches = turn["anyOf"].as_array().unwrap();
    assert!(branches.len() > 3, "{turn}");
    assert!(branches
        .iter()
        .any(|b| b["properties"]["operation_id"]["const"] == "deleteNote"));
    let pattern = turn["$defs"]["span"]["pattern"].as_str().unwrap();
    assert!(pattern.contains("delete"), "{pattern}");
    expect_test::expect_file!["snapshots/first_prompt.txt"]
        .assert_eq(&render_request(&requests[1]));
}

#[tokio::test]
async fn inputs_that_carry_credentials_are_never_the_models() {
    let server = Server::start().await;
    // The notes spec with an API key declared as a required header input of listNotes.
    let yaml = crate::notes_yaml().replace(
        "        - name: X-Request-Id\n",
        "        - name: Api-Key\n          in: header\n          required: true\n          \
         schema:\n            type: string\n        - name: X-Request-Id\n",
    );
    let listed = Catalog::parse(&yaml).unwrap();
    assert!(
        listed
            .get("listNotes")
            .unwrap()
            .input("Api-Key")
            .unwrap()
            .required
    );
    let credentials = Credentials::new()
        .with_header_line("Api-Key: from-the-user")
        .unwrap();
    let config = ExecutorConfig {
        credentials,
        ..ExecutorConfig::default()
    };
    let mut actions = Actions::new(listed, executor(&server, config), Arc::new(AlwaysYes));
    actions.guess = false;
    let seen = actions.apis()[0].catalog.get("listNotes").unwrap();
    assert!(seen.input("Api-Key").is_none(), "the model never sees it");
    assert!(!seen.describe().contains("Api-Key"));
    let index = notes_index();
    let model = ScriptedChatModel::new(vec![
        pick("listNotes"),
        call("listNotes", json!({"Api-Key": "made-up", "limit": 2})),
        respond("Two notes."),
    ]);

    let (answer, _) = run(&actions, &index, &model, "List 2 notes").await;

    // Not asked for, not taken from the model: the configured key goes out.
    let request = server.only_request();
    assert_eq!(request.header("api-key"), Some("from-the-user"));
    assert_eq!(request.query, "limit=2");
    assert!(answer.found);
    let step = &executed(&answer)[0];
    assert!(step.asked.is_empty());
    assert_eq!(step.checked_params, Some(json!({"limit": 2})), "{step:?}");
}

/// The notes spec changed by `change`, the strategy on it (guess and nearness off, as in
/// [`strategy`]) and an index of its records.
fn changed_notes(
    server: &Server,
    change: impl Fn(String) -> String,
    credentials: Credentials,
) -> (Actions, TestIndex) {
    let catalog = Catalog::parse(&change(crate::notes_yaml())).unwrap();
    let config = ExecutorConfig {
        base_url: Some(server.base_url.clone()),
        credentials,
        ..ExecutorConfig::default()
    };
    let executor = walkrag_actions::Executor::new(&catalog, config).unwrap();
    let index = index_of(&catalog.records_jsonl(Path::new("/specs/notes.yaml")));
    let mut actions = Actions::new(catalog, executor, Arc::new(AlwaysYes));
    actions.guess = false;
    actions.nearness_weight = Some(0.0);
    (actions, index)
}

#[tokio::test]
async fn a_token_in_the_path_is_what_the_request_is_about_and_is_asked_for_when_missing() {
    let server = Server::start().await;
    // A path parameter named like a credential: the invite's own token.
    let accept = "  /invites/{token}/accept:\n    put:\n      operationId: acceptInvite\n      \
                  summary: Accept an invite\n      parameters:\n        - name: token\n          \
                  in: path\n          required: true\n          schema:\n            type: \
                  string\n      responses:\n        \"200\":\n          description: Accepted.\n";
    let (actions, index) = changed_notes(
        &server,
        |yaml| yaml.replace("  /health:\n", &format!("{accept}  /health:\n")),
        Credentials::new(),
    );
    let seen = actions.apis()[0].catalog.get("acceptInvite").unwrap();
    assert!(seen.input("token").is_some(), "the model sees it");

    let model = ScriptedChatModel::new(vec![
        pick("acceptInvite"),
        call("acceptInvite", json!({"token": "inv-7f3a9c"})),
        respond("Accepted."),
    ]);
    let (answer, _) = run(&actions, &index, &model, "Accept the invite inv-7f3a9c").await;
    assert!(executed(&answer)[0].asked.is_empty());
    assert_eq!(server.only_request().path, "/v1/invites/inv-7f3a9c/accept");

    // Not given: asked for by name, and no request with a hole in its path.
    let model = ScriptedChatModel::new(vec![pick("acceptInvite"), call("acceptInvite", json!({}))]);
    let (answer, _) = run(&actions, &index, &model, "Accept my invite").await;
    assert_eq!(answer.termination, Termination::AskedUser);
    assert_eq!(executed(&answer)[0].asked, ["token"]);
    assert_eq!(server.count(), 1);
}

#[tokio::test]
async fn a_credential_the_query_needs_is_asked_for_until_configured_then_sent_unseen() {
    const SECRET: &str = "dl-walkrag-QUERY-SECRET-8812";
    let server = Server::start().await;
    let with_token = |yaml: String| {
        yaml.replace(
            "      summary: Export every note as text\n",
            "      summary: Export every note as text\n      parameters:\n        - name: \
             token\n          in: query\n          required: true\n          schema:\n            \
             type: string\n",
        )
    };
    let (actions, index) = changed_notes(&server, with_token, Credentials::new());
    let seen = actions.apis()[0].catalog.get("exportNotes").unwrap();
    assert!(seen.input("token").is_none(), "the model never sees it");
    // The operation takes no input the model could fill: it is not asked to write one.
    let model = ScriptedChatModel::new(vec![pick("exportNotes")]);
    let (answer, _) = run(&actions, &index, &model, "Export my notes").await;
    assert_eq!(answer.termination, Termination::AskedUser);
    let step = &executed(&answer)[0];
    assert_eq!(step.asked, ["token"]);
    assert!(
        step.text
            .as_deref()
            .unwrap()
            .contains("--credential token=VALUE"),
        "{step:?}"
    );
    assert_eq!(server.count(), 0, "nothing is sent without it");

    let credentials = Credentials::new()
        .with_input_pair(&format!("token={SECRET}"))
        .unwrap();
    let (actions, index) = changed_notes(&server, with_token, credentials);
    let model = ScriptedChatModel::new(vec![pick("exportNotes"), respond("Exported.")]);
    let (answer, events) = run(&actions, &index, &model, "Export my notes").await;
    assert!(answer.found);
    assert_eq!(server.only_request().query, format!("token={SECRET}"));
    let mut places = prompts(&model);
    places.push(serde_json::to_string(&answer).unwrap());
    places.extend(events.iter().map(|e| serde_json::to_string(e).unwrap()));
    places.push(format!("{:?}", actions.apis()[0].executor));
    for place in &places {
        assert!(
            !place.contains("QUERY-SECRET"),
            "the credential leaked: {place}"
        );
    }
}

#[tokio::test]
async fn an_optional_object_without_its_required_parts_is_left_out() {
    let server = Server::start().await;
    let index = notes_index();
    let actions = strategy(&server, ExecutorConfig::default(), Arc::new(AlwaysYes));
    // The model gives `author` its e-mail address but not its required name: the schema it
    // is held to cannot be written so, and a reply no decoder held loses the object.
    let model = ScriptedChatModel::new(vec![
        pick("createNote"),
        call(
            "createNote",
            json!({"title": "groceries", "author": {"email": "ana@example.com"}}),
        ),
        respond("Created."),
    ]);
    let (answer, _) = run(
        &actions,
        &index,
        &model,
        "Create a note titled groceries, author ana@example.com",
    )
    .await;
    assert_eq!(server.only_request().json(), json!({"title": "groceries"}));
    let step = &executed(&answer)[0];
    assert!(step.asked.is_empty());
    assert_eq!(
        step.repairs,
        ["author: given without its required parts (name); left out"]
    );
}

#[tokio::test]
async fn the_operation_ids_the_model_guesses_are_searched_with_the_request() {
    let server = Server::start().await;
    let index = notes_index();
    // No word of the request names the operation.
    let request = "That is junk, number 7 has to go";
    let mut places = Vec::new();
    for guess in [false, true] {
        let mut actions = strategy(&server, ExecutorConfig::default(), Arc::new(AlwaysYes));
        actions.guess = guess;
        let mut turns = Vec::new();
        if guess {
            turns.push(Turn::Reply("deleteNote, removeNote".into()));
        }
        turns.extend([pick("none"), respond("No."), respond("No.")]);
        let model = ScriptedChatModel::new(turns);
        let (answer, _) = run(&actions, &index, &model, request).await;
        let retrieval = answer
            .trace
            .steps
            .iter()
            .find_map(|step| match step {
                Step::Retrieve(retrieval) => Some(retrieval),
                _ => None,
            })
            .expect("a search");
        assert_eq!(
            retrieval.query, request,
            "the search is recorded as the request"
        );
        let place = retrieval
            .hits
            .iter()
            .position(|hit| hit.doc_id == "deleteNote");
        places.push(place.expect("deleteNote is ranked"));
        if guess {
            // The guess is a model call of its own, before the search, shown no cards.
            let first = &model.requests.lock().unwrap()[0];
            let prompt = render_request(first);
            assert!(prompt.contains(&format!("Request: {request}")), "{prompt}");
            assert!(!prompt.contains("createNote"), "{prompt}");
            let step = &actions_of(&answer)[0];
            assert_eq!(step.action, "guess");
            assert_eq!(step.text.as_deref(), Some("deleteNote, removeNote"));
            assert_eq!(step.outcome, "guessed");
            assert_eq!(answer.trace.config["guess"], json!(true));
        }
    }
    assert!(places[1] < places[0], "the guess moves it up: {places:?}");
}

#[tokio::test]
async fn the_search_fuses_embedding_and_word_rankings_and_keeps_similarities() {
    let server = Server::start().await;
    let index = notes_index();
    let request = "delete a note";
    let mut hits = Vec::new();
    for hybrid in [false, true] {
        let mut actions = strategy(&server, ExecutorConfig::default(), Arc::new(AlwaysYes));
        actions.hybrid = hybrid;
        let model = ScriptedChatModel::new(vec![pick("none"), respond("No."), respond("No.")]);
        let (answer, _) = run(&actions, &index, &model, request).await;
        let Step::Retrieve(retrieval) = &answer.trace.steps[0] else {
            panic!("the first step is a search");
        };
        hits.push(retrieval.hits.clone());
    }
    let (dense, fused) = (&hits[0], &hits[1]);
    let order = |hits: &[walkrag_walker::RetrievedChunk]| -> Vec<String> {
        hits.iter().map(|hit| hit.doc_id.clone()).collect()
    };
    assert!(dense.windows(2).all(|w| w[0].score >= w[1].score));

    // The fused order is the embedding order fused with the words' order...
    let catalog = notes();
    let texts: Vec<String> = catalog.actions.iter().map(|a| a.keyword_text()).collect();
    let words: Vec<String> = Bm25::new(&texts)
        .ranked(request)
        .into_iter()
        .map(|(at, _)| catalog.actions[at].operation_id.clone())
        .collect();
    let expected: Vec<String> = reciprocal_rank_fusion(&[order(dense), words], 60.0)
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    assert_eq!(order(fused), expected);
    assert_ne!(order(fused), order(dense), "the words move something");
    // ...and each operation keeps its embedding similarity as its score.
    for hit in fused {
        let same = dense.iter().find(|d| d.chunk_id == hit.chunk_id).unwrap();
        assert!((hit.score - same.score).abs() < 1e-6, "{hit:?} vs {same:?}");
    }
}

/// A request in words no operation of the notes API uses, close to the example request of
/// [`notes_with_an_example`].
const JOTTINGS: &str = "dump all my jottings somewhere";

/// The notes API with one example request for `exportNotes`.
fn notes_with_an_example() -> Catalog {
    let mut catalog = notes();
    let export = catalog
        .actions
        .iter_mut()
        .find(|a| a.operation_id == "exportNotes")
        .unwrap();
    export.examples = vec!["dump all my jottings into a file".into()];
    catalog
}

/// The strategy on `catalog` served by `server`, without the guess, and its index.
fn strategy_and_index(catalog: Catalog, server: &Server) -> (Actions, TestIndex) {
    let index = index_of(&catalog.records_jsonl(Path::new("/specs/notes.yaml")));
    let mut actions = Actions::new(
        catalog,
        executor(server, ExecutorConfig::default()),
        Arc::new(AlwaysYes),
    );
    actions.guess = false;
    (actions, index)
}

#[tokio::test]
async fn an_operation_is_found_by_its_example_requests_too() {
    let server = Server::start().await;
    let first_hit = |catalog: Catalog| {
        let (actions, index) = strategy_and_index(catalog, &server);
        async move {
            let model = ScriptedChatModel::new(vec![pick("none"), respond("No."), respond("No.")]);
            let (answer, _) = run(&actions, &index, &model, JOTTINGS).await;
            let Step::Retrieve(retrieval) = &answer.trace.steps[0] else {
                panic!("the first step is a search");
            };
            retrieval.hits[0].doc_id.clone()
        }
    };

    let plain = first_hit(notes()).await;
    assert_ne!(plain, "exportNotes");
    // Found by the example, shown as the operation's own record (not the example's).
    assert_eq!(first_hit(notes_with_an_example()).await, "exportNotes");
}

/// What a scripted weighing model reads, by operation id.
#[derive(Default, Clone, Copy)]
struct Readings {
    /// The request as one sent for the operation; -20 for the rest.
    asked: &'static [(&'static str, f32)],
    /// The id (or `none`) as the pick from the list; -8 for the rest.
    listed: &'static [(&'static str, f32)],
    /// The id as the pick from the list with a blank request; 0 for the rest.
    blank: &'static [(&'static str, f32)],
}

/// A scripted model weighing by fixed figures: `asked` and `listed` as [`Readings`] gives
/// them, every blank read 0.
fn weighing(
    turns: Vec<Turn>,
    asked: &'static [(&'static str, f32)],
    listed: &'static [(&'static str, f32)],
) -> ScriptedChatModel {
    weighing_by(
        turns,
        Readings {
            asked,
            listed,
            ..Readings::default()
        },
    )
}

/// A scripted model weighing by the fixed figures of `readings`.
fn weighing_by(turns: Vec<Turn>, readings: Readings) -> ScriptedChatModel {
    let Readings {
        asked,
        listed,
        blank,
    } = readings;
    let read = |table: &[(&str, f32)], item: &ScoreItem, otherwise: f32| {
        table
            .iter()
            .find(|(id, _)| item.continuation == format!(r#"{{"operation_id": "{id}"}}"#))
            .map_or(otherwise, |(_, s)| *s)
    };
    ScriptedChatModel::new(turns).with_scores(move |item: &ScoreItem| {
        let user = &item.messages.last().expect("a prompt").content;
        if user.starts_with("Operations:") && user.ends_with("\n\nRequest: N/A") {
            read(blank, item, 0.0)
        } else if user.starts_with("Operations:") {
            read(listed, item, -8.0)
        } else {
            asked
                .iter()
                .find(|(id, _)| user.contains(&format!("Operation: {id}:")))
                .map_or(-20.0, |(_, s)| *s)
        }
    })
}

/// Runs `request` on a model weighing by `readings` whose turns call `picked` (with
/// `params`) and then reply, and checks that the pick was `picked`; the model comes back too,
/// for what it was asked to weigh.
async fn weighed_pick(
    actions: &Actions,
    readings: Readings,
    request: &str,
    picked: &str,
    params: Value,
) -> (Answer, ScriptedChatModel) {
    let index = notes_index();
    let model = weighing_by(vec![call(picked, params), respond("Done.")], readings);
    let (answer, _) = run(actions, &index, &model, request).await;
    assert_eq!(pick_step(&answer).operation_id.as_deref(), Some(picked));
    (answer, model)
}

/// The scoring calls of a run, in order.
fn score_calls(answer: &Answer) -> Vec<&ScoreCall> {
    answer
        .trace
        .steps
        .iter()
        .filter_map(|s| match s {
            Step::Score(call) => Some(call),
            _ => None,
        })
        .collect()
}

fn pick_step(answer: &Answer) -> ActionStep {
    actions_of(answer)
        .into_iter()
        .find(|a| a.action == "pick")
        .expect("a pick")
}

#[tokio::test]
async fn a_weighing_model_picks_by_both_readings_and_its_pick_gets_a_card() {
    let server = Server::start().await;
    let index = notes_index();
    // No word of the request names the operation: the search does not rank it first.
    let request = "back up everything I wrote";
    // Read as a request, getNote fits best; as the pick from the list, exportNotes. Twice
    // the list reading makes exportNotes the pick (-10 + 2 × -1 against -3 + 2 × -6); the
    // request reading alone, getNote.
    const ASKED: &[(&str, f32)] = &[("getNote", -3.0), ("exportNotes", -10.0)];
    const LISTED: &[(&str, f32)] = &[("exportNotes", -1.0), ("getNote", -6.0), ("none", -10.0)];
    let mut actions = strategy(&server, ExecutorConfig::default(), Arc::new(AlwaysYes));
    actions.k = 1;
    let model = weighing(vec![respond("Exported.")], ASKED, LISTED);
    let (answer, _) = run(&actions, &index, &model, request).await;

    let found = actions_of(&answer)[0].clone();
    assert_eq!(found.action, "find_actions");
    assert_ne!(found.result, "exportNotes", "ranked first by the search");
    let pick = pick_step(&answer);
    assert_eq!(pick.operation_id.as_deref(), Some("exportNotes"));
    assert_eq!(pick.outcome, "picked");
    let text = pick.text.expect("the weights");
    assert!(
        text.contains("exportNotes: request -10.00, list -1.00 (blank 0.00), total -12.00"),
        "{text}"
    );
    assert!(text.ends_with("none: list -10.00 (blank 0.00)"), "{text}");

    // Two scoring calls: the request reading of every operation the search ranked (the
    // whole small API fits the pool), then the list reading of them all and none, with the
    // request and blank.
    let weighed = text.lines().count() - 1;
    assert!(weighed > 1 && weighed <= actions.pick_k, "{text}");
    let calls = score_calls(&answer);
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].items.len(), weighed);
    assert_eq!(calls[1].items.len(), 2 * (weighed + 1));
    assert_eq!(model.scored.lock().unwrap().len(), 3 * weighed + 2);
    assert_eq!(answer.usage.llm_calls, 3, "two weighings and the reply");
    // The HTML trace shows each continuation weighed with its score.
    let page = html::render(&answer, &Graph::of(&answer, &index.index));
    assert!(
        page.contains(&format!(
            "pick: request reading · {weighed} continuations weighed"
        )),
        "{page}"
    );
    assert!(
        page.contains(&format!(
            "pick: list reading · {} continuations weighed",
            2 * (weighed + 1)
        )),
        "{page}"
    );
    assert!(page.contains(
        "-1.00  Request: back up everything I wrote ⟶ {&quot;operation_id&quot;: &quot;exportNotes&quot;}"
    ));

    // The pick takes the only card's place. It takes no inputs, so its call is written
    // without the model; the model's one turn replies.
    let first = model.requests.lock().unwrap()[0].clone();
    let prompt = render_request(&first);
    assert!(prompt.contains("exportNotes — GET /export"), "{prompt}");
    assert!(!prompt.contains(&format!("{} —", found.result)), "{prompt}");
    let act = actions_of(&answer)
        .into_iter()
        .find(|a| a.action == "act")
        .expect("the call written without the model");
    assert_eq!(
        act.text.as_deref(),
        Some(r#"{"action": "execute_action", "operation_id": "exportNotes", "params": {}}"#)
    );
    assert_eq!(
        act.outcome,
        "written without the model: the operation takes no inputs"
    );
    assert_eq!(
        executed(&answer)[0].operation_id.as_deref(),
        Some("exportNotes")
    );
    assert!(answer.found);

    // Weighing the request reading alone picks getNote.
    actions.list_weight = 0.0;
    let model = weighing(
        vec![call("getNote", json!({"noteId": 1})), respond("Here.")],
        ASKED,
        LISTED,
    );
    let (answer, _) = run(&actions, &index, &model, request).await;
    assert_eq!(pick_step(&answer).operation_id.as_deref(), Some("getNote"));
    assert_eq!(answer.trace.config["list_weight"], json!(0.0));
}

/// A weighing model that picks `getNote` and reads the value check's question by `given`:
/// how much likelier the value reads than NONE.
fn judging_values(turns: Vec<Turn>, given: fn(&str) -> f32) -> ScriptedChatModel {
    ScriptedChatModel::new(turns).with_scores(move |item: &ScoreItem| {
        let user = &item.messages.last().expect("a prompt").content;
        if user.starts_with("The user said:") {
            if item.continuation == "NONE" {
                -1.0
            } else {
                -1.0 + given(user)
            }
        } else if item.continuation.contains("getNote") || user.contains("Operation: getNote:") {
            -0.5
        } else {
            -20.0
        }
    })
}

#[tokio::test]
async fn a_value_the_model_judges_not_given_is_asked_for_and_one_it_judges_given_is_sent() {
    let server = Server::start().await;
    let index = notes_index();
    let mut actions = strategy(&server, ExecutorConfig::default(), Arc::new(AlwaysYes));
    actions.value_margin = Some(VALUE_MARGIN);
    // "I can't find its number": the copy constraint lets `noteId` be "its", the check
    // does not.
    let lacking = |user: &str| {
        if user.contains("find its number") {
            -6.0
        } else {
            2.0
        }
    };
    let model = judging_values(vec![call("getNote", json!({"noteId": "its"}))], lacking);
    let request = "Open my shopping note, I can't find its number";
    let (answer, _) = run(&actions, &index, &model, request).await;
    assert_eq!(answer.termination, Termination::AskedUser);
    let step = &executed(&answer)[0];
    assert_eq!(step.asked, ["noteId"]);
    assert!(step.request.is_none(), "nothing is built to send");
    assert!(
        step.repairs[0].starts_with("noteId: \"its\" judged not given by the user"),
        "{:?}",
        step.repairs
    );
    let checks: Vec<&ScoreCall> = score_calls(&answer)
        .into_iter()
        .filter(|c| c.purpose == "inputs: given by the user?")
        .collect();
    assert_eq!(checks.len(), 1);
    assert_eq!(checks[0].items.len(), 2, "the value and NONE");
    assert_eq!(checks[0].items[0].continuation, "its");
    assert_eq!(answer.trace.config["value_margin"], json!(-4.5));

    // The same value judged given is sent; and with the check off, nothing is weighed.
    let model = judging_values(
        vec![call("getNote", json!({"noteId": "1"})), respond("Shown.")],
        lacking,
    );
    let (answer, _) = run(&actions, &index, &model, "Show note 1").await;
    assert_eq!(executed(&answer)[0].outcome, "response");
    let unchecked = strategy(&server, ExecutorConfig::default(), Arc::new(AlwaysYes));
    assert_eq!(unchecked.value_margin, None, "off by default");
    let model = judging_values(
        vec![call("getNote", json!({"noteId": "its"})), respond("Shown.")],
        lacking,
    );
    let (answer, _) = run(&unchecked, &index, &model, request).await;
    assert_eq!(
        executed(&answer)[0].checked_params,
        Some(json!({"noteId": "its"}))
    );
    assert!(model
        .scored
        .lock()
        .unwrap()
        .iter()
        .all(|item| item.continuation != "NONE"));
}

#[tokio::test]
async fn a_pick_model_guesses_and_weighs_the_pick_and_the_chat_model_writes_the_turns() {
    let server = Server::start().await;
    let index = notes_index();
    let request = "back up everything I wrote";
    // Each model alone would pick another operation: the pick model exportNotes, the chat
    // model getNote.
    const PICK_ASKED: &[(&str, f32)] = &[("getNote", -10.0), ("exportNotes", -3.0)];
    const PICK_LISTED: &[(&str, f32)] = &[("exportNotes", -1.0), ("getNote", -6.0)];
    const CHAT_ASKED: &[(&str, f32)] = &[("getNote", -3.0), ("exportNotes", -10.0)];
    const CHAT_LISTED: &[(&str, f32)] = &[("getNote", -1.0), ("exportNotes", -6.0)];
    let mut actions = strategy(&server, ExecutorConfig::default(), Arc::new(AlwaysYes));
    actions.guess = true;
    let guess = || Turn::Reply("exportNotes, backupNotes".into());
    let picker = Arc::new(weighing(vec![guess()], PICK_ASKED, PICK_LISTED));
    actions.pick_model = Some(picker.clone());
    let model = weighing(vec![respond("Exported.")], CHAT_ASKED, CHAT_LISTED);
    let (answer, _) = run(&actions, &index, &model, request).await;

    assert_eq!(
        pick_step(&answer).operation_id.as_deref(),
        Some("exportNotes")
    );
    assert!(
        model.scored.lock().unwrap().is_empty(),
        "the chat model weighs nothing"
    );
    let weighed = picker.scored.lock().unwrap().len();
    assert_eq!(
        weighed,
        score_calls(&answer)
            .iter()
            .map(|c| c.items.len())
            .sum::<usize>()
    );
    let written = picker.requests.lock().unwrap().clone();
    assert_eq!(written.len(), 1, "the pick model writes the guess");
    assert!(render_request(&written[0]).contains("operationId"));
    assert_eq!(
        actions_of(&answer)[0].text.as_deref(),
        Some("exportNotes, backupNotes")
    );
    assert_eq!(
        model.requests.lock().unwrap().len(),
        1,
        "the chat model writes the reply (the call takes no inputs)"
    );
    assert_eq!(answer.trace.config["pick_model"], json!("test:scripted"));

    // A pick model that cannot weigh leaves the pick written, by the chat model, among the
    // cards (all 7 operations here).
    actions.pick_model = Some(Arc::new(ScriptedChatModel::new(vec![guess()])));
    actions.k = 7;
    let model = weighing(
        vec![pick("exportNotes"), respond("Exported.")],
        CHAT_ASKED,
        CHAT_LISTED,
    );
    let (answer, _) = run(&actions, &index, &model, request).await;
    assert!(score_calls(&answer).is_empty(), "nothing weighed");
    assert_eq!(
        pick_step(&answer).operation_id.as_deref(),
        Some("exportNotes")
    );
    assert_eq!(
        model.requests.lock().unwrap().len(),
        2,
        "the pick written, then the reply"
    );
}

#[tokio::test]
async fn the_list_reading_weighs_a_shortlist_of_the_pool_by_both_rankings() {
    let server = Server::start().await;
    let index = notes_index();
    let request = "back up everything I wrote";
    // The search ranks exportNotes seventh of the nine operations, but the request reads best
    // as one for it: fused, its first place by the reading outranks the search's fourth.
    const ASKED: &[(&str, f32)] = &[("exportNotes", -1.0)];
    const LISTED: &[(&str, f32)] = &[("exportNotes", -1.0), ("none", -10.0)];
    let mut actions = strategy(&server, ExecutorConfig::default(), Arc::new(AlwaysYes));
    actions.pick_k = 4;
    actions.k = 9;
    let model = weighing(vec![respond("Exported.")], ASKED, LISTED);
    let (answer, _) = run(&actions, &index, &model, request).await;

    let found = actions_of(&answer)[0].result.clone();
    let searched: Vec<&str> = found.split(", ").collect();
    assert_eq!(searched.len(), 9);
    assert_eq!(searched[6], "exportNotes", "{found}");
    let pick = pick_step(&answer);
    assert_eq!(pick.operation_id.as_deref(), Some("exportNotes"));
    let text = pick.text.expect("the weights");
    let lines: Vec<&str> = text.lines().collect();
    // The shortlist in the search's order (its first three, then the best read), none, then
    // the rest of the pool with their request reading only.
    for (line, id) in lines.iter().zip(&searched[..3]) {
        assert_eq!(
            *line,
            format!("{id}: request -20.00, list -8.00 (blank 0.00), total -36.00")
        );
    }
    assert_eq!(
        lines[3],
        "exportNotes: request -1.00, list -1.00 (blank 0.00), total -3.00"
    );
    assert_eq!(lines[4], "none: list -10.00 (blank 0.00)");
    let unlisted = searched[3..6].iter().chain(&searched[7..]);
    for (line, id) in lines[5..].iter().zip(unlisted) {
        assert_eq!(*line, format!("{id}: request -20.00, not listed"));
    }
    assert_eq!(lines.len(), 10, "{text}");
    let scored = model.scored.lock().unwrap();
    assert_eq!(
        scored.len(),
        9 + 2 * 5,
        "9 request readings, 4 listed and none, with the request and blank"
    );
}

/// Readings that lean to getNote: -3 + 2 × -1 against exportNotes' -4 + 2 × -1.
const LEANING_TO_GET_NOTE: Readings = Readings {
    asked: &[("getNote", -3.0), ("exportNotes", -4.0)],
    listed: &[("getNote", -1.0), ("exportNotes", -1.0), ("none", -10.0)],
    blank: &[],
};

/// The weighed pick of [`JOTTINGS`] on `catalog`, with `actions` set by `set`, by a model
/// reading as `readings`, whose script calls `calls` (a missing input is then asked), and
/// the strategy's settings the trace records.
async fn pick_of_jottings(
    server: &Server,
    catalog: Catalog,
    set: impl FnOnce(&mut Actions),
    readings: Readings,
    calls: &str,
) -> (ActionStep, Value) {
    let (mut actions, index) = strategy_and_index(catalog, server);
    set(&mut actions);
    let model = weighing_by(vec![call(calls, json!({})), respond("Done.")], readings);
    let (answer, _) = run(&actions, &index, &model, JOTTINGS).await;
    (pick_step(&answer), answer.trace.config.clone())
}

/// The figure `term` ("near", "vote") shows on `id`'s line of a weighed pick's `text`.
fn term_of(text: &str, id: &str, term: &str) -> f32 {
    let line = text
        .lines()
        .find(|l| l.starts_with(&format!("{id}:")))
        .unwrap_or_else(|| panic!("{id} in {text}"));
    let (_, rest) = line
        .split_once(&format!(", {term} "))
        .unwrap_or_else(|| panic!("{term} shown on {line}"));
    rest.split(',').next().unwrap().parse().unwrap()
}

#[tokio::test]
async fn nearness_to_an_example_request_weighs_in_the_pick() {
    let server = Server::start().await;
    // The request is close to exportNotes' example and to no text of getNote's.
    let weighed = |weight: f32| {
        move |actions: &mut Actions| {
            actions.nearness_weight = Some(weight);
            actions.vote_weight = Some(0.0);
        }
    };
    let catalog = notes_with_an_example;

    let (by_readings, _) = pick_of_jottings(
        &server,
        catalog(),
        weighed(0.0),
        LEANING_TO_GET_NOTE,
        "getNote",
    )
    .await;
    assert_eq!(by_readings.operation_id.as_deref(), Some("getNote"));
    assert!(!by_readings.text.unwrap().contains("near"));
    let (near, _) = pick_of_jottings(
        &server,
        catalog(),
        weighed(10.0),
        LEANING_TO_GET_NOTE,
        "exportNotes",
    )
    .await;
    assert_eq!(near.operation_id.as_deref(), Some("exportNotes"));
    let text = near.text.expect("the weights");
    assert!(
        term_of(&text, "exportNotes", "near") > term_of(&text, "getNote", "near") + 0.1,
        "{text}"
    );
}

/// The notes API with example requests for `exportNotes` and one for `getNote`.
fn notes_with_examples() -> Catalog {
    let mut catalog = notes();
    for action in &mut catalog.actions {
        action.examples = match action.operation_id.as_str() {
            "exportNotes" => vec![
                "dump all my jottings into a file".into(),
                "save every jotting I have to one file".into(),
            ],
            "getNote" => vec!["show me my jotting number 12".into()],
            _ => continue,
        };
    }
    catalog
}

/// Asserts that the weighed pick of [`JOTTINGS`] on [`notes_with_examples`], with `off`
/// setting a term's weight to 0, is the readings' `getNote`, shows no `term` and records its
/// `weight` as 0.
async fn pick_without_a_term(
    server: &Server,
    off: impl FnOnce(&mut Actions),
    term: &str,
    weight: &str,
) {
    let (by_readings, config) = pick_of_jottings(
        server,
        notes_with_examples(),
        off,
        LEANING_TO_GET_NOTE,
        "getNote",
    )
    .await;
    assert_eq!(by_readings.operation_id.as_deref(), Some("getNote"));
    assert!(!by_readings.text.unwrap().contains(term));
    assert_eq!(config[weight], json!(0.0));
}

#[tokio::test]
async fn the_nearest_example_requests_vote_in_the_pick() {
    let server = Server::start().await;
    let voting = |weight: f32| {
        move |actions: &mut Actions| {
            actions.nearness_weight = Some(0.0);
            actions.vote_weight = Some(weight);
        }
    };

    pick_without_a_term(&server, voting(0.0), "vote", "vote_weight").await;
    // Examples written by a model leave nearness at its weight of 10; given in a file, 30.
    let (_, config) = pick_of_jottings(
        &server,
        notes_with_examples(),
        |_| (),
        LEANING_TO_GET_NOTE,
        "exportNotes",
    )
    .await;
    assert_eq!(config["nearness_weight"], json!(10.0));
    let mut given = notes_with_examples();
    given
        .actions
        .iter_mut()
        .for_each(|a| a.examples_given = true);
    // Given in a file, a few per operation leave the probe off: nearness weighs 30 and the
    // vote 10.
    let (_, config) =
        pick_of_jottings(&server, given, |_| (), LEANING_TO_GET_NOTE, "exportNotes").await;
    assert_eq!(config["probe_weight"], json!(0.0));
    assert_eq!(config["nearness_weight"], json!(30.0));
    assert_eq!(config["vote_weight"], json!(10.0));
    // Eight or more per operation, on average, turn it on at 4, and beside it nearness weighs
    // 15 and the vote 5; turned off, the weights are those of a few.
    let many = || {
        let mut catalog = notes();
        for action in &mut catalog.actions {
            action.examples = (1..=8)
                .map(|n| format!("{} for me, please ({n})", action.operation_id))
                .collect();
            action.examples_given = true;
        }
        catalog
    };
    let (_, config) =
        pick_of_jottings(&server, many(), |_| (), LEANING_TO_GET_NOTE, "exportNotes").await;
    assert_eq!(config["probe_weight"], json!(4.0));
    assert_eq!(config["nearness_weight"], json!(15.0));
    assert_eq!(config["vote_weight"], json!(5.0));
    let (_, config) = pick_of_jottings(
        &server,
        many(),
        |actions| actions.probe_weight = Some(0.0),
        LEANING_TO_GET_NOTE,
        "exportNotes",
    )
    .await;
    assert_eq!(config["probe_weight"], json!(0.0));
    assert_eq!(config["nearness_weight"], json!(30.0));
    assert_eq!(config["vote_weight"], json!(10.0));
    let (voted, config) = pick_of_jottings(
        &server,
        notes_with_examples(),
        voting(10.0),
        LEANING_TO_GET_NOTE,
        "exportNotes",
    )
    .await;
    assert_eq!(voted.operation_id.as_deref(), Some("exportNotes"));
    assert_eq!(config["vote_weight"], json!(10.0));
    let text = voted.text.expect("the weights");
    // The three examples vote: two for exportNotes, nearer, and one for getNote; the rest
    // of the list has none.
    let share = |id: &str| term_of(&text, id, "vote");
    assert!(share("exportNotes") > 0.5, "{text}");
    assert!(share("getNote") > 0.0, "{text}");
    assert!(
        (share("exportNotes") + share("getNote") - 1.0).abs() < 0.02,
        "{text}"
    );
    assert!(text
        .lines()
        .filter(|l| l.contains(", vote ") && !l.starts_with("exportNotes:"))
        .all(|l| l.starts_with("getNote:") || l.contains(", vote 0.00,")));
}

#[tokio::test]
async fn the_operation_most_voted_for_is_listed_however_it_read() {
    let server = Server::start().await;
    // A shortlist of one: getNote reads best by far, exportNotes worst.
    const READINGS: Readings = Readings {
        asked: &[("getNote", -1.0), ("exportNotes", -30.0)],
        listed: &[("getNote", -1.0), ("none", -10.0)],
        blank: &[],
    };
    let listed = |weight: f32| {
        let server = &server;
        async move {
            let one = move |actions: &mut Actions| {
                actions.nearness_weight = Some(0.0);
                actions.pick_k = 1;
                actions.vote_weight = Some(weight);
            };
            let (pick, _) =
                pick_of_jottings(server, notes_with_examples(), one, READINGS, "getNote").await;
            let text = pick.text.expect("the weights");
            let is_listed = |id: &str| {
                text.lines()
                    .any(|l| l.starts_with(&format!("{id}: request")) && !l.ends_with("not listed"))
            };
            (is_listed("exportNotes"), is_listed("getNote"), text.clone())
        }
    };

    let (export, get, text) = listed(0.0).await;
    assert!(!export && get, "the shortlist of one is getNote: {text}");
    let (export, get, text) = listed(10.0).await;
    assert!(export && get, "exportNotes listed beside getNote: {text}");
}

#[tokio::test]
async fn a_probe_fit_on_the_example_requests_weighs_in_the_pick() {
    let server = Server::start().await;
    let probing = |weight: f32| {
        move |actions: &mut Actions| {
            actions.nearness_weight = Some(0.0);
            actions.vote_weight = Some(0.0);
            actions.probe_weight = Some(weight);
        }
    };

    pick_without_a_term(&server, probing(0.0), "probe", "probe_weight").await;
    // Two example requests of exportNotes and one of getNote: the request, about jottings
    // put in a file, reads as exportNotes' by far.
    let (probed, config) = pick_of_jottings(
        &server,
        notes_with_examples(),
        probing(4.0),
        LEANING_TO_GET_NOTE,
        "exportNotes",
    )
    .await;
    assert_eq!(probed.operation_id.as_deref(), Some("exportNotes"));
    assert_eq!(config["probe_weight"], json!(4.0));
    let text = probed.text.expect("the weights");
    let log_p = |id: &str| term_of(&text, id, "probe");
    assert!(log_p("exportNotes") > log_p("getNote"), "{text}");
    assert!(log_p("exportNotes") > 0.5_f32.ln(), "{text}");
    // An operation without examples reads the floor, ln 1e-4.
    let others: Vec<&str> = text
        .lines()
        .filter(|l| l.contains(", probe ") && !l.starts_with("exportNotes:"))
        .filter(|l| !l.starts_with("getNote:"))
        .collect();
    assert!(!others.is_empty(), "{text}");
    assert!(
        others.iter().all(|l| l.contains(", probe -9.21,")),
        "{text}"
    );
}

#[tokio::test]
async fn strategies_given_the_same_probes_share_the_fitted_probe() {
    let server = Server::start().await;
    let (mut first, index) = strategy_and_index(notes_with_examples(), &server);
    first.probe_weight = Some(4.0);
    let probes = first.probes.clone();
    assert_eq!(format!("{probes:?}"), "Probes { generation: None }");
    let model = weighing_by(
        vec![call("exportNotes", json!({})), respond("Done.")],
        LEANING_TO_GET_NOTE,
    );
    run(&first, &index, &model, JOTTINGS).await;
    // The run fit the probe into what the clone holds too, so a second strategy given the
    // clone (as an eval gives each request's) finds it fit for this index.
    let fitted = format!("{probes:?}");
    assert!(
        fitted.contains(&format!("{:?}", index.index.generation())),
        "{fitted}"
    );
}

#[tokio::test]
async fn a_blank_read_of_the_list_takes_the_models_lean_from_the_pick() {
    let server = Server::start().await;
    let request = "back up everything I wrote";
    // Read with the request, getNote leads the list (-1 against -1.5); read with no request
    // at all, getNote still reads likely (-0.5) and exportNotes does not (-4): the lean
    // towards getNote is the list's, not the request's. Half of each blank read taken away:
    // getNote -1 + 0.25 = -0.75, exportNotes -1.5 + 2 = 0.5.
    const ASKED: &[(&str, f32)] = &[("getNote", -3.0), ("exportNotes", -3.0)];
    const LISTED: &[(&str, f32)] = &[("getNote", -1.0), ("exportNotes", -1.5)];
    const BLANK: &[(&str, f32)] = &[("getNote", -0.5), ("exportNotes", -4.0), ("none", -9.0)];
    let readings = Readings {
        asked: ASKED,
        listed: LISTED,
        blank: BLANK,
    };
    let mut actions = strategy(&server, ExecutorConfig::default(), Arc::new(AlwaysYes));
    assert_eq!(actions.calibration, 0.5, "on by default");
    let (answer, _) = weighed_pick(&actions, readings, request, "exportNotes", json!({})).await;
    let text = pick_step(&answer).text.expect("the weights");
    assert!(
        text.contains("exportNotes: request -3.00, list -1.50 (blank -4.00), total -2.00"),
        "{text}"
    );
    assert!(
        text.contains("getNote: request -3.00, list -1.00 (blank -0.50), total -4.50"),
        "{text}"
    );
    assert!(text.contains("none: list -8.00 (blank -9.00)"), "{text}");
    assert_eq!(answer.trace.config["calibration"], json!(0.5));

    // One scoring call reads the list twice: every id and none with the request, then the
    // same continuations after the same list with "N/A" for the request.
    let calls = score_calls(&answer);
    assert_eq!(calls.len(), 2);
    let items = &calls[1].items;
    let (asked, blank) = items.split_at(items.len() / 2);
    let prompt = |item: &ScoreItem| item.messages.last().expect("a prompt").content.clone();
    for (a, b) in asked.iter().zip(blank) {
        assert_eq!(a.continuation, b.continuation);
        let asked = prompt(a);
        let (list, _) = asked.rsplit_once("\n\nRequest: ").unwrap();
        assert_eq!(asked, format!("{list}\n\nRequest: {request}"));
        assert_eq!(prompt(b), format!("{list}\n\nRequest: N/A"));
    }

    // Calibration 0 reads the list once, and the list's lean picks getNote.
    actions.calibration = 0.0;
    let (answer, _) =
        weighed_pick(&actions, readings, request, "getNote", json!({"noteId": 1})).await;
    let text = pick_step(&answer).text.expect("the weights");
    assert!(
        text.contains("getNote: request -3.00, list -1.00, total -5.00"),
        "{text}"
    );
    assert!(!text.contains("blank"), "{text}");
    let calls = score_calls(&answer);
    assert!(calls[1]
        .items
        .iter()
        .all(|item| !prompt(item).ends_with("Request: N/A")));
}

#[tokio::test]
async fn none_first_in_the_list_reading_leaves_the_first_turn_free() {
    let server = Server::start().await;
    let index = notes_index();
    const ASKED: &[(&str, f32)] = &[("deleteNote", -2.0)];
    // "none" reads more than 1 nat likelier than every operation listed.
    const LISTED: &[(&str, f32)] = &[("none", -0.5), ("deleteNote", -1.6)];
    let actions = strategy(&server, ExecutorConfig::default(), Arc::new(AlwaysYes));
    let model = weighing(
        vec![respond("Which note?"), respond("Which note?")],
        ASKED,
        LISTED,
    );
    let (answer, _) = run(&actions, &index, &model, "delete a note").await;
    let pick = pick_step(&answer);
    assert_eq!(pick.operation_id, None);
    assert_eq!(pick.outcome, "none");
    let first = model.requests.lock().unwrap()[0].constraint.clone();
    let Some(Constraint::JsonSchema(turn)) = first else {
        panic!("the turn is held to a schema");
    };
    assert!(
        turn["anyOf"].as_array().unwrap().len() > 4,
        "every operation found and the other actions: {turn}"
    );

    // Half a nat ahead is not enough: the operation is picked.
    const CLOSE: &[(&str, f32)] = &[("none", -0.5), ("deleteNote", -1.0)];
    let model = weighing(
        vec![
            call("deleteNote", json!({"noteId": 1})),
            respond("Deleted."),
        ],
        ASKED,
        CLOSE,
    );
    let (answer, _) = run(&actions, &index, &model, "delete a note").await;
    assert_eq!(
        pick_step(&answer).operation_id.as_deref(),
        Some("deleteNote")
    );
}

#[tokio::test]
async fn with_weighing_off_a_weighing_model_writes_its_pick() {
    let server = Server::start().await;
    let index = notes_index();
    let mut actions = strategy(&server, ExecutorConfig::default(), Arc::new(AlwaysYes));
    actions.weigh = false;
    let model = weighing(vec![pick("none"), respond("No."), respond("No.")], &[], &[]);
    let (answer, _) = run(&actions, &index, &model, "delete a note").await;
    assert!(model.scored.lock().unwrap().is_empty());
    assert_eq!(pick_step(&answer).outcome, "none");
    let requests = model.requests.lock().unwrap();
    assert!(render_request(&requests[0]).contains("Reply with exactly one JSON object"));
    assert_eq!(answer.trace.config["weigh"], json!(false));
}
