//! `roam`: the model reads the documents as an abridged outline (top sections with the start
//! of their text, deeper sections closed, every section after its id) and opens several
//! sections at once; an opened section's text and the headings inside it appear in place, so
//! the model always reads one coherent document. When it says it can answer (or opens nothing
//! new, or the turns run out), the open sections' passages go to the shared answer step.
//!
//! Under the outline the model also reads its leads ([`crate::search::leads`]): the closed sections
//! holding the question's nearest passages, each with the passage's line nearest the
//! question; a lead may be opened like any section shown.
//!
//! Open sections are kept within a token budget: past it the least recently used close again,
//! by the strategy, not by asking the model. Made with [`Roam::conversation`], sections stay
//! open across the questions of a conversation (`walkrag chat --strategy roam`).
//!
//! Tool-calling models get `expand_sections(ids)` and `answer()` as tools; other models write
//! one JSON object (`{"action": "expand_sections", "ids": [...]}`), read by the walker's
//! streaming object reader, whose first id is held to the ids shown where the model can be
//! constrained (local models).

use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::{json, Value};
use walkrag_core::{Completion, ToolDef};
use walkrag_engine::outline::{children_of, count_below, expanded_depth, roots_of, snippet};
use walkrag_engine::{ChunkId, Index, SectionId};

use crate::answer::{Answer, Termination};
use crate::reader::constrain;
use crate::reader::jsonl::{squash, ObjectReader, Raw};
use crate::reader::prompt;
use crate::run::Run;
use crate::search::budget;
use crate::search::dot;
use crate::search::leads::{self, Lead};
use crate::search::passages;
use crate::strategy::{answer_model_id, AnswerModel, BoxFuture, Env, Strategy, StrategyError};
use crate::trace::event::Event;
use crate::trace::event::Sink;
use crate::trace::Origin;

/// The most tokens one navigation turn may take: an action and a few ids.
const TURN_MAX_TOKENS: usize = 80;

/// Characters of a top section's text shown before it is opened.
const SNIPPET_CHARS: usize = 100;

/// Outline navigation.
#[derive(Debug, Clone)]
pub struct Roam {
    /// Most navigation turns before the answer.
    pub max_turns: usize,
    /// Most sections one `expand_sections` opens.
    pub max_expand: usize,
    /// Tokens of open text (counted with the embedder's tokenizer), in the outline and for
    /// the answer; past it the least recently used sections close.
    pub budget_tokens: usize,
    /// Most outline lines for all documents; past it only the documents of the question's
    /// best passages are shown.
    pub max_lines: usize,
    /// Passages searched for when the outline of all documents is too long, or when no
    /// section was opened.
    pub k: usize,
    /// The question's nearest passages whose sections are listed as leads under the
    /// outline while closed; 0: none. 10: section recall@5 0.767 either way, 40 of 60 opened
    /// sections were leads (docs/results/leads).
    pub leads: usize,
    /// Sections open across questions (a conversation); `None` starts every question with
    /// all sections closed.
    pub opened: Option<Arc<Mutex<Opened>>>,
    /// The model of the answer step; `None`: the chat model.
    pub answer_model: Option<AnswerModel>,
}

impl Default for Roam {
    fn default() -> Self {
        Self {
            max_turns: 3,
            max_expand: 5,
            budget_tokens: 1_200,
            max_lines: 150,
            k: 5,
            leads: 10,
            opened: None,
            answer_model: None,
        }
    }
}

impl Roam {
    /// A roam whose open sections stay open from one question to the next.
    pub fn conversation() -> Self {
        Self {
            opened: Some(Arc::default()),
            ..Self::default()
        }
    }
}

/// Open sections, least recently used first.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Opened {
    ids: Vec<SectionId>,
}

impl Opened {
    /// The open sections, least recently used first.
    pub fn ids(&self) -> &[SectionId] {
        &self.ids
    }

    pub fn contains(&self, id: SectionId) -> bool {
        self.ids.contains(&id)
    }

    /// Opens `id`, or marks it used now.
    fn touch(&mut self, id: SectionId) {
        self.ids.retain(|&x| x != id);
        self.ids.push(id);
    }

