//! The actions harness: a scripted model over the notes API's records; what each metric
//! counts, the files written, and resuming.

use std::fs;
use std::path::Path;

use serde_json::{json, Value};
use walkrag_actions::Catalog;
use walkrag_eval::actions::{self, load_requests, ActionResult, ActionSettings, NoActionProgress};
use walkrag_walker::testing::{block_on, env, index_of, ScriptedChatModel, Turn};

const REQUESTS: &str = r#"{"id": "r1", "request": "Show me note 1", "operation_id": "getNote", "method": "GET", "path": "/notes/{noteId}", "required_params": {"noteId": "1"}, "missing_required": [], "mutating": false}
{"id": "r2", "request": "Create a note titled Groceries", "operation_id": "createNote", "method": "POST", "path": "/notes", "required_params": {"title": "Groceries"}, "missing_required": [], "mutating": true}
{"id": "r3", "request": "Delete my note", "operation_id": "deleteNote", "method": "DELETE", "path": "/notes/{noteId}", "required_params": {"noteId": null}, "missing_required": ["noteId"], "mutating": true}
{"id": "r4", "request": "Rename note 1 to Errands", "operation_id": "replaceNote", "method": "PUT", "path": "/notes/{noteId}", "required_params": {"noteId": "1", "title": "Errands"}, "missing_required": [], "mutating": true, "also_acceptable": ["patch_/notes/{noteId}"]}
"#;

fn catalog() -> Catalog {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../actions/tests/data/notes.yaml"
    );
    Catalog::parse(&fs::read_to_string(path).unwrap()).unwrap()
}

/// The pick that starts each request: `operation`, or `"none"`.
fn pick(operation: &str) -> Turn {
    Turn::Reply(json!({"operation_id": operation}).to_string())
}

fn call(operation: &str, params: Value) -> Turn {
    let line = json!({"action": "execute_action", "operation_id": operation, "params": params});
    Turn::Reply(line.to_string())
}

/// The scripts start at the pick, written: the guess before the search and the weighed pick
/// are off.
fn settings() -> ActionSettings {
    ActionSettings {
        dataset: "notes".into(),
        command: "walkrag eval --spec notes.yaml --requests requests.jsonl".into(),
        base_url: None,
        k: None,
        max_turns: None,
        guess: false,
        weigh: false,
        value_margin: None,
        pick_model: None,
        retries: 0,
        traces: true,
    }
}

