//! A fake embeddings server for tests (feature `testing`): a real HTTP/1.1 server on
//! 127.0.0.1 that speaks the OpenAI `/v1/embeddings` protocol with made-up vectors (hashed
//! bags of words, so texts that share words are near) and misbehaves on command, the way
//! `st-server.py`'s `x-fault` header does: 429 with `Retry-After`, 500, a dropped connection, a
//! vector one value short, an answer slower than the client's timeout. No model, no torch.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

/// What the server does with one request.
#[derive(Debug, Clone, PartialEq)]
pub enum Fault {
    /// Answers the vectors.
    None,
    /// 429 with `Retry-After: SECONDS`.
    TooMany { retry_after: u32 },
    /// 500 with an error body.
    ServerError,
    /// Closes the connection without answering.
    Drop,
    /// Answers vectors one value short.
    WrongDimension,
    /// Waits this long, then answers.
    Slow(Duration),
    /// 401 whose message echoes the bearer token it was sent (as some proxies do).
    EchoKey,
}

/// Which fault the `n`-th request (0-based, counted over the server's life) gets.
pub type Schedule = dyn Fn(usize) -> Fault + Send + Sync;

/// The length of the fake vectors.
pub const FAKE_DIM: usize = 64;

struct Shared {
    schedule: Mutex<Arc<Schedule>>,
    requests: AtomicUsize,
    texts: AtomicUsize,
    authorizations: Mutex<Vec<String>>,
    stop: AtomicBool,
}

/// A running fake server; stops when dropped.
pub struct FakeEmbeddingServer {
    port: u16,
    shared: Arc<Shared>,
}

impl FakeEmbeddingServer {
    /// Starts a server on a free port of 127.0.0.1 that answers every request.
    pub fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let port = listener.local_addr().expect("local address").port();
        let shared = Arc::new(Shared {
            schedule: Mutex::new(Arc::new(|_| Fault::None)),
            requests: AtomicUsize::new(0),
            texts: AtomicUsize::new(0),
            authorizations: Mutex::new(Vec::new()),
            stop: AtomicBool::new(false),
        });
        let accepting = shared.clone();
        thread::spawn(move || {
            for stream in listener.incoming() {
                if accepting.stop.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let shared = accepting.clone();
                thread::spawn(move || serve_connection(stream, &shared));
            }
        });
        Self { port, shared }
    }

    /// The base URL to give the client (`http://127.0.0.1:PORT/v1`).
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// `127.0.0.1:PORT`, as the client's errors name the server.
    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Replaces the schedule; request numbers keep counting from where they are.
    pub fn set_schedule(&self, schedule: impl Fn(usize) -> Fault + Send + Sync + 'static) {
        *self.shared.schedule.lock().expect("schedule lock") = Arc::new(schedule);
    }

    /// Requests received so far (answered or not).
    pub fn requests(&self) -> usize {
        self.shared.requests.load(Ordering::SeqCst)
    }

    /// Texts embedded and answered so far.
    pub fn texts_embedded(&self) -> usize {
        self.shared.texts.load(Ordering::SeqCst)
    }

    /// The `Authorization` headers received, in order.
    pub fn authorizations(&self) -> Vec<String> {
        self.shared
            .authorizations
            .lock()
            .expect("authorizations lock")
            .clone()
    }
}

impl Drop for FakeEmbeddingServer {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        // Wakes the accepting thread so that it sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// The fake vector of a text: each lower-cased word adds 1 at a hashed position, normalised.
pub fn fake_vector(text: &str) -> Vec<f32> {
    let mut v = vec![0.0f32; FAKE_DIM];
    for word in text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        let mut hasher = DefaultHasher::new();
        word.to_lowercase().hash(&mut hasher);
        v[(hasher.finish() % FAKE_DIM as u64) as usize] += 1.0;
    }
    v[0] += 0.01;
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter().map(|x| x / norm).collect()
}

fn serve_connection(stream: TcpStream, shared: &Shared) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(60)));
    let mut reader = BufReader::new(stream.try_clone().expect("clone the stream"));
    let mut writer = stream;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
        let mut length = 0;
        let mut authorization = None;
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 {
                return;
            }
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                match name.trim().to_ascii_lowercase().as_str() {
                    "content-length" => length = value.trim().parse().unwrap_or(0),
                    "authorization" => authorization = Some(value.trim().to_string()),
                    _ => {}
                }
            }
        }
        let mut body = vec![0u8; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let n = shared.requests.fetch_add(1, Ordering::SeqCst);
        if let Some(auth) = &authorization {
            shared
                .authorizations
                .lock()
                .expect("authorizations lock")
                .push(auth.clone());
        }
        let schedule = shared.schedule.lock().expect("schedule lock").clone();
        let fault = schedule(n);
        let (status, extra, answer) = match fault {
            Fault::Drop => {
                let _ = writer.shutdown(Shutdown::Both);
                return;
            }
            Fault::TooMany { retry_after } => (
                "429 Too Many Requests",
                format!("retry-after: {retry_after}\r\n"),
                r#"{"error": {"message": "rate limited"}}"#.to_string(),
            ),
            Fault::ServerError => (
                "500 Internal Server Error",
                String::new(),
                r#"{"error": {"message": "internal error"}}"#.to_string(),
            ),
            Fault::EchoKey => (
                "401 Unauthorized",
                String::new(),
                serde_json::json!({"error": {"message": format!("bad key {}", authorization.unwrap_or_default())}})
                    .to_string(),
            ),
            fault => {
                if let Fault::Slow(wait) = fault {
                    thread::sleep(wait);
                }
                match embeddings(&path, &body, fault == Fault::WrongDimension) {
                    Ok((answer, texts)) => {
                        shared.texts.fetch_add(texts, Ordering::SeqCst);
                        ("200 OK", String::new(), answer)
                    }
                    Err(message) => (
                        "400 Bad Request",
                        String::new(),
                        serde_json::json!({"error": {"message": message}}).to_string(),
                    ),
                }
            }
        };
        let head = format!(
            "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n{extra}\r\n",
            answer.len()
        );
        if writer
            .write_all(head.as_bytes())
            .and_then(|()| writer.write_all(answer.as_bytes()))
            .and_then(|()| writer.flush())
            .is_err()
        {
            return;
        }
    }
}

/// The response body for an embeddings request, and how many texts it embedded.
fn embeddings(path: &str, body: &[u8], short: bool) -> Result<(String, usize), String> {
    if path.trim_end_matches('/') != "/v1/embeddings" {
        return Err(format!("no route {path}"));
    }
    let request: serde_json::Value =
        serde_json::from_slice(body).map_err(|e| format!("bad JSON: {e}"))?;
    let texts: Vec<String> = match &request["input"] {
        serde_json::Value::String(text) => vec![text.clone()],
        serde_json::Value::Array(items) => items
            .iter()
            .map(|t| {
                t.as_str()
                    .map(str::to_string)
                    .ok_or("input must be strings")
            })
            .collect::<Result<_, _>>()?,
        _ => return Err("body must be {\"model\": str, \"input\": str | [str]}".into()),
    };
    let data: Vec<serde_json::Value> = texts
        .iter()
        .enumerate()
        .map(|(i, text)| {
            let mut v = fake_vector(text);
            if short {
                v.pop();
            }
            serde_json::json!({"object": "embedding", "index": i, "embedding": v})
        })
        .collect();
    let answer = serde_json::json!({
        "object": "list",
        "data": data,
        "model": request["model"],
        "usage": {"prompt_tokens": 0, "total_tokens": 0}
    });
    Ok((answer.to_string(), texts.len()))
}
