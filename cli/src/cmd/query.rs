//! `walkrag search`, `walkrag outline` and `walkrag show`: reading an index.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{bail, Context};
use walkrag_embed::{Embedder, RemoteConfig};
use walkrag_engine::outline::{self, snippet};
use walkrag_engine::{FolderStore, Index, IndexedDoc, Item, Passage, Resolved, Store, StoreSearch};
use walkrag_pgstore::PgStore;
use walkrag_walker::output::{SearchHit, Shown};

/// `--store`: where the index lives when it is not a folder.
#[derive(clap::Args, Clone, Default)]
pub struct StoreArg {
    /// The index in a PostgreSQL database with pgvector instead of the --index folder:
    /// postgres://USER:PASSWORD@HOST:PORT/DB (see docs/store.md).
    #[arg(
        long = "store",
        env = "WALKRAG_STORE",
        value_name = "URL",
        hide_env_values = true,
        conflicts_with = "index"
    )]
    pub url: Option<String>,
}

/// The store `--store` names, else the folder index `dir`.
pub fn open_store(dir: &Path, store: &StoreArg) -> anyhow::Result<Box<dyn Store>> {
    match store.url.as_deref() {
        None => Ok(Box::new(FolderStore::new(dir))),
        Some(url) if walkrag_pgstore::is_postgres_url(url) => Ok(Box::new(PgStore::connect(url)?)),
        Some(other) => bail!(
            "--store takes a postgres:// URL, not {:?}; a folder index is chosen with --index",
            walkrag_pgstore::redact(other)
        ),
    }
}

/// How an `openai:MODEL` embedder talks to its server (local embedders ignore these).
#[derive(clap::Args, Clone, Debug)]
#[command(next_help_heading = "Embedding server (--embedder openai:MODEL)")]
pub struct RemoteEmbedArgs {
    /// Requests in flight at once to the embedding server.
    #[arg(long, value_name = "N", default_value_t = RemoteConfig::new("", "").concurrency)]
    pub embed_concurrency: usize,
    /// Texts per request to the embedding server.
    #[arg(long, value_name = "N", default_value_t = RemoteConfig::new("", "").batch)]
    pub embed_batch: usize,
    /// Seconds one request to the embedding server may take before it is retried.
    #[arg(long, value_name = "SECS", default_value_t = RemoteConfig::new("", "").timeout.as_secs_f64())]
    pub embed_timeout: f64,
    /// Retries of a request that failed transiently (429, 5xx, a dropped connection, a
    /// timeout), with backoff or the server's Retry-After.
    #[arg(long, value_name = "N", default_value_t = RemoteConfig::new("", "").max_retries)]
    pub embed_retries: u32,
}

impl Default for RemoteEmbedArgs {
    fn default() -> Self {
        let config = RemoteConfig::new("", "");
        Self {
            embed_concurrency: config.concurrency,
            embed_batch: config.batch,
            embed_timeout: config.timeout.as_secs_f64(),
            embed_retries: config.max_retries,
        }
    }
}

impl RemoteEmbedArgs {
    /// The embedder `spec` names: a local model, or `openai:MODEL` on the server that
    /// WALKRAG_EMBED_BASE_URL (else OPENAI_BASE_URL) names, with these settings.
    pub fn load(&self, spec: &str) -> anyhow::Result<Box<dyn Embedder>> {
        anyhow::ensure!(
            self.embed_concurrency > 0 && self.embed_batch > 0,
            "--embed-concurrency and --embed-batch must be at least 1"
        );
        let timeout = std::time::Duration::try_from_secs_f64(self.embed_timeout)
            .ok()
            .filter(|t| !t.is_zero())
            .context("--embed-timeout must be a positive number of seconds")?;
        Ok(walkrag_embed::load(spec, |config| {
            config.concurrency = self.embed_concurrency;
            config.batch = self.embed_batch;
            config.timeout = timeout;
            config.max_retries = self.embed_retries;
        })?)
    }
}

/// Opens `store` with the embedder it was built with (or `spec`, if it matches).
pub fn store_with_embedder(
    store: &dyn Store,
    spec: Option<&str>,
    remote: &RemoteEmbedArgs,
) -> anyhow::Result<Box<dyn Embedder>> {
    let built = match store.embedder()? {
        Some(built) => built,
        None => return Err(store.not_found().into()),
    };
    let spec = spec.unwrap_or(&built.spec).to_string();
    let embedder = remote
        .load(&spec)
        .with_context(|| format!("cannot load the embedder {spec:?} this index was built with"))?;
    store.check_embedder(embedder.as_ref())?;
    Ok(embedder)
}

/// Opens the index (the folder `dir`, or the database `store` names, read into memory) and
/// the embedder it was built with (or `spec`, if it matches).
pub fn open_with_embedder(
    dir: &Path,
    store: &StoreArg,
    spec: Option<&str>,
    remote: &RemoteEmbedArgs,
) -> anyhow::Result<(Index, Box<dyn Embedder>)> {
    let index = match store.url {
        None => Index::open(dir)?,
        Some(_) => Arc::<dyn Store>::from(open_store(dir, store)?).load()?,
    };
    let embedder = embedder_for(&index, spec, remote)?;
    Ok((index, embedder))
}

