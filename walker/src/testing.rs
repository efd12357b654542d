//! Test doubles (feature `testing`, for tests only): a bag-of-words embedder, a chat model
//! that replays a script, and a small index built with them. They exercise control flow;
//! they never judge answers.

use std::collections::VecDeque;
use std::ops::Range;
use std::path::Path;
use std::pin::Pin;
use std::sync::Mutex;
use std::task::{Context, Poll};

use crate::{Env, Event, SearchParams};
use futures_core::Stream;
use walkrag_core::{
    ChatError, ChatModel, ChatRequest, Delta, DeltaStream, EmbedError, Embedder, Embeddings,
    FinishReason, ScoreFuture, ScoreItem, Scores, ToolCall, Usage,
};
use walkrag_engine::{Index, Quiet, UpdateOptions};

/// Embeds text as a hashed bag of lower-case words, L2-normalised: texts sharing words are near.
pub struct FakeWordEmbedder;

const DIM: usize = 64;

fn words(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(move |w| (w.as_ptr() as usize - text.as_ptr() as usize, w))
}

impl Embedder for FakeWordEmbedder {
    fn id(&self) -> &str {
        "test:words"
    }
    fn dim(&self) -> usize {
        DIM
    }
    fn max_tokens(&self) -> usize {
        128
    }
    fn count_tokens(&self, text: &str) -> Result<usize, EmbedError> {
        Ok(words(text).count())
    }
    fn token_spans(&self, text: &str) -> Result<Vec<Range<usize>>, EmbedError> {
        Ok(words(text).map(|(at, w)| at..at + w.len()).collect())
    }
    fn embed(&self, texts: &[&str]) -> Result<Embeddings, EmbedError> {
        let mut out = Embeddings::zeros(texts.len(), DIM);
        for (i, text) in texts.iter().enumerate() {
            let row = out.row_mut(i);
            row[0] = 0.01;
            for (_, word) in words(text) {
                let word = word.to_lowercase();
                let hash = word
                    .bytes()
                    .fold(2166136261u32, |h, b| (h ^ b as u32).wrapping_mul(16777619));
                row[hash as usize % DIM] += 1.0;
            }
            let norm = row.iter().map(|x| x * x).sum::<f32>().sqrt();
            row.iter_mut().for_each(|x| *x /= norm);
        }
        Ok(out)
    }
}

/// One scripted turn.
pub enum Turn {
    Reply(String),
    Fail(ChatError),
    /// Tool calls (for a model made [`with_tools`](ScriptedChatModel::with_tools)), streamed
    /// as `Delta::ToolCall` pieces (id and name first, the arguments in two halves).
    Tools(Vec<ToolCall>),
}

/// A chat model that replays `turns` in order and records every request. Its prompt "tokens"
/// are characters / 4; a prompt over `context_length` tokens is refused as too long, without
/// using up a turn.
pub struct ScriptedChatModel {
    turns: Mutex<VecDeque<Turn>>,
    pub requests: Mutex<Vec<ChatRequest>>,
    pub context_length: usize,
    /// What `supports_tools` says (false unless made [`with_tools`](Self::with_tools)).
    pub tools: bool,
    /// How it weighs continuations, when made [`with_scores`](Self::with_scores).
    scorer: Option<Scorer>,
    /// Every item it was asked to weigh.
    pub scored: Mutex<Vec<ScoreItem>>,
}

/// A fixed rule giving each [`ScoreItem`] its log-probability.
type Scorer = Box<dyn Fn(&ScoreItem) -> f32 + Send + Sync>;

impl ScriptedChatModel {
    pub fn new(turns: Vec<Turn>) -> Self {
        Self {
            turns: Mutex::new(turns.into()),
            requests: Mutex::new(Vec::new()),
            context_length: 100_000,
            tools: false,
            scorer: None,
            scored: Mutex::new(Vec::new()),
        }
    }

    /// The same model, weighing continuations by `scorer` (and saying it can).
    pub fn with_scores(
        mut self,
        scorer: impl Fn(&ScoreItem) -> f32 + Send + Sync + 'static,
    ) -> Self {
        self.scorer = Some(Box::new(scorer));
        self
    }

    /// The same model, saying it takes tools natively.
    pub fn with_tools(mut self) -> Self {
        self.tools = true;
        self
    }

    pub fn prompt_tokens(request: &ChatRequest) -> usize {
        request
            .messages
            .iter()
            .map(|m| m.content.len())
            .sum::<usize>()
            / 4
    }
}

