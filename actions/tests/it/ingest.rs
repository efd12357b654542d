//! Reading OpenAPI documents into actions: operations, references, cycles, merged path
//! parameters, enums, bodies, ids, security, servers, retrieval text, hashes and errors.

use serde_json::{json, Value};
use walkrag_actions::{
    is_openapi, words, Catalog, Encoding, KeyLocation, Location, Method, Returned, SecurityScheme,
    SpecError, Style, Type,
};

use crate::{action, notes, notes_yaml};

#[test]
fn every_operation_becomes_an_action() {
    let catalog = notes();

    let ids: Vec<(&str, Method, &str)> = catalog
        .actions
        .iter()
        .map(|a| (a.operation_id.as_str(), a.method, a.path.as_str()))
        .collect();
    assert_eq!(
        ids,
        [
            ("listNotes", Method::Get, "/notes"),
            ("createNote", Method::Post, "/notes"),
            ("getNote", Method::Get, "/notes/{noteId}"),
            ("replaceNote", Method::Put, "/notes/{noteId}"),
            ("deleteNote", Method::Delete, "/notes/{noteId}"),
            ("patch_/notes/{noteId}", Method::Patch, "/notes/{noteId}"),
            ("createFolder", Method::Post, "/folders"),
            ("exportNotes", Method::Get, "/export"),
            ("get_/health", Method::Get, "/health"),
        ]
    );
    assert_eq!(catalog.title, "Notes");
    assert_eq!(catalog.version, "1.2");
    assert_eq!(catalog.openapi, "3.0.3");
}

#[test]
fn operations_without_an_id_get_a_stable_one() {
    let catalog = notes();
    let health = action(&catalog, "get_/health");
    let patch = action(&catalog, "patch_/notes/{noteId}");

    assert!(health.synthesized_id && patch.synthesized_id);
    assert!(!action(&catalog, "getNote").synthesized_id);
    assert_eq!(health.inputs, []);
    assert_eq!(notes().get("get_/health").unwrap().hash, health.hash);
}

#[test]
fn path_level_parameters_are_merged_with_the_operations() {
    let catalog = notes();

    // From the path item, through a $ref.
    let get = action(&catalog, "getNote");
    let note_id = get.input("noteId").unwrap();
    assert_eq!(note_id.location, Location::Path);
    assert!(note_id.required);
    assert_eq!(note_id.description.as_deref(), Some("The note's id."));
    assert_eq!(note_id.style, Style::Simple);

    // Declared again by the operation: the operation's wins, and it is there once.
    let put = action(&catalog, "replaceNote");
    let ids: Vec<_> = put.params().map(|i| i.name.as_str()).collect();
    assert_eq!(ids, ["noteId"]);
    assert_eq!(
        put.input("noteId").unwrap().description.as_deref(),
        Some("The id of the note to replace.")
    );
}

#[test]
fn references_enums_and_defaults_are_resolved() {
    let list = action(&notes(), "listNotes");

    let limit = list.input("limit").unwrap();
    assert_eq!(
        (limit.location, &limit.ty, limit.required),
        (Location::Query, &Type::Integer, false)
    );
    assert_eq!(limit.default, Some(json!(20)));
    assert_eq!(
        limit.description.as_deref(),
        Some("How many notes to return.")
    );

    let status = list.input("status").unwrap();
    assert_eq!(status.ty, Type::String);
    assert_eq!(
        status.enum_values,
        [json!("draft"), json!("published"), json!("archived")]
    );
    assert_eq!(
        status.description.as_deref(),
        Some("Only notes with this status.")
    );

    let tag = list.input("tag").unwrap();
    assert_eq!(tag.ty, Type::Array(Box::new(Type::String)));
    assert_eq!((tag.style, tag.explode), (Style::Form, true));

    // The Authorization header parameter is ignored, as OpenAPI says.
    let names: Vec<_> = list.inputs.iter().map(|i| i.name.as_str()).collect();
    assert_eq!(names, ["limit", "status", "tag", "X-Request-Id"]);
    assert_eq!(
        list.input("X-Request-Id").unwrap().location,
        Location::Header
    );
}

