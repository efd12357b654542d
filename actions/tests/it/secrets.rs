//! Credentials reach the server and nothing else: not previews, outcomes, errors, Debug
//! output or logs, and not a response that echoes them.

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
