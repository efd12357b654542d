//! Weighing continuations: the summed log-probability of each continuation after its prompt.

use walkrag_core::{ChatModel, Message, ScoreItem};

use crate::{model, MODELS};

fn item(user: &str, continuation: &str) -> ScoreItem {
    ScoreItem {
        messages: vec![
            Message::system("You are a helpful assistant."),
            Message::user(user),
        ],
        continuation: continuation.into(),
    }
}

fn log_softmax(logits: &[f32], id: u32) -> f64 {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max) as f64;
    let sum: f64 = logits.iter().map(|&l| (l as f64 - max).exp()).sum();
    logits[id as usize] as f64 - max - sum.ln()
}

/// The score, token by token with the plain forward pass from an empty cache.
fn stepwise(name: &str, item: &ScoreItem) -> f64 {
    let m = model(name);
    let prompt = m.tokenizer().encode(&m.render(&item.messages)).unwrap();
    let continuation = m.tokenizer().encode(&item.continuation).unwrap();
    let mut session = m.session().unwrap();
    let mut logits = session.forward(&prompt, 0).unwrap();
    let mut total = 0.0;
    for (i, &id) in continuation.iter().enumerate() {
        total += log_softmax(&logits, id);
        logits = session.forward(&[id], prompt.len() + i).unwrap();
    }
    total
}

#[test]
fn scores_are_the_log_probabilities_of_the_forward_pass_whatever_the_order() {
    let name = MODELS[0];
    let items = vec![
        item(
            "What is the capital of France?",
            "The capital of France is Paris.",
        ),
        // The same prompt: the cached prefix is the whole prompt.
        item(
            "What is the capital of France?",
            "The capital of France is a cheese.",
        ),
        // A prompt that parts from the one before within the user message.
        item("What is the capital of Spain?", "Madrid."),
        item("Count to three.", "1, 2, 3"),
    ];
    let scores = model(name).score_blocking(&items).unwrap();
    assert_eq!(scores.scores.len(), items.len());
    for (item, &score) in items.iter().zip(&scores.scores) {
        let want = stepwise(name, item);
        assert!(
            (score as f64 - want).abs() < 0.02 * want.abs().max(1.0),
            "{:?}: scored {score}, token by token {want}",
            item.continuation
        );
        assert!(score < 0.0, "a log-probability is below zero: {score}");
    }
    // Reversed, every item still gets its own score: the cache never leaks between them.
    let reversed: Vec<ScoreItem> = items.iter().rev().cloned().collect();
    let back = model(name).score_blocking(&reversed).unwrap();
    for (a, b) in scores.scores.iter().zip(back.scores.iter().rev()) {
        assert!((a - b).abs() < 0.02 * a.abs().max(1.0), "{a} vs {b}");
    }
    // Tokens run: the shared prefixes are not run twice.
    let whole: usize = items
        .iter()
        .map(|i| {
            let m = model(name);
            m.tokenizer().encode(&m.render(&i.messages)).unwrap().len()
                + m.tokenizer().encode(&i.continuation).unwrap().len()
        })
        .sum();
    assert!(
        scores.usage.prompt_tokens < whole,
        "{} tokens run of {whole}",
        scores.usage.prompt_tokens
    );
}

#[tokio::test]
async fn the_likely_continuation_weighs_more_through_the_chat_model() {
    let m = model(MODELS[0]);
    assert!(m.can_score());
    let scores = m
        .score(vec![
            item(
                "What is the capital of France?",
                "The capital of France is Paris.",
            ),
            item(
                "What is the capital of France?",
                "Purple elephant seventeen banana.",
            ),
            item("What is the capital of France?", ""),
        ])
        .await
        .unwrap();
    let s = &scores.scores;
    assert!(s[0] > s[1], "likely {} vs unlikely {}", s[0], s[1]);
    assert_eq!(s[2], 0.0, "nothing to weigh weighs nothing");
}

#[test]
fn perplexity_is_the_stepwise_one_whatever_the_window() {
    let m = model(MODELS[0]);
    let text = "The river Wend floods the lower fields each spring, and the mill on its bank \
                has kept records of every flood since 1884.";
    let ids = m.tokenizer().encode(text).unwrap();
    let mut session = m.session().unwrap();
    let mut total = 0.0;
    for i in 0..ids.len() - 1 {
        let logits = session.forward(&[ids[i]], i).unwrap();
        total += log_softmax(&logits, ids[i + 1]);
    }
    let want = (-total / (ids.len() - 1) as f64).exp();
    for window in [1, 5, 128] {
        let got = session.perplexity(&ids, window).unwrap();
        assert!(
            (got - want).abs() < 0.01 * want,
            "window {window}: {got} against {want} stepwise"
        );
    }
    assert!(
        session.perplexity(&ids[..1], 8).is_err(),
        "one token predicts nothing"
    );
}
