//! `docs`: whole documents chosen by their metadata, each read by a (cheaper) reader model in
//! parallel, and the partial answers put together by the main model.
//!
//! 1. **Plan.** The model sees the documents' fields ([`filters::describe`]: title, source,
//!    format and the metadata of `.jsonl` records or Markdown front matter, with examples),
//!    the documents' titles, and the question. It calls `query_documents(query, filters)` or
//!    `search_passages(query)` — as tools, or as one JSON object for models without them
//!    (held to start with one of the two).
//! 2. **Query.** The documents meeting every filter (text matches loosely, dates by range; see
//!    [`filters`]) are read, best match first and then nearest the query, at most
//!    `max_documents`. No match reads the documents nearest the query instead, and says so.
//!    Each document goes to the reader whole or, when longer than `part_tokens`, in parts;
//!    past `max_parts` in all, each document keeps its parts nearest the query. The reader
//!    calls run `concurrency` at a time; each answer streams out as a fact as it arrives.
//! 3. **Search** is the single strategy's search: the `k` nearest passages.
//! 4. **Answer.** The main model writes the answer from the readers' partial answers (as
//!    facts) and the passages they cited (or found by search), with citations.
//!
//! `ranked` is the cited passages, then those shown, then the rest of the documents read.

use std::sync::Arc;

use futures_util::stream::{self, StreamExt};
use serde_json::{json, Value};
use walkrag_core::{ChatModel, ChatRequest, Completion, ToolDef};
use walkrag_engine::{ChunkId, IndexedDoc};

use crate::answer::{Answer, Termination};
use crate::reader::constrain;
use crate::reader::jsonl::{squash, ObjectReader, Raw};
use crate::reader::{llm, prompt, reply};
use crate::run::{Answered, Run};
use crate::search::filters::{self, Field};
use crate::search::{budget, dot, passages};
use crate::strategy::{answer_model_id, AnswerModel, BoxFuture, Env, Strategy, StrategyError};
use crate::trace::event::{Event, Sink};
use crate::trace::{Fact, Origin, RetrievedChunk};

/// The most tokens the plan may take: one call with a few filters.
const PLAN_MAX_TOKENS: usize = 120;
/// The most tokens a reader may write: three sentences with ids.
const READ_MAX_TOKENS: usize = 160;
/// What a reader writes when its part says nothing about the question.
const NOTHING: &str = "NOT IN DOCUMENT";
/// Documents listed by title in the plan's prompt.
const LISTED: usize = 30;

/// Documents by metadata, read in parallel.
#[derive(Clone)]
pub struct Docs {
    /// The model that reads each document; `None`: the main model reads too.
    pub reader: Option<Arc<dyn ChatModel>>,
    /// Reader calls at once: 4 (a local model runs them one after another anyway).
    pub concurrency: usize,
    /// Tokens of document text per reader call (embedder tokenizer): 1,200 leave a
    /// 2,048-token reader room for the prompt and its answer.
    pub part_tokens: usize,
    /// Most documents read per query: 6.
    pub max_documents: usize,
    /// Most reader calls per question: 12.
    pub max_parts: usize,
    /// Passages per `search_passages`, and passages searched to rank documents: 5.
    pub k: usize,
    /// The model of the answer step; `None`: the chat model.
    pub answer_model: Option<AnswerModel>,
}

impl Default for Docs {
    fn default() -> Self {
        Self {
            reader: None,
            concurrency: 4,
            part_tokens: 1_200,
            max_documents: 6,
            max_parts: 12,
            k: 5,
            answer_model: None,
        }
    }
}

impl std::fmt::Debug for Docs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Docs")
            .field("reader", &self.reader.as_ref().map(|m| m.id().to_string()))
            .field("concurrency", &self.concurrency)
            .field("part_tokens", &self.part_tokens)
            .field("max_documents", &self.max_documents)
            .field("max_parts", &self.max_parts)
            .field("k", &self.k)
            .field("answer_model", &self.answer_model)
            .finish()
    }
}

/// What the plan asked for.
#[derive(Debug, Clone, PartialEq)]
enum Call {
    Query { query: String, filters: Value },
    Search { query: String },
}