    /// Closes the least recently used sections until the open text fits `budget` tokens,
    /// never one of `keep` (what was just opened); returns what was closed.
    fn fit(
        &mut self,
        budget: usize,
        tokens: impl Fn(SectionId) -> usize,
        keep: &[SectionId],
    ) -> Vec<SectionId> {
        let mut used: usize = self.ids.iter().map(|&id| tokens(id)).sum();
        let mut closed = Vec::new();
        while used > budget {
            let Some(at) = self.ids.iter().position(|id| !keep.contains(id)) else {
                break;
            };
            let id = self.ids.remove(at);
            used -= tokens(id);
            closed.push(id);
        }
        closed
    }
}

/// Where a section lives: document and section indices in the index's lists.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Place {
    doc: usize,
    section: usize,
}

/// The sections of the index by id.
fn place_of(index: &Index, id: SectionId) -> Option<Place> {
    index.documents().iter().enumerate().find_map(|(d, ix)| {
        ix.doc
            .sections
            .iter()
            .position(|s| s.id == id)
            .map(|section| Place { doc: d, section })
    })
}

/// A section's own chunks (not those of the sections under it), in document order.
fn own_chunks(index: &Index, place: Place) -> Vec<ChunkId> {
    let indexed = &index.documents()[place.doc];
    indexed
        .chunks
        .iter()
        .filter(|c| c.section as usize == place.section)
        .map(|c| c.id(&indexed.doc))
        .collect()
}

/// What the model asked for in one turn.
#[derive(Debug, Clone, PartialEq)]
enum Move {
    /// Open these sections (ids as written, in order).
    Expand(Vec<String>),
    /// The open text answers the question, or nothing closed could.
    Answer,
    /// Nothing readable: what it was.
    Unreadable(String),
}

/// Every 8-hex-digit token of `text` and the other words written where ids belong.
fn ids_in(value: &Value) -> Vec<String> {
    let texts: Vec<String> = match value {
        Value::Array(items) => items
            .iter()
            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
            .collect(),
        Value::String(s) => s
            .split(|c: char| c == ',' || c.is_whitespace())
            .map(str::to_string)
            .collect(),
        other => vec![other.to_string()],
    };
    texts
        .into_iter()
        .map(|t| {
            t.trim_matches(|c: char| !c.is_ascii_alphanumeric())
                .to_string()
        })
        .filter(|t| !t.is_empty())
        .collect()
}

/// Reads a turn written as JSON: `expand_sections` (spelled as small models do) with its ids,
/// or `answer`; a reply with no object but section ids in it is read as opening them.
fn parse_move(text: &str) -> Move {
    let mut reader = ObjectReader::new();
    let mut objects = reader.push(text);
    objects.extend(reader.finish());
    for raw in &objects {
        let Raw::Object(object) = raw else { continue };
        let action = object
            .get("action")
            .and_then(Value::as_str)
            .map(squash)
            .unwrap_or_default();
        let ids = ["ids", "sections", "id", "section_ids"]
            .iter()
            .find_map(|k| object.get(*k));
        match (action.as_str(), ids) {
            // An answer naming sections asks for them: ids are where to look.
            (_, Some(ids)) if !ids_in(ids).is_empty() => return Move::Expand(ids_in(ids)),
            ("answer" | "done" | "respond", _) => return Move::Answer,
            (_, Some(_)) => return Move::Expand(Vec::new()),
            _ => {}
        }
    }
    let ids: Vec<String> = text
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|t| SectionId::parse(t).is_some())
        .map(str::to_string)
        .collect();
    if ids.is_empty() {
        Move::Unreadable(text.trim().chars().take(200).collect())
    } else {
        Move::Expand(ids)
    }
}

/// Reads a turn made of tool calls (a tool-calling model): `expand_sections` with its ids,
/// `answer`, or plain text (the model is done).
fn move_of_tools(completion: &Completion) -> Move {
    let mut ids = Vec::new();
    for call in &completion.tool_calls {
        match squash(&call.name).as_str() {
            "answer" => return Move::Answer,
            _ => {
                let args: Value = serde_json::from_str(&call.arguments).unwrap_or(Value::Null);
                match args.get("ids") {
                    Some(v) => ids.extend(ids_in(v)),
                    None => ids.extend(ids_in(&Value::String(call.arguments.clone()))),
                }
            }
        }
    }
    if ids.is_empty() {
        Move::Answer
    } else {
        Move::Expand(ids)
    }
}

