//! Checking a model's inputs: missing required inputs are named and nothing is sent; wrong
//! types, values outside an enum and unknown names come back as problems the model can act
//! on; obvious coercions are made and recorded; values are encoded into the request.

use serde_json::json;
use walkrag_actions::{AlwaysYes, Catalog, ExecutorConfig, Invalid, Outcome, Problem};

use crate::server::Server;
use crate::{action, executor, notes};

fn problem(input: &str, message: &str) -> Problem {
    Problem {
        input: input.into(),
        message: message.into(),
    }
}

#[tokio::test]
async fn missing_required_inputs_are_named_and_nothing_is_sent() {
    let server = Server::start().await;
    let executor = executor(&server, ExecutorConfig::default());
    let catalog = notes();

    let create = executor
        .call(
            &action(&catalog, "createNote"),
            &json!({ "text": "milk" }),
            &AlwaysYes,
        )
        .await;
    let get = executor
        .call(&action(&catalog, "getNote"), &json!({}), &AlwaysYes)
        .await;
    let nested = executor
        .call(
            &action(&catalog, "createNote"),
            &json!({ "title": "t", "author": { "email": "a@b.c" } }),
            &AlwaysYes,
        )
        .await;

    assert_eq!(
        create,
        Outcome::Invalid(Invalid::Missing(vec!["title".into()]))
    );
    assert_eq!(
        get,
        Outcome::Invalid(Invalid::Missing(vec!["noteId".into()]))
    );
    assert_eq!(
        nested,
        Outcome::Invalid(Invalid::Missing(vec!["author.name".into()]))
    );
    assert!(!create.sent());
    assert_eq!(server.count(), 0);
    assert_eq!(
        create.to_string(),
        "Missing required inputs: title. Ask the user for them; do not guess."
    );
    // Outcomes go into traces as JSON and come back.
    let value = serde_json::to_value(&create).unwrap();
    assert_eq!(value, json!({ "outcome": "invalid", "missing": ["title"] }));
    assert_eq!(serde_json::from_value::<Outcome>(value).unwrap(), create);
}

#[test]
fn null_means_not_given() {
    let create = action(&notes(), "createNote");

    assert_eq!(
        create.prepare(&json!({ "title": null })),
        Err(Invalid::Missing(vec!["title".into()]))
    );
    let prepared = create
        .prepare(&json!({ "title": "t", "text": null }))
        .unwrap();
    assert_eq!(prepared.body.unwrap().value, json!({ "title": "t" }));
}

#[test]
fn a_value_outside_the_enum_is_refused_with_the_allowed_values() {
    let list = action(&notes(), "listNotes");

    let invalid = list.prepare(&json!({ "status": "lost" })).unwrap_err();

    assert_eq!(
        invalid.problems(),
        [problem(
            "status",
            "\"lost\" is not one of: draft, published, archived"
        )]
    );
    assert_eq!(
        invalid.to_string(),
        "The inputs were not accepted; nothing was sent:\n\
         - status: \"lost\" is not one of: draft, published, archived"
    );
}

#[test]
fn wrong_types_and_unknown_names_are_each_reported() {
    let list = action(&notes(), "listNotes");

    let invalid = list
        .prepare(&json!({ "limit": "ten", "colour": "red", "tag": [{ "a": 1 }] }))
        .unwrap_err();

    assert_eq!(
        invalid,
        Invalid::Bad {
            problems: vec![
                problem(
                    "colour",
                    "no such input; this action takes: limit, status, tag, X-Request-Id"
                ),
                problem("limit", "expected an integer, got \"ten\""),
                problem("tag[0]", "expected a string, got an object"),
            ],
            missing: vec![],
        }
    );
}

#[test]
fn problems_and_missing_inputs_come_together() {
    let create = action(&notes(), "createNote");

    let invalid = create
        .prepare(&json!({ "status": "lost", "priority": 1.5 }))
        .unwrap_err();

    assert_eq!(invalid.missing(), ["title"]);
    assert_eq!(invalid.problems().len(), 2, "{invalid}");
    assert!(invalid
        .to_string()
        .ends_with("Missing required inputs: title. Ask the user for them; do not guess."));
}

#[test]
fn ranges_and_lengths_are_checked() {
    let list = action(&notes(), "listNotes");
    let create = action(&notes(), "createNote");

    assert_eq!(
        list.prepare(&json!({ "limit": 500 }))
            .unwrap_err()
            .problems(),
        [problem("limit", "500 is above the maximum 100")]
    );
    assert_eq!(
        create
            .prepare(&json!({ "title": "" }))
            .unwrap_err()
            .problems(),
        [problem("title", "needs at least 1 characters, has 0")]
    );
}

#[test]
fn obvious_coercions_are_made_and_recorded() {
    let list = action(&notes(), "listNotes");

    let prepared = list
        .prepare(&json!({ "limit": "3", "status": "Published", "tag": "work" }))
        .unwrap();

    assert_eq!(
        prepared.query,
        [
            ("limit".to_string(), "3".to_string()),
            ("status".into(), "published".into()),
            ("tag".into(), "work".into()),
        ]
    );
    assert_eq!(
        prepared.coerced,
        [
            "limit: \"3\" read as 3",
            "status: \"Published\" read as \"published\"",
            "tag: \"work\" read as a list of one",
        ]
    );

    let prepared = list.prepare(&json!({ "limit": ["3"] })).unwrap();
    assert_eq!(prepared.query, [("limit".to_string(), "3".to_string())]);
    assert_eq!(
        prepared.coerced,
        ["limit: [\"3\"] read as \"3\"", "limit: \"3\" read as 3"]
    );

    let create = action(&notes(), "createNote")
        .prepare(&json!({ "title": 42, "priority": "2", "tags": ["a"] }))
        .unwrap();
    assert_eq!(
        create.body.unwrap().value,
        json!({ "title": "42", "priority": 2, "tags": ["a"] })
    );
}