/// Reads the plan written as JSON: every `query_documents` / `search_passages` object (names
/// as small models spell them); a query without one is the question's.
fn parse_calls(text: &str, question: &str) -> Vec<Call> {
    let mut reader = ObjectReader::new();
    let mut objects = reader.push(text);
    objects.extend(reader.finish());
    objects
        .iter()
        .filter_map(|raw| match raw {
            Raw::Object(object) => call_of(
                object.get("action").and_then(Value::as_str).unwrap_or(""),
                &Value::Object(object.clone()),
                question,
            ),
            _ => None,
        })
        .collect()
}

/// The calls of a tool-calling model's turn.
fn calls_of_tools(completion: &Completion, question: &str) -> Vec<Call> {
    completion
        .tool_calls
        .iter()
        .filter_map(|call| {
            let args: Value = serde_json::from_str(&call.arguments).unwrap_or(json!({}));
            call_of(&call.name, &args, question)
        })
        .collect()
}

fn call_of(name: &str, args: &Value, question: &str) -> Option<Call> {
    let query = args
        .get("query")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|q| !q.is_empty())
        .unwrap_or(question)
        .to_string();
    let name = squash(name);
    if name.contains("search") || name.contains("passage") {
        Some(Call::Search { query })
    } else if name.contains("document") || name.contains("query") {
        let filters = args.get("filters").cloned().unwrap_or(Value::Null);
        Some(Call::Query { query, filters })
    } else {
        None
    }
}

fn tool_defs() -> Vec<ToolDef> {
    vec![
        ToolDef {
            name: "query_documents".into(),
            description: "Reads every document whose fields match the filters (each on its \
                          own) and returns what each says about the query."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "What to find in each document."},
                    "filters": {
                        "type": "object",
                        "description": "Field → value: text matches loosely, a date range is \
                                        {\"from\": \"YYYY-MM-DD\", \"to\": \"YYYY-MM-DD\"}. \
                                        Empty: the documents nearest the query."
                    }
                },
                "required": ["query"]
            }),
        },
        ToolDef {
            name: "search_passages".into(),
            description: "Searches all documents for the passages nearest the query.".into(),
            parameters: json!({
                "type": "object",
                "properties": {"query": {"type": "string"}},
                "required": ["query"]
            }),
        },
    ]
}

/// One reader call: a document part and what it is.
struct Part {
    doc: usize,
    number: usize,
    of: usize,
    chunks: Vec<ChunkId>,
}

/// A reader's answer worth passing on.
struct Partial {
    title: String,
    text: String,
    cited: Vec<ChunkId>,
}

impl Docs {
    /// The plan: which documents to read (or what to search for).
    async fn plan(
        &self,
        run: &mut Run<'_>,
        question: &str,
        fields: &[Field],
    ) -> Result<Vec<Call>, StrategyError> {
        let all = run.env.index.documents();
        let mut documents: Vec<String> = all
            .iter()
            .take(LISTED)
            .map(|d| match filters::metadata_line(&d.doc.metadata) {
                line if line.is_empty() => format!("- {}", d.doc.title),
                line => format!("- {} ({line})", d.doc.title),
            })
            .collect();
        if all.len() > LISTED {
            documents.push(format!("... and {} more", all.len() - LISTED));
        }
        let described = filters::describe(fields);
        let user = prompt::render(
            prompt::DOCS_USER,
            &[
                ("fields", described.as_str()),
                ("documents", documents.join("\n").as_str()),
                ("question", question),
            ],
        );
        let tools = run.env.model.supports_tools();
        let mut request = prompt::request(prompt::DOCS_SYSTEM, user, PLAN_MAX_TOKENS);
        if tools {
            request.tools = tool_defs();
        } else {
            request.constraint = Some(constrain::docs_plan(fields));
        }
        let completion = run.chat(1, "plan", request, false).await?;
        let calls = if tools {
            calls_of_tools(&completion, question)
        } else {
            parse_calls(&completion.text, question)
        };
        if calls.is_empty() {
            run.note(
                1,
                "the plan named no tool: reading the documents nearest the question".into(),
            );
            return Ok(vec![Call::Query {
                query: question.to_string(),
                filters: Value::Null,
            }]);
        }
        Ok(calls)
    }