#[test]
fn body_fields_come_from_the_schema_with_all_of_merged() {
    let create = action(&notes(), "createNote");

    let body = create.body.as_ref().unwrap();
    assert_eq!(body.content_type, "application/json");
    assert_eq!(body.encoding, Encoding::Json);
    assert!(body.required && body.fields && !body.open);
    let fields: Vec<(&str, bool)> = create
        .body_fields()
        .map(|i| (i.name.as_str(), i.required))
        .collect();
    // `title` comes from the allOf member `Named`; the read-only `id` is not an input.
    assert_eq!(
        fields,
        [
            ("title", true),
            ("text", false),
            ("status", false),
            ("tags", false),
            ("priority", false),
            ("author", false),
        ]
    );
    let status = create.input("status").unwrap();
    assert_eq!(status.enum_values.len(), 3);
    assert_eq!(
        status.description.as_deref(),
        Some("Where a note is in its life.")
    );
    let author = create.input("author").unwrap();
    assert_eq!(author.ty, Type::Object);
    assert_eq!(author.schema["required"], json!(["name"]));
}

#[test]
fn a_body_field_named_like_a_parameter_is_prefixed() {
    let patch = action(&notes(), "patch_/notes/{noteId}");

    let field = patch.input("body.noteId").unwrap();
    assert_eq!(
        (field.location, field.wire_name.as_str()),
        (Location::Body, "noteId")
    );
    assert_eq!(patch.input("noteId").unwrap().location, Location::Path);
}

#[test]
fn a_self_referencing_schema_is_cut_not_followed_forever() {
    let folder = action(&notes(), "createFolder");

    let children = folder.input("children").unwrap();
    assert_eq!(children.ty, Type::Array(Box::new(Type::Object)));
    // One level of Folder is expanded inside children; below it the reference is cut.
    let item = &children.schema["items"];
    assert_eq!(item["properties"]["name"]["type"], "string");
    let grandchild = &item["properties"]["children"]["items"];
    assert_eq!(grandchild["x-walkrag-cut"], "#/components/schemas/Folder");
    assert_eq!(grandchild["type"], "object");
    assert!(folder.input("name").unwrap().required);
}

#[test]
fn reference_chains_that_loop_end() {
    let spec = json!({
        "openapi": "3.0.0",
        "info": { "title": "loops", "version": "1" },
        "paths": { "/a": { "get": {
            "operationId": "loop",
            "parameters": [{ "name": "x", "in": "query",
                             "schema": { "$ref": "#/components/schemas/A" } }],
        } } },
        "components": { "schemas": {
            "A": { "$ref": "#/components/schemas/B" },
            "B": { "$ref": "#/components/schemas/A" },
        } },
    });
    let catalog = Catalog::from_value(&spec).unwrap();
    assert_eq!(catalog.actions[0].input("x").unwrap().ty, Type::Any);
}

#[test]
fn security_and_servers_are_read() {
    let catalog = notes();

    assert_eq!(catalog.servers[0].url, "https://eu.notes.example/v1");
    assert_eq!(
        catalog.security_schemes["bearerAuth"],
        SecurityScheme::Http {
            scheme: "bearer".into(),
            bearer_format: None
        }
    );
    assert_eq!(
        catalog.security_schemes["apiKey"],
        SecurityScheme::ApiKey {
            name: "X-API-Key".into(),
            location: KeyLocation::Header
        }
    );
    let scheme_names = |id: &str| -> Vec<Vec<String>> {
        action(&catalog, id)
            .security
            .iter()
            .map(|alternative| alternative.keys().cloned().collect())
            .collect()
    };
    assert_eq!(scheme_names("listNotes"), [["bearerAuth"]]);
    assert_eq!(scheme_names("deleteNote"), [["apiKey"]]);
    assert_eq!(scheme_names("exportNotes"), Vec::<Vec<String>>::new());
}

