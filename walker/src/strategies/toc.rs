//! `toc`: the model reads a table of contents (the documents' own headings, each with its
//! section id) and picks five sections, most useful first (or none); their text, in that
//! order and within a token budget, is what the answer is written from.
//!
//! Under the table of contents the model also reads its leads ([`crate::search::leads`]): the
//! sections of the question's nearest passages, each with the passage's line nearest the
//! question.
//!
//! `sections` is toc without the model's pick: it reads the leads' first five sections in
//! the search's order, with the same budget and answer step. It is the baseline a pick must
//! beat.
//!
//! A message that needs no documents (a greeting, thanks) is answered directly; when the
//! model picks nothing, the answer says nothing was found instead of guessing. When the
//! headings of every document are too many to show, deeper headings are left out first, then
//! only the documents of the question's best passages are shown. A document without headings
//! is listed by the table of contents generated for it at index time ([`crate::search::contents`]),
//! if any.

use serde_json::{json, Value};
use walkrag_core::ChatRequest;
use walkrag_engine::{ChunkId, Document, IndexedDoc, SectionId};

use crate::answer::{Answer, Termination};
use crate::reader::constrain;
use crate::reader::jsonl::{ObjectReader, Raw};
use crate::reader::prompt;
use crate::reader::reply::Reply;
use crate::run::{Answered, Run};
use crate::search::budget;
use crate::search::contents::{needs_contents, ContentsFile};
use crate::search::leads::{self, Lead};
use crate::strategy::{answer_model_id, AnswerModel, BoxFuture, Env, Strategy, StrategyError};
use crate::trace::event::Event;
use crate::trace::event::Sink;

/// The most tokens the pick may take: a handful of ids, or a one-line reply.
const PICK_MAX_TOKENS: usize = 120;

/// Table-of-contents retrieval.
#[derive(Debug, Clone)]
pub struct Toc {
    /// Sections the model picks (all of them where the table lists fewer), most useful first:
    /// a ranking, as `single`'s is. Allowed to pick fewer, the 0.5B model picked one or two
    /// and read less than `single` (section recall@5 0.633 against 0.767 held to five, on the
    /// first 15 questions over the llama.cpp server README, docs/results/leads).
    pub max_sections: usize,
    /// Tokens of section text (counted with the embedder's tokenizer) shown to the answer
    /// step: 1,000 leave a 2,048-token model room for the prompt and the answer.
    pub budget_tokens: usize,
    /// Most headings shown: 150 lines are about 2,000 tokens.
    pub max_entries: usize,
    /// Passages searched for when the headings of all documents are too many: their
    /// documents' headings are shown.
    pub k: usize,
    /// The question's nearest passages whose sections are listed as leads under the table
    /// of contents; 0: none. 10: section recall@5 0.533 → 0.700 (docs/results/leads).
    pub leads: usize,
    /// Who picks the sections: the model (`toc`) or the search's order (`sections`).
    pub chooser: SectionChooser,
    /// The model of the answer step; `None`: the chat model.
    pub answer_model: Option<AnswerModel>,
}

/// Who picks the sections that toc reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SectionChooser {
    /// The model, from the table of contents and its leads: the `toc` strategy.
    #[default]
    Model,
    /// The search: the leads' first sections in the search's order, with no model call
    /// before the answer. The `sections` strategy, toc's baseline: a model's pick that
    /// does not beat it is not earning its call.
    Search,
}

impl Default for Toc {
    fn default() -> Self {
        Self {
            max_sections: 5,
            budget_tokens: 1_000,
            max_entries: 150,
            k: 5,
            leads: 10,
            chooser: SectionChooser::Model,
            answer_model: None,
        }
    }
}

/// One heading of the table of contents.
#[derive(Debug, Clone, PartialEq)]
struct Entry {
    /// Index of the document in the index's list.
    doc: usize,
    id: SectionId,
    /// 1 for a top heading (or a document without headings), 2 below it, ...
    depth: usize,
    heading: String,
    /// What picking it reads.
    scope: Scope,
}

#[derive(Debug, Clone, PartialEq)]
enum Scope {
    /// Section `i` with everything under it.
    Subtree(usize),
    /// Section `i`'s own text, not its subsections'.
    Own(usize),
    /// These chunks (an entry of a generated table of contents).
    Chunks(Vec<ChunkId>),
}

impl Entry {
    /// The chunks picking this entry reads, in document order.
    fn chunks(&self, indexed: &IndexedDoc) -> Vec<ChunkId> {
        let within = |c: &&walkrag_engine::Chunk| match &self.scope {
            Scope::Subtree(i) => indexed.doc.is_within(c.section as usize, *i),
            Scope::Own(i) => c.section as usize == *i,
            Scope::Chunks(_) => false,
        };
        match &self.scope {
            Scope::Chunks(ids) => ids.clone(),
            _ => indexed
                .chunks
                .iter()
                .filter(within)
                .map(|c| c.id(&indexed.doc))
                .collect(),
        }
    }
}

