//! `walkrag index`: build or update the document index.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Mutex;

use anyhow::{ensure, Context};
use indicatif::ProgressBar;
use sha2::{Digest, Sha256};
use walkrag_actions::{is_openapi, Catalog, ExamplesFile, GivenExamples};
use walkrag_embed::{Embedder, DEFAULT_EMBEDDER};
use walkrag_engine::{AnnParams, ChunkSpec, Progress, Skipped, Store, UpdateOptions};
use walkrag_walker::contents::{ContentsFile, Generator};

/// Index documents: Markdown, plain text, llms.txt, PDF and JSON Lines corpora, and the
/// operations of OpenAPI specs.
///
/// Each PATH is a file or a directory (walked recursively; .gitignore and .ignore are
/// honoured, hidden entries skipped). Re-running updates only what changed: new and edited
/// documents are embedded, unchanged ones reuse their vectors, documents whose files are gone
/// from PATH are dropped, and documents indexed earlier from other paths stay. A file that
/// cannot be read gets one warning and is skipped (its previous version, if any, is kept).
///
/// The index is written crash-safely: until the new version is complete, the previous one
/// stays in place and usable, whatever happens to this process.
///
/// With --store postgres://USER:PASSWORD@HOST:PORT/DB (or WALKRAG_STORE), the index goes to
/// a PostgreSQL database with pgvector instead of a folder, for several processes to share:
/// the same incremental rules, each document replaced in one transaction, one writer at a
/// time (see docs/store.md). OpenAPI specs, --toc and --examples need a folder index for now.
///
/// An OpenAPI 3.0/3.1 spec (a .yaml, .yml or .json file named as a PATH, recognised by its
/// `openapi` field) is indexed as one record per operation, for `ask --strategy actions`:
/// the records are written to INDEX/actions/ as a JSON Lines corpus and indexed from
/// there, so re-indexing a changed spec embeds only the operations that changed. With
/// --examples, a chat model (--examples-model) first writes five short requests a user might
/// send for each operation, kept in INDEX/action-examples.jsonl and searched with it, so
/// that requests in users' words meet operations described in the API's. Only operations
/// without examples for their current content are written, each saved when done; later runs
/// keep using them without the flag. With --examples-from FILE, the requests of a JSON Lines
/// file labelled with their operations (`{"request": ..., "operation_id": ...}` per line,
/// as in a request set of `walkrag eval --spec`) become the examples of the operations they
/// name, in place of written ones; --examples then writes only for the operations left
/// without.
///
/// With --toc, documents without headings of their own (plain text, PDF, Markdown without a
/// heading) get a table of contents written by a chat model (--toc-model): a heading and a
/// one-sentence summary per run of about 600 tokens, kept in INDEX/contents.jsonl and used
/// by `ask --strategy toc`. Only documents without current contents are written (a changed
/// document is written again); each document is saved as soon as it is done.
///
/// Examples:
///   walkrag index docs/ annual-report.pdf
///   walkrag index corpus.jsonl --index /tmp/corpus-index
///   walkrag index petstore.yaml
///   walkrag index petstore.yaml --examples --examples-model local:qwen2.5-coder-1.5b
///   walkrag index petstore.yaml --examples-from past-requests.jsonl
///   walkrag index notes.txt scan.pdf --toc --toc-model local:qwen2.5-coder-0.5b
///   walkrag index docs/ --store postgres://walkrag:PASSWORD@127.0.0.1:5432/walkrag
#[derive(clap::Args)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// Files or directories to index.
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    /// Index directory.
    #[arg(long, default_value = super::DEFAULT_INDEX)]
    index: PathBuf,
    #[command(flatten)]
    store: super::query::StoreArg,
    /// Embedding model: `minilm`, a sentence-transformers folder, a hub id, or `openai:MODEL`
    /// on an OpenAI-compatible server (WALKRAG_EMBED_BASE_URL, else OPENAI_BASE_URL; key from
    /// OPENAI_API_KEY; see docs/store.md) [default: the index's own, else minilm].
    #[arg(long)]
    embedder: Option<String>,
    #[command(flatten)]
    remote: super::query::RemoteEmbedArgs,
    /// Start from nothing instead of updating (needed to change the embedder or chunking).
    #[arg(long)]
    rebuild: bool,
    /// Most word pieces per chunk, context header included [default: the embedder's limit].
    #[arg(long)]
    chunk_tokens: Option<usize>,
    /// Word pieces shared by consecutive chunks of a long section.
    #[arg(long, default_value_t = 32)]
    overlap: usize,
    /// HNSW: neighbours per node (M).
    #[arg(long, default_value_t = AnnParams::default().m)]
    m: usize,
    /// HNSW: candidate list while building.
    #[arg(long, default_value_t = AnnParams::default().ef_construction)]
    ef_construction: usize,
    /// HNSW: candidate list while searching (recorded as the index's default).
    #[arg(long, default_value_t = AnnParams::default().ef_search)]
    ef_search: usize,
    /// Indexes with fewer chunks are searched exactly, without a graph.
    #[arg(long, default_value_t = AnnParams::default().exact_below)]
    exact_below: usize,
    /// Write a table of contents for each document without headings (see above).
    #[arg(long)]
    toc: bool,
    /// The chat model that writes tables of contents (--toc).
    #[arg(long, value_name = "SPEC", default_value = walkrag_models::DEFAULT_MODEL, requires = "toc")]
    toc_model: String,
    /// For each operation of an OpenAPI spec, have a chat model (--examples-model) write a
    /// few requests a user might send for it; they are indexed with the operation (see above).
    #[arg(long)]
    examples: bool,
    /// A JSON Lines file of requests labelled with their operations (`request`,
    /// `operation_id`), kept as the examples of the operations they name (see above).
    /// Repeat it for several files.
    #[arg(long, value_name = "FILE")]
    examples_from: Vec<PathBuf>,
    /// The chat model that writes the example requests (--examples).
    #[arg(long, value_name = "SPEC", default_value = walkrag_models::DEFAULT_MODEL, requires = "examples")]
    examples_model: String,
    /// Print the summary as one JSON object.
    #[arg(long)]
    json: bool,
}