#[test]
fn json_and_yaml_read_the_same() {
    let doc: Value = walkrag_actions::parse_document(&notes_yaml()).unwrap();
    let json = serde_json::to_string_pretty(&doc).unwrap();

    // Written from a parsed document, the JSON has every map sorted, so it is the parsed
    // YAML it reads the same as, fields of responses in sorted order included.
    assert_eq!(
        Catalog::parse(&json).unwrap(),
        Catalog::from_value(&doc).unwrap()
    );
    assert!(is_openapi(&json) && is_openapi(&notes_yaml()));
}

#[test]
fn openapi_3_1_schemas_read() {
    let spec = r##"{
      "openapi": "3.1.0",
      "info": { "title": "t", "version": "1" },
      "paths": { "/things": { "post": {
        "operationId": "makeThing",
        "requestBody": { "content": { "application/json": { "schema": {
          "type": "object",
          "properties": {
            "label": { "type": ["string", "null"] },
            "size": { "$ref": "#/$defs/Size", "description": "How big, in cm." }
          }
        } } } }
      } } },
      "$defs": { "Size": { "type": "integer", "description": "A size." } }
    }"##;
    let catalog = Catalog::parse(spec).unwrap();
    let make = &catalog.actions[0];

    let label = make.input("label").unwrap();
    assert!(label.nullable);
    assert_eq!(label.ty, Type::String);
    let size = make.input("size").unwrap();
    assert_eq!(size.ty, Type::Integer);
    assert_eq!(size.description.as_deref(), Some("How big, in cm."));
}

#[test]
fn bad_documents_are_refused_with_a_reason() {
    type Expect = fn(&SpecError) -> bool;
    let cases: [(&str, Expect); 6] = [
        (
            "openapi: [3.0\n  title: {",
            |e| matches!(e, SpecError::Syntax(m) if m.starts_with("YAML")),
        ),
        (
            "{\"openapi\": \"3.0.0\",",
            |e| matches!(e, SpecError::Syntax(m) if m.starts_with("JSON")),
        ),
        ("- a\n- b\n", |e| *e == SpecError::NotAMapping),
        ("title: notes\n", |e| *e == SpecError::NotOpenApi),
        (
            "swagger: \"2.0\"\ninfo: {title: t, version: \"1\"}\npaths: {}\n",
            |e| *e == SpecError::UnsupportedVersion("swagger 2.0".into()),
        ),
        ("openapi: 4.0.0\npaths: {}\n", |e| {
            *e == SpecError::UnsupportedVersion("4.0.0".into())
        }),
    ];
    for (text, expected) in cases {
        let error = Catalog::parse(text).unwrap_err();
        assert!(expected(&error), "{text:?} gave {error:?}");
    }
    let swagger = Catalog::parse("swagger: \"2.0\"\n").unwrap_err();
    assert!(
        swagger.to_string().contains("convert Swagger 2.0"),
        "{swagger}"
    );
}

#[test]
fn a_dangling_reference_is_named() {
    let spec = notes_yaml().replace(
        "$ref: \"#/components/schemas/Status\"",
        "$ref: \"#/components/schemas/Statuses\"",
    );

    let error = Catalog::parse(&spec).unwrap_err();

    assert_eq!(
        error,
        SpecError::DanglingRef {
            reference: "#/components/schemas/Statuses".into(),
            at: "GET /notes parameter status".into()
        }
    );
    assert!(error.to_string().contains("#/components/schemas/Statuses"));
}

#[test]
fn a_reference_to_another_file_is_refused() {
    let spec = notes_yaml().replace(
        "$ref: \"#/components/schemas/Folder\"\n      responses",
        "$ref: \"folder.yaml#/Folder\"\n      responses",
    );

    let error = Catalog::parse(&spec).unwrap_err();

    let SpecError::ExternalRef { reference, .. } = &error else {
        panic!("{error:?}");
    };
    assert_eq!(reference, "folder.yaml#/Folder");
}

