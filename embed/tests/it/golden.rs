//! Token ids and embeddings must match sentence-transformers' for every golden text.

use std::path::PathBuf;
use std::sync::OnceLock;

use serde_json::Value;
use walkrag_embed::{Backend, BatchPolicy, Embedder, SentenceEmbedder};

/// The golden folder: `$WALKRAG_GOLDEN/minilm-l6-v2`, else `../shared/golden/minilm-l6-v2`
/// beside the repository.
fn golden_dir() -> PathBuf {
    let root = std::env::var_os("WALKRAG_GOLDEN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/golden"));
    let dir = root.join("minilm-l6-v2");
    assert!(
        dir.join("texts.jsonl").is_file(),
        "golden files not found in {}: set WALKRAG_GOLDEN to the shared/golden folder",
        dir.display()
    );
    dir
}

fn read_jsonl(name: &str) -> Vec<Value> {
    let path = golden_dir().join(name);
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
        .lines()
        .map(|l| serde_json::from_str(l).expect("golden line is JSON"))
        .collect()
}

struct Golden {
    id: String,
    text: String,
    ids: Vec<u32>,
    n_tokens: usize,
    embedding: Vec<f32>,
}

fn goldens() -> Vec<Golden> {
    let texts = read_jsonl("texts.jsonl");
    let tokens = read_jsonl("tokens.jsonl");
    let embeddings = read_jsonl("embeddings.jsonl");
    assert_eq!(texts.len(), 25);
    texts
        .iter()
        .zip(&tokens)
        .zip(&embeddings)
        .map(|((t, k), e)| {
            assert_eq!(t["id"], k["id"]);
            assert_eq!(t["id"], e["id"]);
            Golden {
                id: t["id"].as_str().unwrap().to_string(),
                text: t["text"].as_str().unwrap().to_string(),
                ids: k["input_ids"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_u64().unwrap() as u32)
                    .collect(),
                n_tokens: e["n_tokens"].as_u64().unwrap() as usize,
                embedding: e["embedding"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_f64().unwrap() as f32)
                    .collect(),
            }
        })
        .collect()
}

/// The default (packed) encoder.
fn model() -> &'static SentenceEmbedder {
    static MODEL: OnceLock<SentenceEmbedder> = OnceLock::new();
    MODEL.get_or_init(|| {
        let m = SentenceEmbedder::load("minilm")
            .expect("minilm is installed (scripts/fetch-models.sh)");
        assert_eq!(
            m.backend(),
            Backend::Packed,
            "MiniLM runs on the packed encoder by default"
        );
        m
    })
}

/// candle-transformers' BERT: the reference the packed encoder must agree with.
#[cfg(feature = "candle-bert")]
fn reference() -> &'static SentenceEmbedder {
    static MODEL: OnceLock<SentenceEmbedder> = OnceLock::new();
    MODEL.get_or_init(|| {
        SentenceEmbedder::load_with("minilm", Backend::Candle).expect("minilm loads")
    })
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

#[test]
fn token_ids_match_sentence_transformers() {
    let m = model();
    for g in goldens() {
        let ids = m.token_ids(&g.text).unwrap();
        assert_eq!(ids, g.ids, "token ids of {}", g.id);
        assert_eq!(ids.len(), g.n_tokens, "n_tokens of {}", g.id);
    }
}

#[test]
fn embeddings_match_sentence_transformers_one_at_a_time() {
    check_one_at_a_time(model());
}

#[cfg(feature = "candle-bert")]
#[test]
fn reference_embeddings_match_sentence_transformers_one_at_a_time() {
    check_one_at_a_time(reference());
}

/// Without the `candle-bert` feature, asking for the reference BERT says how to get it.
#[cfg(not(feature = "candle-bert"))]
#[test]
fn the_candle_backend_names_its_feature_when_left_out() {
    let err = SentenceEmbedder::load_with("minilm", Backend::Candle)
        .err()
        .expect("no candle backend without the feature");
    assert!(
        err.to_string()
            .contains("--features walkrag-embed/candle-bert"),
        "{err}"
    );
}