#[test]
fn names_are_matched_up_to_case_and_separators() {
    let get = action(&notes(), "getNote");

    let prepared = get.prepare(&json!({ "note_id": "7" })).unwrap();

    assert_eq!(prepared.path, "/notes/7");
    assert_eq!(prepared.coerced, ["note_id: read as noteId"]);
    assert!(get
        .prepare(&json!({ "noteId": "7", "NOTE_ID": "8" }))
        .unwrap_err()
        .to_string()
        .contains("NOTE_ID: given twice, also as noteId"));

    // A list input named the Rails way is matched without its brackets.
    let catalog = Catalog::parse(
        r#"{"openapi": "3.0.0", "info": {"title": "t", "version": "1"}, "paths": {"/posts": {"get": {
            "operationId": "getPosts", "parameters": [{"name": "post_ids[]", "in": "query",
            "required": true, "schema": {"type": "array", "items": {"type": "integer"}}}]}}}}"#,
    )
    .unwrap();
    let prepared = action(&catalog, "getPosts")
        .prepare(&json!({ "post_ids": [3, 4] }))
        .unwrap();
    assert_eq!(prepared.coerced, ["post_ids: read as post_ids[]"]);
}

#[test]
fn path_and_query_values_are_percent_encoded() {
    let catalog = notes();

    let get = action(&catalog, "getNote")
        .prepare(&json!({ "noteId": "a/b c?d" }))
        .unwrap();
    let list = action(&catalog, "listNotes")
        .prepare(&json!({ "tag": ["a&b", "ü=1"], "X-Request-Id": "r-1" }))
        .unwrap();

    assert_eq!(get.path, "/notes/a%2Fb%20c%3Fd");
    assert_eq!(list.query_string(), "tag=a%26b&tag=%C3%BC%3D1");
    assert_eq!(list.path_and_query(), "/notes?tag=a%26b&tag=%C3%BC%3D1");
    assert_eq!(
        list.headers,
        [("X-Request-Id".to_string(), "r-1".to_string())]
    );
}

#[test]
fn unsafe_values_are_refused() {
    let catalog = notes();

    let header = action(&catalog, "listNotes")
        .prepare(&json!({ "X-Request-Id": "a\r\nX-Evil: 1" }))
        .unwrap_err();
    let empty = action(&catalog, "getNote")
        .prepare(&json!({ "noteId": "" }))
        .unwrap_err();
    let not_an_object = action(&catalog, "getNote")
        .prepare(&json!(["7"]))
        .unwrap_err();

    assert_eq!(
        header.problems(),
        [problem("X-Request-Id", "a header value must be one line")]
    );
    let cookie = walkrag_actions::Catalog::parse(
        "openapi: 3.0.0\ninfo: {title: t, version: '1'}\npaths:\n  /a:\n    get:\n      \
         operationId: a\n      parameters: [{name: session, in: cookie, schema: {type: string}}]\n",
    )
    .unwrap();
    let a = cookie.get("a").unwrap();
    assert_eq!(
        a.prepare(&json!({ "session": "s1" })).unwrap().cookies,
        [("session".to_string(), "s1".to_string())]
    );
    assert_eq!(
        a.prepare(&json!({ "session": "s1; admin=1" }))
            .unwrap_err()
            .problems(),
        [problem(
            "session",
            "a cookie value cannot hold `;` or a line break"
        )]
    );
    assert_eq!(
        empty.problems(),
        [problem(
            "noteId",
            "must not be empty: it is part of the path"
        )]
    );
    assert_eq!(
        not_an_object.problems(),
        [problem(
            "",
            "inputs must be a JSON object of input name to value, not a list"
        )]
    );
}

#[test]
fn a_prefixed_body_field_is_sent_under_its_own_name() {
    let patch = action(&notes(), "patch_/notes/{noteId}");

    let prepared = patch
        .prepare(&json!({ "noteId": "1", "body.noteId": "2", "pinned": "true" }))
        .unwrap();

    assert_eq!(prepared.path, "/notes/1");
    assert_eq!(
        prepared.body.unwrap().value,
        json!({ "noteId": "2", "pinned": true })
    );
    // "yes" and "no" are a switch's values as plainly as "true" and "false".
    for (said, switch) in [("yes", true), ("No", false)] {
        let prepared = patch
            .prepare(&json!({ "noteId": "1", "pinned": said }))
            .unwrap();
        assert_eq!(prepared.body.unwrap().value, json!({ "pinned": switch }));
    }
}

#[test]
fn a_body_is_sent_only_when_required_or_given() {
    let patch = action(&notes(), "patch_/notes/{noteId}");
    let folder = action(&notes(), "createFolder");

    assert_eq!(patch.prepare(&json!({ "noteId": "1" })).unwrap().body, None);
    assert_eq!(
        folder
            .prepare(&json!({ "name": "a", "children": [{ "name": "b", "children": [{}] }] }))
            .unwrap()
            .body
            .unwrap()
            .value["children"][0]["name"],
        "b"
    );
    // The expanded level of the recursive schema is checked; the cut one is left to the server.
    assert_eq!(
        folder
            .prepare(&json!({ "name": "a", "children": [{ "children": [] }] }))
            .unwrap_err(),
        Invalid::Missing(vec!["children[0].name".into()])
    );
}