    /// The documents a query reads (indices into the index's list), best first.
    fn choose(
        &self,
        run: &mut Run<'_>,
        query: &str,
        filter: &Value,
        fields: &[Field],
        vector: &[f32],
    ) -> Vec<usize> {
        let all = run.env.index.documents();
        let conditions = filters::conditions(filter);
        let unknown = filters::unknown_fields(&conditions, fields);
        if !unknown.is_empty() {
            run.note(
                1,
                format!(
                    "no document has the field{} {}: filter left out",
                    if unknown.len() == 1 { "" } else { "s" },
                    unknown.join(", ")
                ),
            );
        }
        let near = run.documents_near(1, query, vector, self.k * 4);
        let nearness = |d: usize| near.iter().position(|&n| n == d).unwrap_or(usize::MAX);
        let mut matched: Vec<(usize, f32)> = all
            .iter()
            .enumerate()
            .filter_map(|(d, doc)| filters::score(&doc.doc, &conditions, fields).map(|s| (d, s)))
            .collect();
        let filtered = conditions.len() > unknown.len();
        if matched.is_empty() {
            run.note(
                1,
                format!(
                    "no document matches the filters {filter}: reading the documents nearest \
                     the query"
                ),
            );
        }
        if matched.is_empty() || !filtered {
            matched = near.iter().map(|&d| (d, 1.0)).collect();
        }
        matched.sort_by(|a, b| b.1.total_cmp(&a.1).then(nearness(a.0).cmp(&nearness(b.0))));
        if matched.len() > self.max_documents {
            run.note(
                1,
                format!(
                    "{} documents match; reading the {} that match best and lie nearest the \
                     query",
                    matched.len(),
                    self.max_documents
                ),
            );
            matched.truncate(self.max_documents);
        }
        let hits: Vec<RetrievedChunk> = matched
            .iter()
            .filter_map(|&(d, score)| {
                let indexed = &all[d];
                let first = indexed.chunks.first()?.id(&indexed.doc);
                let row = run.env.index.row_of(first)?;
                Some(passages::retrieved(&run.env.index.chunk(row), score, true))
            })
            .collect();
        run.record_retrieval(
            1,
            Origin::Model,
            format!("query_documents {query:?} filters {filter}"),
            self.max_documents,
            hits,
            0,
        );
        matched.into_iter().map(|(d, _)| d).collect()
    }

    /// The parts the readers get: each document in runs of chunks within `part_tokens`;
    /// past `max_parts`, each document keeps an equal share, its parts nearest `vector`.
    fn parts(&self, run: &mut Run<'_>, docs: &[usize], vector: &[f32]) -> Vec<Part> {
        let index = run.env.index;
        let all = index.documents();
        let tokens = |row: usize| {
            let text = index.chunk(row).text();
            run.env
                .embedder
                .count_tokens(text)
                .unwrap_or(text.len() / 4)
        };
        let mut per_doc: Vec<Vec<Vec<ChunkId>>> = Vec::new();
        for &d in docs {
            let indexed: &IndexedDoc = &all[d];
            let mut parts: Vec<Vec<ChunkId>> = vec![Vec::new()];
            let mut used = 0;
            for chunk in &indexed.chunks {
                let id = chunk.id(&indexed.doc);
                let Some(row) = index.row_of(id) else {
                    continue;
                };
                let n = tokens(row);
                let last = parts.last_mut().expect("one part at least");
                if !last.is_empty() && used + n > self.part_tokens {
                    parts.push(vec![id]);
                    used = n;
                } else {
                    last.push(id);
                    used += n;
                }
            }
            parts.retain(|p| !p.is_empty());
            per_doc.push(parts);
        }
        let total: usize = per_doc.iter().map(Vec::len).sum();
        let share = (self.max_parts / docs.len().max(1)).max(1);
        if total > self.max_parts {
            run.note(
                1,
                format!(
                    "the documents make {total} parts of {} tokens, more than the {} read: each \
                     document keeps its {share} part{} nearest the query",
                    self.part_tokens,
                    self.max_parts,
                    if share == 1 { "" } else { "s" }
                ),
            );
        }
        let nearness = |part: &Vec<ChunkId>| {
            part.iter()
                .filter_map(|&id| index.row_of(id))
                .map(|row| dot(index.vector(row), vector))
                .fold(f32::MIN, f32::max)
        };
        let mut out = Vec::new();
        for (&doc, parts) in docs.iter().zip(per_doc) {
            let of = parts.len();
            let mut keep: Vec<usize> = (0..of).collect();
            if total > self.max_parts && of > share {
                keep.sort_by(|&a, &b| nearness(&parts[b]).total_cmp(&nearness(&parts[a])));
                keep.truncate(share);
                keep.sort_unstable();
            }
            out.extend(keep.into_iter().map(|i| Part {
                doc,
                number: i + 1,
                of,
                chunks: parts[i].clone(),
            }));
        }
        out
    }

