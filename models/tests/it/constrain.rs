//! Constrained decoding with the real vocabularies and models: the token trie, schemas that
//! every generation follows, enums, forced tokens, streaming and cancellation.

use serde_json::{json, Value};
use walkrag_core::{ChatError, ChatRequest, Constraint, Delta, FinishReason, Message, Sampling};
use walkrag_models::grammar::trie_words;

use crate::{model, MODELS};

fn request(user: &str, constraint: Constraint, max_tokens: usize) -> ChatRequest {
    ChatRequest {
        messages: vec![
            Message::system("You are a helpful assistant. Answer in JSON."),
            Message::user(user),
        ],
        sampling: Sampling {
            max_tokens,
            ..Sampling::default()
        },
        constraint: Some(constraint),
        ..ChatRequest::default()
    }
}

/// The text of a generation, its deltas and how it finished.
struct Generated {
    text: String,
    deltas: Vec<String>,
    finish: Option<FinishReason>,
    forced: usize,
}

fn generate(name: &str, request: &ChatRequest) -> Generated {
    let mut out = Generated {
        text: String::new(),
        deltas: Vec::new(),
        finish: None,
        forced: 0,
    };
    model(name)
        .generate(request, &mut |d| {
            match d {
                Delta::Text { text } => {
                    out.text.push_str(&text);
                    out.deltas.push(text);
                }
                Delta::Done { usage, finish } => {
                    out.finish = Some(finish);
                    out.forced = usage.forced_tokens;
                }
                other => panic!("unexpected {other:?}"),
            }
            true
        })
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    out
}

#[test]
fn the_trie_writes_every_token_as_the_tokenizer_does() {
    for name in MODELS {
        let tokenizer = model(name).tokenizer();
        let words = trie_words(tokenizer);
        assert_eq!(words.len(), tokenizer.token_bytes.len());
        let trie = model(name).grammars().unwrap().trie();
        let mut ordinary = 0;
        for (id, word) in words.iter().enumerate() {
            let id = id as u32;
            assert_eq!(trie.token(id), word.as_slice(), "{name} token {id}");
            if word.first() == Some(&0xFF) {
                assert!(trie.is_special_token(id), "{name} {id} is special");
                continue;
            }
            ordinary += 1;
            // A token that is whole UTF-8 decodes to exactly its bytes.
            if let Ok(text) = std::str::from_utf8(word) {
                assert_eq!(tokenizer.decode(&[id]).unwrap(), text, "{name} token {id}");
            }
        }
        assert!(ordinary > 49_000, "{name}: {ordinary} ordinary tokens");
        for stop in &tokenizer.stop_ids {
            assert!(
                trie.is_special_token(*stop),
                "{name}: stop {stop} is special"
            );
        }
        // Texts tokenized and written back through the trie come out byte for byte.
        for text in [
            "{\"fact\": \"Vennick Cooperative bought the churn in 1998.\", \"source\": \"3fa9c2d1.0\"}",
            "naïve café — 40 tonnes/week, 東京 🚜\n\t  spaces",
            "<|im_start|>user\nhi<|im_end|>",
        ] {
            let ids = tokenizer.encode(text).unwrap();
            let written: Vec<u8> = ids.iter().flat_map(|&id| trie.token(id).to_vec()).collect();
            // Special tokens write 0xFF and their name; 0xFF is never part of UTF-8 text.
            let plain: Vec<u8> = written.into_iter().filter(|&b| b != 0xFF).collect();
            assert_eq!(plain, text.as_bytes(), "{name}: {text:?}");
        }
    }
}