impl ChatModel for ScriptedChatModel {
    fn id(&self) -> &str {
        "test:scripted"
    }
    fn context_length(&self) -> Option<usize> {
        Some(self.context_length)
    }
    fn supports_tools(&self) -> bool {
        self.tools
    }
    fn can_score(&self) -> bool {
        self.scorer.is_some()
    }
    fn score(&self, items: Vec<ScoreItem>) -> ScoreFuture {
        let result = match &self.scorer {
            Some(scorer) => Ok(Scores {
                scores: items.iter().map(scorer).collect(),
                usage: Usage {
                    prompt_tokens: items.len(),
                    completion_tokens: 0,
                    forced_tokens: 0,
                },
            }),
            None => Err(ChatError::Permanent("test:scripted cannot weigh".into())),
        };
        self.scored.lock().unwrap().extend(items);
        Box::pin(std::future::ready(result))
    }
    fn stream(&self, request: ChatRequest) -> DeltaStream {
        let prompt_tokens = Self::prompt_tokens(&request);
        self.requests.lock().unwrap().push(request);
        let mut items: VecDeque<Result<Delta, ChatError>> = VecDeque::new();
        if prompt_tokens > self.context_length {
            items.push_back(Err(ChatError::ContextTooLong {
                needed: prompt_tokens,
                limit: self.context_length,
            }));
            return Box::pin(Replay(items));
        }
        match self.turns.lock().unwrap().pop_front() {
            Some(Turn::Reply(text)) => {
                let pieces: Vec<&str> = text.split_inclusive(' ').collect();
                for piece in &pieces {
                    items.push_back(Ok(Delta::Text {
                        text: piece.to_string(),
                    }));
                }
                items.push_back(Ok(Delta::Done {
                    usage: Usage {
                        prompt_tokens,
                        completion_tokens: pieces.len(),
                        forced_tokens: 0,
                    },
                    finish: FinishReason::Stop,
                }));
            }
            Some(Turn::Fail(e)) => items.push_back(Err(e)),
            Some(Turn::Tools(calls)) => {
                for (index, call) in calls.iter().enumerate() {
                    let half = call.arguments.len() / 2;
                    let half = (0..=half)
                        .rev()
                        .find(|&i| call.arguments.is_char_boundary(i))
                        .unwrap_or(0);
                    items.push_back(Ok(Delta::ToolCall {
                        index,
                        id: Some(call.id.clone()),
                        name: Some(call.name.clone()),
                        arguments: call.arguments[..half].to_string(),
                    }));
                    items.push_back(Ok(Delta::ToolCall {
                        index,
                        id: None,
                        name: None,
                        arguments: call.arguments[half..].to_string(),
                    }));
                }
                items.push_back(Ok(Delta::Done {
                    usage: Usage {
                        prompt_tokens,
                        completion_tokens: calls.len() * 10,
                        forced_tokens: 0,
                    },
                    finish: FinishReason::ToolCalls,
                }));
            }
            None => items.push_back(Err(ChatError::Permanent("the script has ended".into()))),
        }
        Box::pin(Replay(items))
    }
}

struct Replay(VecDeque<Result<Delta, ChatError>>);

impl Stream for Replay {
    type Item = Result<Delta, ChatError>;
    fn poll_next(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        Poll::Ready(self.0.pop_front())
    }
}

/// Passages about a made-up town, written for these tests.
pub const CORPUS: &str = r#"{"id": "d1", "title": "Velmora", "text": "Velmora is a river town whose mayor is Ilsa Brandt."}
{"id": "d2", "title": "Ilsa Brandt", "text": "Ilsa Brandt was born in Kessel in 1971 and trained as an engineer."}
{"id": "d3", "title": "Kessel", "text": "Kessel is a mountain village famous for its cheese market."}
{"id": "d4", "title": "Cheese market", "text": "The cheese market of Kessel opens every Saturday at dawn."}
{"id": "d5", "title": "Tramway", "text": "The Velmora tramway has two lines and runs along the river."}
{"id": "d6", "title": "Orchards", "text": "Apple orchards surround the valley below the mountain pass."}
"#;

/// An index of [`CORPUS`] built with [`FakeWordEmbedder`] in a temporary directory.
pub struct TestIndex {
    _dir: tempfile::TempDir,
    pub index: Index,
}

pub fn test_index() -> TestIndex {
    index_of(CORPUS)
}

/// An index of `corpus` (JSON Lines records, as `walkrag index` reads a `.jsonl` file) built
/// with [`FakeWordEmbedder`] in a temporary directory.
pub fn index_of(corpus: &str) -> TestIndex {
    let dir = tempfile::tempdir().unwrap();
    let path_of_corpus = dir.path().join("corpus.jsonl");
    std::fs::write(&path_of_corpus, corpus).unwrap();
    let corpus = path_of_corpus;
    let path = dir.path().join("index");
    build(&path, &corpus);
    let index = Index::open(&path).unwrap();
    TestIndex { _dir: dir, index }
}

