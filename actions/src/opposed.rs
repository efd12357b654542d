//! Orders that ask for the opposite of what an operation does. A small model picks
//! `completeMultipart` ("Complete multipart upload") for "Stop the half-finished upload…",
//! "Call off the video upload…" and "Start a multipart upload for…": the upload is named, the
//! verb is read past. An order whose verb is opposed to the first word of an operation's
//! summary does not pick that operation ([`opposes`]).

use crate::action::Action;

/// Verbs an operation's summary opens with, each with the orders that ask for the
/// opposite: a verb, or a verb and the word after it ("call off").
const OPPOSED: [(&str, &[&str]); 8] = [
    ("complete", ENDED_OTHERWISE),
    ("finish", ENDED_OTHERWISE),
    ("create", UNDONE),
    ("add", UNDONE),
    ("delete", MADE),
    ("remove", MADE),
    ("lock", &["unlock"]),
    ("unlock", &["lock"]),
];

/// Orders to start, stop or drop something rather than complete it.
const ENDED_OTHERWISE: &[&str] = &[
    "start", "begin", "stop", "cancel", "abort", "abandon", "scrap", "call off",
];

/// Orders to undo something rather than make it.
const UNDONE: &[&str] = &["delete", "remove", "get rid"];

/// Orders to make something rather than undo it.
const MADE: &[&str] = &["create", "add", "make", "set up"];

/// Whether an order opening with `verb` (and `after`, the word after it, lower case) asks for
/// the opposite of what `action` does by its summary's first word ("Completes the upload"
/// against "Stop the upload").
pub(crate) fn opposes(verb: &str, after: Option<&str>, action: &Action) -> bool {
    let Some(first) = action
        .summary
        .as_deref()
        .and_then(|s| s.split_whitespace().next())
    else {
        return false;
    };
    let first = first.to_lowercase();
    // "Completes", "Creates": the summary's verb in the third person.
    let does = OPPOSED
        .iter()
        .find(|(does, _)| first == *does || first.strip_suffix('s') == Some(does));
    let Some((_, opposite)) = does else {
        return false;
    };
    opposite.iter().any(|order| match order.split_once(' ') {
        Some((first, second)) => verb == first && after == Some(second),
        None => verb == *order,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::Catalog;
    use crate::strategy::order_verb;

    fn catalog() -> Catalog {
        Catalog::parse(
            r#"{"openapi": "3.0.0", "info": {"title": "t", "version": "1"}, "paths": {
                "/uploads/complete.json": {"post": {"operationId": "complete", "summary": "Completes the multipart upload"}},
                "/uploads/abort.json": {"post": {"operationId": "abort", "summary": "Abort multipart upload"}},
                "/posts/{id}/lock.json": {"put": {"operationId": "lock", "summary": "Lock a post"}},
                "/posts.json": {"get": {"operationId": "list", "summary": "List posts"}}}}"#,
        )
        .unwrap()
    }

    #[test]
    fn an_order_to_stop_start_or_call_off_opposes_completing() {
        let catalog = catalog();
        let complete = catalog.get("complete").unwrap();
        for (verb, after) in [
            ("stop", Some("the")),
            ("cancel", Some("the")),
            ("call", Some("off")),
            ("start", Some("a")),
        ] {
            assert!(opposes(verb, after, complete), "{verb}");
        }
        for (verb, after) in [
            ("finish", Some("the")),
            ("call", Some("the")),
            ("show", None),
        ] {
            assert!(!opposes(verb, after, complete), "{verb}");
        }
        // Aborting is what was asked; a summary with no opposed verb opposes nothing.
        assert!(!opposes("stop", Some("the"), catalog.get("abort").unwrap()));
        assert!(!opposes("stop", None, catalog.get("list").unwrap()));
        assert!(opposes(
            "unlock",
            Some("post"),
            catalog.get("lock").unwrap()
        ));
    }

    #[test]
    fn no_labelled_request_opposes_the_operation_it_asks_for() {
        let spec = crate::labelled::data_dir().join("discourse-full.openapi.json");
        let catalog = Catalog::parse(&std::fs::read_to_string(spec).unwrap()).unwrap();
        let (mut orders, mut wrong) = (0, Vec::new());
        for (file, request) in crate::labelled::requests() {
            let text = request["request"].as_str().unwrap();
            let (Some(action), Some((verb, after))) = (
                catalog.get(request["operation_id"].as_str().unwrap()),
                order_verb(text),
            ) else {
                continue;
            };
            orders += 1;
            if opposes(&verb, after.as_deref(), action) {
                wrong.push(format!("{file} {}: {text}", request["id"]));
            }
        }
        assert!(orders > 1000, "only {orders}");
        assert!(wrong.is_empty(), "{wrong:#?}");
    }
}