#[test]
fn only_openapi_documents_are_openapi() {
    assert!(is_openapi("openapi: 3.1.0\n"));
    assert!(is_openapi("{\"openapi\": \"3.0.1\", \"paths\": {}}"));
    assert!(!is_openapi("swagger: \"2.0\"\n"));
    assert!(!is_openapi("# Notes\n\nSome *markdown*: with a colon.\n"));
    assert!(!is_openapi("{\"title\": \"x\"}"));
    assert!(!is_openapi("openapi: [unclosed"));
}

#[test]
fn identifiers_split_into_words() {
    assert_eq!(words("createPet"), ["create", "pet"]);
    assert_eq!(words("getHTTPStatus"), ["get", "http", "status"]);
    assert_eq!(words("/pets/{pet_id}/toys"), ["pets", "pet", "id", "toys"]);
    assert_eq!(words("list-v2Items"), ["list", "v2", "items"]);
    assert_eq!(words("X-Request-Id"), ["x", "request", "id"]);
}

#[test]
fn the_embedded_text_says_what_the_action_does_in_words() {
    let create = action(&notes(), "createNote");

    assert_eq!(
        create.embed_text(),
        "Create a note\n\
         create note\n\
         POST /notes: create add submit notes\n\
         tags: notes\n\
         inputs: title: The note's title.; text: The note's text, in Markdown.; status: Where \
         a note is in its life. (draft, published, archived); tags; priority; author"
    );
    let health = action(&notes(), "get_/health").embed_text();
    assert_eq!(health, "GET /health: list get search health");
    let get = action(&notes(), "getNote").embed_text();
    assert!(
        get.contains("GET /notes/{noteId}: get read show notes note id"),
        "{get}"
    );
}

#[test]
fn a_read_says_what_its_response_holds_and_a_change_does_not() {
    let catalog = notes();
    let note_fields = ["id", "title", "text", "status", "tags", "author"];
    let returned = |name: &str, list: bool, fields: &[&str]| Returned {
        name: name.into(),
        list,
        fields: fields.iter().map(|f| f.to_string()).collect(),
    };

    // A list of notes beside a plain field, fields in the order written; the 200, not the
    // 404 listed before it.
    let list = action(&catalog, "listNotes");
    assert_eq!(
        list.returns,
        [
            returned("notes", true, &note_fields),
            returned("next", false, &[])
        ]
    );
    assert!(
        list.line()
            .ends_with("; returns: list of notes (id, title, text, status, tags, …), next"),
        "{}",
        list.line()
    );
    assert_eq!(
        list.line(),
        format!(
            "{}; returns: list of notes (id, title, text, status, tags, …), next",
            list.line_without_returns()
        )
    );
    let get = action(&catalog, "getNote");
    assert_eq!(
        get.returns[5],
        returned("author", false, &["name", "email"])
    );
    assert!(
        get.embed_text()
            .ends_with("\nreturns: id, title, text, status, list of tags, author (name, email)"),
        "{}",
        get.embed_text()
    );
    // A change returns what it changed: kept, but not shown, as the request names what it
    // sends. (Its schema is merged from `allOf` members, written nowhere as a whole: its
    // fields come in the order the members give them.)
    let create = action(&catalog, "createNote");
    let names: Vec<&str> = create.returns.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(
        names,
        ["title", "id", "text", "status", "tags", "priority", "author"]
    );
    assert!(!create.line().contains("returns") && !create.embed_text().contains("returns"));
    // No JSON, or no response schema: nothing.
    assert!(action(&catalog, "exportNotes").returns.is_empty());
    assert!(action(&catalog, "get_/health").returns.is_empty());
    // A document already parsed reads the same: its fields in the spec's order.
    let parsed =
        Catalog::from_value(&walkrag_actions::parse_document(&notes_yaml()).unwrap()).unwrap();
    let names: Vec<&str> = parsed.get("listNotes").unwrap().returns[0]
        .fields
        .iter()
        .map(String::as_str)
        .collect();
    assert_eq!(names, ["id", "title", "text", "status", "tags", "author"]);
    // A renamed field of a response changes that operation, and only that one.
    let renamed = Catalog::parse(
        &notes_yaml().replace("                  next:\n", "                  cursor:\n"),
    )
    .unwrap();
    for action in &catalog.actions {
        let changed = action.operation_id == "listNotes";
        let hash = &renamed.get(&action.operation_id).unwrap().hash;
        assert_eq!(action.hash != *hash, changed, "{}", action.operation_id);
    }
}

