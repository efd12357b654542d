//! `ask` and `eval` end to end: the real MiniLM embedder and the real SmolLM2-135M chat model
//! (greedy), through the binary. SmolLM2 is too small to answer well; these tests check the
//! contract (events, answer line, trace, files written, resuming), not accuracy.

use std::path::Path;
use std::process::Output;

use serde_json::Value;

use crate::{stderr, stdout, walkrag};

const MODEL: &str = "local:smollm2-135m";

const CORPUS: &str = r#"{"id": "c1", "title": "Velmora", "text": "Velmora is a river town in the north. Its mayor is Ilsa Brandt."}
{"id": "c2", "title": "Ilsa Brandt", "text": "Ilsa Brandt was born in Kessel in 1971 and trained as a bridge engineer."}
{"id": "c3", "title": "Kessel", "text": "Kessel is a mountain village famous for its Saturday cheese market."}
{"id": "c4", "title": "Velmora tramway", "text": "The Velmora tramway has two lines along the river."}
"#;

const QUESTIONS: &str = r#"{"id": "q1", "question": "Who is the mayor of Velmora?", "answer": "Ilsa Brandt", "answer_aliases": [], "supporting_ids": ["c1"], "kind": "bridge"}
{"id": "q2", "question": "In which village was the mayor of Velmora born?", "answer": "Kessel", "answer_aliases": [], "supporting_ids": ["c1", "c2"], "kind": "bridge"}
{"id": "q3", "question": "What is Kessel famous for?", "answer": "cheese market", "answer_aliases": [], "supporting_ids": ["c3"], "kind": "bridge"}
"#;

/// The command failed and said `message` on stderr.
#[track_caller]
fn assert_refused(out: &Output, message: &str) {
    assert!(!out.status.success());
    assert!(stderr(out).contains(message), "{}", stderr(out));
}

/// `ask x --strategy STRATEGY FLAGS --model MODEL` in `dir` failed and said `message`.
#[track_caller]
fn assert_ask_refused(dir: &Path, strategy: &str, flags: &[&str], message: &str) {
    let mut args = vec!["ask", "x", "--strategy", strategy];
    args.extend(flags);
    args.extend(["--model", MODEL]);
    assert_refused(&walkrag(dir, &args), message);
}