/// Schemas with the shapes strategies use: nested objects, bounded arrays, enums of ids,
/// bounded strings, alternatives.
fn schemas() -> Vec<(&'static str, Value)> {
    let ids = [
        "0a1b2c3d", "4e5f6a7b", "8c9d0e1f", "a2b3c4d5", "e6f7a8b9", "c0d1e2f3", "9a8b7c6d",
        "5e4f3a2b",
    ];
    vec![
        (
            "Which passage says the creamery closed? Passages: [0a1b2c3d] The creamery closed in 1998. [4e5f6a7b] Cows graze.",
            json!({
                "type": "object",
                "properties": {
                    "source": {"enum": ids},
                    "reason": {"type": "string", "maxLength": 60}
                },
                "required": ["source", "reason"],
                "additionalProperties": false
            }),
        ),
        (
            "List two or three facts about the moon.",
            json!({
                "type": "object",
                "properties": {
                    "facts": {
                        "type": "array",
                        "minItems": 2,
                        "maxItems": 3,
                        "items": {
                            "type": "object",
                            "properties": {
                                "fact": {"type": "string", "maxLength": 80},
                                "certain": {"type": "boolean"}
                            },
                            "required": ["fact", "certain"],
                            "additionalProperties": false
                        }
                    }
                },
                "required": ["facts"],
                "additionalProperties": false
            }),
        ),
        (
            "Is Paris the capital of France? Answer yes or no with a short reason.",
            json!({
                "type": "object",
                "properties": {
                    "answer": {"enum": ["yes", "no"]},
                    "reason": {"type": "string", "maxLength": 50}
                },
                "required": ["answer", "reason"],
                "additionalProperties": false
            }),
        ),
        (
            "Search for the farm's owner, or answer if you know it.",
            json!({
                "anyOf": [
                    {
                        "type": "object",
                        "properties": {
                            "search": {"type": "string", "maxLength": 40}
                        },
                        "required": ["search"],
                        "additionalProperties": false
                    },
                    {
                        "type": "object",
                        "properties": {
                            "answer": {"type": "string", "maxLength": 40},
                            "cited": {"type": "array", "items": {"enum": ids}, "maxItems": 2}
                        },
                        "required": ["answer", "cited"],
                        "additionalProperties": false
                    }
                ]
            }),
        ),
        (
            "Give the year the churn was bought and how many tonnes it makes a week.",
            json!({
                "type": "object",
                "properties": {
                    "year": {"type": "integer", "minimum": 1900, "maximum": 2100},
                    "tonnes_per_week": {"type": "number"},
                    "notes": {"type": ["string", "null"], "maxLength": 30}
                },
                "required": ["year", "tonnes_per_week", "notes"],
                "additionalProperties": false
            }),
        ),
    ]
}

/// At least 50 generations with SmolLM2, greedy and sampled, each of which parses and
/// validates against its schema.
#[test]
fn every_generation_follows_its_schema() {
    let mut checked = 0;
    for (prompt, schema) in schemas() {
        let validator = jsonschema::validator_for(&schema).unwrap();
        for seed in 0..10u64 {
            let mut req = request(prompt, Constraint::JsonSchema(schema.clone()), 160);
            if seed > 0 {
                req.sampling.temperature = 1.0;
                req.sampling.seed = seed;
            }
            let out = generate(MODELS[0], &req);
            assert_eq!(
                out.finish,
                Some(FinishReason::Stop),
                "{prompt}: {}",
                out.text
            );
            let value: Value = serde_json::from_str(&out.text)
                .unwrap_or_else(|e| panic!("{prompt} seed {seed}: {e}: {}", out.text));
            assert!(
                validator.is_valid(&value),
                "{prompt} seed {seed}: {} breaks the schema",
                out.text
            );
            // Keys and punctuation are forced, not sampled.
            assert!(out.forced > 0, "{prompt}: nothing forced in {}", out.text);
            checked += 1;
        }
    }
    assert!(checked >= 50);
}

#[test]
fn an_enum_yields_only_listed_values_with_both_vocabularies() {
    let colours = ["crimson", "teal", "ochre", "slate", "umber"];
    let schema = json!({"enum": colours});
    for name in MODELS {
        for seed in 0..6u64 {
            let mut req = request(
                "Name a colour for a barn door.",
                Constraint::JsonSchema(schema.clone()),
                20,
            );
            req.sampling.temperature = 1.5;
            req.sampling.seed = seed;
            let out = generate(name, &req);
            let value: String = serde_json::from_str(&out.text)
                .unwrap_or_else(|e| panic!("{name}: {e}: {:?}", out.text));
            assert!(colours.contains(&value.as_str()), "{name}: {value}");
        }
    }
}

#[test]
fn a_lark_grammar_and_a_regex_hold_the_completion() {
    let lark = r#"start: "Answer: " ANSWER "."
ANSWER: /[0-9]{1,3} (tonnes|kilograms)/"#;
    let out = generate(
        MODELS[1],
        &request(
            "How much butter does a churn make a week?",
            Constraint::Lark(lark.into()),
            30,
        ),
    );
    let rest = out
        .text
        .strip_prefix("Answer: ")
        .unwrap_or_else(|| panic!("{:?}", out.text));
    let (number, unit) = rest.trim_end_matches('.').split_once(' ').unwrap();
    assert!(number.parse::<u32>().is_ok() && ["tonnes", "kilograms"].contains(&unit));
    assert!(out.text.ends_with('.'));
    let out = generate(
        MODELS[0],
        &request(
            "Write a date.",
            Constraint::Regex(r"[0-9]{4}-[0-9]{2}-[0-9]{2}".into()),
            20,
        ),
    );
    assert_eq!(out.text.len(), 10, "{:?}", out.text);
    assert!(out.text.chars().all(|c| c.is_ascii_digit() || c == '-'));
}

#[test]
fn streamed_deltas_add_up_to_the_whole_text() {
    let (prompt, schema) = schemas().swap_remove(1);
    let out = generate(
        MODELS[1],
        &request(prompt, Constraint::JsonSchema(schema), 200),
    );
    assert!(out.deltas.len() > 3, "streamed in pieces: {:?}", out.deltas);
    assert_eq!(out.deltas.concat(), out.text);
    serde_json::from_str::<Value>(&out.text).unwrap();
}

