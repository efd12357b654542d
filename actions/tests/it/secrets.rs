//! Credentials reach the API's server and nothing else: not previews, outcomes, errors, Debug
//! output or logs, not a response that echoes them (not even its start where the body is cut),
//! and not a server on another origin that an operation names.

use std::cell::RefCell;
use std::io;
use std::sync::{Arc, Mutex, Once};

use serde_json::json;
use walkrag_actions::{
    AlwaysYes, Catalog, Credentials, Executor, ExecutorConfig, Outcome, RequestPreview, Secret,
};

use crate::server::Server;
use crate::{action, executor, notes};

const TOKEN: &str = "sk-walkrag-TOPSECRET-0123456789";
const KEY: &str = "key-walkrag-HUSH-9876543210";

/// Everything one test thread logged, as text.
#[derive(Clone, Default)]
pub(crate) struct Logs(Arc<Mutex<Vec<u8>>>);

thread_local! {
    /// Where this thread's log lines go while a test captures them.
    static CAPTURING: RefCell<Option<Logs>> = const { RefCell::new(None) };
}

/// Writes a log line to the capture of the thread that logged it, if any.
struct ToCapture;

impl io::Write for ToCapture {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        CAPTURING.with(|c| {
            if let Some(logs) = &*c.borrow() {
                logs.0.lock().unwrap().extend_from_slice(buf);
            }
        });
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Ends a capture when dropped.
pub(crate) struct Capture;

impl Drop for Capture {
    fn drop(&mut self) {
        CAPTURING.with(|c| c.borrow_mut().take());
    }
}

impl Logs {
    /// Captures everything this thread logs (at every level) until the guard drops. One
    /// global subscriber serves the whole test binary: with a subscriber per test thread
    /// instead, a log line first reached by another test (with none) could be cached as
    /// disabled everywhere, and a capture would miss it now and then.
    pub(crate) fn capture() -> (Logs, Capture) {
        static GLOBAL: Once = Once::new();
        GLOBAL.call_once(|| {
            let subscriber = tracing_subscriber::fmt()
                .with_max_level(tracing::Level::TRACE)
                .with_ansi(false)
                .with_writer(|| ToCapture)
                .finish();
            tracing::subscriber::set_global_default(subscriber)
                .expect("no other global subscriber in this test binary");
        });
        let logs = Logs::default();
        CAPTURING.with(|c| *c.borrow_mut() = Some(logs.clone()));
        (logs, Capture)
    }