/// With no --model and the default answer model (the 1.5B) not installed, the 0.5B writes
/// the answer too and a warning says how to install the better reader; with --model given,
/// that model answers (the command-line contract's default) and nothing is said. A models
/// directory holding only MiniLM and the 0.5B makes this the same on every machine.
#[test]
fn the_default_model_answers_itself_where_the_answer_model_is_not_installed() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let models = dir.join("models");
    std::fs::create_dir(&models).unwrap();
    for name in ["minilm", "qwen2.5-coder-0.5b"] {
        std::os::unix::fs::symlink(walkrag_core::models_dir().join(name), models.join(name))
            .unwrap();
    }
    std::fs::write(dir.join("corpus.jsonl"), CORPUS).unwrap();
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_walkrag"))
            .args(args)
            .current_dir(dir)
            .env("RUST_LOG", "warn")
            .env("WALKRAG_MODELS", &models)
            .env_remove("WALKRAG_STORE")
            .output()
            .expect("walkrag runs")
    };
    let out = run(&["index", "corpus.jsonl"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let ask = [
        "ask",
        "Who is the mayor of Velmora?",
        "--strategy",
        "single",
        "-k",
        "1",
    ];
    let out = run(&ask);
    let code = out.status.code().unwrap();
    assert!(code == 0 || code == 1, "{}", stderr(&out));
    let warning =
        "qwen2.5-coder-1.5b is not installed, so local:qwen2.5-coder-0.5b writes the answers too";
    assert!(stderr(&out).contains(warning), "{}", stderr(&out));

    let mut given = ask.to_vec();
    given.extend(["--model", "local:qwen2.5-coder-0.5b", "--json"]);
    let out = run(&given);
    let code = out.status.code().unwrap();
    assert!(code == 0 || code == 1, "{}", stderr(&out));
    assert!(!stderr(&out).contains("not installed"), "{}", stderr(&out));
    let answer: Value = serde_json::from_str(stdout(&out).lines().last().unwrap()).unwrap();
    assert_eq!(answer["type"], "answer", "{answer}");
}

#[test]
fn ask_streams_events_and_writes_the_trace() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("corpus.jsonl"), CORPUS).unwrap();
    let out = walkrag(dir, &["index", "corpus.jsonl"]);
    assert!(out.status.success(), "{}", stderr(&out));

    let out = walkrag(
        dir,
        &[
            "ask",
            "Who is the mayor of Velmora?",
            "--strategy",
            "single",
            "--model",
            MODEL,
            "-k",
            "2",
            "--json",
            "--trace",
            "trace.json",
        ],
    );
    let code = out.status.code().unwrap();
    assert!(code == 0 || code == 1, "{}", stderr(&out));
    let events: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect();
    assert_eq!(events[0]["type"], "cycle");
    assert_eq!(events[1]["type"], "retrieved");
    assert_eq!(events[1]["chunks"].as_array().unwrap().len(), 2);
    let tokens: String = events
        .iter()
        .filter(|e| e["type"] == "token")
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    let answer = events.last().unwrap();
    assert_eq!(answer["type"], "answer");
    assert_eq!(
        answer["text"].as_str().unwrap(),
        tokens,
        "tokens stream the reply"
    );
    for field in [
        "answer",
        "found",
        "citations",
        "ranked",
        "termination",
        "cycles",
        "usage",
        "elapsed_ms",
    ] {
        assert!(
            !answer[field].is_null(),
            "answer line lacks {field}: {answer}"
        );
    }
    assert_eq!(
        code == 0,
        answer["found"] == true,
        "exit 1 exactly when not found"
    );
    assert_eq!(answer["ranked"].as_array().unwrap().len(), 2);
    assert_eq!(answer["termination"], "single_pass");
    assert_eq!(answer["usage"]["llm_calls"], 1);
    assert!(answer["usage"]["prompt_tokens"].as_u64().unwrap() > 50);

    let trace: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("trace.json")).unwrap()).unwrap();
    assert_eq!(trace["strategy"], "single");
    assert_eq!(trace["model"], MODEL);
    let steps = trace["steps"].as_array().unwrap();
    assert_eq!(steps[0]["step"], "retrieve");
    assert_eq!(steps[1]["step"], "llm");
    // The question is in the last message, after the answer step's worked examples.
    let messages = steps[1]["messages"].as_array().unwrap();
    assert!(messages.last().unwrap()["content"]
        .as_str()
        .unwrap()
        .contains("Who is the mayor of Velmora?"));
    assert_eq!(trace["answer"]["text"], answer["text"]);

    assert_eq!(trace["graph"]["nodes"][0]["kind"], "question");
    assert!(trace["graph"]["edges"].as_array().unwrap().len() >= 2);

    // The walk with its HTML trace; whatever the tiny model writes, it ends for a reason.
    let out = walkrag(
        dir,
        &[
            "ask",
            "In which village was the mayor of Velmora born?",
            "--strategy",
            "walk",
            "--model",
            MODEL,
            "-k",
            "2",
            "--max-cycles",
            "2",
            "--json",
            "--trace",
            "walk.html",
            "--memory",
        ],
    );
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", stderr(&out));
    let last: Value = serde_json::from_str(stdout(&out).lines().last().unwrap()).unwrap();
    assert_eq!(last["type"], "answer");
    let reasons = [
        "sufficient",
        "no_descriptors",
        "nothing_new",
        "max_cycles",
        "token_budget",
    ];
    assert!(
        reasons.contains(&last["termination"].as_str().unwrap()),
        "{last}"
    );
    assert!((1..=2).contains(&last["cycles"].as_u64().unwrap()));
    let page = std::fs::read_to_string(dir.join("walk.html")).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>") && page.contains("<svg"));
    // --memory: recalled before the walk (nothing yet), stored after it; said as notes.
    let events = stdout(&out);
    assert!(
        events.contains("0 of 0 remembered facts recalled"),
        "{events}"
    );
    assert!(events.contains("new facts remembered"), "{events}");
    assert_ask_refused(dir, "single", &["--memory"], "--memory works with the walk");

    // sections reads the leads: it needs some.
    assert_ask_refused(
        dir,
        "sections",
        &["--leads", "0"],
        "--leads 0 leaves the sections strategy nothing to read",
    );

    // chat's --reader-model (also called --answer-model) needs a strategy whose answer is
    // written from passages.
    for flag in ["--reader-model", "--answer-model"] {
        let chat = ["chat", "--prompt", "x", flag, MODEL, "--model", MODEL];
        let out = walkrag(dir, &chat);
        assert_refused(&out, "--reader-model works with --strategy");
    }
    // The docs strategy's document readers are its own.
    assert_ask_refused(
        dir,
        "single",
        &["--doc-reader-model", MODEL],
        "--doc-reader-model works with the docs strategy",
    );

    // An unknown strategy is refused with the list of those there are.
    let out = walkrag(dir, &["ask", "x", "--strategy", "bogus", "--model", MODEL]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains(
            "no strategy is called \"bogus\"; available: walk, single, links, roam, toc, sections, docs, actions"
        ),
        "{}",
        stderr(&out)
    );
}

