//! The eval loop: files written, scores, resuming, and refusing to mix runs.

use std::fs;
use std::path::Path;

use walkrag_core::ChatError;
use walkrag_eval::{load_questions, runner, EvalError, NoProgress, ResultLine, Settings, Summary};
use walkrag_walker::testing::{block_on, env, test_index, ScriptedChatModel, Turn};
use walkrag_walker::{Origin, Single, Strategy};

const QUESTIONS: &str = r#"{"id": "q1", "question": "Who is the mayor of Velmora?", "answer": "Ilsa Brandt", "answer_aliases": ["Mayor Brandt"], "supporting_ids": ["d1"]}
{"id": "q2", "question": "Where was Ilsa Brandt born?", "answer": "Kessel", "answer_aliases": [], "supporting_ids": ["d2"]}
{"id": "q3", "question": "When does the cheese market of Kessel open?", "answer": "every Saturday at dawn", "answer_aliases": [], "supporting_ids": ["d4", "d3"]}
"#;

fn settings() -> Settings {
    Settings {
        dataset: "velmora".into(),
        command: "walkrag eval --corpus velmora.jsonl".into(),
        jobs: 2,
        retries: 0,
        traces: true,
    }
}

fn replies(texts: &[&str]) -> Vec<Turn> {
    texts.iter().map(|t| Turn::Reply(t.to_string())).collect()
}

fn run(
    out: &Path,
    model: &ScriptedChatModel,
    k: usize,
    restart: bool,
) -> Result<Summary, EvalError> {
    let t = test_index();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("questions.jsonl");
    fs::write(&path, QUESTIONS).unwrap();
    let questions = load_questions(&path, None).unwrap();
    let strategies: Vec<Box<dyn Strategy>> = vec![Box::new(Single {
        k,
        ..Single::default()
    })];
    block_on(runner::run(
        env(&t.index, model),
        &strategies,
        &questions,
        out,
        &settings(),
        restart,
        &NoProgress,
    ))
}

fn results(out: &Path) -> Vec<ResultLine> {
    fs::read_to_string(out.join("results.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn writes_scored_results_summary_report_and_chart() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    // jobs = 2 but the scripted model answers in call order; each reply fits any question.
    let model = ScriptedChatModel::new(replies(&[
        "Answer: Ilsa Brandt",
        "Answer: Ilsa Brandt",
        "Answer: not found",
    ]));
    let summary = run(&out, &model, 3, false).unwrap();
    assert_eq!(summary.questions, 3);
    let single = &summary.strategies["single"];
    assert_eq!(single.answered, 3);
    assert_eq!(single.llm_calls, 1.0);
    assert!((0.0..=1.0).contains(&single.scores.recall_5));
    assert_eq!(single.terminations["single_pass"], 3);

    let lines = results(&out);
    assert_eq!(lines.len(), 3);
    for line in &lines {
        assert_eq!(line.strategy, "single");
        assert_eq!(line.ranked.len(), 3);
        assert_eq!(line.ranked_docs.len(), 3);
        assert_eq!(line.ranked_sections.len(), 3);
        assert!(line.ranked_docs.iter().all(|d| d.starts_with('d')));
    }
    // The word embedder ranks the mayor's record first for q1.
    let q1 = lines.iter().find(|l| l.id == "q1").unwrap();
    assert_eq!(q1.ranked_docs[0], "d1");
    assert_eq!(q1.metrics.recall_2, 1.0);
    // The answer step was shown what single read, and the mayor's record names her.
    for line in &lines {
        assert_eq!(line.shown, line.ranked);
        assert!(line.metrics.right.is_some() && line.metrics.in_context.is_some());
    }
    assert_eq!(q1.metrics.in_context, Some(1.0));
    // single reads only what the question's search found.
    for line in &lines {
        assert_eq!(line.found_by.len(), 3, "{:?}", line.found_by);
        assert!(line.found_by.values().all(|&o| o == Origin::Question));
    }
    let supporting: usize = lines
        .iter()
        .map(|l| {
            l.supporting_found_by
                .get(&Origin::Question)
                .copied()
                .unwrap_or(0)
        })
        .sum();
    assert!(supporting >= 1);
    assert_eq!(single.supporting_found_by[&Origin::Question], supporting);

    let json: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
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
        "in_context",
        "right",
    ] {
        assert!(json["strategies"]["single"][key].is_number(), "{key}");
    }
    assert_eq!(json["dataset"], "velmora");
    let report = fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        report.contains("| recall@5 |") && report.contains("single"),
        "{report}"
    );
    assert!(report.contains("walkrag eval --corpus velmora.jsonl"));
    assert!(report.contains("| reader efficiency |"), "{report}");
    // Each answer's whole trace, by strategy and question.
    for line in &lines {
        let path = out.join(format!("traces/single/{}.json", line.id));
        let trace: serde_json::Value =
            serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(trace["strategy"], "single");
        assert!(trace["steps"].as_array().unwrap().len() >= 2, "{trace}");
    }
    let chart = fs::read_to_string(out.join("chart.svg")).unwrap();
    assert!(
        chart.starts_with("<svg")
            && chart.contains("polyline")
            && chart.trim_end().ends_with("</svg>")
    );
}

