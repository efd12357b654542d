//! A real HTTP/1.1 server on 127.0.0.1 playing the notes API of `tests/data/notes.yaml`. It
//! records every request (method, path, query, headers, body) and answers by route: JSON for
//! notes, 404 for unknown notes, 500 for `/health`, a huge text body for `/export`, a
//! redirect, a slow answer, an echo of the request's headers, and the request's
//! `Authorization` after `pad` bytes (`/notes/padded`; `/notes/broken` sends only `keep` bytes
//! of it, then closes before the length it declared). One request per connection.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The `/export` body: 2-byte characters, so a cut at an odd byte lands inside one.
pub fn export_body() -> String {
    "é".repeat(600_000)
}

/// A request as the server received it.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    pub path: String,
    /// The raw query string (without `?`), empty when there was none.
    pub query: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    /// A header's value; names are case-insensitive.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("the request body is JSON")
    }
}

/// A running server; it stops with the test's runtime.
pub struct Server {
    /// `http://127.0.0.1:PORT/v1`.
    pub base_url: String,
    requests: Arc<Mutex<Vec<Request>>>,
}

impl Server {
    pub async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
        let requests: Arc<Mutex<Vec<Request>>> = Arc::default();
        let recorded = Arc::clone(&requests);
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                tokio::spawn(serve(socket, Arc::clone(&recorded)));
            }
        });
        Self { base_url, requests }
    }

    /// The requests received so far.
    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }

    pub fn count(&self) -> usize {
        self.requests.lock().unwrap().len()
    }

    /// The one request received; fails unless there was exactly one.
    pub fn only_request(&self) -> Request {
        let requests = self.requests();
        assert_eq!(requests.len(), 1, "{requests:#?}");
        requests.into_iter().next().unwrap()
    }
}

/// What the server sends back.
struct Reply {
    status: u16,
    headers: Vec<(&'static str, String)>,
    body: Vec<u8>,
    delay: Duration,
    /// Bytes `Content-Length` declares beyond the body, never sent: a broken answer.
    unsent: usize,
}

fn reply(status: u16, content_type: &str, body: impl Into<Vec<u8>>) -> Reply {
    Reply {
        status,
        headers: vec![("Content-Type", content_type.to_string())],
        body: body.into(),
        delay: Duration::ZERO,
        unsent: 0,
    }
}

/// A number from the request's query, 0 when absent.
fn query_number(request: &Request, name: &str) -> usize {
    request
        .query
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(key, _)| *key == name)
        .and_then(|(_, value)| value.parse().ok())
        .unwrap_or(0)
}

/// `pad` dots, then the request's `Authorization` value, then some text.
fn padded(request: &Request) -> Vec<u8> {
    let mut body = ".".repeat(query_number(request, "pad")).into_bytes();
    body.extend_from_slice(request.header("authorization").unwrap_or("").as_bytes());
    body.extend_from_slice(b" was the token you sent; the rest of the page follows.");
    body
}

fn json_reply(status: u16, body: Value) -> Reply {
    reply(status, "application/json", body.to_string())
}

/// The notes API.
fn route(request: &Request) -> Reply {
    let path = request.path.strip_prefix("/v1").unwrap_or(&request.path);
    let note = json!({ "id": "1", "title": "Shopping", "text": "milk", "status": "draft" });
    match (request.method.as_str(), path) {
        ("GET", "/notes") => json_reply(200, json!([note])),
        ("POST", "/notes") => {
            let mut created = request.json();
            created["id"] = "2".into();
            json_reply(201, created)
        }
        ("GET", "/notes/1") => json_reply(200, note),
        ("PUT" | "PATCH", "/notes/1") => {
            let mut changed = note;
            for (key, value) in request.json().as_object().unwrap() {
                changed[key] = value.clone();
            }
            json_reply(200, changed)
        }
        ("DELETE", "/notes/1") => reply(204, "text/plain", ""),
        ("GET", "/notes/echo") => {
            let headers: serde_json::Map<String, Value> = request
                .headers
                .iter()
                .map(|(k, v)| (k.to_ascii_lowercase(), Value::from(v.clone())))
                .collect();
            let echoed = json!({ "headers": headers, "query": request.query });
            json_reply(200, echoed)
        }
        ("GET", "/notes/moved") => Reply {
            headers: vec![("Location", "http://127.0.0.1:9/elsewhere".into())],
            ..reply(302, "text/plain", "moved")
        },
        ("GET", "/notes/slow") => Reply {
            delay: Duration::from_secs(5),
            ..json_reply(200, json!({}))
        },
        ("GET", "/notes/padded") => reply(200, "text/plain", padded(request)),
        ("GET", "/notes/broken") => {
            let mut body = padded(request);
            let sent = query_number(request, "pad") + query_number(request, "keep");
            let unsent = body.len().saturating_sub(sent);
            body.truncate(sent);
            Reply {
                unsent,
                ..reply(200, "text/plain", body)
            }
        }
        ("GET", "/export") => reply(200, "text/plain; charset=utf-8", export_body()),
        ("GET", "/health") => json_reply(500, json!({ "error": "the database is down" })),
        _ => json_reply(404, json!({ "error": format!("no note at {path}") })),
    }
}

async fn serve(mut socket: TcpStream, requests: Arc<Mutex<Vec<Request>>>) {
    let Some(request) = read_request(&mut socket).await else {
        return;
    };
    requests.lock().unwrap().push(request.clone());
    let reply = route(&request);
    tokio::time::sleep(reply.delay).await;
    let mut head = format!(
        "HTTP/1.1 {} {}\r\nContent-Length: {}\r\nConnection: close\r\n",
        reply.status,
        reason(reply.status),
        reply.body.len() + reply.unsent
    );
    for (name, value) in &reply.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    if socket.write_all(head.as_bytes()).await.is_ok() {
        let _ = socket.write_all(&reply.body).await;
    }
    let _ = socket.shutdown().await;
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        204 => "No Content",
        302 => "Found",
        404 => "Not Found",
        500 => "Internal Server Error",
        _ => "Other",
    }
}

/// Reads one request: the head up to the blank line, then `Content-Length` bytes of body.
async fn read_request(socket: &mut TcpStream) -> Option<Request> {
    let mut data = Vec::new();
    let mut buf = [0u8; 4096];
    let head_end = loop {
        if let Some(at) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
        let n = socket.read(&mut buf).await.ok().filter(|&n| n > 0)?;
        data.extend_from_slice(&buf[..n]);
    };
    let head = String::from_utf8(data[..head_end].to_vec()).ok()?;
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next()?.split(' ');
    let method = request_line.next()?.to_string();
    let target = request_line.next()?;
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_string(), value.trim().to_string()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, value)| value.parse().ok())
        .unwrap_or(0);
    let mut body = data[head_end + 4..].to_vec();
    while body.len() < length {
        let n = socket.read(&mut buf).await.ok().filter(|&n| n > 0)?;
        body.extend_from_slice(&buf[..n]);
    }
    Some(Request {
        method,
        path: path.to_string(),
        query: query.to_string(),
        headers,
        body,
    })
}