#[test]
fn eval_writes_results_summary_report_and_resumes() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("corpus.jsonl"), CORPUS).unwrap();
    std::fs::write(dir.join("questions.jsonl"), QUESTIONS).unwrap();
    let args = [
        "eval",
        "--corpus",
        "corpus.jsonl",
        "--questions",
        "questions.jsonl",
        "--model",
        MODEL,
        "--strategies",
        "single",
        "-k",
        "2",
        "--out",
        "out",
        "--limit",
        "2",
    ];
    let out = walkrag(dir, &args);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("recall@5"), "{}", stdout(&out));

    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("out/summary.json")).unwrap())
            .unwrap();
    assert_eq!(summary["questions"], 2);
    let single = &summary["strategies"]["single"];
    for key in [
        "recall@2",
        "recall@5",
        "recall@10",
        "em",
        "f1",
        "llm_calls",
        "prompt_tokens",
        "completion_tokens",
        "seconds",
    ] {
        assert!(single[key].is_number(), "summary lacks {key}: {summary}");
    }
    assert_eq!(single["llm_calls"], 1.0);
    // Two chunks retrieved of single-chunk records: recall@2 = recall@10.
    assert_eq!(single["recall@2"], single["recall@10"]);

    let lines: Vec<Value> = std::fs::read_to_string(dir.join("out/results.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    for line in &lines {
        for key in [
            "id",
            "strategy",
            "answer",
            "found",
            "citations",
            "ranked",
            "ranked_docs",
            "ranked_sections",
            "termination",
            "cycles",
            "usage",
            "elapsed_ms",
            "metrics",
        ] {
            assert!(!line[key].is_null(), "results line lacks {key}: {line}");
        }
        assert_eq!(line["ranked_docs"].as_array().unwrap().len(), 2);
        assert!(line["ranked_docs"][0].as_str().unwrap().starts_with('c'));
        assert_eq!(line["ranked_sections"][0].as_array().unwrap().len(), 1);
    }
    let q1 = lines.iter().find(|l| l["id"] == "q1").unwrap();
    assert_eq!(
        q1["ranked_docs"][0], "c1",
        "MiniLM finds the mayor's passage"
    );
    assert_eq!(q1["metrics"]["recall@2"], 1.0);

    let report = std::fs::read_to_string(dir.join("out/report.md")).unwrap();
    assert!(report.contains("| recall@5 |"), "{report}");
    assert!(
        report.contains("--limit 2"),
        "the report quotes the command: {report}"
    );
    let chart = std::fs::read_to_string(dir.join("out/chart.svg")).unwrap();
    assert!(chart.starts_with("<svg") && chart.contains("recall@k"));

    // Going on with a larger limit runs only the new question.
    let mut more = args.to_vec();
    more.pop();
    more.push("3");
    let out = walkrag(dir, &more);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("resuming: 2 results kept, 1 to run"),
        "{}",
        stderr(&out)
    );
    let n = std::fs::read_to_string(dir.join("out/results.jsonl"))
        .unwrap()
        .lines()
        .count();
    assert_eq!(n, 3);

    // Another model answering, in the same directory, is refused.
    let mut other = args.to_vec();
    other.extend(["--reader-model", "local:qwen2.5-coder-0.5b"]);
    let out = walkrag(dir, &other);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--restart"), "{}", stderr(&out));
}