    pub(crate) fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

/// Every way an outcome can be shown: to the model, in Debug output, as JSON.
fn shown(outcome: &Outcome) -> Vec<String> {
    vec![
        outcome.to_string(),
        format!("{outcome:?}"),
        format!("{outcome:#?}"),
        serde_json::to_string(outcome).unwrap(),
    ]
}

#[tokio::test]
async fn a_header_credential_reaches_the_server_and_nothing_else() {
    let (logs, _capture) = Logs::capture();
    let server = Server::start().await;
    let credentials = Credentials::new()
        .with_header_line(&format!("Authorization: Bearer {TOKEN}"))
        .unwrap();
    let config = ExecutorConfig {
        credentials: credentials.clone(),
        ..ExecutorConfig::default()
    };
    let executor = executor(&server, config.clone());
    let dry_run = crate::executor(
        &server,
        ExecutorConfig {
            dry_run: true,
            ..config.clone()
        },
    );
    let catalog = notes();
    let previews: Mutex<Vec<RequestPreview>> = Mutex::default();
    let confirm = |preview: &RequestPreview| {
        previews.lock().unwrap().push(preview.clone());
        true
    };

    let get = executor
        .call(
            &action(&catalog, "getNote"),
            &json!({ "noteId": "1" }),
            &confirm,
        )
        .await;
    let create = executor
        .call(
            &action(&catalog, "createNote"),
            &json!({ "title": "t" }),
            &confirm,
        )
        .await;
    let echo = executor
        .call(
            &action(&catalog, "getNote"),
            &json!({ "noteId": "echo" }),
            &confirm,
        )
        .await;
    let dry = dry_run
        .call(
            &action(&catalog, "createNote"),
            &json!({ "title": "t" }),
            &confirm,
        )
        .await;

    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    for request in &requests {
        assert_eq!(
            request.header("authorization"),
            Some(&*format!("Bearer {TOKEN}"))
        );
    }
    // The echoed header is masked before the model reads it.
    let Outcome::Response(echoed) = &echo else {
        panic!("{echo:?}");
    };
    assert!(
        echoed.body.contains(r#""authorization":"***""#),
        "{}",
        echoed.body
    );
    // The preview says a credential is added, by name only.
    let previews = previews.into_inner().unwrap();
    assert_eq!(previews.len(), 1, "only the POST is confirmed");
    assert_eq!(previews[0].credentials, ["header Authorization"]);

    let mut everything = Vec::new();
    for outcome in [&get, &create, &echo, &dry] {
        everything.extend(shown(outcome));
    }
    for preview in &previews {
        everything.push(format!("{preview}\n{preview:?}"));
    }
    everything.push(format!(
        "{executor:?}\n{executor:#?}\n{config:?}\n{credentials:?}"
    ));
    let logs = logs.text();
    assert!(
        logs.contains("sending") && logs.contains("dry run"),
        "{logs}"
    );
    everything.push(logs);
    for text in everything {
        assert!(!text.contains(TOKEN), "the token leaked: {text}");
    }
}

#[tokio::test]
async fn scheme_credentials_come_from_the_environment_and_go_where_the_spec_says() {
    let server = Server::start().await;
    let catalog = notes();
    let credentials = Credentials::from_lookup(&catalog, |var| match var {
        "WALKRAG_AUTH_BEARERAUTH" => Some(TOKEN.into()),
        "WALKRAG_AUTH_APIKEY" => Some(KEY.into()),
        _ => None,
    });
    let executor = executor(
        &server,
        ExecutorConfig {
            credentials,
            ..ExecutorConfig::default()
        },
    );

    let get = executor
        .call(
            &action(&catalog, "getNote"),
            &json!({ "noteId": "1" }),
            &AlwaysYes,
        )
        .await;
    let delete = executor
        .call(
            &action(&catalog, "deleteNote"),
            &json!({ "noteId": "1" }),
            &AlwaysYes,
        )
        .await;
    let export = executor
        .call(&action(&catalog, "exportNotes"), &json!({}), &AlwaysYes)
        .await;

    let [get_request, delete_request, export_request] = &server.requests()[..] else {
        panic!("three requests");
    };
    assert_eq!(
        get_request.header("authorization"),
        Some(&*format!("Bearer {TOKEN}"))
    );
    assert_eq!(get_request.header("x-api-key"), None);
    assert_eq!(delete_request.header("x-api-key"), Some(KEY));
    assert_eq!(delete_request.header("authorization"), None);
    assert_eq!(export_request.header("authorization"), None);
    assert_eq!(get.request().unwrap().credentials, ["scheme bearerAuth"]);
    assert_eq!(delete.request().unwrap().credentials, ["scheme apiKey"]);
    assert!(export.request().unwrap().credentials.is_empty());
    for outcome in [&get, &delete, &export] {
        assert!(outcome.is_success(), "{outcome}");
        for text in shown(outcome) {
            assert!(!text.contains(TOKEN) && !text.contains(KEY), "{text}");
        }
    }
}

const QUERY_AND_BASIC: &str = "
openapi: 3.0.0
info: {title: t, version: '1'}
paths:
  /notes/echo:
    get:
      operationId: echo
      security: [{queryKey: []}]
      parameters: [{name: api_key, in: query, schema: {type: string}}]
  /notes/1:
    get:
      operationId: basic
      security: [{basicAuth: []}]
components:
  securitySchemes:
    queryKey: {type: apiKey, in: query, name: api_key}
    basicAuth: {type: http, scheme: basic}
";

#[tokio::test]
async fn query_keys_and_basic_auth_are_added_at_send_time_only() {
    let server = Server::start().await;
    let catalog = Catalog::parse(QUERY_AND_BASIC).unwrap();
    let credentials = Credentials::new()
        .with_scheme("queryKey", Secret::new(KEY))
        .with_scheme("basicAuth", Secret::new("ada:lovelace-1815"));
    let config = ExecutorConfig {
        base_url: Some(server.base_url.clone()),
        credentials,
        ..ExecutorConfig::default()
    };
    let executor = Executor::new(&catalog, config.clone()).unwrap();

    // A value the model gives in a credential's place is not sent.
    let echo = executor
        .call(
            catalog.get("echo").unwrap(),
            &json!({ "api_key": "guess" }),
            &AlwaysYes,
        )
        .await;
    let basic = executor
        .call(catalog.get("basic").unwrap(), &json!({}), &AlwaysYes)
        .await;

    let requests = server.requests();
    assert_eq!(requests[0].query, format!("api_key={KEY}"));
    assert_eq!(
        requests[1].header("authorization"),
        Some("Basic YWRhOmxvdmVsYWNlLTE4MTU=")
    );
    assert_eq!(
        echo.request().unwrap().url,
        format!("{}/notes/echo", server.base_url)
    );
    let Outcome::Response(echoed) = &echo else {
        panic!("{echo:?}");
    };
    assert!(
        echoed.body.contains(r#""query":"api_key=***""#),
        "{}",
        echoed.body
    );

    // A failure's message names no URL with the key in it.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let closed = format!("http://{}/v1", listener.local_addr().unwrap());
    drop(listener);
    let unreachable = Executor::new(
        &catalog,
        ExecutorConfig {
            base_url: Some(closed),
            ..config
        },
    )
    .unwrap();
    let failed = unreachable
        .call(catalog.get("echo").unwrap(), &json!({}), &AlwaysYes)
        .await;
    assert!(matches!(failed, Outcome::Failed(_)), "{failed:?}");

    for outcome in [&echo, &basic, &failed] {
        for text in shown(outcome) {
            for secret in [KEY, "lovelace-1815", "YWRhOmxvdmVsYWNlLTE4MTU="] {
                assert!(!text.contains(secret), "{secret} leaked: {text}");
            }
        }
    }
}

#[test]
fn secrets_print_as_stars() {
    let secret = Secret::new(TOKEN);
    let credentials = Credentials::new()
        .with_header("X-Token", secret.clone())
        .unwrap()
        .with_scheme("bearerAuth", secret.clone())
        .with_input("token", secret.clone())
        .unwrap();

    assert_eq!(format!("{secret} {secret:?}"), "*** ***");
    let debug = format!("{credentials:?}");
    assert_eq!(
        debug,
        r#"Credentials { headers: [("X-Token", ***)], schemes: {"bearerAuth": ***}, inputs: [("token", ***)] }"#
    );
    assert_eq!(credentials.redact(&format!("?token={TOKEN}")), "?token=***");
    assert_eq!(secret.expose(), TOKEN);
}

#[test]
fn a_bad_header_line_is_refused_without_quoting_it() {
    for line in [
        format!("Bearer {TOKEN}"),
        format!("Bad Name: {TOKEN}"),
        format!("X-Token: {TOKEN}\r\nX-Other: 1"),
    ] {
        let error = Credentials::new().with_header_line(&line).unwrap_err();
        let text = format!("{error} {error:?}");
        assert!(!text.contains(TOKEN), "{text}");
    }
}

#[test]
fn a_bad_credential_input_is_refused_without_quoting_it() {
    for pair in [
        TOKEN.to_string(),
        format!("={TOKEN}"),
        format!("two words={TOKEN}"),
        format!("token={TOKEN}\nmore"),
    ] {
        let error = Credentials::new().with_input_pair(&pair).unwrap_err();
        let text = format!("{error} {error:?}");
        assert!(!text.contains(TOKEN), "{text}");
    }
    let credentials = Credentials::new()
        .with_input_pair(&format!("Token={TOKEN}"))
        .unwrap();
    assert!(credentials.provides("token"), "names compare without case");
    assert!(!credentials.provides("api_key"));
}

/// A credential long enough to be cut well inside.
const LONG: &str = "sk-walkrag-LONGSECRET-abcdefghijklmnopqrstuvwxyz-0123456789";

const PADDED: &str = "
openapi: 3.0.0
info: {title: t, version: '1'}
paths:
  /notes/padded:
    get:
      operationId: padded
      parameters: [{name: pad, in: query, required: true, schema: {type: integer}}]
  /notes/broken:
    get:
      operationId: broken
      parameters:
        - {name: pad, in: query, required: true, schema: {type: integer}}
        - {name: keep, in: query, required: true, schema: {type: integer}}
";

/// Every prefix of `secret` at least 4 bytes long that `text` holds.
fn prefixes_in(text: &str, secret: &str) -> Vec<String> {
    (4..=secret.len())
        .map(|n| &secret[..n])
        .filter(|prefix| text.contains(prefix))
        .map(str::to_string)
        .collect()
}

/// Fails if any way of showing `outcome` holds 4 bytes or more of the start of `secret`.
fn assert_no_prefix(outcome: &Outcome, secret: &str, case: &str) {
    for text in shown(outcome) {
        let found = prefixes_in(&text, secret);
        assert!(found.is_empty(), "{case}: {found:?} showed in {text}");
    }
}

#[tokio::test]
async fn a_credential_cut_at_the_budget_leaves_no_start_of_it() {
    let server = Server::start().await;
    let catalog = Catalog::parse(PADDED).unwrap();
    let header = format!("Bearer {LONG}");
    let credentials = Credentials::new()
        .with_header_line(&format!("Authorization: {header}"))
        .unwrap();
    let pad = 100;
    // The budget ends 1, 6 and 34 bytes into the header's value, and as far into its token.
    let cuts = [1, 6, 34].into_iter().flat_map(|k| {
        [
            (format!("a cut {k} bytes into the header value"), k),
            (
                format!("a cut {k} bytes into the token"),
                "Bearer ".len() + k,
            ),
        ]
    });
    for (case, into) in cuts {
        let executor = Executor::new(
            &catalog,
            ExecutorConfig {
                base_url: Some(server.base_url.clone()),
                credentials: credentials.clone(),
                max_response_bytes: pad + into,
                ..ExecutorConfig::default()
            },
        )
        .unwrap();
        let outcome = executor
            .call(
                catalog.get("padded").unwrap(),
                &json!({ "pad": pad }),
                &AlwaysYes,
            )
            .await;
        let Outcome::Response(response) = &outcome else {
            panic!("{case}: {outcome:?}");
        };
        // The cut moved back to where the credential starts; nothing before it was lost.
        assert_eq!(response.body, ".".repeat(pad), "{case}");
        assert_eq!(response.cut.map(|cut| cut.shown), Some(pad), "{case}");
        for secret in [header.as_str(), LONG] {
            assert_no_prefix(&outcome, secret, &case);
        }
    }

    // Whole inside the budget, it is replaced; the text after it is cut as usual.
    let executor = Executor::new(
        &catalog,
        ExecutorConfig {
            base_url: Some(server.base_url.clone()),
            credentials: credentials.clone(),
            max_response_bytes: pad + header.len() + 9,
            ..ExecutorConfig::default()
        },
    )
    .unwrap();
    let outcome = executor
        .call(
            catalog.get("padded").unwrap(),
            &json!({ "pad": pad }),
            &AlwaysYes,
        )
        .await;
    let Outcome::Response(response) = &outcome else {
        panic!("{outcome:?}");
    };
    assert_eq!(
        response.body,
        format!("{}*** was the ", ".".repeat(pad)),
        "the text after the credential is kept up to the budget"
    );
    assert_no_prefix(&outcome, LONG, "a credential inside the budget");
}

#[tokio::test]
async fn a_body_broken_off_inside_a_credential_leaves_no_start_of_it() {
    let server = Server::start().await;
    let catalog = Catalog::parse(PADDED).unwrap();
    let header = format!("Bearer {LONG}");
    let executor = Executor::new(
        &catalog,
        ExecutorConfig {
            base_url: Some(server.base_url.clone()),
            credentials: Credentials::new()
                .with_header_line(&format!("Authorization: {header}"))
                .unwrap(),
            ..ExecutorConfig::default()
        },
    )
    .unwrap();
    for keep in [1, 6, 34] {
        let case = format!("a body broken off {keep} bytes into the credential");
        let outcome = executor
            .call(
                catalog.get("broken").unwrap(),
                &json!({ "pad": 10, "keep": keep }),
                &AlwaysYes,
            )
            .await;
        let Outcome::Response(response) = &outcome else {
            panic!("{case}: {outcome:?}");
        };
        assert!(
            response
                .notes
                .iter()
                .any(|n| n.starts_with("reading the body failed")),
            "{case}: {response:?}"
        );
        assert_eq!(response.body, ".".repeat(10), "{case}");
        for secret in [header.as_str(), LONG] {
            assert_no_prefix(&outcome, secret, &case);
        }
    }
}

/// An API at `api` with one operation on its own origin and one whose `servers` entry sends
/// it to `foreign`.
fn two_origins(api: &str, foreign: &str) -> Catalog {
    let root = api.trim_end_matches("/v1");
    Catalog::parse(&format!(
        "
openapi: 3.0.0
info: {{title: t, version: '1'}}
servers: [{{url: '{api}'}}]
paths:
  /notes/echo:
    get:
      operationId: home
      security: [{{bearerAuth: []}}]
      parameters: [{{name: token, in: query, schema: {{type: string}}}}]
  /v1/notes/1:
    get:
      operationId: sameOrigin
      servers: [{{url: '{root}'}}]
      security: [{{bearerAuth: []}}]
  /notes/1:
    delete:
      operationId: elsewhere
      servers: [{{url: '{foreign}'}}]
      security: [{{bearerAuth: []}}]
      parameters: [{{name: token, in: query, schema: {{type: string}}}}]
components:
  securitySchemes:
    bearerAuth: {{type: http, scheme: bearer}}
"
    ))
    .unwrap()
}

#[tokio::test]
async fn credentials_go_only_to_the_apis_origin() {
    let (logs, _capture) = Logs::capture();
    let api = Server::start().await;
    let foreign = Server::start().await;
    let catalog = two_origins(&api.base_url, &foreign.base_url);
    let credentials = Credentials::new()
        .with_scheme("bearerAuth", Secret::new(TOKEN))
        .with_header_line(&format!("X-API-Key: {KEY}"))
        .unwrap()
        .with_input("token", Secret::new(LONG))
        .unwrap();
    // No base URL: the spec's top-level server is the API's address.
    let executor = Executor::new(
        &catalog,
        ExecutorConfig {
            credentials: credentials.clone(),
            ..ExecutorConfig::default()
        },
    )
    .unwrap();
    let previews: Mutex<Vec<RequestPreview>> = Mutex::default();
    let confirm = |preview: &RequestPreview| {
        previews.lock().unwrap().push(preview.clone());
        true
    };

    let home = executor
        .call(catalog.get("home").unwrap(), &json!({}), &confirm)
        .await;
    let same = executor
        .call(catalog.get("sameOrigin").unwrap(), &json!({}), &confirm)
        .await;
    let elsewhere = executor
        .call(catalog.get("elsewhere").unwrap(), &json!({}), &confirm)
        .await;

    // The API's own origin, with another base path too, gets every credential.
    let [home_request, same_request] = &api.requests()[..] else {
        panic!("two requests to the API: {:#?}", api.requests());
    };
    for request in [home_request, same_request] {
        assert_eq!(
            request.header("authorization"),
            Some(&*format!("Bearer {TOKEN}"))
        );
        assert_eq!(request.header("x-api-key"), Some(KEY));
    }
    assert_eq!(home_request.query, format!("token={LONG}"));
    assert_eq!(
        home.request().unwrap().credentials,
        ["header X-API-Key", "scheme bearerAuth", "input token"]
    );
    assert_eq!(home.request().unwrap().withheld, None);
    assert_eq!(same.request().unwrap().withheld, None);

    // The other origin gets none, and the user confirming it is told so, by name only.
    let received = foreign.only_request();
    assert_eq!(received.method, "DELETE");
    assert_eq!(received.header("authorization"), None);
    assert_eq!(received.header("x-api-key"), None);
    assert_eq!(received.query, "");
    let previews = previews.into_inner().unwrap();
    let [preview] = &previews[..] else {
        panic!("only the DELETE is confirmed: {previews:#?}");
    };
    assert!(preview.credentials.is_empty(), "{preview:?}");
    let withheld = preview.withheld.as_ref().expect("credentials withheld");
    assert_eq!(
        withheld.credentials,
        ["header X-API-Key", "scheme bearerAuth", "input token"]
    );
    let origin_of = |base: &str| base.trim_end_matches("/v1").to_string();
    assert_eq!(withheld.origin, origin_of(&foreign.base_url));
    assert_eq!(withheld.api_origin, origin_of(&api.base_url));
    let rendered = preview.to_string();
    assert!(
        rendered.contains(&format!(
            "(credentials withheld: header X-API-Key, scheme bearerAuth, input token; the \
             request goes to {}, and credentials go only to the API's origin, {})",
            withheld.origin, withheld.api_origin
        )),
        "{rendered}"
    );
    assert_eq!(elsewhere.request(), Some(preview));
    let Outcome::Response(response) = &elsewhere else {
        panic!("{elsewhere:?}");
    };
    assert!(
        response
            .notes
            .iter()
            .any(|n| n.starts_with("credentials withheld: header X-API-Key")),
        "the model is told too: {response:?}"
    );

    let logs = logs.text();
    assert!(logs.contains("credentials withheld"), "{logs}");
    let mut everything: Vec<String> = [&home, &same, &elsewhere]
        .into_iter()
        .flat_map(shown)
        .collect();
    everything.push(format!("{preview}\n{preview:?}"));
    everything.push(serde_json::to_string(preview).unwrap());
    everything.push(logs);
    for text in everything {
        for secret in [TOKEN, KEY, LONG] {
            assert!(
                prefixes_in(&text, secret).is_empty(),
                "{secret} leaked: {text}"
            );
        }
    }
}

#[tokio::test]
async fn a_configured_base_url_takes_every_operation_and_its_credentials() {
    let api = Server::start().await;
    let foreign = Server::start().await;
    let catalog = two_origins(&api.base_url, &foreign.base_url);
    let executor = Executor::new(
        &catalog,
        ExecutorConfig {
            base_url: Some(api.base_url.clone()),
            credentials: Credentials::new().with_scheme("bearerAuth", Secret::new(TOKEN)),
            ..ExecutorConfig::default()
        },
    )
    .unwrap();

    let outcome = executor
        .call(catalog.get("elsewhere").unwrap(), &json!({}), &AlwaysYes)
        .await;

    assert_eq!(foreign.count(), 0);
    assert_eq!(
        api.only_request().header("authorization"),
        Some(&*format!("Bearer {TOKEN}"))
    );
    let request = outcome.request().unwrap();
    assert_eq!(request.credentials, ["scheme bearerAuth"]);
    assert_eq!(request.withheld, None);
}
