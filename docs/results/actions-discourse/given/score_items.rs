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
    let m = crate::model(crate::MODELS[1]);
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