    /// Sends every part to the reader, `concurrency` at a time; each useful answer is emitted
    /// as a fact when it arrives. Returns the useful answers in part order.
    async fn read(&self, run: &mut Run<'_>, query: &str, parts: &[Part]) -> Vec<Partial> {
        let index = run.env.index;
        let all = index.documents();
        let reader: &dyn ChatModel = match &self.reader {
            Some(reader) => reader.as_ref(),
            None => run.env.model,
        };
        let other_model = self.reader.is_some().then(|| reader.id().to_string());
        let requests: Vec<ChatRequest> = parts
            .iter()
            .map(|part| {
                let doc = &all[part.doc].doc;
                let mut name = doc.title.clone();
                let meta = filters::metadata_line(&doc.metadata);
                if !meta.is_empty() {
                    name.push_str(&format!(" ({meta})"));
                }
                if part.of > 1 {
                    name.push_str(&format!(", part {} of {}", part.number, part.of));
                }
                let text = passages::render(index, &part.chunks);
                let user = prompt::render(
                    prompt::DOCS_READ_USER,
                    &[
                        ("document", name.as_str()),
                        ("passages", text.as_str()),
                        ("question", query),
                    ],
                );
                prompt::request(prompt::DOCS_READ_SYSTEM, user, READ_MAX_TOKENS)
            })
            .collect();
        let control = run.control.clone();
        let mut arrivals = stream::iter(requests.into_iter().enumerate())
            .map(|(i, request)| {
                let control = &control;
                async move {
                    let mut quiet = |_: &str| {};
                    let (result, call) =
                        llm::call(reader, 1, "read", request, control, &mut quiet).await;
                    (i, result, call)
                }
            })
            .buffer_unordered(self.concurrency.max(1));
        let mut calls = Vec::with_capacity(parts.len());
        let mut partials: Vec<Option<Partial>> = (0..parts.len()).map(|_| None).collect();
        while let Some((i, result, mut call)) = arrivals.next().await {
            call.model = other_model.clone();
            calls.push((i, call));
            let part = &parts[i];
            let title = all[part.doc].doc.title.clone();
            let completion = match result {
                Ok(completion) => completion,
                Err(e) => {
                    run.note(
                        1,
                        format!("reading {title} (part {}) failed: {e}", part.number),
                    );
                    continue;
                }
            };
            run.cost.add_call(completion.usage);
            let text = completion.text.trim().to_string();
            if text.is_empty() || text.to_uppercase().contains(NOTHING) {
                continue;
            }
            let (matched, _) = reply::match_ids(&text, &part.chunks);
            let cited: Vec<ChunkId> = matched.iter().map(|m| m.id()).collect();
            let fact = Fact {
                cycle: 1,
                fact: text.clone(),
                relevance: format!("from {title}"),
                source: cited
                    .first()
                    .map_or_else(|| title.clone(), ChunkId::to_string),
                chunk_id: cited.first().copied(),
                trusted: !cited.is_empty(),
                repaired: false,
                unsupported: false,
                remembered: false,
            };
            run.emit(Event::Fact(fact.clone()));
            run.trace.steps.push(crate::trace::Step::Fact(fact));
            partials[i] = Some(Partial { title, text, cited });
        }
        // The calls in part order, whatever order they finished in.
        calls.sort_by_key(|(i, _)| *i);
        for (_, call) in calls {
            run.trace.steps.push(crate::trace::Step::Llm(call));
        }
        let read: Vec<ChunkId> = parts.iter().flat_map(|p| p.chunks.clone()).collect();
        run.mark_read(&read);
        partials.into_iter().flatten().collect()
    }
}