fn tool_defs() -> Vec<ToolDef> {
    vec![
        ToolDef {
            name: "expand_sections".into(),
            description: "Opens sections of the outline: their text and the headings inside \
                          them appear in place."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {"ids": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "Section ids (the 8 characters in square brackets), most \
                                    promising first."
                }},
                "required": ["ids"]
            }),
        },
        ToolDef {
            name: "answer".into(),
            description: "The open text answers the question, or no closed section could.".into(),
            parameters: json!({"type": "object", "properties": {}}),
        },
    ]
}

/// The outline as the model reads it, and the ids it may open.
struct View {
    text: String,
    closed: Vec<SectionId>,
}

/// Renders documents `docs` with `open` sections showing `shown` passages (the rest of an
/// open section's passages over the budget are marked as left out).
fn render(index: &Index, docs: &[usize], open: &Opened, shown: &[ChunkId]) -> View {
    let mut text = String::new();
    let mut closed = Vec::new();
    for &d in docs {
        let indexed = &index.documents()[d];
        let doc = &indexed.doc;
        let children = children_of(doc);
        let depth = expanded_depth(doc, &children);
        if !text.is_empty() {
            text.push('\n');
        }
        let roots = roots_of(doc);
        // The title, unless the document's one top heading says it.
        if !matches!(roots.as_slice(), [only] if doc.sections[*only].title() == doc.title) {
            text.push_str(&format!("Document: {}\n", doc.title));
        }
        let mut stack: Vec<(usize, usize)> = roots.into_iter().rev().map(|i| (i, 1)).collect();
        while let Some((i, level)) = stack.pop() {
            let section = &doc.sections[i];
            let indent = "  ".repeat(level - 1);
            let heading = if section.path.is_empty() {
                "(before the first heading)"
            } else {
                section.title()
            };
            let body = &doc.text[section.body.clone()];
            let is_open = open.contains(section.id);
            let line = format!("{indent}[{}] {heading}", section.id);
            if is_open {
                text.push_str(&format!("{line} (open)\n"));
                let own = own_chunks(index, Place { doc: d, section: i });
                let visible: Vec<&ChunkId> = own.iter().filter(|c| shown.contains(c)).collect();
                if visible.len() == own.len() {
                    if !body.trim().is_empty() {
                        text.push_str(body.trim());
                        text.push('\n');
                    }
                } else {
                    for id in visible {
                        if let Some(row) = index.row_of(*id) {
                            text.push_str(index.chunk(row).text().trim());
                            text.push_str("\n[…]\n");
                        }
                    }
                    if own.iter().all(|c| !shown.contains(c)) {
                        text.push_str("(its text is over the budget: not shown)\n");
                    }
                }
            } else if level <= depth {
                closed.push(section.id);
                let start = snippet(body, SNIPPET_CHARS);
                if start.is_empty() {
                    text.push_str(&format!("{line}\n"));
                } else {
                    text.push_str(&format!("{line} — {start}\n"));
                }
            } else {
                closed.push(section.id);
                let below = count_below(&children, i);
                let note = match below {
                    0 => " (closed)".to_string(),
                    n => format!(" (closed, {n} more inside)"),
                };
                text.push_str(&format!("{line}{note}\n"));
                continue;
            }
            for &c in children[i].iter().rev() {
                stack.push((c, level + 1));
            }
        }
    }
    View { text, closed }
}

/// The outline's line count for `docs` with nothing open.
fn lines_of(index: &Index, docs: &[usize]) -> usize {
    render(index, docs, &Opened::default(), &[])
        .text
        .lines()
        .count()
}

impl Roam {
    /// The documents shown: all of them if their outline fits, else those of the question's
    /// best passages; with those holding an open section in either case.
    fn documents(
        &self,
        run: &mut Run<'_>,
        question: &str,
        vector: &[f32],
        open: &Opened,
    ) -> Vec<usize> {
        let index = run.env.index;
        let all: Vec<usize> = (0..index.documents().len()).collect();
        if lines_of(index, &all) <= self.max_lines {
            return all;
        }
        let mut docs: Vec<usize> = open
            .ids()
            .iter()
            .filter_map(|&id| place_of(index, id).map(|p| p.doc))
            .collect();
        docs.extend(run.documents_near(1, question, vector, self.k));
        docs.sort_unstable();
        docs.dedup();
        run.note(
            1,
            format!(
                "the outline of all {} documents is longer than {} lines: showing the {} \
                 documents of the question's best passages",
                all.len(),
                self.max_lines,
                docs.len()
            ),
        );
        docs
    }

