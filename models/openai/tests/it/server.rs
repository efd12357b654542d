//! A real HTTP/1.1 server on 127.0.0.1 for the client to talk to, answering each connection
//! with the next scripted response, written by hand: chunked or fixed-length bodies, pauses
//! between writes, cuts, and connections held open until the client gives up.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;

/// One thing the server does on a connection, in order. When the steps are done the server
/// closes the connection.
pub enum Step {
    Write(Vec<u8>),
    Pause(Duration),
    /// Write nothing more; wait for the client to close the connection, and report it.
    AwaitClose,
}

/// A request as the server received it.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    pub path: String,
    headers: Vec<(String, String)>,
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
    closed: Arc<Notify>,
}

impl Server {
    /// Serves `scripts[i]` on the `i`-th connection (every response closes its connection, so
    /// that is the `i`-th request); later connections get a 500.
    pub async fn start(scripts: Vec<Vec<Step>>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
        let server = Self {
            base_url,
            requests: Arc::default(),
            closed: Arc::default(),
        };
        let (requests, closed) = (Arc::clone(&server.requests), Arc::clone(&server.closed));
        tokio::spawn(async move {
            let mut scripts = scripts.into_iter();
            while let Ok((socket, _)) = listener.accept().await {
                let script = scripts
                    .next()
                    .unwrap_or_else(|| reply(500, &[], "unscripted"));
                tokio::spawn(serve(
                    socket,
                    script,
                    Arc::clone(&requests),
                    Arc::clone(&closed),
                ));
            }
        });
        server
    }

    /// The requests received so far.
    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }

    /// Whether a connection in [`Step::AwaitClose`] saw the client close it within `limit`.
    pub async fn saw_close_within(&self, limit: Duration) -> bool {
        tokio::time::timeout(limit, self.closed.notified())
            .await
            .is_ok()
    }
}

async fn serve(
    mut socket: TcpStream,
    script: Vec<Step>,
    requests: Arc<Mutex<Vec<Request>>>,
    closed: Arc<Notify>,
) {
    socket.set_nodelay(true).unwrap();
    let Some(request) = read_request(&mut socket).await else {
        return;
    };
    requests.lock().unwrap().push(request);
    for step in script {
        match step {
            Step::Write(bytes) => {
                if socket.write_all(&bytes).await.is_err() {
                    return;
                }
            }
            Step::Pause(duration) => tokio::time::sleep(duration).await,
            Step::AwaitClose => {
                let mut buf = [0u8; 256];
                while let Ok(1..) = socket.read(&mut buf).await {}
                closed.notify_one();
                return;
            }
        }
    }
    let _ = socket.shutdown().await;
}

/// Reads one request: head up to the blank line, then `Content-Length` bytes of body.
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
    let (method, path) = (
        request_line.next()?.to_string(),
        request_line.next()?.to_string(),
    );
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_string(), value.trim().to_string()))
        .collect();
    let mut request = Request {
        method,
        path,
        headers,
        body: data[head_end + 4..].to_vec(),
    };
    let length: usize = request
        .header("content-length")
        .map_or(0, |v| v.parse().unwrap());
    while request.body.len() < length {
        let n = socket.read(&mut buf).await.ok().filter(|&n| n > 0)?;
        request.body.extend_from_slice(&buf[..n]);
    }
    Some(request)
}

/// A complete response with a fixed-length body.
pub fn reply(status: u16, headers: &[(&str, &str)], body: &str) -> Vec<Step> {
    let mut head = format!(
        "HTTP/1.1 {status} Scripted\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("Connection: close\r\n\r\n");
    vec![Step::Write(format!("{head}{body}").into_bytes())]
}

/// The head of a 200 event stream with a chunked body.
pub fn sse_head() -> Step {
    Step::Write(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\
          Connection: close\r\n\r\n"
            .to_vec(),
    )
}

/// One chunk of a chunked body.
pub fn chunk(data: &str) -> Step {
    Step::Write(format!("{:x}\r\n{data}\r\n", data.len()).into_bytes())
}

/// The end of a chunked body.
pub fn end() -> Step {
    Step::Write(b"0\r\n\r\n".to_vec())
}

/// A whole event stream: each piece in its own chunk and TCP write, a few milliseconds apart.
pub fn sse(pieces: &[&str]) -> Vec<Step> {
    let mut steps = vec![sse_head()];
    for piece in pieces {
        steps.push(chunk(piece));
        steps.push(Step::Pause(Duration::from_millis(5)));
    }
    steps.push(end());
    steps
}

/// An SSE event carrying `value` as JSON.
pub fn event(value: Value) -> String {
    format!("data: {value}\n\n")
}

/// A chunk that adds `content` to the answer.
pub fn text(content: &str) -> String {
    event(json!({"choices": [{"index": 0, "delta": {"content": content}, "finish_reason": null}]}))
}

/// The chunk that says why the answer ended.
pub fn finish(reason: &str) -> String {
    event(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]}))
}

/// The usage chunk `stream_options.include_usage` asks for.
pub fn usage(prompt: usize, completion: usize) -> String {
    event(json!({"choices": [], "usage": {
        "prompt_tokens": prompt, "completion_tokens": completion,
        "total_tokens": prompt + completion
    }}))
}

pub const DONE: &str = "data: [DONE]\n\n";
