//! API actions through the binary: indexing an OpenAPI spec (one record per operation, only
//! changed operations re-embedded), and `eval --spec --requests` and `ask --strategy actions`
//! with the real MiniLM embedder and SmolLM2-135M (the contract, not accuracy).

use std::path::Path;

use serde_json::Value;

use crate::{stderr, stdout, walkrag};

const SPEC: &str = include_str!("../../../actions/tests/data/notes.yaml");

const MODEL: &str = "local:smollm2-135m";

const REQUESTS: &str = r#"{"id": "r1", "request": "Show me note 1", "operation_id": "getNote", "method": "GET", "path": "/notes/{noteId}", "required_params": {"noteId": "1"}, "missing_required": [], "mutating": false}
{"id": "r2", "request": "Delete my note", "operation_id": "deleteNote", "method": "DELETE", "path": "/notes/{noteId}", "required_params": {"noteId": null}, "missing_required": ["noteId"], "mutating": true}
{"id": "r3", "request": "Create a note titled Plans", "operation_id": "createNote", "method": "POST", "path": "/notes", "required_params": {"title": "Plans"}, "missing_required": [], "mutating": true}
"#;

fn json_lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect()
}

/// The one file of action records in `index`.
fn records_file(index: &Path) -> std::path::PathBuf {
    let files: Vec<_> = std::fs::read_dir(index.join("actions"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    files[0].clone()
}

#[test]
fn a_spec_is_indexed_one_record_per_operation_and_updated_by_operation() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("notes.yaml"), SPEC).unwrap();

    let out = walkrag(dir, &["index", "notes.yaml", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let summary: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(summary["documents"], 9, "{summary}");
    assert_eq!(summary["added"], 9);
    assert!(
        stderr(&out).contains("9 API operations"),
        "{}",
        stderr(&out)
    );
    let records = records_file(&dir.join(".walkrag"));
    let lines = json_lines(&std::fs::read_to_string(&records).unwrap());
    assert_eq!(lines.len(), 9);
    let delete = lines.iter().find(|l| l["id"] == "deleteNote").unwrap();
    assert_eq!(delete["kind"], "action");
    assert_eq!(delete["method"], "DELETE");
    assert_eq!(delete["path"], "/notes/{noteId}");
    assert_eq!(delete["title"], "DELETE /notes/{noteId} — Delete a note");
    let spec_path = std::fs::canonicalize(dir.join("notes.yaml")).unwrap();
    assert_eq!(delete["spec"], spec_path.to_str().unwrap());
    let modified = std::fs::metadata(&records).unwrap().modified().unwrap();

    // Nothing changed: nothing written, the records file untouched.
    let out = walkrag(dir, &["index", "notes.yaml", "--json"]);
    let summary: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(summary["written"], false, "{summary}");
    assert_eq!(
        std::fs::metadata(&records).unwrap().modified().unwrap(),
        modified
    );

    // One operation's summary changes: one document re-embedded.
    let changed = SPEC.replace("summary: Get one note", "summary: Fetch one note by its id");
    assert_ne!(changed, SPEC);
    std::fs::write(dir.join("notes.yaml"), changed).unwrap();
    let out = walkrag(dir, &["index", "notes.yaml", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let summary: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(
        (
            &summary["changed"],
            &summary["unchanged"],
            &summary["embedded"]
        ),
        (&Value::from(1), &Value::from(8), &Value::from(1)),
        "{summary}"
    );

    let out = walkrag(dir, &["search", "remove a note", "-k", "1", "--json"]);
    let hit = &json_lines(&stdout(&out))[0];
    assert_eq!(hit["doc_id"], "deleteNote", "{hit}");

    // A broken spec is an error naming it; nothing is half-written.
    std::fs::write(dir.join("broken.yaml"), "openapi: 3.0.0\npaths: [1, 2]\n").unwrap();
    let out = walkrag(dir, &["index", "broken.yaml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("broken.yaml"), "{}", stderr(&out));
}

#[test]
fn eval_of_api_requests_writes_the_contract_files_and_ask_runs_dry() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("notes.yaml"), SPEC).unwrap();
    std::fs::write(dir.join("requests.jsonl"), REQUESTS).unwrap();

    let out = walkrag(
        dir,
        &[
            "eval",
            "--spec",
            "notes.yaml",
            "--requests",
            "requests.jsonl",
            "--model",
            MODEL,
            "--limit",
            "2",
            "--out",
            "out",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("out/summary.json")).unwrap())
            .unwrap();
    assert_eq!(
        summary["dataset"], "requests",
        "named after the requests file"
    );
    assert_eq!(summary["requests"], 2);
    let actions = &summary["strategies"]["actions"];
    for key in [
        "operation_accuracy",
        "operation_recall@5",
        "operation_recall@10",
        "param_accuracy",
        "ask_accuracy",
        "confirm_accuracy",
        "llm_calls",
        "prompt_tokens",
        "completion_tokens",
        "seconds",
    ] {
        let value = actions[key].as_f64();
        assert!(
            value.is_some_and(|v| (0.0..=1e6).contains(&v)),
            "summary.json: {key} = {}",
            actions[key]
        );
    }
    assert_eq!(
        actions["unconfirmed_mutations"], 0,
        "whatever the model does"
    );
    // Retrieval alone finds the operation among nine.
    assert_eq!(actions["operation_recall@10"], 1.0);
    let results = json_lines(&std::fs::read_to_string(dir.join("out/results.jsonl")).unwrap());
    assert_eq!(results.len(), 2);
    for result in &results {
        for field in [
            "picked",
            "params",
            "asked",
            "confirmation_asked",
            "would_send",
            "ranked",
            "ranked_operations",
            "metrics",
        ] {
            assert!(
                result.get(field).is_some(),
                "results.jsonl lacks {field}: {result}"
            );
        }
        assert!(result["error"].is_null(), "{result}");
    }
    for file in ["run.json", "report.md"] {
        assert!(dir.join("out").join(file).exists(), "{file}");
    }

    // ask, on the index the eval built: events, then the answer line; nothing is sent.
    let out = walkrag(
        dir,
        &[
            "ask",
            "Delete note 1",
            "--strategy",
            "actions",
            "--index",
            "out/index",
            "--model",
            MODEL,
            "--dry-run",
            "--json",
            "--max-cycles",
            "2",
        ],
    );
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", stderr(&out));
    let events = json_lines(&stdout(&out));
    // The model's guess of operation ids, the search, then the pick and one turn at most.
    assert_eq!(events[0]["type"], "action");
    assert_eq!(events[0]["action"], "guess");
    assert_eq!(events[1]["type"], "retrieved");
    assert_eq!(events[2]["type"], "action");
    assert_eq!(events[2]["action"], "find_actions");
    // A local model weighs the operations found rather than writing its pick.
    assert_eq!(events[3]["action"], "pick");
    let weights = events[3]["text"].as_str().unwrap();
    assert!(
        weights.contains(", list ") && weights.contains("none: list "),
        "{weights}"
    );
    let answer = events.last().unwrap();
    assert_eq!(answer["type"], "answer");
    // The guess, the pick's two weighings and one turn at most.
    assert!(answer["usage"]["llm_calls"].as_u64().unwrap() <= 4);
    assert!(!answer["ranked"].as_array().unwrap().is_empty());

    // An index without operations is refused clearly.
    std::fs::write(
        dir.join("c.jsonl"),
        "{\"id\": \"a\", \"text\": \"hello\"}\n",
    )
    .unwrap();
    let out = walkrag(dir, &["index", "c.jsonl", "--index", "plain"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = walkrag(
        dir,
        &[
            "ask",
            "x",
            "--strategy",
            "actions",
            "--index",
            "plain",
            "--model",
            MODEL,
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("holds no API operations"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_pick_model_weighs_the_pick_beside_the_chat_model() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("notes.yaml"), SPEC).unwrap();
    let out = walkrag(dir, &["index", "notes.yaml", "--index", "idx"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let ask = |pick_model: &str| {
        walkrag(
            dir,
            &[
                "ask",
                "Show me note 1",
                "--strategy",
                "actions",
                "--index",
                "idx",
                "--model",
                MODEL,
                "--pick-model",
                pick_model,
                "--dry-run",
                "--max-cycles",
                "1",
                "--trace",
                "trace.json",
            ],
        )
    };

    let pick_model = "local:qwen2.5-coder-0.5b";
    let out = ask(pick_model);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", stderr(&out));
    let trace: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("trace.json")).unwrap()).unwrap();
    assert_eq!(trace["model"], MODEL, "the chat model writes the turns");
    assert_eq!(trace["config"]["pick_model"], pick_model);
    let purposes: Vec<&str> = trace["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["step"] == "score")
        .map(|s| s["purpose"].as_str().unwrap())
        .collect();
    assert_eq!(purposes, ["pick: request reading", "pick: list reading"]);

    // A pick model that cannot be loaded is an error that names it.
    let out = ask("local:no-such-model");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("cannot load the pick model local:no-such-model"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn example_requests_are_written_once_at_index_time_and_searched_with_the_operations() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("notes.yaml"), SPEC).unwrap();
    let index = |extra: &[&str]| {
        let mut args = vec!["index", "notes.yaml", "--json"];
        args.extend_from_slice(extra);
        let out = walkrag(dir, &args);
        assert!(out.status.success(), "{}", stderr(&out));
        out
    };

    let out = index(&["--examples", "--examples-model", MODEL]);
    assert!(
        stderr(&out).contains("writing example requests for 9 operations with local:smollm2-135m"),
        "{}",
        stderr(&out)
    );
    let kept =
        json_lines(&std::fs::read_to_string(dir.join(".walkrag/action-examples.jsonl")).unwrap());
    assert_eq!(kept.len(), 9);
    assert!(kept.iter().all(|k| k["model"] == MODEL));
    let records =
        json_lines(&std::fs::read_to_string(records_file(&dir.join(".walkrag"))).unwrap());
    let with_examples = kept
        .iter()
        .filter(|k| !k["examples"].as_array().unwrap().is_empty())
        .count();
    assert!(with_examples > 0, "{kept:?}");
    // Each example is a record of its own, with its operation's id.
    for k in &kept {
        let examples: Vec<&Value> = k["examples"].as_array().unwrap().iter().collect();
        let recorded: Vec<&Value> = records
            .iter()
            .filter(|r| r["kind"] == "action-example" && r["operation_id"] == k["operation_id"])
            .map(|r| &r["text"])
            .collect();
        assert_eq!(recorded, examples);
    }
    let written: usize = kept
        .iter()
        .map(|k| k["examples"].as_array().unwrap().len())
        .sum();
    assert_eq!(records.len(), 9 + written);
    let summary: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(summary["documents"], records.len(), "{summary}");

    // Nothing left to write, nothing to re-embed; without the flag the examples stay.
    let out = index(&["--examples", "--examples-model", "local:no-such-model"]);
    assert!(
        stderr(&out).contains("every operation has its example requests"),
        "{}",
        stderr(&out)
    );
    let summary: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(summary["written"], false, "{summary}");
    let summary: Value = serde_json::from_str(stdout(&index(&[])).trim()).unwrap();
    assert_eq!(summary["written"], false, "{summary}");
}

#[test]
fn example_requests_given_in_a_file_are_indexed_with_the_operations_they_name() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("notes.yaml"), SPEC).unwrap();
    std::fs::write(
        dir.join("past.jsonl"),
        "{\"request\": \"Bin note 12, it is stale\", \"operation_id\": \"deleteNote\"}\n\
         {\"request\": \"What did I write in note 4?\", \"operation_id\": \"getNote\"}\n\
         {\"request\": \"Feed the cat\", \"operation_id\": \"feedCat\"}\n",
    )
    .unwrap();
    let out = walkrag(
        dir,
        &[
            "index",
            "notes.yaml",
            "--examples-from",
            "past.jsonl",
            "--json",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("2 of 9 operations have example requests given"),
        "{}",
        stderr(&out)
    );
    assert!(
        stderr(&out)
            .contains("1 of the 3 requests given name operations none of the specs has: feedCat"),
        "{}",
        stderr(&out)
    );
    let records =
        json_lines(&std::fs::read_to_string(records_file(&dir.join(".walkrag"))).unwrap());
    let examples: Vec<(&str, &str)> = records
        .iter()
        .filter(|r| r["kind"] == "action-example")
        .map(|r| {
            (
                r["operation_id"].as_str().unwrap(),
                r["text"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        examples,
        [
            ("getNote", "What did I write in note 4?"),
            ("deleteNote", "Bin note 12, it is stale")
        ]
    );

    // A file that is not labelled requests is an error naming the line; the index stays.
    std::fs::write(dir.join("bad.jsonl"), "{\"request\": \"no label\"}\n").unwrap();
    let out = walkrag(
        dir,
        &["index", "notes.yaml", "--examples-from", "bad.jsonl"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("bad.jsonl, line 1"),
        "{}",
        stderr(&out)
    );
    let out = walkrag(dir, &["search", "bin a note", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
}