/// Progress bars on stderr; warnings printed above them.
pub struct Bars {
    bar: Mutex<Option<(ProgressBar, &'static str)>>,
}

impl Bars {
    pub fn new() -> Self {
        Self {
            bar: Mutex::new(None),
        }
    }

    fn with_bar(&self, what: &'static str, len: usize, pos: usize) {
        let mut slot = self.bar.lock().expect("progress lock");
        if slot.as_ref().is_none_or(|(_, w)| *w != what) {
            if let Some((old, _)) = slot.take() {
                old.finish_and_clear();
            }
            *slot = Some((super::progress_bar(len as u64, what), what));
        }
        if let Some((bar, _)) = slot.as_ref() {
            bar.set_length(len as u64);
            bar.set_position(pos as u64);
        }
    }

    pub fn clear(&self) {
        if let Some((bar, _)) = self.bar.lock().expect("progress lock").take() {
            bar.finish_and_clear();
        }
    }
}

impl Progress for Bars {
    fn skipped(&self, skipped: &Skipped) {
        let slot = self.bar.lock().expect("progress lock");
        match slot.as_ref() {
            Some((bar, _)) => bar.suspend(|| eprintln!("warning: {skipped}")),
            None => eprintln!("warning: {skipped}"),
        }
    }

    fn read(&self, done: usize, total: usize) {
        self.with_bar("files", total, done);
    }

    fn embedded(&self, done: usize, total: usize) {
        self.with_bar("chunks", total, done);
    }