/// Indexes `docs/data/samples/report.md` in `dir` and asks `question` of it with `strategy`, `--json`
/// and a trace in `STRATEGY.json`: the answer line and the trace.
fn ask_report(dir: &std::path::Path, strategy: &str, question: &str) -> (Value, Value) {
    let report =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/data/samples/report.md");
    std::fs::copy(report, dir.join("report.md")).unwrap();
    let out = walkrag(dir, &["index", "report.md"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let trace = format!("{strategy}.json");
    let out = walkrag(
        dir,
        &[
            "ask",
            question,
            "--strategy",
            strategy,
            "--model",
            MODEL,
            "--json",
            "--trace",
            &trace,
        ],
    );
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", stderr(&out));
    let last: Value = serde_json::from_str(stdout(&out).lines().last().unwrap()).unwrap();
    assert_eq!(last["type"], "answer");
    let trace: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join(trace)).unwrap()).unwrap();
    assert_eq!(trace["strategy"], strategy);
    (last, trace)
}

#[test]
fn toc_picks_sections_of_a_markdown_report() {
    let tmp = tempfile::tempdir().unwrap();
    let question = "How much did the creamery's energy use fall?";
    let (last, trace) = ask_report(tmp.path(), "toc", question);
    // Whatever the tiny model picks, the strategy ends for one of its reasons.
    let termination = last["termination"].as_str().unwrap();
    assert!(
        ["single_pass", "nothing_retrieved", "no_retrieval"].contains(&termination),
        "{last}"
    );
    // The pick was shown the report's headings, each after its section id.
    let steps = trace["steps"].as_array().unwrap();
    let pick = steps
        .iter()
        .find(|s| s["step"] == "llm" && s["purpose"] == "pick")
        .expect("a pick call");
    let toc = pick["messages"][1]["content"].as_str().unwrap();
    for heading in ["Energy", "Cold chain", "Outlook for 2026"] {
        assert!(
            toc.lines()
                .any(|l| l.trim_start().split_once("] ").map(|(_, h)| h) == Some(heading)),
            "{heading} in {toc}"
        );
    }
    // An answer from sections ranks their passages; the others rank nothing.
    let ranked = last["ranked"].as_array().unwrap();
    assert_eq!(termination == "single_pass", !ranked.is_empty(), "{last}");
}

