//! `walkrag search`, `walkrag outline` and `walkrag show`: reading an index.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context};
use walkrag_embed::{Embedder, SentenceEmbedder};
use walkrag_engine::outline::{self, snippet};
use walkrag_engine::{ChunkRef, Index, IndexedDoc, Item, SearchOptions};
use walkrag_walker::output::{SearchHit, Shown};

/// Opens the index in `dir` and the embedder it was built with (or `spec`, if it matches).
pub fn open_with_embedder(
    dir: &Path,
    spec: Option<&str>,
) -> anyhow::Result<(Index, SentenceEmbedder)> {
    let index = Index::open(dir)?;
    let spec = spec.unwrap_or(&index.manifest().embedder.spec).to_string();
    let embedder = SentenceEmbedder::load(&spec)
        .with_context(|| format!("cannot load the embedder {spec:?} this index was built with"))?;
    index.check_embedder(&embedder)?;
    Ok((index, embedder))
}

/// Search the index: the chunks nearest to QUERY, best first.
///
/// Human output shows score, chunk id, document and section path, and the start of the text;
/// `walkrag show CHUNK_ID` prints a whole chunk. Exits 1 when nothing is found.
///
/// Example: walkrag search "revenue growth in Europe" -k 5 --json
#[derive(clap::Args)]
pub struct SearchArgs {
    query: String,
    /// Index directory.
    #[arg(long, default_value = super::DEFAULT_INDEX)]
    index: PathBuf,
    /// Number of chunks.
    #[arg(short, default_value_t = 10)]
    k: usize,
    /// One JSON object per hit.
    #[arg(long)]
    json: bool,
    /// Embedding model [default: the one the index was built with].
    #[arg(long)]
    embedder: Option<String>,
    /// Scan every vector instead of walking the HNSW graph.
    #[arg(long)]
    exact: bool,
    /// HNSW candidate list length [default: the index's].
    #[arg(long)]
    ef_search: Option<usize>,
}

pub fn search(args: SearchArgs) -> anyhow::Result<ExitCode> {
    let (index, embedder) = open_with_embedder(&args.index, args.embedder.as_deref())?;
    let query = embedder.embed_one(&args.query)?;
    let options = SearchOptions {
        ef_search: args.ef_search,
        exact: args.exact,
        keep: None,
    };
    let hits = index.search_with(&query, args.k, &options);
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for (i, hit) in hits.iter().enumerate() {
        let c = index.chunk(hit.row);
        if args.json {
            let line = SearchHit::new(&index, i + 1, hit);
            serde_json::to_writer(&mut out, &line)?;
            writeln!(out)?;
        } else {
            writeln!(
                out,
                "{:>2}. {:.3}  [{}] {}",
                i + 1,
                hit.score,
                c.id(),
                location(&c)
            )?;
            writeln!(out, "    {}", snippet(c.text(), 200))?;
        }
    }
    out.flush()?;
    Ok(if hits.is_empty() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// `doc › Section › Sub (p. 3)`.
fn location(c: &ChunkRef<'_>) -> String {
    let mut text = c.doc.id.0.clone();
    for heading in &c.section().path {
        text.push_str(" › ");
        text.push_str(heading);
    }
    if let Some(page) = c.chunk.page {
        text.push_str(&format!(" (p. {page})"));
    }
    text
}

/// Print the abridged outline: top-level sections with their first ~100 characters, deeper
/// sections collapsed behind their ids.
///
/// Expand a section with `walkrag show ID`. Without DOC_ID, every document is outlined.
///
/// Example: walkrag outline docs/report.md
#[derive(clap::Args)]
pub struct OutlineArgs {
    /// A document id (a path as indexed, or a corpus record's id).
    doc_id: Option<String>,
    /// Index directory.
    #[arg(long, default_value = super::DEFAULT_INDEX)]
    index: PathBuf,
    /// One JSON object per document.
    #[arg(long)]
    json: bool,
}

pub fn outline(args: OutlineArgs) -> anyhow::Result<ExitCode> {
    let index = Index::open(&args.index)?;
    let docs: Vec<&IndexedDoc> = match &args.doc_id {
        Some(id) => match index.resolve(id) {
            Some(Item::Document(doc)) => vec![doc],
            _ => bail!(
                "no document {id:?} in {}; `walkrag outline` lists them all",
                args.index.display()
            ),
        },
        None => index.documents().iter().collect(),
    };
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for doc in docs {
        let o = outline::outline(&doc.doc);
        if args.json {
            serde_json::to_writer(&mut out, &o)?;
            writeln!(out)?;
        } else {
            write!(out, "{}", outline::render(&o))?;
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// Print a section (with its subsections), a chunk or a whole document.
///
/// ID is a section id (`1a2b3c4d`), a chunk id (`1a2b3c4d.0`) or a document id, as shown by
/// `search` and `outline`.
///
/// Example: walkrag show 1a2b3c4d
#[derive(clap::Args)]
pub struct ShowArgs {
    id: String,
    /// Index directory.
    #[arg(long, default_value = super::DEFAULT_INDEX)]
    index: PathBuf,
    /// One JSON object.
    #[arg(long)]
    json: bool,
}

pub fn show(args: ShowArgs) -> anyhow::Result<ExitCode> {
    let index = Index::open(&args.index)?;
    let Some(item) = index.resolve(args.id.trim()) else {
        bail!(
            "no document, section or chunk {:?} in {}; ids come from `walkrag outline` and `walkrag search`",
            args.id,
            args.index.display()
        );
    };
    let shown = Shown::of(item);
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if args.json {
        serde_json::to_writer(&mut out, &shown)?;
        writeln!(out)?;
    } else {
        let mut place = shown.doc_id.to_string();
        for heading in shown.section_path {
            place.push_str(" › ");
            place.push_str(heading);
        }
        if let Some(page) = shown.page {
            place.push_str(&format!(" (p. {page})"));
        }
        writeln!(
            out,
            "{} {} · {} · bytes {}..{}",
            shown.kind, shown.id, place, shown.range[0], shown.range[1]
        )?;
        writeln!(out)?;
        writeln!(out, "{}", shown.text.trim_end())?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
