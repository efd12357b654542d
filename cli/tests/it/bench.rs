//! `bench llm` end to end with the real SmolLM2-135M: what the report holds, never how fast.

use crate::{stderr, stdout, walkrag};

#[test]
fn bench_llm_reports_cores_busy_and_perplexity() {
    let dir = tempfile::tempdir().unwrap();
    let text = "The river Wend floods the lower fields each spring. The mill on its bank has \
                kept a record of every flood since 1884, with the height of the water at the \
                mill door and the days the wheel stood still.";
    std::fs::write(dir.path().join("text.md"), text).unwrap();
    let args = [
        "bench",
        "llm",
        "--model",
        "local:smollm2-135m",
        "--runs",
        "1",
        "--prompt-tokens",
        "16",
        "--gen-tokens",
        "4",
        "--perplexity",
        "text.md",
        "--perplexity-tokens",
        "32",
        "--json",
    ];
    let out = walkrag(dir.path(), &args);
    assert!(out.status.success(), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    let perplexity = &report["perplexity"];
    assert_eq!(perplexity["tokens"], 32);
    let value = perplexity["perplexity"].as_f64().unwrap();
    assert!(value.is_finite() && value > 1.0, "{perplexity}");
    for phase in ["prompt_cores_busy", "gen_cores_busy"] {
        let busy = report[phase].as_f64().unwrap();
        assert!(busy > 0.0, "{phase}: {busy}");
    }

    // The same file read again gives the same perplexity.
    let again = walkrag(dir.path(), &args);
    let again: serde_json::Value = serde_json::from_str(stdout(&again).trim()).unwrap();
    assert_eq!(again["perplexity"]["perplexity"], perplexity["perplexity"]);
    assert_eq!(perplexity["window"], 128);

    // Token by token, as generation runs: the same model, within rounding.
    let mut stepwise = args.to_vec();
    stepwise.extend(["--perplexity-window", "1"]);
    let out = walkrag(dir.path(), &stepwise);
    assert!(out.status.success(), "{}", stderr(&out));
    let stepwise: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(stepwise["perplexity"]["window"], 1);
    let one = stepwise["perplexity"]["perplexity"].as_f64().unwrap();
    assert!(
        (one - value).abs() < 0.01 * value,
        "{one} token by token, {value} in windows"
    );

    // A file too short to predict anything is an error, not a number.
    std::fs::write(dir.path().join("short.md"), "Hi").unwrap();
    let mut short = args;
    short[11] = "short.md";
    let out = walkrag(dir.path(), &short);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("fewer than two tokens"),
        "{}",
        stderr(&out)
    );
}
