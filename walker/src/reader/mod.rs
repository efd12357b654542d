//! Talking to the model and reading what it says: the prompts, the constraints a reply is
//! held to, one model call streamed and recorded, the answer reply and the read step's JSON
//! Lines read tolerantly, whether a fact's words are in its passage, the dates a question
//! names and whether a source holds them, the answer's language, and what code computes of a
//! comparison (its two sides, the values a passage states, which side is wanted). The answer
//! step itself is `run.rs`'s `Run::answer` (its comparison, `run/compare.rs`).

pub mod compare;
pub mod constrain;
pub mod dates;
pub mod jsonl;
pub mod language;
pub mod llm;
pub mod prompt;
pub mod reply;
pub mod support;