#[test]
fn a_response_the_spec_describes_badly_costs_only_what_it_returns() {
    let broken = notes_yaml().replacen(
        "                    items:\n                      $ref: \"#/components/schemas/Note\"",
        "                    items:\n                      $ref: \"#/components/schemas/Nowhere\"",
        1,
    );
    assert_ne!(broken, notes_yaml());

    let catalog = Catalog::parse(&broken).unwrap();

    let list = action(&catalog, "listNotes");
    assert!(list.returns.is_empty());
    assert_eq!(list.inputs, action(&notes(), "listNotes").inputs);
    assert_eq!(action(&catalog, "getNote").returns.len(), 6);
}

#[test]
fn the_card_for_the_model_lists_every_input() {
    let list = action(&notes(), "listNotes");

    assert_eq!(
        list.describe(),
        "listNotes — GET /notes\n\
         List notes\n\
         Lists notes, newest first, optionally filtered by status and tag.\n\
         inputs:\n\
         - limit (query, integer, optional, default 20): How many notes to return.\n\
         - status (query, string, optional, one of draft, published, archived): Only notes \
         with this status.\n\
         - tag (query, array of string, optional): Only notes with all these tags.\n\
         - X-Request-Id (header, string, optional): Echoed back for tracing."
    );
    let delete = action(&notes(), "deleteNote").describe();
    assert!(
        delete.ends_with("The user confirms this request before it is sent."),
        "{delete}"
    );
    let schema = action(&notes(), "createNote").input_schema();
    assert_eq!(schema["required"], json!(["title"]));
    assert_eq!(schema["properties"]["status"]["enum"][2], "archived");
}

#[test]
fn hashes_change_exactly_with_the_operations() {
    let before = notes();
    let hash = |catalog: &Catalog, id: &str| catalog.get(id).unwrap().hash.clone();

    // A summary of one operation changes that operation only.
    let renamed = Catalog::parse(&notes_yaml().replace("Get one note", "Read one note")).unwrap();
    // A shared schema changes every operation that uses it.
    let more_statuses = Catalog::parse(&notes_yaml().replace(
        "[draft, published, archived]",
        "[draft, published, archived, deleted]",
    ))
    .unwrap();

    assert_eq!(hash(&before, "getNote").0.len(), 16);
    assert_ne!(hash(&before, "getNote"), hash(&renamed, "getNote"));
    for id in ["listNotes", "createNote", "replaceNote", "deleteNote"] {
        assert_eq!(hash(&before, id), hash(&renamed, id), "{id}");
    }
    for id in ["listNotes", "createNote", "replaceNote"] {
        assert_ne!(hash(&before, id), hash(&more_statuses, id), "{id}");
    }
    for id in ["getNote", "deleteNote", "createFolder"] {
        assert_eq!(hash(&before, id), hash(&more_statuses, id), "{id}");
    }
}

#[test]
fn yaml_with_numeric_keys_and_unquoted_versions_reads() {
    let spec = "openapi: 3.1\ninfo: {title: t, version: 2}\npaths:\n  /a:\n    get:\n      \
                operationId: a\n      responses:\n        200: {description: ok}\n        \
                404: {description: no}\n";

    let catalog = Catalog::parse(spec).unwrap();

    assert_eq!(
        (catalog.openapi.as_str(), catalog.version.as_str()),
        ("3.1", "2")
    );
    assert_eq!(catalog.actions.len(), 1);
}