/// The embedder `index` was built with (or `spec`, if it matches).
pub fn embedder_for(
    index: &Index,
    spec: Option<&str>,
    remote: &RemoteEmbedArgs,
) -> anyhow::Result<Box<dyn Embedder>> {
    let spec = spec.unwrap_or(&index.manifest().embedder.spec).to_string();
    let embedder = remote
        .load(&spec)
        .with_context(|| format!("cannot load the embedder {spec:?} this index was built with"))?;
    index.check_embedder(embedder.as_ref())?;
    Ok(embedder)
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
    #[command(flatten)]
    store: StoreArg,
    /// Number of chunks.
    #[arg(short, default_value_t = 10)]
    k: usize,
    /// One JSON object per hit.
    #[arg(long)]
    json: bool,
    /// Embedding model [default: the one the index was built with].
    #[arg(long)]
    embedder: Option<String>,
    #[command(flatten)]
    remote: RemoteEmbedArgs,
    /// Scan every vector instead of walking the HNSW graph.
    #[arg(long)]
    exact: bool,
    /// HNSW candidate list length [default: the index's].
    #[arg(long)]
    ef_search: Option<usize>,
}

pub fn search(args: SearchArgs) -> anyhow::Result<ExitCode> {
    let store = open_store(&args.index, &args.store)?;
    let embedder = store_with_embedder(store.as_ref(), args.embedder.as_deref(), &args.remote)?;
    let query = embedder.embed_one(&args.query)?;
    let options = StoreSearch {
        ef_search: args.ef_search,
        exact: args.exact,
    };
    let hits = store.search(&query, args.k, &options)?;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for (i, p) in hits.iter().enumerate() {
        if args.json {
            let line = SearchHit {
                rank: i + 1,
                score: p.score,
                chunk_id: p.chunk_id.to_string(),
                doc_id: &p.doc_id.0,
                title: &p.title,
                section_id: p.section_id().to_string(),
                section_path: &p.section_path,
                text: &p.text,
                page: p.page,
            };
            serde_json::to_writer(&mut out, &line)?;
            writeln!(out)?;
        } else {
            writeln!(
                out,
                "{:>2}. {:.3}  [{}] {}",
                i + 1,
                p.score,
                p.chunk_id,
                location(p)
            )?;
            writeln!(out, "    {}", snippet(&p.text, 200))?;
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
fn location(p: &Passage) -> String {
    let mut text = p.doc_id.0.clone();
    for heading in &p.section_path {
        text.push_str(" › ");
        text.push_str(heading);
    }
    if let Some(page) = p.page {
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
    #[command(flatten)]
    store: StoreArg,
    /// One JSON object per document.
    #[arg(long)]
    json: bool,
}

pub fn outline(args: OutlineArgs) -> anyhow::Result<ExitCode> {
    let store = open_store(&args.index, &args.store)?;
    if store.embedder()?.is_none() {
        return Err(store.not_found().into());
    }
    let docs: Vec<IndexedDoc> = match &args.doc_id {
        Some(id) => match store.resolve(id)? {
            Some(Resolved::Document(doc)) => vec![doc],
            _ => bail!(
                "no document {id:?} in {}; `walkrag outline` lists them all",
                store.location()
            ),
        },
        None => store.documents()?,
    };
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for doc in &docs {
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
    #[command(flatten)]
    store: StoreArg,
    /// One JSON object.
    #[arg(long)]
    json: bool,
}

pub fn show(args: ShowArgs) -> anyhow::Result<ExitCode> {
    let store = open_store(&args.index, &args.store)?;
    if store.embedder()?.is_none() {
        return Err(store.not_found().into());
    }
    let Some(resolved) = store.resolve(args.id.trim())? else {
        bail!(
            "no document, section or chunk {:?} in {}; ids come from `walkrag outline` and `walkrag search`",
            args.id,
            store.location()
        );
    };
    let shown = shown(&resolved);
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

/// What `show` prints of a resolved id.
fn shown(resolved: &Resolved) -> Shown<'_> {
    match resolved {
        Resolved::Document(doc) => Shown::of(Item::Document(doc)),
        Resolved::Section { doc, section } => Shown::of(Item::Section {
            doc,
            section: *section,
        }),
        Resolved::Chunk { doc, chunk } => {
            let c = &doc.chunks[*chunk];
            Shown {
                kind: "chunk",
                id: c.id(&doc.doc).to_string(),
                doc_id: &doc.doc.id.0,
                title: &doc.doc.title,
                section_path: &doc.doc.sections[c.section as usize].path,
                page: c.page,
                range: [c.range.start, c.range.end],
                text: &doc.doc.text[c.range.clone()],
            }
        }
    }
}