    /// The open sections' passages within the budget, sections opened for this question
    /// first (in the order opened), then those still open from before (most recent first):
    /// those shown and all of them.
    fn passages(
        &self,
        run: &Run<'_>,
        open: &Opened,
        now: &[SectionId],
        question: &[f32],
    ) -> (Vec<ChunkId>, Vec<ChunkId>) {
        let index = run.env.index;
        let before = open.ids().iter().rev().filter(|id| !now.contains(id));
        let groups: Vec<Vec<ChunkId>> = now
            .iter()
            .filter(|id| open.contains(**id))
            .chain(before)
            .filter_map(|&id| place_of(index, id).map(|p| own_chunks(index, p)))
            .collect();
        budget::fit(run, &groups, question, self.budget_tokens)
    }

    /// The sections of the question's nearest passages in `docs`, each by its own heading.
    fn leads(
        &self,
        run: &mut Run<'_>,
        question: &str,
        vector: &[f32],
        docs: &[usize],
    ) -> Vec<Lead> {
        if self.leads == 0 {
            return Vec::new();
        }
        let index = run.env.index;
        let listed = |id: ChunkId| {
            let place = place_of(index, id.section).filter(|p| docs.contains(&p.doc))?;
            let section = &index.documents()[place.doc].doc.sections[place.section];
            let heading = if section.path.is_empty() {
                "(before the first heading)".to_string()
            } else {
                section.title().to_string()
            };
            Some((id.section, heading))
        };
        leads::search(run, 1, question, vector, self.leads, listed)
    }

    /// Tokens of a section's own text.
    fn tokens_of(&self, run: &Run<'_>, id: SectionId) -> usize {
        let index = run.env.index;
        let Some(place) = place_of(index, id) else {
            return 0;
        };
        let doc = &index.documents()[place.doc].doc;
        let body = &doc.text[doc.sections[place.section].body.clone()];
        run.env
            .embedder
            .count_tokens(body)
            .unwrap_or(body.len() / 4)
    }

    /// One navigation turn: the outline in, the model's move out.
    async fn navigate(
        &self,
        run: &mut Run<'_>,
        turn: usize,
        question: &str,
        view: &View,
        leads: &[&Lead],
        feedback: &str,
    ) -> Result<Move, StrategyError> {
        let max = self.max_expand.to_string();
        let system = prompt::render(prompt::ROAM_SYSTEM, &[("max", max.as_str())]);
        let listed = if leads.is_empty() {
            String::new()
        } else {
            format!(
                "\nClosed sections holding the passages nearest the question, each with one \
                 line of its passage:\n{}",
                leads::render(leads.iter().copied())
            )
        };
        let user = prompt::render(
            prompt::ROAM_USER,
            &[
                ("outline", view.text.as_str()),
                ("leads", listed.as_str()),
                ("feedback", feedback),
                ("question", question),
            ],
        );
        let tools = run.env.model.supports_tools();
        let mut request = prompt::request(&system, user, TURN_MAX_TOKENS);
        if tools {
            request.tools = tool_defs();
        } else {
            // Only ids shown closed (or leads) can be opened. Answering first stays allowed:
            // held to open a section first, the 0.5B model opened the wrong ones (section
            // recall@5 0.35 against 0.825 with the question's passages on the same 20
            // questions, docs/results/llama-cpp-server; with leads, held to open five at
            // first, 0.667 against 0.767 on the first 15, docs/results/leads).
            let mut closed: Vec<String> = view.closed.iter().map(ToString::to_string).collect();
            for lead in leads {
                let id = lead.section.to_string();
                if !closed.contains(&id) {
                    closed.push(id);
                }
            }
            request.constraint = Some(constrain::roam_move(&closed, self.max_expand));
        }
        let completion = run.chat(turn, "navigate", request, false).await?;
        Ok(if tools {
            move_of_tools(&completion)
        } else {
            parse_move(&completion.text)
        })
    }