#[test]
fn resumes_where_it_stopped_and_retries_failures() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let model = ScriptedChatModel::new(vec![
        Turn::Reply("Answer: Ilsa Brandt".into()),
        Turn::Fail(ChatError::Permanent("model crashed".into())),
        Turn::Reply("Answer: dawn".into()),
    ]);
    let first = run(&out, &model, 3, false).unwrap();
    assert_eq!(first.strategies["single"].errors, 1);
    let failed = results(&out)
        .into_iter()
        .find(|l| l.error.is_some())
        .unwrap();
    assert_eq!(failed.termination, "error");
    assert!(failed.error.as_deref().unwrap().contains("model crashed"));

    // A crash left half a line: it is dropped, and that question runs again too.
    let mut text = fs::read_to_string(out.join("results.jsonl")).unwrap();
    let kept = results(&out)
        .into_iter()
        .find(|l| l.error.is_none())
        .unwrap();
    text = text
        .lines()
        .filter(|l| !l.contains(&format!("\"id\":\"{}\"", kept.id)))
        .map(|l| format!("{l}\n"))
        .collect::<String>()
        + r#"{"id":"q9","strat"#;
    fs::write(out.join("results.jsonl"), text).unwrap();

    // Only the failed question and the one whose line was cut run again: two calls.
    let model = ScriptedChatModel::new(replies(&["Answer: Kessel", "Answer: Ilsa Brandt"]));
    let second = run(&out, &model, 3, false).unwrap();
    assert_eq!(model.requests.lock().unwrap().len(), 2);
    let single = &second.strategies["single"];
    assert_eq!((single.answered, single.errors), (3, 0));
    let mut ids: Vec<String> = results(&out).into_iter().map(|l| l.id).collect();
    ids.sort();
    assert_eq!(ids, ["q1", "q2", "q3"]);

    // Nothing left to do: no call at all.
    let idle = ScriptedChatModel::new(Vec::new());
    run(&out, &idle, 3, false).unwrap();
    assert!(idle.requests.lock().unwrap().is_empty());
}

#[test]
fn refuses_to_mix_settings_unless_restarted() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let model = ScriptedChatModel::new(replies(&["Answer: a", "Answer: b", "Answer: c"]));
    run(&out, &model, 3, false).unwrap();
    let err = run(&out, &ScriptedChatModel::new(Vec::new()), 4, false).unwrap_err();
    assert!(matches!(err, EvalError::Mismatch { .. }), "{err}");
    assert!(err.to_string().contains("--restart"), "{err}");

    let model = ScriptedChatModel::new(replies(&["Answer: a", "Answer: b", "Answer: c"]));
    let summary = run(&out, &model, 4, true).unwrap();
    assert_eq!(summary.strategies["single"].answered, 3);
    assert_eq!(results(&out).len(), 3);
}
