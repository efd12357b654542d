//! The `openai:` embedder against a fake server on 127.0.0.1: batching, the query cache, and
//! each fault `st-server.py`'s `x-fault` header can cause (429 then 200, 500, a dropped
//! connection, a wrong dimension, a server slower than the timeout), retried or refused with a
//! message naming the server and never the key.

use std::time::{Duration, Instant};

use walkrag_embed::testing::{fake_vector, FakeEmbeddingServer, Fault, FAKE_DIM};
use walkrag_embed::{ApiKey, EmbedError, Embedder, OpenAiEmbedder, RemoteConfig};

/// A client of `server` with short delays, so that retries cost milliseconds.
fn config(server: &FakeEmbeddingServer) -> RemoteConfig {
    RemoteConfig {
        batch: 4,
        concurrency: 3,
        timeout: Duration::from_secs(5),
        max_retries: 2,
        retry_base_delay: Duration::from_millis(10),
        retry_max_delay: Duration::from_secs(2),
        ..RemoteConfig::new(server.base_url(), "fake-model")
    }
}

fn texts(n: usize) -> Vec<String> {
    (0..n)
        .map(|i| format!("passage {i} about lighthouse {}", i % 7))
        .collect()
}

/// Equal to the fake server's vector up to the client's renormalisation.
fn assert_fake(text: &str, vector: &[f32]) {
    let expected = fake_vector(text);
    assert_eq!(vector.len(), expected.len());
    assert!(
        vector
            .iter()
            .zip(&expected)
            .all(|(a, b)| (a - b).abs() < 1e-6),
        "{text}: {vector:?}"
    );
}

fn embed_all(embedder: &OpenAiEmbedder, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    Ok(embedder.embed(&refs)?.rows().map(<[f32]>::to_vec).collect())
}

#[test]
fn batches_in_flight_come_back_in_order() {
    let server = FakeEmbeddingServer::start();
    let embedder = OpenAiEmbedder::connect(config(&server)).unwrap();
    assert_eq!(embedder.dim(), FAKE_DIM);
    assert_eq!(
        embedder.id(),
        format!("openai:fake-model@{} (dim {FAKE_DIM})", server.host())
    );
    let texts = texts(37);
    let vectors = embed_all(&embedder, &texts).unwrap();
    for (text, vector) in texts.iter().zip(&vectors) {
        assert_fake(text, vector);
    }
    // The probe, then 37 texts in batches of 4.
    assert_eq!(server.requests(), 1 + 10);
    assert_eq!(embedder.max_tokens(), 256, "chunked by MiniLM's tokenizer");
}

#[test]
fn a_query_is_one_request_and_cached() {
    let server = FakeEmbeddingServer::start();
    let embedder = OpenAiEmbedder::connect(config(&server)).unwrap();
    let first = embedder.embed_one("where is the lighthouse").unwrap();
    let again = embedder.embed_one("where is the lighthouse").unwrap();
    assert_eq!(first, again);
    assert_fake("where is the lighthouse", &first);
    assert_eq!(server.requests(), 1 + 1);
}

#[test]
fn rate_limits_are_waited_out_as_the_server_asks() {
    let server = FakeEmbeddingServer::start();
    let embedder = OpenAiEmbedder::connect(config(&server)).unwrap();
    server.set_schedule(|n| {
        if n == 1 {
            Fault::TooMany { retry_after: 1 }
        } else {
            Fault::None
        }
    });
    let started = Instant::now();
    let vectors = embed_all(&embedder, &texts(3)).unwrap();
    assert!(
        started.elapsed() >= Duration::from_millis(950),
        "Retry-After: 1 honoured, not the 10 ms backoff: {:?}",
        started.elapsed()
    );
    assert_eq!(vectors.len(), 3);
    assert_eq!(server.requests(), 1 + 2);
}