    /// Opens what `ids` name (up to `max_expand`), records it, and says what happened for
    /// the next turn's prompt; returns the sections newly opened.
    fn expand(
        &self,
        run: &mut Run<'_>,
        turn: usize,
        ids: &[String],
        open: &mut Opened,
        question: &[f32],
        feedback: &mut Vec<String>,
    ) -> Vec<SectionId> {
        let started = Instant::now();
        let index = run.env.index;
        let mut opened: Vec<SectionId> = Vec::new();
        let mut unknown: Vec<String> = Vec::new();
        for written in ids {
            match SectionId::parse(written).filter(|&id| place_of(index, id).is_some()) {
                Some(id) if open.contains(id) => {
                    open.touch(id);
                    feedback.push(format!("{id} is open already."));
                }
                Some(id) if !opened.contains(&id) => {
                    if opened.len() == self.max_expand {
                        feedback.push(format!(
                            "At most {} sections open at once: {id} stays closed.",
                            self.max_expand
                        ));
                        continue;
                    }
                    open.touch(id);
                    opened.push(id);
                }
                Some(_) => {}
                None => unknown.push(written.clone()),
            }
        }
        if !unknown.is_empty() {
            let message = format!(
                "No section has the id {}: ids are the 8 characters in square brackets.",
                unknown.join(", ")
            );
            run.note(
                turn,
                format!("the model named unknown sections: {}", unknown.join(", ")),
            );
            feedback.push(message);
        }
        let closed = open.fit(self.budget_tokens, |id| self.tokens_of(run, id), &opened);
        if !closed.is_empty() {
            let names: Vec<String> = closed.iter().map(ToString::to_string).collect();
            run.note(
                turn,
                format!(
                    "closed again to stay within {} tokens: {}",
                    self.budget_tokens,
                    names.join(", ")
                ),
            );
            feedback.push(format!(
                "Closed to stay within the budget: {}.",
                names.join(", ")
            ));
        }
        if !opened.is_empty() {
            let mut hits = Vec::new();
            for &id in &opened {
                let Some(place) = place_of(index, id) else {
                    continue;
                };
                for chunk in own_chunks(index, place) {
                    if let Some(row) = index.row_of(chunk) {
                        let c = index.chunk(row);
                        let score = dot(index.vector(row), question);
                        hits.push(passages::retrieved(&c, score, !run.is_read(chunk)));
                    }
                }
            }
            let names: Vec<String> = opened.iter().map(ToString::to_string).collect();
            let k = hits.len();
            run.record_retrieval(
                turn,
                Origin::Model,
                format!("expand_sections {}", names.join(" ")),
                k,
                hits,
                started.elapsed().as_millis() as u64,
            );
            feedback.push(format!("Opened: {}.", names.join(", ")));
        }
        opened
    }
}