/// The headings of `docs` (indices into `all`), down to `max_depth`, in document order. A
/// document without headings lists its generated contents when `contents` has them.
///
/// A lone top heading over a whole document stays an entry of its own, though picking it
/// reads the whole document (the budget then keeps the passages nearest the question):
/// offered instead as its opening text alone, with its chapters moved up a level, the 0.5B
/// model still picked the first line as often, and section recall@5 on the llama.cpp server
/// README fell from 0.533 to 0.333 (`docs/results/llama-cpp-server/`).
fn entries(
    all: &[IndexedDoc],
    docs: &[usize],
    max_depth: usize,
    contents: &ContentsFile,
) -> Vec<Entry> {
    let mut out = Vec::new();
    for &d in docs {
        let doc = &all[d].doc;
        if let Some(generated) = contents.get(doc).filter(|_| needs_contents(doc)) {
            out.extend(generated.entries.iter().map(|e| Entry {
                doc: d,
                id: e.id,
                depth: 1,
                heading: if e.summary.is_empty() {
                    e.heading.clone()
                } else {
                    format!("{} — {}", e.heading, e.summary)
                },
                scope: Scope::Chunks(e.chunks.clone()),
            }));
            continue;
        }
        for (i, section) in doc.sections.iter().enumerate() {
            let depth = depth_of(doc, i);
            if depth > max_depth {
                continue;
            }
            let (heading, scope) = if section.path.is_empty() {
                // The text before the first heading: listed only when there is some.
                if doc.text[section.body.clone()].trim().is_empty() {
                    continue;
                }
                ("(before the first heading)".to_string(), Scope::Own(i))
            } else {
                (section.title().to_string(), Scope::Subtree(i))
            };
            out.push(Entry {
                doc: d,
                id: section.id,
                depth,
                heading,
                scope,
            });
        }
    }
    out
}

/// How deep section `i` sits: 1 for a section without a parent.
fn depth_of(doc: &Document, mut i: usize) -> usize {
    let mut depth = 1;
    while let Some(parent) = doc.sections[i].parent {
        depth += 1;
        i = parent;
    }
    depth
}

/// The headings of `docs` that fit in `max`: all of them, else those down to the deepest
/// level that fits (returned with it); `None` when even the top headings are too many.
fn fitting(
    all: &[IndexedDoc],
    docs: &[usize],
    max: usize,
    contents: &ContentsFile,
) -> Option<(Vec<Entry>, Option<usize>)> {
    let every = entries(all, docs, usize::MAX, contents);
    if every.len() <= max {
        return Some((every, None));
    }
    let deepest = every.iter().map(|e| e.depth).max().unwrap_or(1);
    let depth = (1..deepest)
        .rev()
        .find(|&depth| every.iter().filter(|e| e.depth <= depth).count() <= max)?;
    let kept = every.into_iter().filter(|e| e.depth <= depth).collect();
    Some((kept, Some(depth)))
}

/// The table of contents as the model reads it: each document's title, then its headings
/// indented by depth, each after its id in square brackets.
fn render(all: &[IndexedDoc], toc: &[Entry]) -> String {
    let mut out = String::new();
    let mut last_doc = None;
    for e in toc {
        if last_doc != Some(e.doc) {
            if last_doc.is_some() {
                out.push('\n');
            }
            // The title, unless the document's top heading says it.
            let title = &all[e.doc].doc.title;
            if e.depth > 1 || e.heading != *title {
                out.push_str(&format!("Document: {title}\n"));
            }
            last_doc = Some(e.doc);
        }
        let indent = "  ".repeat(e.depth - 1);
        out.push_str(&format!("{indent}[{}] {}\n", e.id, e.heading));
    }
    out
}

/// What the model's pick said.
#[derive(Debug, Clone, PartialEq)]
enum Pick {
    /// Section ids, most useful first, each once (may be empty: nothing fits).
    Sections(Vec<SectionId>),
    /// The message needs no documents: this is the reply.
    Reply(String),
}