/// An index of Markdown files (`(file name, text)`) built with [`FakeWordEmbedder`] in a
/// temporary directory: documents with headings, for the strategies that read them.
pub fn markdown_index(files: &[(&str, &str)]) -> TestIndex {
    let dir = tempfile::tempdir().unwrap();
    let docs = dir.path().join("docs");
    std::fs::create_dir(&docs).unwrap();
    for (name, text) in files {
        std::fs::write(docs.join(name), text).unwrap();
    }
    let path = dir.path().join("index");
    build(&path, &docs);
    let index = Index::open(&path).unwrap();
    TestIndex { _dir: dir, index }
}

/// A made-up annual report with two levels of headings under its title.
pub const REPORT: &str = "# Harbor Cooperative Annual Report 2023

## Finances

### Revenue

Revenue rose to 4.2 million crowns, driven by the northern route.

### Costs

Fuel costs fell by 12 percent after the fleet was renewed.

## Fleet

### Vessels

The cooperative operates nine vessels; the newest is the Marta Lind.

### Crew

Crews work two-week rotations and train every spring.

## Outlook

The board expects to open a southern route in 2025.
";

/// An index of [`REPORT`] as `report.md`.
pub fn report_index() -> TestIndex {
    markdown_index(&[("report.md", REPORT)])
}

/// `text` with every section id of the index written as `<id>` (ids hash the documents'
/// paths, a temporary directory in tests: prompt snapshots show them redacted).
pub fn redact_section_ids(index: &Index, text: &str) -> String {
    let mut out = text.to_string();
    for indexed in index.documents() {
        for section in &indexed.doc.sections {
            out = out.replace(&section.id.to_string(), "<id>");
        }
    }
    out
}

/// The section headed `heading` (the first one, in any document): its id, and its first
/// chunk when it has text of its own.
pub fn section_of(
    index: &Index,
    heading: &str,
) -> (walkrag_engine::SectionId, Option<walkrag_engine::ChunkId>) {
    for indexed in index.documents() {
        let doc = &indexed.doc;
        if let Some(i) = doc.sections.iter().position(|s| s.title() == heading) {
            let chunk = indexed
                .chunks
                .iter()
                .find(|c| c.section as usize == i)
                .map(|c| c.id(doc));
            return (doc.sections[i].id, chunk);
        }
    }
    panic!("no section headed {heading:?}")
}

fn build(index: &Path, corpus: &Path) {
    walkrag_engine::update(
        index,
        &[corpus.to_path_buf()],
        &FakeWordEmbedder,
        "test:words",
        &UpdateOptions::default(),
        &Quiet,
    )
    .unwrap();
}

pub fn env<'a>(index: &'a Index, model: &'a dyn ChatModel) -> Env<'a> {
    Env {
        index,
        embedder: &FakeWordEmbedder,
        model,
        search: SearchParams {
            ef_search: None,
            exact: true,
        },
    }
}

/// Chunk id of record `doc` (each test record is one chunk).
pub fn chunk_of(index: &Index, doc: &str) -> walkrag_engine::ChunkId {
    let doc = index
        .document(&walkrag_engine::DocId(doc.into()))
        .expect("record in the index");
    doc.chunks[0].id(&doc.doc)
}

/// Runs a future to completion on a fresh current-thread runtime.
pub fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(future)
}

/// A sink that keeps every event.
pub fn collect(events: &mut Vec<Event>) -> impl FnMut(Event) + Send + '_ {
    move |e| events.push(e)
}

/// A request as the model sees it, one `=== role ===` block per message (for prompt snapshots).
pub fn render_request(request: &ChatRequest) -> String {
    request
        .messages
        .iter()
        .map(|m| format!("=== {} ===\n{}\n", m.role.as_str(), m.content))
        .collect()
}

/// Every search of `answer`'s trace, in order.
pub fn searches(answer: &crate::Answer) -> Vec<&crate::Retrieval> {
    answer
        .trace
        .steps
        .iter()
        .filter_map(|s| match s {
            crate::Step::Retrieve(r) => Some(r),
            _ => None,
        })
        .collect()
}

/// Every search of `answer`'s trace: its origin, its query and the chunks it returned.
pub fn retrievals(
    answer: &crate::Answer,
) -> Vec<(crate::Origin, String, Vec<walkrag_engine::ChunkId>)> {
    searches(answer)
        .into_iter()
        .map(|r| {
            (
                r.origin,
                r.query.clone(),
                r.hits.iter().map(|h| h.chunk_id).collect(),
            )
        })
        .collect()
}
