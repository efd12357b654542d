//! Whether the user gave a value the model copied into a required input.
//!
//! [`crate::fill`] lets a value be only a copy of what the user said, which rules out invented
//! values but not a copy of the wrong words: "I don't know her username" still holds the span
//! `her`. So each required input filled with the user's words is read again by the model, as
//! a reader would: after "what did the user give as this input? Reply with the value as the
//! user wrote it, or with NONE", one scoring call weighs the value's first word against
//! `NONE`, and a value whose log-probability falls more than
//! [`crate::Actions::value_margin`] below `NONE`'s is taken back, which asks the user for it
//! (`docs/results/actions-discourse/given/`).
//!
//! Values the API returned are not judged (the user did not give them and need not have);
//! nor are an enum's values or booleans (choices the request makes, not values it gives).

use serde_json::Value;
use walkrag_core::{Message, ScoreItem};

use crate::action::{one_line, Action, Input};
use crate::fill::Sources;

const SYSTEM: &str = "You read the values an API request needs out of what a user wrote.";

/// What the reply is when the user did not give the value.
const NONE: &str = "NONE";

/// The longest input description shown, in characters.
const DESCRIPTION_CHARS: usize = 160;

/// The required inputs of `checked` filled with words or numbers the user wrote, in order.
pub(crate) fn judged<'a>(
    action: &'a Action,
    checked: &Value,
    sources: &Sources,
) -> Vec<(&'a Input, Value)> {
    let Value::Object(map) = checked else {
        return Vec::new();
    };
    action
        .inputs
        .iter()
        .filter(|input| input.required && input.enum_values.is_empty())
        .filter_map(|input| {
            let value = map.get(&input.name)?;
            let scalar = value.is_string() || value.is_number();
            (scalar && sources.user_wrote(value)).then(|| (input, value.clone()))
        })
        .collect()
}

/// Two items per judged value after the question about it: the value's first word as the
/// user wrote it, then [`NONE`].
pub(crate) fn items(
    said: &[String],
    action: &Action,
    judged: &[(&Input, Value)],
) -> Vec<ScoreItem> {
    let quoted: Vec<String> = said
        .iter()
        .map(|text| format!("\"{}\"", text.trim()))
        .collect();
    let what = action
        .summary
        .as_deref()
        .map_or(String::new(), |summary| format!(" ({})", summary.trim()));
    judged
        .iter()
        .flat_map(|(input, value)| {
            let written = match value {
                Value::String(text) => text.split_whitespace().next().unwrap_or("").to_string(),
                other => other.to_string(),
            };
            let described = input
                .description
                .as_deref()
                .map(one_line)
                .filter(|d| !d.is_empty())
                .map_or(String::new(), |d| {
                    format!(
                        ": {}",
                        d.chars().take(DESCRIPTION_CHARS).collect::<String>()
                    )
                });
            let name = &input.name;
            let question = format!(
                "The user said:\n{}\n\nThe request {}{what} needs `{name}`{described}.\n\nWhat \
                 did the user give as `{name}`? Reply with the value exactly as the user wrote \
                 it, or with {NONE} if the user did not give it.",
                quoted.join("\n"),
                action.operation_id,
            );
            let messages = vec![Message::system(SYSTEM), Message::user(question)];
            [written, NONE.to_string()].map(|continuation| ScoreItem {
                messages: messages.clone(),
                continuation,
            })
        })
        .collect()
}

/// Per judged value, log P(its first word) − log P([`NONE`]), from the scores of [`items`].
pub(crate) fn gains(scores: &[f32]) -> Vec<f32> {
    scores.chunks_exact(2).map(|s| s[0] - s[1]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::Catalog;
    use serde_json::json;

    fn action() -> Action {
        let spec = json!({
            "openapi": "3.0.0",
            "info": {"title": "t", "version": "1"},
            "paths": {"/users/{username}/messages": {"get": {
                "operationId": "listMessages",
                "summary": "List a user's messages",
                "parameters": [
                    {"name": "username", "in": "path", "required": true,
                     "description": "The user's  login\nname", "schema": {"type": "string"}},
                    {"name": "order", "in": "query", "required": true,
                     "schema": {"type": "string", "enum": ["new", "old"]}},
                    {"name": "page", "in": "query", "schema": {"type": "integer"}}
                ]
            }}}
        });
        Catalog::from_value(&spec).expect("spec").actions.remove(0)
    }

    #[test]
    fn only_required_values_the_user_wrote_are_judged() {
        let action = action();
        let mut sources = Sources::default();
        sources.said("show the messages of her, page 2, newest first");
        sources.returned(r#"{"login": "harriet"}"#);
        let checked = json!({"username": "her", "order": "new", "page": 2});
        let judged = judged(&action, &checked, &sources);
        let names: Vec<&str> = judged.iter().map(|(i, _)| i.name.as_str()).collect();
        assert_eq!(
            names,
            ["username"],
            "the enum and the optional page are not judged"
        );

        let returned = json!({"username": "harriet", "order": "new"});
        assert!(super::judged(&action, &returned, &sources).is_empty());
    }

    #[test]
    fn the_question_names_the_input_and_what_was_said_and_weighs_the_first_word() {
        let action = action();
        let judged = vec![(&action.inputs[0], json!("her friend"))];
        let said = vec!["show the messages of her friend".to_string()];
        let items = items(&said, &action, &judged);
        let answers: Vec<&str> = items.iter().map(|i| i.continuation.as_str()).collect();
        assert_eq!(answers, ["her", "NONE"]);
        let asked = &items[0].messages[1].content;
        expect_test::expect![[r#"
            The user said:
            "show the messages of her friend"

            The request listMessages (List a user's messages) needs `username`: The user's login name.

            What did the user give as `username`? Reply with the value exactly as the user wrote it, or with NONE if the user did not give it."#]]
        .assert_eq(asked);
        assert_eq!(gains(&[-1.0, -3.5, -6.0, -0.5]), [2.5, -5.5]);
    }
}