impl Strategy for Docs {
    fn name(&self) -> &'static str {
        "docs"
    }

    fn answer_model(&self) -> Option<&AnswerModel> {
        self.answer_model.as_ref()
    }

    fn config(&self) -> Value {
        json!({
            "reader": self.reader.as_ref().map(|m| m.id().to_string()),
            "concurrency": self.concurrency,
            "part_tokens": self.part_tokens,
            "max_documents": self.max_documents,
            "max_parts": self.max_parts,
            "k": self.k,
            "answer_model": answer_model_id(&self.answer_model),
        })
    }

    fn run<'a>(
        &'a self,
        question: &'a str,
        env: Env<'a>,
        sink: &'a mut dyn Sink,
    ) -> BoxFuture<'a, Result<Answer, StrategyError>> {
        Box::pin(async move {
            let mut run = Run::new(self, question, env, sink);
            run.emit(Event::Cycle { cycle: 1 });
            let all = env.index.documents();
            if all.is_empty() {
                let answered = run.nothing_found();
                return Ok(run.finish(answered, Vec::new(), Termination::NothingRetrieved, 1));
            }
            let fields = filters::fields(all);
            let calls = self.plan(&mut run, question, &fields).await?;

            let mut partials: Vec<Partial> = Vec::new();
            let mut searched: Vec<ChunkId> = Vec::new();
            let mut read_all: Vec<ChunkId> = Vec::new();
            for call in &calls {
                match call {
                    Call::Query { query, filters } => {
                        let vector = env.embedder.embed_one(query)?;
                        let docs = self.choose(&mut run, query, filters, &fields, &vector);
                        let parts = self.parts(&mut run, &docs, &vector);
                        read_all.extend(parts.iter().flat_map(|p| p.chunks.clone()));
                        partials.extend(self.read(&mut run, query, &parts).await);
                    }
                    Call::Search { query } => {
                        let hits = run.retrieve(1, Origin::Model, query, self.k, false)?;
                        searched.extend(hits.iter().map(|h| h.chunk_id));
                    }
                }
            }
            run.mark_read(&searched);

            let mut shown: Vec<ChunkId> = Vec::new();
            for id in partials
                .iter()
                .flat_map(|p| p.cited.clone())
                .chain(searched)
            {
                if !shown.contains(&id) {
                    shown.push(id);
                }
            }
            if partials.is_empty() && shown.is_empty() {
                let answered = Answered {
                    reply: crate::reader::reply::Reply {
                        answer: "not found".into(),
                        found: false,
                    },
                    text: "Answer: not found\nExplanation: none of the documents read says.".into(),
                    citations: Vec::new(),
                    shown: Vec::new(),
                };
                run.emit(Event::Token {
                    text: answered.text.clone(),
                });
                let ranked = budget::ranked(&[], Vec::new(), read_all);
                return Ok(run.finish(answered, ranked, Termination::SinglePass, 1));
            }
            let facts: Vec<String> = partials
                .iter()
                .map(|p| format!("- From {}: {}", p.title, p.text))
                .collect();
            let facts = facts.join("\n");
            let answered = run
                .answer(
                    1,
                    question,
                    (!facts.is_empty()).then_some(facts.as_str()),
                    &shown,
                )
                .await?;
            let ranked = budget::ranked(&answered.citations, shown, read_all);
            Ok(run.finish(answered, ranked, Termination::SinglePass, 1))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_are_read_in_the_spellings_small_models_use() {
        let q = "the question";
        assert_eq!(
            parse_calls(
                r#"{"action": "query_documents", "query": "revenue", "filters": {"company": "northwind"}}"#,
                q
            ),
            [Call::Query {
                query: "revenue".into(),
                filters: json!({"company": "northwind"})
            }]
        );
        assert_eq!(
            parse_calls(r#"{"action": "Search-Passages"}"#, q),
            [Call::Search { query: q.into() }]
        );
        assert_eq!(
            parse_calls(r#"{"action": "queryDocuments", "query": " "}"#, q),
            [Call::Query {
                query: q.into(),
                filters: Value::Null
            }]
        );
        assert!(parse_calls("I would read the reports.", q).is_empty());
    }
}