#[test]
fn roam_opens_sections_of_a_markdown_report_and_keeps_them_open_in_chat() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let question = "How much did the creamery's energy use fall?";
    let (last, trace) = ask_report(dir, "roam", question);
    let termination = last["termination"].as_str().unwrap();
    assert!(
        ["sufficient", "nothing_new", "max_cycles"].contains(&termination),
        "{last}"
    );
    let steps = trace["steps"].as_array().unwrap();
    let first = steps
        .iter()
        .find(|s| s["step"] == "llm" && s["purpose"] == "navigate")
        .expect("a navigation turn");
    // The outline shows the chapters with the start of their text, deeper sections closed.
    let outline = first["messages"][1]["content"].as_str().unwrap();
    assert!(outline.contains("] Operations"), "{outline}");
    assert!(
        outline.contains("] The creamery (closed, 2 more inside)"),
        "{outline}"
    );
    // The real model's first move is one the protocol allows: an id shown, or the answer.
    let completion = first["completion"].as_str().unwrap();
    assert!(
        completion.starts_with(r#"{"action": "answer"}"#)
            || completion.starts_with(r#"{"action": "expand_sections", "ids": [""#),
        "{completion}"
    );
    if completion.contains("expand_sections") {
        assert!(steps.iter().any(|s| s["step"] == "retrieve"
            && s["query"].as_str().unwrap().starts_with("expand_sections ")));
    }

    // chat: two questions, two answers; the second starts with the first's open sections.
    let turns = chat_turns(
        dir,
        &["--strategy", "roam", "--model", MODEL, "--json"],
        "How much did energy use fall?\nAnd water use?\n",
    );
    assert_eq!(turns.len(), 2, "{turns:?}");
    let opened_first: Vec<&str> = turns[0]
        .iter()
        .filter(|e| e["type"] == "retrieved")
        .filter_map(|e| e["query"].as_str()?.strip_prefix("expand_sections "))
        .flat_map(|ids| ids.split(' '))
        .collect();
    if !opened_first.is_empty() {
        let kept = turns[1]
            .iter()
            .find_map(|e| {
                e["message"]
                    .as_str()?
                    .strip_prefix("open from earlier questions: ")
            })
            .expect("the follow-up says what is still open");
        for id in opened_first {
            assert!(kept.contains(&format!("[{id}]")), "{id} in {kept}");
        }
    }
}

/// Runs `walkrag chat ARGS` with `lines` on stdin: the JSON lines it printed.
fn chat_lines(dir: &std::path::Path, args: &[&str], lines: &str) -> Vec<Value> {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_walkrag"))
        .arg("chat")
        .args(args)
        .current_dir(dir)
        .env("RUST_LOG", "warn")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(lines.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .collect()
}

/// The turns of `chat --json` given `lines`, each ending with its answer line.
fn chat_turns(dir: &std::path::Path, args: &[&str], lines: &str) -> Vec<Vec<Value>> {
    chat_lines(dir, args, lines)
        .split_inclusive(|v| v["type"] == "answer")
        .map(<[Value]>::to_vec)
        .collect()
}

#[test]
fn docs_reads_documents_chosen_by_front_matter_and_chat_takes_toc() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let reports =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/data/samples/reports");
    std::fs::create_dir(dir.join("reports")).unwrap();
    for entry in std::fs::read_dir(reports).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, dir.join("reports").join(path.file_name().unwrap())).unwrap();
    }
    let out = walkrag(dir, &["index", "reports"]);
    assert!(out.status.success(), "{}", stderr(&out));

    let out = walkrag(
        dir,
        &[
            "ask",
            "What revenue did Alder Foods report for 2024?",
            "--strategy",
            "docs",
            "--model",
            MODEL,
            "--json",
            "--trace",
            "docs.json",
        ],
    );
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", stderr(&out));
    let last: Value = serde_json::from_str(stdout(&out).lines().last().unwrap()).unwrap();
    assert_eq!(last["type"], "answer");
    let trace: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("docs.json")).unwrap()).unwrap();
    let steps = trace["steps"].as_array().unwrap();
    // The plan saw the front matter's fields and started with one of the two tools.
    let plan = steps
        .iter()
        .find(|s| s["step"] == "llm" && s["purpose"] == "plan")
        .expect("a plan call");
    let prompt = plan["messages"][1]["content"].as_str().unwrap();
    assert!(
        prompt.contains("- company (text, 3 documents): Alder Foods; Birchway Logistics"),
        "{prompt}"
    );
    let completion = plan["completion"].as_str().unwrap();
    assert!(
        completion.starts_with(r#"{"action": "query_documents""#)
            || completion.starts_with(r#"{"action": "search_passages""#),
        "{completion}"
    );
    // Documents chosen are read by the reader (here the same model), each call recorded.
    if completion.contains("query_documents") {
        let reads = steps
            .iter()
            .filter(|s| s["step"] == "llm" && s["purpose"] == "read")
            .count();
        assert!((1..=12).contains(&reads), "{reads} reads");
    }

    // chat with toc: two questions, two answers.
    let turns = chat_turns(
        dir,
        &["--strategy", "toc", "--model", MODEL, "--json"],
        "Who runs the Tartu plant?\nHow many pallets did Birchway move?\n",
    );
    assert_eq!(turns.len(), 2, "{turns:?}");
    for turn in &turns {
        let last = turn.last().unwrap();
        let termination = last["termination"].as_str().unwrap();
        assert!(
            ["single_pass", "nothing_retrieved", "no_retrieval"].contains(&termination),
            "{last}"
        );
    }
}

#[test]
fn index_toc_writes_contents_for_plain_text_that_toc_lists() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let text = "The Velmora ferry sails to Kessel twice a day, at seven and at five. ".repeat(20)
        + &"A crossing costs four euros; children under twelve ride free. ".repeat(20);
    std::fs::write(dir.join("ferry.txt"), text).unwrap();
    let out = walkrag(dir, &["index", "ferry.txt", "--toc", "--toc-model", MODEL]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("writing a table of contents for ferry.txt (1/1)"),
        "{}",
        stderr(&out)
    );
    let written = std::fs::read_to_string(dir.join(".walkrag/contents.jsonl")).unwrap();
    let contents: Value = serde_json::from_str(written.trim()).unwrap();
    assert_eq!(contents["doc_id"], "ferry.txt");
    assert_eq!(contents["model"], "local:smollm2-135m");
    let entries = contents["entries"].as_array().unwrap();
    assert!(entries.len() >= 2, "{contents}");
    assert!(entries
        .iter()
        .all(|e| !e["heading"].as_str().unwrap().is_empty()));

    // Done once: a second run writes nothing and loads no model.
    let out = walkrag(dir, &["index", "ferry.txt", "--toc", "--toc-model", MODEL]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("every document without headings has one"));

    // toc lists the generated entries by their ids.
    let out = walkrag(
        dir,
        &[
            "ask",
            "How much is a crossing?",
            "--strategy",
            "toc",
            "--model",
            MODEL,
            "--trace",
            "toc.json",
        ],
    );
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", stderr(&out));
    let trace: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("toc.json")).unwrap()).unwrap();
    let pick = trace["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["step"] == "llm" && s["purpose"] == "pick")
        .expect("a pick call");
    let table = pick["messages"][1]["content"].as_str().unwrap();
    for entry in entries {
        let line = format!(
            "[{}] {}",
            entry["id"].as_str().unwrap(),
            entry["heading"].as_str().unwrap()
        );
        assert!(table.contains(&line), "{line} in {table}");
    }
}