/// Reads the pick: a `{"reply": ...}` object is a direct reply; otherwise every 8-hex-digit
/// token of the text, in order, is a section id (a small model writes them as a JSON list,
/// a bare list or prose alike).
fn parse_pick(text: &str) -> Pick {
    let mut reader = ObjectReader::new();
    let mut objects = reader.push(text);
    objects.extend(reader.finish());
    for raw in &objects {
        if let Raw::Object(object) = raw {
            let reply = object.get("reply").and_then(Value::as_str);
            let sections = object.get("sections").and_then(Value::as_array);
            if let (Some(reply), None | Some(&[])) = (reply, sections.map(Vec::as_slice)) {
                return Pick::Reply(reply.trim().to_string());
            }
        }
    }
    let mut ids: Vec<SectionId> = Vec::new();
    for id in text
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter_map(SectionId::parse)
    {
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    Pick::Sections(ids)
}

/// The entries `ids` name, in order, and the ids that name none.
fn resolve<'t>(toc: &'t [Entry], ids: &[SectionId]) -> (Vec<&'t Entry>, Vec<SectionId>) {
    let mut picked: Vec<&Entry> = Vec::new();
    let mut unknown: Vec<SectionId> = Vec::new();
    for &id in ids {
        match toc.iter().find(|e| e.id == id) {
            Some(entry) => picked.push(entry),
            None => unknown.push(id),
        }
    }
    (picked, unknown)
}

impl Toc {
    /// Shows the table of contents and reads which sections the model picks.
    async fn pick(
        &self,
        run: &mut Run<'_>,
        question: &str,
        toc: &[Entry],
        leads: &[Lead],
    ) -> Result<Pick, StrategyError> {
        let contents = render(run.env.index.documents(), toc);
        let leads = if leads.is_empty() {
            String::new()
        } else {
            format!(
                "\nThe passages nearest the question, each after the id of the section that \
                 holds it:\n{}",
                leads::render(leads)
            )
        };
        // The count the prompt asks for is the one the schema holds the pick to.
        let count = self.max_sections.min(toc.len());
        let system = prompt::render(prompt::TOC_SYSTEM, &[("max", count.to_string().as_str())]);
        let user = prompt::render(
            prompt::TOC_USER,
            &[
                ("toc", contents.as_str()),
                ("leads", leads.as_str()),
                ("question", question),
            ],
        );
        let ids: Vec<String> = toc.iter().map(|e| e.id.to_string()).collect();
        let request = ChatRequest {
            constraint: Some(constrain::toc_pick(&ids, count)),
            ..prompt::request(&system, user, PICK_MAX_TOKENS)
        };
        let completion = run.chat(1, "pick", request, false).await?;
        Ok(parse_pick(&completion.text))
    }

    /// The headings shown for `question`: every document's if they fit, else those of the
    /// documents of the question's best passages.
    fn table(
        &self,
        run: &mut Run<'_>,
        question: &str,
        vector: &[f32],
        contents: &ContentsFile,
    ) -> Vec<Entry> {
        let all = run.env.index.documents();
        let docs: Vec<usize> = (0..all.len()).collect();
        if let Some((toc, depth)) = fitting(all, &docs, self.max_entries, contents) {
            if let Some(depth) = depth {
                run.note(
                    1,
                    format!("the table of contents shows headings down to level {depth}"),
                );
            }
            return toc;
        }
        let near = run.documents_near(1, question, vector, self.k);
        run.note(
            1,
            format!(
                "the headings of all {} documents are more than the {} shown: showing those of \
                 the {} documents of the question's best passages",
                all.len(),
                self.max_entries,
                near.len()
            ),
        );
        match fitting(all, &near, self.max_entries, contents) {
            Some((toc, _)) => toc,
            None => {
                let mut top = entries(all, &near, 1, contents);
                top.truncate(self.max_entries);
                top
            }
        }
    }
}

impl Toc {
    /// The sections of the question's nearest passages, each as the deepest entry of `toc`
    /// that holds the passage (a passage under no entry is passed over).
    fn leads(&self, run: &mut Run<'_>, question: &str, vector: &[f32], toc: &[Entry]) -> Vec<Lead> {
        if self.leads == 0 {
            return Vec::new();
        }
        let index = run.env.index;
        let all = index.documents();
        let held: Vec<Vec<ChunkId>> = toc.iter().map(|e| e.chunks(&all[e.doc])).collect();
        let listed = |id: ChunkId| {
            toc.iter()
                .zip(&held)
                .filter(|(_, chunks)| chunks.contains(&id))
                .max_by_key(|(e, _)| e.depth)
                .map(|(e, _)| (e.id, e.heading.clone()))
        };
        leads::search(run, 1, question, vector, self.leads, listed)
    }
}