#[test]
fn a_server_error_or_a_dropped_connection_is_retried() {
    let server = FakeEmbeddingServer::start();
    let embedder = OpenAiEmbedder::connect(config(&server)).unwrap();
    // Of the 5 batches, the second request gets a 500 and the fourth a dropped connection.
    server.set_schedule(|n| match n {
        2 => Fault::ServerError,
        4 => Fault::Drop,
        _ => Fault::None,
    });
    let texts = texts(20);
    let vectors = embed_all(&embedder, &texts).unwrap();
    for (text, vector) in texts.iter().zip(&vectors) {
        assert_fake(text, vector);
    }
    assert_eq!(server.requests(), 1 + 5 + 2);
}

#[test]
fn a_server_that_keeps_failing_is_given_up_on_with_its_name() {
    let server = FakeEmbeddingServer::start();
    let embedder = OpenAiEmbedder::connect(config(&server)).unwrap();
    server.set_schedule(|_| Fault::ServerError);
    let err = embed_all(&embedder, &texts(2)).unwrap_err().to_string();
    assert!(err.contains(&server.host()), "{err}");
    assert!(err.contains("HTTP 500 (internal error)"), "{err}");
    assert!(err.contains("gave up after 3 attempts"), "{err}");

    server.set_schedule(|_| Fault::Drop);
    let err = embed_all(&embedder, &texts(2)).unwrap_err().to_string();
    assert!(err.contains("dropped the connection"), "{err}");
}

#[test]
fn a_wrong_dimension_is_refused_at_once() {
    let server = FakeEmbeddingServer::start();
    let embedder = OpenAiEmbedder::connect(config(&server)).unwrap();
    server.set_schedule(|_| Fault::WrongDimension);
    let before = server.requests();
    let err = embed_all(&embedder, &texts(3)).unwrap_err().to_string();
    assert!(err.contains(&server.host()), "{err}");
    assert!(
        err.contains(&format!(
            "{} values where the model gave {FAKE_DIM}",
            FAKE_DIM - 1
        )),
        "{err}"
    );
    assert_eq!(server.requests(), before + 1, "not retried");
}

#[test]
fn a_server_slower_than_the_timeout_is_retried_then_given_up_on() {
    let server = FakeEmbeddingServer::start();
    let embedder = OpenAiEmbedder::connect(RemoteConfig {
        timeout: Duration::from_millis(300),
        max_retries: 1,
        ..config(&server)
    })
    .unwrap();
    server.set_schedule(|_| Fault::Slow(Duration::from_secs(3)));
    let started = Instant::now();
    let err = embed_all(&embedder, &texts(1)).unwrap_err().to_string();
    assert!(err.contains("did not answer within 0.3 s"), "{err}");
    assert!(err.contains("gave up after 2 attempts"), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );

    // Slow once, then quick: the retry answers.
    server.set_schedule({
        let first = server.requests();
        move |n| {
            if n == first {
                Fault::Slow(Duration::from_secs(3))
            } else {
                Fault::None
            }
        }
    });
    assert_eq!(embed_all(&embedder, &texts(1)).unwrap().len(), 1);
}

#[test]
fn the_key_is_sent_but_never_shown() {
    let server = FakeEmbeddingServer::start();
    let embedder = OpenAiEmbedder::connect(RemoteConfig {
        api_key: Some(ApiKey::new("sk-test-secret-1234")),
        ..config(&server)
    })
    .unwrap();
    assert_eq!(server.authorizations(), ["Bearer sk-test-secret-1234"]);
    server.set_schedule(|_| Fault::EchoKey);
    let err = embed_all(&embedder, &texts(1)).unwrap_err().to_string();
    assert!(err.contains("HTTP 401"), "{err}");
    assert!(err.contains("check OPENAI_API_KEY"), "{err}");
    assert!(!err.contains("sk-test-secret-1234"), "{err}");
    assert!(!format!("{embedder:?}").contains("sk-test-secret-1234"));
}

#[test]
fn an_unreachable_server_fails_at_connection_naming_it() {
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let host = format!("127.0.0.1:{port}");
    let err = OpenAiEmbedder::connect(RemoteConfig {
        max_retries: 0,
        ..RemoteConfig::new(format!("http://{host}/v1"), "m")
    })
    .unwrap_err()
    .to_string();
    assert!(err.contains(&host), "{err}");
    assert!(err.contains("could not be reached"), "{err}");
}
