//! The tokenizer built from GGUF metadata gives llama.cpp's ids.

use crate::{golden, ids, model, MODELS};

#[test]
fn token_ids_match_llama_cpp_for_every_golden_text() {
    for name in MODELS {
        let tokenizer = model(name).tokenizer();
        let mut wrong = Vec::new();
        for g in golden(&format!("tokens-{name}.jsonl")) {
            let text = g["text"].as_str().unwrap();
            let expected = ids(&g["ids"]);
            let got = tokenizer.encode(text).unwrap();
            if got != expected {
                wrong.push(format!(
                    "{} {text:?}:\n  got      {got:?}\n  expected {expected:?}",
                    g["id"]
                ));
            }
            // Byte-level BPE loses nothing: decoding gives the text back, and so do the
            // tokens' own bytes end to end (what constrained openings check against).
            assert_eq!(tokenizer.decode(&got).unwrap(), text, "{name} {}", g["id"]);
            if !text.contains("<|") {
                let bytes: Vec<u8> = got
                    .iter()
                    .flat_map(|&id| tokenizer.token_bytes[id as usize].clone())
                    .collect();
                assert_eq!(bytes, text.as_bytes(), "{name} {}", g["id"]);
            }
        }
        assert!(
            wrong.is_empty(),
            "{name}: {} texts differ:\n{}",
            wrong.len(),
            wrong.join("\n")
        );
    }
}

#[test]
fn end_of_turn_tokens_stop_generation() {
    let smol = model(MODELS[0]).tokenizer();
    assert_eq!(smol.stop_ids, [2], "SmolLM2: <|im_end|> is also its eos");
    let qwen = model(MODELS[1]).tokenizer();
    assert!(qwen.stop_ids.contains(&151645), "{:?}", qwen.stop_ids);
}