impl Strategy for Roam {
    fn name(&self) -> &'static str {
        "roam"
    }

    fn answer_model(&self) -> Option<&AnswerModel> {
        self.answer_model.as_ref()
    }

    fn config(&self) -> Value {
        json!({
            "max_turns": self.max_turns,
            "max_expand": self.max_expand,
            "budget_tokens": self.budget_tokens,
            "max_lines": self.max_lines,
            "k": self.k,
            "leads": self.leads,
            "answer_model": answer_model_id(&self.answer_model),
            "conversation": self.opened.is_some(),
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
            let vector = env.embedder.embed_one(question)?;
            let mut open = match &self.opened {
                Some(shared) => shared.lock().map(|o| o.clone()).unwrap_or_default(),
                None => Opened::default(),
            };
            // Sections of documents since removed from the index are forgotten.
            open.ids.retain(|&id| place_of(env.index, id).is_some());
            run.emit(Event::Cycle { cycle: 1 });
            if !open.ids().is_empty() {
                run.note(
                    1,
                    format!(
                        "open from earlier questions: {}",
                        section_names(env.index, open.ids())
                    ),
                );
            }
            let docs = self.documents(&mut run, question, &vector, &open);
            if docs.is_empty() {
                let answered = run.nothing_found();
                return Ok(run.finish(answered, Vec::new(), Termination::NothingRetrieved, 1));
            }
            let leads = self.leads(&mut run, question, &vector, &docs);
            let mut now: Vec<SectionId> = Vec::new();
            let mut feedback: Vec<String> = Vec::new();
            let mut termination = Termination::MaxCycles;
            let mut turns = 0;
            for turn in 1..=self.max_turns {
                if turn > 1 {
                    run.emit(Event::Cycle { cycle: turn });
                }
                turns = turn;
                let (shown, _) = self.passages(&run, &open, &now, &vector);
                let view = render(env.index, &docs, &open, &shown);
                let closed_leads: Vec<&Lead> =
                    leads.iter().filter(|l| !open.contains(l.section)).collect();
                let said = if feedback.is_empty() {
                    String::new()
                } else {
                    format!("{}\n\n", feedback.join("\n"))
                };
                feedback.clear();
                match self
                    .navigate(&mut run, turn, question, &view, &closed_leads, &said)
                    .await?
                {
                    Move::Answer => {
                        termination = Termination::Sufficient;
                        break;
                    }
                    Move::Expand(ids) => {
                        let opened =
                            self.expand(&mut run, turn, &ids, &mut open, &vector, &mut feedback);
                        if opened.is_empty() && !ids.iter().any(|w| SectionId::parse(w).is_none()) {
                            // Only open sections named again: nothing new to read.
                            termination = Termination::NothingNew;
                            break;
                        }
                        now.extend(opened);
                    }
                    Move::Unreadable(text) => {
                        run.note(turn, format!("the model's move could not be read: {text}"));
                        feedback.push(
                            "That could not be read. Reply with one JSON object on one line: \
                             expand_sections with ids, or answer."
                                .into(),
                        );
                    }
                }
            }
            let (mut shown, all) = self.passages(&run, &open, &now, &vector);
            if shown.is_empty() {
                run.note(
                    turns,
                    "no section was opened: answering from the question's best passages".into(),
                );
                shown = run
                    .retrieve_embedded(turns, Origin::Question, question, &vector, self.k, false)
                    .iter()
                    .map(|c| c.chunk_id)
                    .collect();
            }
            if shown.is_empty() {
                let answered = run.nothing_found();
                return Ok(run.finish(answered, Vec::new(), Termination::NothingRetrieved, turns));
            }
            run.mark_read(&shown);
            let mut answered = run.answer(turns, question, None, &shown).await?;
            // Sections the answer cites count as used now.
            for cited in &answered.citations {
                if open.contains(cited.section) {
                    open.touch(cited.section);
                }
            }
            if !answered.reply.found && !open.ids().is_empty() {
                // Where the model did look, for the user to read on from.
                let read = format!("\nSections read: {}", section_names(env.index, open.ids()));
                run.emit(Event::Token { text: read.clone() });
                answered.text.push_str(&read);
            }
            if let Some(shared) = &self.opened {
                if let Ok(mut kept) = shared.lock() {
                    *kept = open;
                }
            }
            let ranked = budget::ranked(&answered.citations, shown, all);
            Ok(run.finish(answered, ranked, termination, turns))
        })
    }
}

/// `[id] Heading` of each section, most recently used first.
fn section_names(index: &Index, ids: &[SectionId]) -> String {
    ids.iter()
        .rev()
        .filter_map(|&id| {
            let place = place_of(index, id)?;
            let doc = &index.documents()[place.doc].doc;
            Some(format!("[{id}] {}", doc.sections[place.section].title()))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moves_are_read_in_the_spellings_small_models_use() {
        assert_eq!(
            parse_move(r#"{"action": "expand_sections", "ids": ["0a1b2c3d", "deadbeef"]}"#),
            Move::Expand(vec!["0a1b2c3d".into(), "deadbeef".into()])
        );
        assert_eq!(
            parse_move(
                "```json\n{\"action\": \"expandSections\", \"sections\": \"0a1b2c3d, x\"}\n```"
            ),
            Move::Expand(vec!["0a1b2c3d".into(), "x".into()])
        );
        assert_eq!(parse_move(r#"{"action": "answer"}"#), Move::Answer);
        assert_eq!(
            parse_move(r#"{"action": "answer", "ids": ["0a1b2c3d"]}"#),
            Move::Expand(vec!["0a1b2c3d".into()])
        );
        assert_eq!(
            parse_move("Open [0a1b2c3d] please"),
            Move::Expand(vec!["0a1b2c3d".into()])
        );
        assert!(matches!(parse_move("I am not sure."), Move::Unreadable(_)));
    }

    #[test]
    fn the_least_recently_used_sections_close_first_never_the_new_ones() {
        let (a, b, c) = (SectionId(1), SectionId(2), SectionId(3));
        let mut open = Opened::default();
        open.touch(a);
        open.touch(b);
        open.touch(a); // a used again: b is now the least recent
        open.touch(c);
        let closed = open.fit(25, |_| 10, &[c]);
        assert_eq!(closed, [b]);
        assert_eq!(open.ids(), [a, c]);
        // Nothing but what was just opened: over the budget, kept.
        assert!(open.fit(5, |_| 10, &[a, c]).is_empty());
    }
}
