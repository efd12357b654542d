//! Whether the user gave a value the model copied into a required input.
//!
//! [`crate::fill`] lets a value be only a copy of what the user said, which rules out invented
//! values but not a copy of the wrong words: "I don't know her username" still holds the span
//! `she`. So each required input filled with the user's words is judged by the model, as a
//! reader would: one scoring call weighs "yes" against "no" after "did the user give this
//! value for this input?", and a value whose log P(yes) − log P(no) falls below
//! [`crate::Actions::value_margin`] is taken back, which asks the user for it.
//!
//! Values the API returned are not judged (the user did not give them and need not have);
//! nor are an enum's values or booleans (choices the request makes, not values it gives).

use serde_json::Value;
use walkrag_core::{Message, ScoreItem};

use crate::action::{Action, Input};
use crate::fill::Sources;

const SYSTEM: &str = "You check whether a user gave the values an API request needs.";

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

/// Two items per judged value, "yes" then "no", after the question about it.
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
        .map_or(String::new(), |summary| format!(" ({summary})"));
    judged
        .iter()
        .flat_map(|(input, value)| {
            let shown = match value {
                Value::String(text) => format!("\"{text}\""),
                other => other.to_string(),
            };
            let described = input
                .description
                .as_deref()
                .map(|d| d.split_whitespace().collect::<Vec<_>>().join(" "))
                .filter(|d| !d.is_empty())
                .map_or(String::new(), |d| {
                    format!(
                        ": {}",
                        d.chars().take(DESCRIPTION_CHARS).collect::<String>()
                    )
                });
            let question = format!(
                "The user said:\n{}\n\nThe request {}{what} needs `{}`{described}. It would be \
                 sent with {shown}.\n\nDid the user give {shown} as `{}`? Answer yes or no.",
                quoted.join("\n"),
                action.operation_id,
                input.name,
                input.name,
            );
            let messages = vec![Message::system(SYSTEM), Message::user(question)];
            ["yes", "no"].map(|answer| ScoreItem {
                messages: messages.clone(),
                continuation: answer.to_string(),
            })
        })
        .collect()
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
    fn the_question_names_the_value_the_input_and_what_was_said() {
        let action = action();
        let judged = vec![(&action.inputs[0], json!("her"))];
        let said = vec!["show the messages of her".to_string()];
        let items = items(&said, &action, &judged);
        assert_eq!(items.len(), 2);
        assert_eq!(items[0].continuation, "yes");
        assert_eq!(items[1].continuation, "no");
        let asked = &items[0].messages[1].content;
        expect_test::expect![[r#"
            The user said:
            "show the messages of her"

            The request listMessages (List a user's messages) needs `username`: The user's login name. It would be sent with "her".

            Did the user give "her" as `username`? Answer yes or no."#]]
        .assert_eq(asked);
    }
}