fn check_one_at_a_time(m: &SentenceEmbedder) {
    assert_eq!(m.dim(), 384);
    assert_eq!(m.max_tokens(), 256);
    for g in goldens() {
        let v = m.embed_one(&g.text).unwrap();
        let norm = dot(&v, &v).sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "{}: norm {norm}", g.id);
        let cos = dot(&v, &g.embedding);
        assert!(
            cos >= 0.999,
            "{:?} {}: cosine {cos} to the golden vector",
            m.backend(),
            g.id
        );
    }
}

#[cfg(feature = "candle-bert")]
#[test]
fn packed_and_reference_encoders_agree_on_a_mixed_batch() {
    let goldens = goldens();
    let texts: Vec<&str> = goldens.iter().map(|g| g.text.as_str()).collect();
    let packed = model().embed(&texts).unwrap();
    let reference = reference().embed(&texts).unwrap();
    for ((g, a), b) in goldens.iter().zip(packed.rows()).zip(reference.rows()) {
        let max_diff = max_abs_diff(a, b);
        assert!(
            max_diff < 1e-5,
            "{}: packed and candle differ by {max_diff}",
            g.id
        );
    }
}

#[test]
fn batched_embeddings_equal_single_ones() {
    let m = model();
    let goldens = goldens();
    let texts: Vec<&str> = goldens.iter().map(|g| g.text.as_str()).collect();
    // Small batches force several batches of mixed lengths.
    let small = SentenceEmbedder::load("minilm")
        .unwrap()
        .with_batch_policy(BatchPolicy {
            max_batch: 4,
            max_batch_tokens: 512,
        });
    for embedder in [m, &small] {
        let all = embedder.embed(&texts).unwrap();
        assert_eq!(all.len(), texts.len());
        for (g, row) in goldens.iter().zip(all.rows()) {
            let single = m.embed_one(&g.text).unwrap();
            let max_diff = max_abs_diff(row, &single);
            assert!(
                max_diff < 1e-5,
                "{}: batched differs from single by {max_diff}",
                g.id
            );
            assert!(dot(row, &g.embedding) >= 0.999, "{}", g.id);
        }
    }
}

#[test]
fn token_counts_are_untruncated() {
    let m = model();
    let long = goldens().into_iter().find(|g| g.id == "t12").unwrap();
    assert_eq!(m.count_tokens(&long.text).unwrap(), 405);
    assert_eq!(m.count_tokens("").unwrap(), 2);
}

#[test]
fn token_spans_cover_every_word_piece_in_order() {
    let m = model();
    let text = "Café owners in Zürich paid 1,200 francs—unaffordable!";
    let spans = m.token_spans(text).unwrap();
    assert_eq!(spans.len() + 2, m.count_tokens(text).unwrap());
    assert!(spans.windows(2).all(|w| w[0].end <= w[1].start));
    let pieces: Vec<&str> = spans.iter().map(|r| &text[r.clone()]).collect();
    assert_eq!(pieces[..3], ["Café", "owners", "in"]);
    // "unaffordable" is several word pieces whose spans tile the word.
    let word = text.find("unaffordable").unwrap();
    let inside: Vec<_> = spans
        .iter()
        .filter(|r| r.start >= word && r.end <= word + 12)
        .collect();
    assert!(inside.len() > 1);
    assert_eq!(inside.first().unwrap().start, word);
    assert_eq!(inside.last().unwrap().end, word + 12);
    let long = goldens().into_iter().find(|g| g.id == "t12").unwrap();
    assert_eq!(m.token_spans(&long.text).unwrap().len(), 403);
}

#[test]
fn the_id_names_the_model_and_its_weights() {
    let id = model().id();
    assert!(id.starts_with("minilm@53aa51172d14"), "{id}");
}

#[test]
fn empty_input_gives_an_empty_matrix() {
    let out = model().embed(&[]).unwrap();
    assert!(out.is_empty());
    assert_eq!(out.dim(), 384);
}
