//! The HTTP API in process on 127.0.0.1, with the walker's test doubles (a word-hashing
//! embedder) and a fake chat model that holds each generation until the test lets it go, so
//! queueing, refusals and cancellation are checked without depending on timing. The same API
//! with the real models, through the `walkrag serve` binary, is tested in cli/tests/it/serve.rs.