/// `chat --json-schema FILE --json`: every reply one line, following the schema, and said to
/// be valid; interactive turns too. A schema that is not JSON is a clear error.
#[test]
fn chat_replies_follow_a_json_schema() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let schema = r#"{"type": "object",
        "properties": {"city": {"type": "string", "maxLength": 30},
                       "country": {"enum": ["France", "Spain", "Italy"]}},
        "required": ["city", "country"], "additionalProperties": false}"#;
    std::fs::write(dir.join("city.schema.json"), schema).unwrap();
    let out = walkrag(
        dir,
        &[
            "chat",
            "--model",
            MODEL,
            "--json-schema",
            "city.schema.json",
            "--json",
            "--prompt",
            "What is the capital of France?",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let lines: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["type"], "reply");
    assert_eq!(lines[0]["valid"], true, "{}", lines[0]);
    let reply: Value = serde_json::from_str(lines[0]["text"].as_str().unwrap()).unwrap();
    assert!(["France", "Spain", "Italy"].contains(&reply["country"].as_str().unwrap()));

    // Interactive: one line per message, one reply line each.
    let replies = chat_lines(
        dir,
        &[
            "--model",
            MODEL,
            "--json-schema",
            "city.schema.json",
            "--json",
        ],
        "Name a city in Spain.\nAnd one in Italy.\n",
    );
    assert_eq!(replies.len(), 2);
    assert!(replies.iter().all(|r| r["valid"] == true), "{replies:?}");

    std::fs::write(dir.join("broken.json"), "{not json").unwrap();
    let out = walkrag(
        dir,
        &[
            "chat",
            "--model",
            MODEL,
            "--json-schema",
            "broken.json",
            "--prompt",
            "hi",
        ],
    );
    assert_refused(&out, "broken.json is not JSON");
}