impl Strategy for Toc {
    fn name(&self) -> &'static str {
        match self.chooser {
            SectionChooser::Model => "toc",
            SectionChooser::Search => "sections",
        }
    }

    fn answer_model(&self) -> Option<&AnswerModel> {
        self.answer_model.as_ref()
    }

    fn config(&self) -> serde_json::Value {
        json!({
            "max_sections": self.max_sections,
            "budget_tokens": self.budget_tokens,
            "max_entries": self.max_entries,
            "k": self.k,
            "leads": self.leads,
            "answer_model": answer_model_id(&self.answer_model),
            "chooser": match self.chooser {
                SectionChooser::Model => "model",
                SectionChooser::Search => "search",
            },
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
            let question_vector = env.embedder.embed_one(question)?;
            let contents = match ContentsFile::of_index(env.index.dir()) {
                Ok(contents) => contents,
                Err(e) => {
                    run.note(1, format!("generated tables of contents not read: {e}"));
                    ContentsFile::default()
                }
            };
            let toc = self.table(&mut run, question, &question_vector, &contents);
            if toc.is_empty() {
                let answered = run.nothing_found();
                return Ok(run.finish(answered, Vec::new(), Termination::NothingRetrieved, 1));
            }
            let leads = self.leads(&mut run, question, &question_vector, &toc);
            let pick = match self.chooser {
                SectionChooser::Model => self.pick(&mut run, question, &toc, &leads).await?,
                SectionChooser::Search => Pick::Sections(
                    leads
                        .iter()
                        .map(|lead| lead.section)
                        .take(self.max_sections)
                        .collect(),
                ),
            };
            let ids = match pick {
                Pick::Reply(reply) => {
                    run.note(
                        1,
                        "the message needs no documents: answered directly".into(),
                    );
                    run.emit(Event::Token {
                        text: reply.clone(),
                    });
                    let answered = Answered {
                        reply: Reply {
                            answer: reply.clone(),
                            found: true,
                        },
                        text: reply,
                        citations: Vec::new(),
                        shown: Vec::new(),
                    };
                    return Ok(run.finish(answered, Vec::new(), Termination::NoRetrieval, 1));
                }
                Pick::Sections(ids) => ids,
            };
            let (mut picked, unknown) = resolve(&toc, &ids);
            if !unknown.is_empty() {
                run.note(
                    1,
                    format!(
                        "the model named {} not in the table of contents: {}",
                        if unknown.len() == 1 {
                            "a section"
                        } else {
                            "sections"
                        },
                        unknown
                            .iter()
                            .map(ToString::to_string)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                );
            }
            if picked.len() > self.max_sections {
                run.note(
                    1,
                    format!(
                        "the model picked {} sections: the first {} kept",
                        picked.len(),
                        self.max_sections
                    ),
                );
                picked.truncate(self.max_sections);
            }
            if picked.is_empty() {
                let answered = not_in_contents();
                return Ok(run.finish(answered, Vec::new(), Termination::NothingRetrieved, 1));
            }
            let headings: Vec<String> = picked
                .iter()
                .map(|e| format!("{} {}", e.id, e.heading))
                .collect();
            run.note(1, format!("sections picked: {}", headings.join("; ")));
            let index = env.index;
            let groups: Vec<Vec<ChunkId>> = picked
                .iter()
                .map(|e| e.chunks(&index.documents()[e.doc]))
                .collect();
            let (shown, all) = budget::fit(&run, &groups, &question_vector, self.budget_tokens);
            if shown.len() < all.len() {
                run.note(
                    1,
                    format!(
                        "{} of the picked sections' {} passages fit the {}-token budget",
                        shown.len(),
                        all.len(),
                        self.budget_tokens
                    ),
                );
            }
            run.mark_read(&shown);
            let answered = run.answer(1, question, None, &shown).await?;
            let ranked = budget::ranked(&answered.citations, shown, all);
            Ok(run.finish(answered, ranked, Termination::SinglePass, 1))
        })
    }
}

/// The answer when the model picked no section it was shown.
fn not_in_contents() -> Answered {
    Answered {
        reply: Reply {
            answer: "not found".into(),
            found: false,
        },
        text: "Answer: not found\nExplanation: no section in the table of contents seems to \
               hold the answer."
            .into(),
        citations: Vec::new(),
        shown: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pick_is_ids_in_order_or_a_direct_reply() {
        assert_eq!(
            parse_pick(r#"{"sections": ["0A1B2C3D", "11112222", "0a1b2c3d"]}"#),
            Pick::Sections(vec![SectionId(0x0a1b2c3d), SectionId(0x11112222)])
        );
        assert_eq!(
            parse_pick("```json\n[\"deadbeef\"]\n```"),
            Pick::Sections(vec![SectionId(0xdeadbeef)])
        );
        assert_eq!(
            parse_pick(r#"{"sections": []}"#),
            Pick::Sections(Vec::new())
        );
        assert_eq!(
            parse_pick(r#"{"reply": "Hello! Ask me about the report."}"#),
            Pick::Reply("Hello! Ask me about the report.".into())
        );
        // Words of eight letters that happen to be hex digits are not the only tokens
        // considered: a token must be exactly eight hex digits.
        assert_eq!(
            parse_pick("sections: deadbeefcafe, acceded"),
            Pick::Sections(Vec::new())
        );
    }
}