    fn phase(&self, name: &str) {
        self.clear();
        tracing::info!("{name}");
    }
}

/// The embedder to index `store` with: `given`, else the one the index was built with, else
/// the default. Reads only the manifest, not the documents and the graph.
pub fn embedder_spec(store: &dyn Store, given: Option<&str>) -> String {
    given
        .map(str::to_string)
        .or_else(|| store.embedder().ok().flatten().map(|e| e.spec))
        .unwrap_or_else(|| DEFAULT_EMBEDDER.to_string())
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    ensure!((2..=256).contains(&args.m), "--m must be between 2 and 256");
    ensure!(
        args.ef_construction >= args.m,
        "--ef-construction must be at least --m"
    );
    let store = super::query::open_store(&args.index, &args.store)?;
    let in_database = args.store.url.is_some();
    let spec = embedder_spec(store.as_ref(), args.embedder.as_deref());
    let embedder = args.remote.load(&spec)?;
    let mut chunking = ChunkSpec::for_embedder(embedder.as_ref());
    if let Some(tokens) = args.chunk_tokens {
        ensure!(
            (32..=chunking.max_tokens).contains(&tokens),
            "--chunk-tokens must be between 32 and the embedder's {}",
            chunking.max_tokens
        );
        chunking.max_tokens = tokens;
    }
    ensure!(
        args.overlap < chunking.max_tokens / 2,
        "--overlap must be under half a chunk"
    );
    chunking.overlap_tokens = args.overlap;
    let options = UpdateOptions {
        rebuild: args.rebuild,
        chunking: Some(chunking),
        ann: AnnParams {
            m: args.m,
            ef_construction: args.ef_construction,
            ef_search: args.ef_search,
            exact_below: args.exact_below,
        },
    };
    let mut specs = specs_among(&args.paths)?;
    if in_database {
        ensure!(
            specs.is_empty() && !args.toc && !args.examples && args.examples_from.is_empty(),
            "OpenAPI specs, --toc and --examples need a folder index (--index) for now"
        );
    }
    if !args.examples_from.is_empty() {
        give_examples(&args.index, &specs, &args.examples_from)?;
    }
    if args.examples {
        write_examples(&args.index, &specs, &args.examples_model)?;
    }
    let paths = specs_as_records(&args.index, &args.paths, &mut specs)?;
    let bars = Bars::new();
    let summary = store.update(&paths, embedder.as_ref(), &spec, &options, &bars);
    bars.clear();
    let summary = summary?;

    if args.json {
        println!("{}", serde_json::to_string(&summary)?);
    } else {
        let verb = if summary.written {
            "indexed"
        } else {
            "up to date:"
        };
        println!(
            "{verb} {}: {} documents, {} chunks ({} search) in {:.1} s",
            store.location(),
            summary.documents,
            summary.chunks,
            summary.search,
            summary.seconds
        );
        println!(
            "  {} new, {} changed, {} unchanged, {} removed; {} chunks embedded{}{}",
            summary.added,
            summary.changed,
            summary.unchanged,
            summary.removed,
            summary.embedded,
            if summary.resumed > 0 {
                format!(
                    " ({} of them kept from an unfinished earlier run)",
                    summary.resumed
                )
            } else {
                String::new()
            },
            if summary.embedded > 0 && summary.embed_seconds > 0.0 {
                format!(
                    " ({:.0}/s)",
                    summary.embedded as f64 / summary.embed_seconds
                )
            } else {
                String::new()
            }
        );
        if summary.kept_after_error > 0 {
            println!(
                "  {} documents kept as previously indexed: their files could not be read",
                summary.kept_after_error
            );
        }
        if !summary.skipped.is_empty() {
            let counts: Vec<String> = summary
                .skipped_by_reason()
                .iter()
                .map(|(reason, n)| format!("{n} {}", reason.describe()))
                .collect();
            println!(
                "  skipped {} (see warnings above): {}",
                summary.skipped.len(),
                counts.join(", ")
            );
        }
        if summary.other_files > 0 {
            println!("  ignored {} files of other types", summary.other_files);
        }
    }
    if args.toc {
        write_contents(&args.index, embedder.as_ref(), &args.toc_model)?;
    }
    Ok(if summary.documents > 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// `--toc`: a table of contents for each document of the index without headings that has
/// none for its current text, each saved when done.
fn write_contents(dir: &Path, embedder: &dyn Embedder, model_spec: &str) -> anyhow::Result<()> {
    let index = walkrag_engine::Index::open(dir)?;
    let mut file = ContentsFile::of_index(dir)?;
    let missing: Vec<String> = file
        .missing(&index)
        .iter()
        .map(|d| d.doc.id.0.clone())
        .collect();
    if missing.is_empty() {
        eprintln!("tables of contents: every document without headings has one");
        return Ok(());
    }
    let model = super::load_chat_model(model_spec)?;
    let runtime = super::runtime()?;
    let generator = Generator::default();
    for (n, id) in missing.iter().enumerate() {
        let doc = index
            .document(&walkrag_engine::DocId(id.clone()))
            .expect("a document of the index");
        eprintln!(
            "writing a table of contents for {id} ({}/{}) with {}",
            n + 1,
            missing.len(),
            model.id()
        );
        let bar = super::progress_bar(0, "entries");
        let contents = runtime.block_on(generator.generate(
            &index,
            embedder,
            model.as_ref(),
            doc,
            &mut |done, of| {
                bar.set_length(of as u64);
                bar.set_position(done as u64);
            },
        ));
        bar.finish_and_clear();
        let contents = contents.with_context(|| format!("cannot write the contents of {id}"))?;
        let entries = contents.entries.len();
        file.put(contents, &index)?;
        eprintln!("  {id}: {entries} entries");
    }
    Ok(())
}

/// An OpenAPI spec among the paths to index, read once.
pub struct Spec {
    pub path: PathBuf,
    pub catalog: Catalog,
}

/// The OpenAPI specs among `paths` (other files are the engine's); a file that is an OpenAPI
/// document walkrag cannot read is an error.
pub fn specs_among(paths: &[PathBuf]) -> anyhow::Result<Vec<Spec>> {
    paths
        .iter()
        .filter_map(|path| {
            let catalog = spec_at(path)?;
            Some(catalog.map(|catalog| Spec {
                path: path.clone(),
                catalog,
            }))
        })
        .collect()
}

/// `--examples`: the example requests of each operation of `specs` that has none for its
/// current content, each saved as soon as it is written.
pub fn write_examples(index: &Path, specs: &[Spec], model_spec: &str) -> anyhow::Result<()> {
    let mut file = ExamplesFile::open(index)?;
    let mut model = None;
    for Spec { path, catalog } in specs {
        let missing = file.missing(catalog);
        if missing.is_empty() {
            eprintln!(
                "{}: every operation has its example requests",
                path.display()
            );
            continue;
        }
        if model.is_none() {
            model = Some(super::load_chat_model(model_spec)?);
        }
        let model = model.as_deref().expect("loaded above");
        eprintln!(
            "{}: writing example requests for {} operations with {}",
            path.display(),
            missing.len(),
            model.id()
        );
        let runtime = super::runtime()?;
        let bar = super::progress_bar(missing.len() as u64, "operations");
        for action in missing {
            let examples = runtime
                .block_on(walkrag_actions::write_examples(
                    model,
                    &catalog.title,
                    action,
                ))
                .with_context(|| format!("{}: cannot write example requests", path.display()))?;
            if examples.examples.is_empty() {
                bar.suspend(|| {
                    eprintln!(
                        "  {}: the model wrote no usable example; it is indexed without",
                        action.operation_id
                    )
                });
            }
            file.put(examples)?;
            bar.inc(1);
        }
        bar.finish_and_clear();
    }
    Ok(())
}

/// `--examples-from`: the labelled requests of `files` kept as the examples of the operations
/// they name, in each of `specs`; requests naming no operation of any are counted in a
/// warning.
pub fn give_examples(index: &Path, specs: &[Spec], files: &[PathBuf]) -> anyhow::Result<()> {
    let mut given = GivenExamples::default();
    for file in files {
        given.join(GivenExamples::read(file)?);
    }
    let mut kept = ExamplesFile::open(index)?;
    let mut known = std::collections::HashSet::new();
    for Spec { path, catalog } in specs {
        let count = kept.give(catalog, &given)?;
        known.extend(catalog.actions.iter().map(|a| a.operation_id.clone()));
        eprintln!(
            "{}: {count} of {} operations have example requests given",
            path.display(),
            catalog.actions.len()
        );
    }
    ensure!(
        !known.is_empty(),
        "--examples-from needs an OpenAPI spec among the paths to index"
    );
    let unknown: Vec<(&str, usize)> = given
        .operations()
        .filter(|(operation, _)| !known.contains(*operation))
        .collect();
    if !unknown.is_empty() {
        let requests: usize = unknown.iter().map(|(_, n)| n).sum();
        let names: Vec<&str> = unknown.iter().map(|(operation, _)| *operation).collect();
        tracing::warn!(
            "{requests} of the {} requests given name operations none of the specs has: {}",
            given.len(),
            names.join(", ")
        );
    }
    Ok(())
}

/// Where a spec's action records are kept: `INDEX/actions/STEM-HASH.jsonl`, the hash of the
/// spec's absolute path keeping specs of the same name apart.
pub fn records_path(index: &Path, spec: &Path) -> PathBuf {
    let digest = Sha256::digest(spec.to_string_lossy().as_bytes());
    let hash: String = digest[..4].iter().map(|b| format!("{b:02x}")).collect();
    let stem = spec
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "spec".into());
    index.join("actions").join(format!("{stem}-{hash}.jsonl"))
}

/// `paths` with each of `specs` among them replaced by its action records (one JSON Lines
/// record per operation, its examples attached, written to [`records_path`] when they
/// changed): the engine indexes them like any corpus, re-embedding only the operations that
/// changed.
pub fn specs_as_records(
    index: &Path,
    paths: &[PathBuf],
    specs: &mut [Spec],
) -> anyhow::Result<Vec<PathBuf>> {
    let examples = ExamplesFile::open(index)?;
    let mut out = Vec::with_capacity(paths.len());
    for path in paths {
        let Some(spec) = specs.iter_mut().find(|spec| spec.path == *path) else {
            out.push(path.clone());
            continue;
        };
        examples.attach(&mut spec.catalog);
        out.push(catalog_as_records(index, path, &spec.catalog)?);
    }
    Ok(out)
}

/// Writes the records of `catalog`, read from the spec at `path` (with its examples
/// attached), into the index's actions folder if they changed, and returns their path.
pub fn catalog_as_records(index: &Path, path: &Path, catalog: &Catalog) -> anyhow::Result<PathBuf> {
    let absolute = std::fs::canonicalize(path)
        .with_context(|| format!("cannot resolve {}", path.display()))?;
    let records = records_path(index, &absolute);
    write_if_changed(&records, &catalog.records_jsonl(&absolute))?;
    eprintln!(
        "{}: {} API operations ({} {}), indexed from {}",
        path.display(),
        catalog.actions.len(),
        catalog.title,
        catalog.version,
        records.display()
    );
    Ok(records)
}

/// The catalogue of `path` when it is a file holding an OpenAPI document (`None` for
/// anything else, left to the engine); an OpenAPI document that cannot be read is an error.
fn spec_at(path: &Path) -> Option<anyhow::Result<Catalog>> {
    let extension = path.extension()?.to_str()?.to_ascii_lowercase();
    if !matches!(extension.as_str(), "yaml" | "yml" | "json") || !path.is_file() {
        return None;
    }
    let text = std::fs::read_to_string(path).ok()?;
    if !is_openapi(&text) {
        return None;
    }
    Some(Catalog::parse(&text).with_context(|| {
        format!(
            "{} is an OpenAPI document walkrag cannot read",
            path.display()
        )
    }))
}

/// Writes `contents` to `path` through a temporary file and a rename, unless the file already
/// holds exactly that (its time stamp then stays as it was).
pub fn write_if_changed(path: &Path, contents: &str) -> anyhow::Result<()> {
    if std::fs::read(path).is_ok_and(|old| old == contents.as_bytes()) {
        return Ok(());
    }
    let dir = path.parent().expect("a file in a folder");
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let write = || -> std::io::Result<()> {
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(contents.as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    };
    write().with_context(|| format!("cannot write {}", path.display()))
}