#[test]
fn a_constraint_that_does_not_compile_is_refused_before_any_work() {
    let err = model(MODELS[0])
        .generate(
            &request("hi", Constraint::Lark("start: undefined_rule".into()), 10),
            &mut |_| panic!("nothing is generated"),
        )
        .unwrap_err();
    assert!(
        matches!(&err, ChatError::Permanent(m) if m.contains("lark constraint does not compile")),
        "{err:?}"
    );
    let mut both = request("hi", Constraint::Regex("a+".into()), 10);
    both.openings = vec!["a".into()];
    assert!(model(MODELS[0]).generate(&both, &mut |_| true).is_err());
}

#[test]
fn a_caller_that_stops_listening_stops_constrained_generation() {
    let schema = json!({
        "type": "object",
        "properties": {"story": {"type": "string"}},
        "required": ["story"]
    });
    let mut seen = 0;
    model(MODELS[0])
        .generate(
            &request(
                "Tell a long story about the moon.",
                Constraint::JsonSchema(schema),
                300,
            ),
            &mut |d| {
                assert!(!matches!(d, Delta::Done { .. }), "cancelled before the end");
                seen += 1;
                seen < 4
            },
        )
        .unwrap();
    assert_eq!(seen, 4);
}

/// Checks on every test model that `constraint` takes each text of `good` whole and none of
/// `bad`.
fn takes_only(constraint: &Constraint, good: &[&str], bad: &[&str]) {
    for name in MODELS {
        let m = model(name);
        let tokenizer = m.tokenizer();
        let matcher = m.grammars().unwrap().matcher(constraint).unwrap();
        let accepts = |text: &str| {
            let ids = tokenizer.encode(text).unwrap();
            matcher.deep_clone().validate_tokens(&ids).unwrap() == ids.len()
        };
        for text in good {
            assert!(accepts(text), "{name} refused {text:?}");
        }
        for text in bad {
            assert!(!accepts(text), "{name} took {text:?}");
        }
    }
}

/// The answer step's grammar keeps citations out of the answer line: no `[` and no
/// "Sources:" before the line break (answers once ended "... Sources: , ,"), and no second
/// "Sources:" line as the note, while a short answer, its cited ids and a note pass.
#[test]
fn the_answer_grammar_keeps_citations_out_of_the_answer() {
    let shown = ["3fa9c2d1.0".to_string(), "77b1e4d0.2".to_string()];
    takes_only(
        &walkrag_walker::constrain::answer(&shown, None),
        &[
            "Answer: Dundee\nSources: [77b1e4d0.2], [3fa9c2d1.0]",
            "Answer: not found\nSources: [3fa9c2d1.0]\nIt names the founders.",
        ],
        &[
            "Answer: Dundee [77b1e4d0.2]",
            "Answer: Dundee. Sources: x",
            "Answer: Dundee\nSources: [0badcafe.9]",
            // Nor a second sources line where the note goes ("Sources:" was printed twice).
            "Answer: not found\nSources: [3fa9c2d1.0]\nSources: [3fa9c2d1.0]",
        ],
    );
}

/// A copied answer: `yes`, `no`, `not found`, or whole words of the passages and question in
/// their order. An example's content (Dundee), words out of order and half a word are refused.
#[test]
fn the_copied_answer_grammar_takes_only_the_passages_words() {
    let shown = ["3fa9c2d1.0".to_string(), "77b1e4d0.2".to_string()];
    let copy = "[3fa9c2d1.0] Velmora Bridge\nThe bridge was opened on 3 May 1879 by the mayor, \
                Ilsa Brandt.\n\n[77b1e4d0.2] Kessel Tower\nKessel Tower was finished in 1884.\n\
                Which was opened first, Velmora Bridge or Kessel Tower?";
    takes_only(
        &walkrag_walker::constrain::answer(&shown, Some(copy)),
        &[
            "Answer: Ilsa Brandt\nSources: [3fa9c2d1.0]",
            "Answer: 3 May 1879\nSources: [3fa9c2d1.0], [77b1e4d0.2]",
            "Answer: Velmora Bridge\nSources:",
            "Answer: no\nSources: [77b1e4d0.2]",
            "Answer: yes\nSources:",
            "Answer: not found\nSources: [3fa9c2d1.0]\nIt names the mayor.",
        ],
        &[
            "Answer: Dundee\nSources:",
            "Answer: Brandt Ilsa\nSources:",
            "Answer: Kess\nSources:",
            "Answer: maybe\nSources:",
            "Answer: Ilsa Brandt [3fa9c2d1.0]",
            "Answer: Ilsa Brandt\nSources: [0badcafe.9]",
        ],
    );
}
