//! The scorer of docs/results/actions-discourse/given (not built: copy it into
//! models/tests/it/ and add `mod score_items;` to main.rs to run it).
//! Scores the items of $SCRATCH_ITEMS with qwen 0.5B.
use std::io::Write;
use walkrag_core::{ChatModel, ScoreItem};

#[tokio::test]
#[ignore]
async fn scratch_scores() {
    let path = std::env::var("SCRATCH_ITEMS").unwrap();
    let out = std::env::var("SCRATCH_OUT").unwrap();
    // SCRATCH_MODEL: another local model's name (qwen2.5-coder-1.5b) [default: the 0.5B].
    let name = std::env::var("SCRATCH_MODEL").unwrap_or_else(|_| crate::MODELS[1].to_string());
    let m = crate::model(&name);
    let items: Vec<ScoreItem> = std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut f = std::fs::File::create(out).unwrap();
    for chunk in items.chunks(8) {
        let s = m.score(chunk.to_vec()).await.unwrap();
        for x in s.scores {
            writeln!(f, "{x}").unwrap();
        }
        f.flush().unwrap();
    }
}
