//! `walkrag embed`: JSON Lines of texts in, JSON Lines of embeddings out.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use serde::{Deserialize, Serialize};
use walkrag_embed::DEFAULT_EMBEDDER;

/// Embed texts: reads `{"id": str, "text": str}` per line, writes `{"id": str, "embedding": [f32]}`.
///
/// Vectors are L2-normalised, in input order. The whole input is read and checked before
/// anything is written, so a bad line fails the run with nothing half-written.
///
/// Example: echo '{"id":"a","text":"hello"}' | walkrag embed
#[derive(clap::Args)]
pub struct Args {
    /// Embedding model: `minilm`, a sentence-transformers folder, a hub id, or `openai:MODEL`
    /// on an OpenAI-compatible server.
    #[arg(long, default_value = DEFAULT_EMBEDDER)]
    embedder: String,
    #[command(flatten)]
    remote: super::query::RemoteEmbedArgs,
    /// JSON Lines input file (default: stdin).
    #[arg(long)]
    input: Option<PathBuf>,
}

#[derive(Deserialize)]
struct Input {
    id: String,
    text: String,
}

#[derive(Serialize)]
struct Output<'a> {
    id: &'a str,
    embedding: &'a [f32],
}

/// Texts embedded per call: large enough for full batches, small enough to stream output.
const CHUNK: usize = 256;

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let inputs: Vec<Input> = super::read_jsonl(args.input.as_deref())?;
    let embedder = args.remote.load(&args.embedder)?;
    let bar = super::progress_bar(inputs.len() as u64, "embedding");
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    for chunk in inputs.chunks(CHUNK) {
        let texts: Vec<&str> = chunk.iter().map(|i| i.text.as_str()).collect();
        let vectors = embedder.embed(&texts)?;
        for (input, embedding) in chunk.iter().zip(vectors.rows()) {
            serde_json::to_writer(
                &mut out,
                &Output {
                    id: &input.id,
                    embedding,
                },
            )?;
            out.write_all(b"\n")?;
        }
        bar.inc(chunk.len() as u64);
    }
    out.flush().context("cannot write to stdout")?;
    bar.finish_and_clear();
    Ok(ExitCode::SUCCESS)
}