fn results(out: &Path) -> Vec<ActionResult> {
    fs::read_to_string(out.join("results.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn each_metric_counts_what_it_says_and_nothing_is_sent_unconfirmed() {
    let catalog = catalog();
    let index = index_of(&catalog.records_jsonl(Path::new("/specs/notes.yaml")));
    let dir = tempfile::tempdir().unwrap();
    let requests_path = dir.path().join("requests.jsonl");
    fs::write(&requests_path, REQUESTS).unwrap();
    let requests = load_requests(&requests_path, None).unwrap();
    let out = dir.path().join("out");
    let model = ScriptedChatModel::new(vec![
        // r1: right operation and value (a dry run ends at the first complete request).
        pick("getNote"),
        call("getNote", json!({"noteId": "1"})),
        // r2: the value up to spaces (a copy of the user's words keeps their case).
        pick("createNote"),
        call("createNote", json!({"title": "Groceries "})),
        // r3: a made-up id is dropped; the strategy asks for it.
        pick("deleteNote"),
        call("deleteNote", json!({"noteId": "3"})),
        // r4: the near neighbour that is acceptable too; a title the user never gave.
        pick("patch_/notes/{noteId}"),
        call(
            "patch_/notes/{noteId}",
            json!({"noteId": "1", "title": "Chores"}),
        ),
    ]);

    let summary = block_on(actions::run(
        env(&index.index, &model),
        &catalog,
        &requests,
        &out,
        &settings(),
        false,
        &NoActionProgress,
    ))
    .unwrap();

    let s = &summary.strategies["actions"];
    assert_eq!(summary.requests, 4);
    assert_eq!(s.answered, 4);
    assert_eq!(s.operation_accuracy, 1.0);
    assert_eq!(s.param_requests, 3, "r3 gives no required value");
    assert!((s.param_accuracy - 2.0 / 3.0).abs() < 1e-9, "{s:?}");
    assert_eq!(s.ask_accuracy, 1.0);
    assert_eq!(s.confirm_accuracy, 1.0);
    assert_eq!(s.unconfirmed_mutations, 0);
    assert!(s.operation_recall_10 > 0.0);
    let lines = results(&out);
    let by_id = |id: &str| lines.iter().find(|l| l.id == id).unwrap().clone();
    let r2 = by_id("r2");
    assert!(r2.confirmation_asked);
    assert_eq!(r2.would_send.len(), 1);
    assert_eq!(r2.would_send[0].url, "https://eu.notes.example/v1/notes");
    assert_eq!(r2.termination, "dry_run");
    let r3 = by_id("r3");
    assert_eq!(r3.asked, ["noteId"]);
    assert!(r3.would_send.is_empty() && !r3.confirmation_asked);
    assert!(r3.question.as_deref().unwrap().contains("noteId"));
    let r4 = by_id("r4");
    assert_eq!(r4.metrics.params, Some(false));
    assert_eq!(r4.ranked.len(), r4.ranked_operations.len());
    for file in ["run.json", "summary.json", "report.md"] {
        assert!(out.join(file).exists(), "{file}");
    }
    assert!(out.join("traces/actions/r3.json").exists());
    let written: Value =
        serde_json::from_str(&fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    for key in [
        "operation_accuracy",
        "operation_recall@5",
        "operation_recall@10",
        "param_accuracy",
        "ask_accuracy",
        "confirm_accuracy",
        "unconfirmed_mutations",
        "llm_calls",
        "prompt_tokens",
        "completion_tokens",
        "seconds",
    ] {
        assert!(
            written["strategies"]["actions"].get(key).is_some(),
            "summary.json lacks {key}"
        );
    }
    let report = fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        report.contains("| operation accuracy | 1.000 |"),
        "{report}"
    );

    // A rerun keeps every result and calls the model no more.
    let calls = model.requests.lock().unwrap().len();
    block_on(actions::run(
        env(&index.index, &model),
        &catalog,
        &requests,
        &out,
        &settings(),
        false,
        &NoActionProgress,
    ))
    .unwrap();
    assert_eq!(model.requests.lock().unwrap().len(), calls);
    assert_eq!(results(&out).len(), 4);
}

#[test]
fn a_model_that_asks_for_the_wrong_thing_or_calls_nothing_scores_zero() {
    let catalog = catalog();
    let index = index_of(&catalog.records_jsonl(Path::new("/specs/notes.yaml")));
    let dir = tempfile::tempdir().unwrap();
    let requests_path = dir.path().join("requests.jsonl");
    fs::write(&requests_path, REQUESTS).unwrap();
    let requests = load_requests(&requests_path, Some(3)).unwrap();
    let out = dir.path().join("out");
    let model = ScriptedChatModel::new(vec![
        // r1: picks none, then asks instead of reading.
        pick("none"),
        Turn::Reply(r#"{"action": "ask_user", "question": "Which noteId?"}"#.into()),
        // r2: the wrong operation, a read.
        pick("listNotes"),
        call("listNotes", json!({})),
        // r3: a reply without asking, and again when it is sent back (nothing was called).
        pick("none"),
        Turn::Reply("I deleted it.".into()),
        Turn::Reply("I deleted it.".into()),
    ]);

    let summary = block_on(actions::run(
        env(&index.index, &model),
        &catalog,
        &requests,
        &out,
        &settings(),
        false,
        &NoActionProgress,
    ))
    .unwrap();

    let s = &summary.strategies["actions"];
    assert_eq!(s.operation_accuracy, 0.0);
    assert!(
        (s.ask_accuracy - 1.0 / 3.0).abs() < 1e-9,
        "only r2 rightly asked nothing: {s:?}"
    );
    assert!(
        (s.confirm_accuracy - 2.0 / 3.0).abs() < 1e-9,
        "r2 was not confirmed: {s:?}"
    );
    assert_eq!(s.unconfirmed_mutations, 0, "a GET needs no confirmation");
    let r1 = &results(&out)[0];
    assert_eq!(r1.asked, ["noteId"], "names read from the model's question");
}

#[test]
fn request_sets_are_checked_when_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.jsonl");
    fs::write(
        &path,
        r#"{"id": "x", "request": "Delete my note", "operation_id": "deleteNote", "method": "DELETE", "path": "/notes/{noteId}", "required_params": {"noteId": "1"}, "missing_required": ["noteId"], "mutating": true}"#,
    )
    .unwrap();
    let error = load_requests(&path, None).unwrap_err().to_string();
    assert!(error.contains("must hold as null"), "{error}");
}

/// The committed request sets (docs/data/actions) fit their specs: every operation exists,
/// `required_params` are exactly the operation's required inputs (credentials aside), and
/// `mutating` and `method` agree with the spec.
#[test]
fn the_committed_request_sets_fit_their_specs() {
    committed_requests_fit("discourse.openapi.json", 93, "discourse-requests.jsonl");
    committed_requests_fit("intercom.openapi.json", 118, "intercom-requests.jsonl");
}

fn committed_requests_fit(spec: &str, operations: usize, set: &str) {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/data/actions");
    let text = fs::read_to_string(format!("{dir}/{spec}")).unwrap();
    let catalog = Catalog::parse(&text).unwrap();
    assert_eq!(catalog.actions.len(), operations);
    let requests = load_requests(Path::new(&format!("{dir}/{set}")), None).unwrap();
    assert!(requests.len() >= 25);
    assert!(
        requests
            .iter()
            .filter(|r| !r.missing_required.is_empty())
            .count()
            >= 3
    );
    assert!(requests.iter().filter(|r| r.mutating).count() >= 10);
    for request in &requests {
        let action = catalog
            .get(&request.operation_id)
            .unwrap_or_else(|| panic!("{}: no operation {}", request.id, request.operation_id))
            .without_credentials();
        assert_eq!(action.method.as_str(), request.method, "{}", request.id);
        assert_eq!(action.path, request.path, "{}", request.id);
        assert_eq!(
            action.needs_confirmation(),
            request.mutating,
            "{}",
            request.id
        );
        let mut required: Vec<&str> = action
            .inputs
            .iter()
            .filter(|i| i.required)
            .map(|i| i.name.as_str())
            .collect();
        required.sort_unstable();
        let mut given: Vec<&str> = request.required_params.keys().map(String::as_str).collect();
        given.sort_unstable();
        assert_eq!(given, required, "{}: required_params", request.id);
        for name in request.optional_params.keys() {
            assert!(
                action.input(name).is_some(),
                "{}: no input {name}",
                request.id
            );
        }
        // The checks walkrag makes accept the expected values.
        let mut inputs = serde_json::Map::new();
        for (name, value) in request
            .required_params
            .iter()
            .chain(&request.optional_params)
        {
            if !value.is_null() {
                inputs.insert(name.clone(), value.clone());
            }
        }
        let prepared = action.prepare(&Value::Object(inputs));
        match &prepared {
            Ok(_) => assert!(request.missing_required.is_empty(), "{}", request.id),
            Err(invalid) => {
                let mut missing = invalid.missing().to_vec();
                missing.sort();
                let mut expected = request.missing_required.clone();
                expected.sort();
                assert_eq!(missing, expected, "{}: {invalid}", request.id);
            }
        }
    }
}
