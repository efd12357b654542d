//! The `actions` strategy: find the API operations that fit a request in the index, let the
//! model pick one and fill in its inputs, and have the executor send it.
//!
//! A request starts with a search for the request itself; then the model acts, one action
//! per turn, until it replies, asks, or the turn budget is spent: `find_actions(query)`,
//! `execute_action(operation_id, params)`, `ask_user(question)` or `respond(text)`, as one
//! JSON object held to a schema (`fill.rs`), or as native tool calls.
//!
//! Safety lives below the prompt: input values can only be copied from what the user said or
//! the API returned, required inputs left `null` are asked for by name, credential inputs
//! are hidden, and the executor refuses what is not valid and asks the [`Confirm`] before
//! anything that changes state.
//!
//! The [`Answer`]: `answer` is what the user is told (the reply, the question for missing
//! inputs, or a dry run's request). `found` is true exactly when the request was carried out
//! (a 2xx answer, or a complete request in a dry run). `ranked` holds the operations
//! retrieved, in the order found; `citations` those the model called; `cycles` counts model
//! turns.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::{json, Map, Value};
use walkrag_core::{
    ChatError, ChatModel, ChatRequest, Completion, Constraint, Message, Sampling, ScoreItem,
    ToolCall, ToolDef,
};
use walkrag_engine::lexical::{reciprocal_rank_fusion, Bm25};
use walkrag_engine::{ChunkId, ChunkRef, DocId, Index, SearchOptions};
use walkrag_walker::constrain::object;
use walkrag_walker::jsonl::{squash, ObjectReader, Raw};
use walkrag_walker::llm;
use walkrag_walker::{
    passages, ActionStep, Answer, BoxFuture, Control, Cost, Env, Event, Origin, Retrieval,
    RetrievedChunk, SearchParams, Sink, Step, Strategy, StrategyError, Termination, Trace,
};

use crate::action::{one_line, Action};
use crate::exec::{Confirm, Executor, Outcome, RequestPreview};
use crate::fill::{self, Sources};
use crate::given;
use crate::probe::Probe;
use crate::record::{example_id, ACTION_KIND, EXAMPLE_KIND};
use crate::spec::Catalog;
use crate::validate::Invalid;

/// The system prompt for models without native tools: the JSON-lines action protocol.
pub const SYSTEM_PROMPT: &str = include_str!("../prompts/system.md");
/// The system prompt for tool-calling models.
pub const TOOLS_PROMPT: &str = include_str!("../prompts/tools.md");
/// The pick that starts a request for models without native tools: one operation id.
pub const PICK_PROMPT: &str = include_str!("../prompts/pick.md");

/// The weighed pick's reading of one operation: how likely the request is as one a user
/// sends for it (the operation's line follows the prompt).
const ASKED_SYSTEM: &str = "You write requests that users send to a web API.";
const ASKED_PROMPT: &str = "Write one request a user could send that this operation carries out.";

/// The value check's margin ([`Actions::value_margin`]) for the 0.5B model, chosen on the
/// development requests; the check is off by default (`docs/results/actions-discourse/given/`).
pub const VALUE_MARGIN: f32 = -4.5;

/// Reciprocal rank fusion's k for a weighed pick's shortlist: low, so each ranking's first
/// places count.
const SHORTLIST_RRF_K: f32 = 20.0;

/// How much likelier (nats) "none" must read than every listed operation to be picked: a
/// small model reads "none" first for requests a listed operation fits.
const NONE_MARGIN: f32 = 1.0;

/// Default weights of a weighed pick, as [`Actions::nearness_weight`],
/// [`Actions::vote_weight`] and [`Actions::probe_weight`] give them.
const NEARNESS_WEIGHT: f32 = 10.0;
const NEARNESS_WEIGHT_GIVEN: f32 = 30.0;
const NEARNESS_WEIGHT_BESIDE_PROBE: f32 = 15.0;
const VOTE_WEIGHT: f32 = 10.0;
const VOTE_WEIGHT_BESIDE_PROBE: f32 = 5.0;
const PROBE_WEIGHT_GIVEN: f32 = 4.0;

/// The fewest example requests given per operation, on average, for the probe to weigh by
/// default: fit on fewer it lost picks (`docs/results/actions-discourse/`, row 84).
const PROBE_MIN_PER_OPERATION: f32 = 8.0;

/// The example requests nearest to the request that vote: 5.
const VOTE_K: usize = 5;

/// The temperature of the vote's softmax over similarities: a voter 0.1 nearer counts e
/// times as much.
const VOTE_TEMPERATURE: f32 = 0.1;

/// The request of the blank list reading ([`Actions::calibration`]): none, so what the model
/// gives each id is its lean towards it on that list.
const BLANK_REQUEST: &str = "N/A";

/// What the model is told when a question goes to the user.
const ASKED: &str = "Asked the user; their answer follows.";

/// What a pick says when no operation fits.
const NONE: &str = "none";

/// The pick's prompt: the operations' `lines`, then the request.
fn pick_messages(lines: &[String], request: &str) -> Vec<Message> {
    let list = lines.join("\n");
    vec![
        Message::system(PICK_PROMPT.trim()),
        Message::user(format!("Operations:\n{list}\n\nRequest: {request}")),
    ]
}

/// A list reading as a pick's text shows it: the read with the request, and the blank read
/// where there is one (`-1.20 (blank -3.40)`).
fn list_text(read: f32, blank: Option<&f32>) -> String {
    match blank {
        Some(blank) => format!("{read:.2} (blank {blank:.2})"),
        None => format!("{read:.2}"),
    }
}

/// The most tokens a pick may take: one short object.
const PICK_MAX_TOKENS: usize = 30;

/// Before the first search, the operation ids the model expects: a few camelCase names.
pub const GUESS_PROMPT: &str = include_str!("../prompts/guess.md");

/// The most tokens a guess may take: three ids.
const GUESS_MAX_TOKENS: usize = 32;

/// One API the strategy can call: its operations (credential inputs removed) and the
/// executor that sends them.
pub struct Api {
    pub catalog: Catalog,
    pub executor: Executor,
}

impl Api {
    /// The API of `catalog`, its operations without their credential inputs (the executor,
    /// built from the whole catalogue, knows them and fills them).
    fn new(mut catalog: Catalog, executor: Executor) -> Self {
        for action in &mut catalog.actions {
            action.inputs.retain(|input| !input.is_credential());
        }
        Self { catalog, executor }
    }
}

/// The `actions` strategy. Build it with the APIs it may call and the confirmation that
/// guards every change; run it with an index holding their action records.
pub struct Actions {
    apis: Vec<Api>,
    /// Every operation of the APIs by its words, rebuilt when an API is added.
    keywords: Keywords,
    confirm: Arc<dyn Confirm>,
    /// Operation cards shown per search: 5.
    pub k: usize,
    /// Operations ranked per search (what retrieval recall is measured on): 10.
    pub ranked_k: usize,
    /// Fuse the embedding ranking with a word-level (BM25) ranking of the operations: on.
    pub hybrid: bool,
    /// Before the first search, ask the model ([`Actions::pick_model`] where given) which
    /// operation ids the API would give the request, and search with their words too: on.
    pub guess: bool,
    /// Pick by weighing where the model can ([`ChatModel::can_score`]), instead of having it
    /// write an id: on. Each of the [`Actions::pool`] operations ranked first gets the
    /// likelihood of the request after its line; the [`Actions::pick_k`] best of that and the
    /// search, fused, are read as a list, each getting [`Actions::list_weight`] times its id's
    /// likelihood as the pick, less [`Actions::calibration`] times that after a blank
    /// request, plus nearness, the examples' vote and the probe; the highest sum is picked.
    /// Figures: `docs/results/actions-discourse/`.
    pub weigh: bool,
    /// Operations whose request reading is weighed per pick: 30.
    pub pool: usize,
    /// Operations read as a list per weighed pick: 10.
    pub pick_k: usize,
    /// The weight of the list reading against the request reading: 2.
    pub list_weight: f32,
    /// How much of the list reading with a blank request ("N/A") is taken from each id's:
    /// 0.5 (0 turns the blank read off). It measures the model's lean on the list whatever
    /// the request.
    pub calibration: f32,
    /// The weight of the request's embedding similarity to each listed operation's nearest
    /// text (its record or an example request); `None`: 10, or 30 where examples were given
    /// in a file ([`Action::examples_given`]).
    pub nearness_weight: Option<f32>,
    /// The weight of the [`VOTE_K`] nearest example requests' vote for their operations;
    /// `None`: 10, or 5 beside the probe. The most voted operation is always listed.
    pub vote_weight: Option<f32>,
    /// The weight of the log-probability the probe (`probe.rs`, a softmax regression from a
    /// request's embedding to the operation it is an example of, fit on the index's example
    /// requests) gives each listed operation; `None`: 4 where the examples given in a file
    /// average 8 or more per operation, else 0. The likeliest is always listed.
    pub probe_weight: Option<f32>,
    /// The least log P(value) − log P(NONE) at which a required input filled with the user's
    /// words counts as given (`given.rs`); below it the value is taken back and asked for.
    /// `None`, the default, leaves the check off ([`VALUE_MARGIN`] is the margin chosen on
    /// the development requests). Weighed by the model that finds the operation, where it
    /// can weigh.
    pub value_margin: Option<f32>,
    /// The model that writes the guess and weighs the pick (and the value check), where it is
    /// not the chat model; a larger local model tells near neighbours apart better. The
    /// turns stay with the chat model.
    pub pick_model: Option<Arc<dyn ChatModel>>,
    /// Most model turns per request: 6.
    pub max_turns: usize,
    /// Calls in a row whose inputs are refused before giving up: 2.
    pub max_invalid: usize,
    /// Searches the model may make per request besides the first: 2.
    pub max_finds: usize,
    /// Most tokens per model turn: 256.
    pub max_tokens: usize,
    /// Stops from outside (Ctrl-C): checked before each model turn.
    pub control: Control,
    /// The probe fit on the examples of the index last run with, shared by clones (an eval
    /// builds one strategy per request), so it is fit once.
    pub probes: Probes,
}

/// The probe fit on an index's example requests, kept for the next request with that index;
/// a clone shares it.
#[derive(Clone, Default)]
pub struct Probes(Arc<Mutex<Option<FittedProbe>>>);

/// A probe and the index generation (directory) it was fit on; `None` where the index holds
/// examples of fewer than two operations.
type FittedProbe = (PathBuf, Option<Arc<Probe>>);

impl std::fmt::Debug for Probes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kept = self.0.lock().unwrap_or_else(|e| e.into_inner());
        f.debug_struct("Probes")
            .field(
                "generation",
                &kept.as_ref().map(|(generation, _)| generation),
            )
            .finish()
    }
}

impl Actions {
    /// A strategy calling `catalog`'s operations through `executor`, asking `confirm` before
    /// any change. Inputs that carry credentials ([`crate::Input::is_credential`]) are
    /// removed from the operations: the model never sees or fills them, the executor sends
    /// the configured credentials.
    pub fn new(catalog: Catalog, executor: Executor, confirm: Arc<dyn Confirm>) -> Self {
        let apis = vec![Api::new(catalog, executor)];
        Self {
            keywords: Keywords::of(&apis),
            apis,
            confirm,
            k: 5,
            ranked_k: 10,
            hybrid: true,
            guess: true,
            weigh: true,
            pool: 30,
            pick_k: 10,
            list_weight: 2.0,
            calibration: 0.5,
            nearness_weight: None,
            vote_weight: None,
            probe_weight: None,
            value_margin: None,
            pick_model: None,
            max_turns: 6,
            max_invalid: 2,
            max_finds: 2,
            max_tokens: 256,
            control: Control::default(),
            probes: Probes::default(),
        }
    }

    /// Adds another API; an operation id is looked up in the APIs in the order added.
    pub fn with_api(mut self, catalog: Catalog, executor: Executor) -> Self {
        self.apis.push(Api::new(catalog, executor));
        self.keywords = Keywords::of(&self.apis);
        self
    }

    pub fn apis(&self) -> &[Api] {
        &self.apis
    }

    /// The operation `id` and the executor that sends it.
    fn lookup(&self, id: &str) -> Option<(&Action, &Executor)> {
        self.apis
            .iter()
            .find_map(|api| api.catalog.get(id).map(|action| (action, &api.executor)))
    }

    /// Every operation of these APIs.
    fn actions(&self) -> impl Iterator<Item = &Action> {
        self.apis.iter().flat_map(|api| &api.catalog.actions)
    }

    /// The most example requests ([`Action::examples`]) any operation has; where there are
    /// any, the search ranks by them too.
    fn most_examples(&self) -> usize {
        self.actions().map(|a| a.examples.len()).max().unwrap_or(0)
    }

    /// The vote of the [`VOTE_K`] example requests nearest to `vector` (a request's), in
    /// `index`: each operation they are examples of, with its share of the vote (the shares
    /// sum to 1), most voted first; none where the index holds no examples.
    fn votes(&self, index: &Index, search: &SearchParams, vector: &[f32]) -> Vec<(String, f32)> {
        let keep = |c: ChunkRef<'_>| self.is_known(&c, &[EXAMPLE_KIND]);
        let options = search.options(Some(&keep));
        let hits = index.search_with(vector, VOTE_K, &options);
        let Some(nearest) = hits.first().map(|hit| hit.score) else {
            return Vec::new();
        };
        // Softmax, shifted by the nearest similarity so no weight overflows.
        let weights: Vec<f32> = hits
            .iter()
            .map(|hit| ((hit.score - nearest) / VOTE_TEMPERATURE).exp())
            .collect();
        let sum: f32 = weights.iter().sum();
        let mut votes: Vec<(String, f32)> = Vec::new();
        for (hit, weight) in hits.iter().zip(weights) {
            let id = operation_of(&index.chunk(hit.row));
            match votes.iter_mut().find(|(voted, _)| *voted == id) {
                Some(vote) => vote.1 += weight / sum,
                None => votes.push((id, weight / sum)),
            }
        }
        votes.sort_by(|a, b| b.1.total_cmp(&a.1));
        votes
    }

    /// Whether some operation's example requests were given in a file.
    fn examples_given(&self) -> bool {
        self.actions().any(|action| action.examples_given)
    }

    /// The example requests given in a file per operation of these APIs, on average.
    fn given_per_operation(&self) -> f32 {
        let given: usize = self
            .actions()
            .filter(|action| action.examples_given)
            .map(|action| action.examples.len())
            .sum();
        given as f32 / self.actions().count().max(1) as f32
    }

    /// [`Actions::probe_weight`], or its default for these APIs' examples.
    fn probe_weight(&self) -> f32 {
        self.probe_weight.unwrap_or_else(|| {
            if self.given_per_operation() >= PROBE_MIN_PER_OPERATION {
                PROBE_WEIGHT_GIVEN
            } else {
                0.0
            }
        })
    }

    /// [`Actions::nearness_weight`], or its default for these APIs' examples.
    fn nearness_weight(&self) -> f32 {
        self.nearness_weight.unwrap_or_else(|| {
            if !self.examples_given() {
                NEARNESS_WEIGHT
            } else if self.probe_weight() > 0.0 {
                NEARNESS_WEIGHT_BESIDE_PROBE
            } else {
                NEARNESS_WEIGHT_GIVEN
            }
        })
    }

    /// [`Actions::vote_weight`], or its default beside the probe or without it.
    fn vote_weight(&self) -> f32 {
        self.vote_weight.unwrap_or_else(|| {
            if self.probe_weight() > 0.0 {
                VOTE_WEIGHT_BESIDE_PROBE
            } else {
                VOTE_WEIGHT
            }
        })
    }

    /// The probe of `index`'s example requests ([`Actions::probe_weight`]), fit the first
    /// time it is asked for; `None` where its weight is 0 or the index holds examples of
    /// fewer than two of these APIs' operations.
    fn probe(&self, index: &Index) -> Option<Arc<Probe>> {
        if self.probe_weight() <= 0.0 {
            return None;
        }
        let mut kept = self.probes.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((generation, probe)) = kept.as_ref() {
            if generation == index.generation() {
                return probe.clone();
            }
        }
        let started = Instant::now();
        let ids: Vec<(usize, String)> = (0..index.len())
            .filter_map(|row| {
                let c = index.chunk(row);
                self.is_known(&c, &[EXAMPLE_KIND])
                    .then(|| (row, operation_of(&c)))
            })
            .collect();
        let examples: Vec<(&[f32], &str)> = ids
            .iter()
            .map(|(row, id)| (index.vector(*row), id.as_str()))
            .collect();
        let probe = Probe::fit(&examples).map(Arc::new);
        tracing::info!(
            examples = examples.len(),
            operations = probe.as_ref().map_or(0, |p| p.ids().len()),
            seconds = started.elapsed().as_secs_f32(),
            "fit the probe on the index's example requests"
        );
        *kept = Some((index.generation().to_path_buf(), probe.clone()));
        probe
    }

    fn knows(&self, id: &str) -> bool {
        self.lookup(id).is_some()
    }

    /// Whether `c` is a record of one of `kinds` ([`ACTION_KIND`], [`EXAMPLE_KIND`]) of an
    /// operation these APIs have.
    fn is_known(&self, c: &ChunkRef<'_>, kinds: &[&str]) -> bool {
        let kind = c.doc.metadata.get("kind").and_then(Value::as_str);
        kind.is_some_and(|kind| kinds.contains(&kind)) && self.knows(&operation_of(c))
    }

    /// One request of a conversation: the found operations stay available and the history
    /// is kept for the next request.
    pub async fn turn(
        &self,
        conversation: &mut Conversation,
        request: &str,
        env: Env<'_>,
        sink: &mut dyn Sink,
    ) -> Result<Answer, StrategyError> {
        let mut run = Run::new(self, request, env, sink);
        let tools = env.model.supports_tools();
        conversation.sources.said(request);
        let pending = conversation.pending.take();
        let query = match &pending {
            Some(earlier) => format!("{} {request}", earlier.query),
            None => request.to_string(),
        };
        let guess = match &pending {
            None if self.guess => self.guess(&mut run, request).await?,
            _ => None,
        };
        let ranked = self.find(&mut run, 1, &query, guess.as_deref())?;
        let mut found: Vec<String> = ranked.iter().take(self.k).cloned().collect();
        let result = found.join(", ");
        run.record_action(step(
            1,
            "find_actions",
            "found",
            Some(query.clone()),
            result,
        ));
        if found.is_empty() && conversation.available.is_empty() {
            let text = "No API operation in the index fits this request.".to_string();
            return Ok(run.finish(text, false, Termination::NothingRetrieved, 0));
        }

        // Models without native tools first pick one operation of those found, in a call of
        // its own; their first turn then calls it (or, on a pick of none, acts freely). A
        // weighed pick may choose an operation ranked below the cards: it takes the last
        // card's place.
        let mut picked = match &pending {
            None if !tools => self.pick(&mut run, conversation, &ranked, request).await?,
            _ => None,
        };
        if let Some(id) = &picked {
            if !found.contains(id) {
                found.truncate(self.k.saturating_sub(1));
                found.push(id.clone());
            }
        }
        let fresh = conversation.add_available(&found);
        let message = match &pending {
            // Said plainly, or a small model takes the answer for the request carried out.
            Some(earlier) => format!(
                "{}The user answers your question ({}): {request}\nCall the operation again \
                 with every input the user has given.",
                self.cards_before(&fresh),
                earlier.question
            ),
            None => format!("{}Request: {request}", self.cards_before(&fresh)),
        };
        conversation.messages.push(Message::user(message));

        let mut invalid_in_row = 0;
        // The question for the required inputs the last refused call lacked, if it lacked
        // any: where the model then gives up, the user is asked it.
        let mut unasked: Option<Question> = None;
        let mut finds = 0;
        let mut carried_out = false;
        let mut tally = Tally::default();
        for turn in 1..=self.max_turns {
            if self.control.is_stopped() {
                let text = summary(&tally.done, "Stopped before the request was carried out.");
                return Ok(run.finish(text, carried_out, Termination::Stopped, turn - 1));
            }
            let calls = self
                .ask_model(&mut run, conversation, turn, tools, picked.take())
                .await?;
            let mut ended: Option<(String, Termination)> = None;
            for call in calls {
                if ended.is_some() {
                    let result = "Not run: the exchange had ended.".to_string();
                    let step = step(turn, call.call.name(), "not_run", None, result);
                    run.answer(conversation, tools, &call, step);
                    continue;
                }
                match call.call.clone() {
                    Call::Find { query } if finds >= self.max_finds => {
                        invalid_in_row += 1;
                        let result = "No more searches for this request: call one of the \
                                      operations listed, or ask the user."
                            .to_string();
                        let step = step(turn, "find_actions", "not_run", Some(query), result);
                        run.answer(conversation, tools, &call, step);
                    }
                    Call::Find { query } => {
                        finds += 1;
                        invalid_in_row = 0;
                        let mut found = self.find(&mut run, turn, &query, None)?;
                        found.truncate(self.k);
                        let fresh = conversation.add_available(&found);
                        let result = self.found_message(&fresh, &found);
                        let step = step(turn, "find_actions", "found", Some(query), result);
                        run.answer(conversation, tools, &call, step);
                    }
                    Call::Ask { question } => {
                        let asked = self.names_in(&question, &conversation.available);
                        if tally.premature(&asked) {
                            let step = premature(turn, "ask_user", question, "ask the user");
                            run.answer(conversation, tools, &call, step);
                            continue;
                        }
                        conversation.answer(tools, &call, ASKED);
                        let question = Question { question, asked };
                        ended = Some(question.ask(&mut run, conversation, &query, turn, ""));
                    }
                    Call::Respond { text } => {
                        if tally.premature(&[]) {
                            let step = premature(turn, "respond", text, "respond");
                            run.answer(conversation, tools, &call, step);
                            continue;
                        }
                        if let Some(unasked) = unasked.take().filter(|_| !carried_out) {
                            // An answer in place of a corrected call ("The inputs were not
                            // accepted…") leaves the user without the question the missing
                            // inputs call for: it is asked instead.
                            conversation.answer(tools, &call, ASKED);
                            let result = format!(
                                "Asked in place of the model's answer, as the call it gave up \
                                 on lacked required inputs: {text}"
                            );
                            ended =
                                Some(unasked.ask(&mut run, conversation, &query, turn, &result));
                            continue;
                        }
                        conversation.answer(tools, &call, "Shown to the user.");
                        let said = Some(text.clone());
                        run.record_action(step(turn, "respond", "responded", said, String::new()));
                        // The model's words alone may claim what never happened ("Topic
                        // 1234 updated"): the user is told plainly when nothing was sent.
                        let text = if carried_out {
                            text
                        } else {
                            format!("{text}\n(No API request was made for this.)")
                        };
                        ended = Some((text, Termination::Responded));
                    }
                    Call::Unreadable { text } => {
                        invalid_in_row += 1;
                        let result = if tools {
                            format!("That could not be read: {text}. Call one of the tools.")
                        } else {
                            format!(
                                "That could not be read ({text}). Reply with one JSON object on \
                                 one line, as described: execute_action, find_actions, ask_user \
                                 or respond."
                            )
                        };
                        let step = step(turn, "unreadable", "unreadable", None, result);
                        run.answer(conversation, tools, &call, step);
                    }
                    Call::Execute {
                        operation_id,
                        params,
                    } => {
                        tally.called = true;
                        let executed = self
                            .execute(
                                &mut run,
                                conversation,
                                turn,
                                &operation_id,
                                &params,
                                &mut tally,
                            )
                            .await?;
                        let checked = executed.step.checked_params.clone().unwrap_or_default();
                        if !tools {
                            // The history shows the inputs as checked, not the model's guesses.
                            conversation.rewrite_last(
                                Call::Execute {
                                    operation_id: operation_id.clone(),
                                    params: checked.clone(),
                                }
                                .written(),
                            );
                        }
                        conversation.answer(tools, &call, &executed.step.result);
                        if let Some(body) = &executed.said {
                            conversation.sources.returned(body);
                        }
                        if let Some((text, termination)) = executed.end.clone() {
                            if termination == Termination::AskedUser {
                                conversation.pending = Some(Pending {
                                    query: query.clone(),
                                    question: text.clone(),
                                });
                            }
                            ended = Some((text, termination));
                        }
                        if executed.invalid {
                            invalid_in_row += 1;
                        } else {
                            invalid_in_row = 0;
                        }
                        unasked = executed.unasked.clone();
                        if executed.success {
                            carried_out = true;
                            if let Some(request) = &executed.step.request {
                                let text = |key: &str| request[key].as_str().unwrap_or("");
                                let what = format!("{} {}", text("method"), text("url"));
                                tally.done.push((operation_id.clone(), checked, what));
                            }
                        }
                        run.record_action(executed.step);
                    }
                }
            }
            if let Some((text, termination)) = ended {
                return Ok(run.finish(text, carried_out, termination, turn));
            }
            if invalid_in_row > self.max_invalid {
                if let Some(unasked) = unasked.take().filter(|_| !carried_out) {
                    let result =
                        "The call was not corrected; the user is asked for the missing inputs.";
                    let (question, termination) =
                        unasked.ask(&mut run, conversation, &query, turn, result);
                    return Ok(run.finish(question, carried_out, termination, turn));
                }
                let text = summary(
                    &tally.done,
                    "I could not build a valid request for this; nothing more was sent.",
                );
                return Ok(run.finish(text, carried_out, Termination::Responded, turn));
            }
        }
        let text = summary(
            &tally.done,
            "I could not carry out the request; nothing was sent.",
        );
        Ok(run.finish(text, carried_out, Termination::MaxCycles, self.max_turns))
    }

    /// The cards of operations just found, as the start of a message (nothing when none).
    fn cards_before(&self, fresh: &[String]) -> String {
        if fresh.is_empty() {
            return String::new();
        }
        format!("Operations:\n\n{}\n\n", self.cards(fresh))
    }

    /// What a search tells the model.
    fn found_message(&self, fresh: &[String], found: &[String]) -> String {
        match (fresh.is_empty(), found.is_empty()) {
            (false, _) => format!("Operations found:\n\n{}", self.cards(fresh)),
            (true, false) => format!(
                "No other operations found; the ones listed before fit best: {}.",
                found.join(", ")
            ),
            (true, true) => "No operations found.".into(),
        }
    }

    /// The cards of the operations `ids`, to call them by.
    fn cards(&self, ids: &[String]) -> String {
        ids.iter()
            .filter_map(|id| self.lookup(id))
            .map(|(action, _)| action.describe())
            .collect::<Vec<_>>()
            .join("\n\n")
    }

    /// Embeds `query` and returns the best operations the APIs know, best first: the first
    /// `ranked_k` as recorded (trace, events, `ranked`), then on to a weighed pick's `pool`;
    /// the first `k` are the ones shown as cards. With [`Actions::hybrid`] the order fuses the
    /// embedding ranking with the word-level one, and with a `guess` (words of the operation
    /// ids the model expects) both rankings of the guess too; each hit's score is still the
    /// embedding similarity of `query`.
    fn find(
        &self,
        run: &mut Run<'_>,
        cycle: usize,
        query: &str,
        guess: Option<&str>,
    ) -> Result<Vec<String>, StrategyError> {
        let started = Instant::now();
        let vector = run.embedding(query)?;
        let keep = |c: ChunkRef<'_>| self.is_known(&c, &[ACTION_KIND]);
        let options = run.env.search.options(Some(&keep));
        let index = run.env.index;
        // Each ranking looks further than `ranked_k` so that fusion has something to fuse
        // (and an operation can have several chunks), and at least as far as a weighed
        // pick's pool.
        let depth = (self.ranked_k * 3).max(self.pool);
        // Per operation, its best chunk and that chunk's similarity, best first.
        let best_per_operation = |vector: &[f32], depth: usize, options: &SearchOptions<'_>| {
            let mut best: Vec<(String, ChunkId, f32)> = Vec::new();
            for hit in index.search_with(vector, depth, options) {
                let c = index.chunk(hit.row);
                let id = operation_of(&c);
                if !best.iter().any(|(seen, ..)| *seen == id) {
                    best.push((id, c.id(), hit.score));
                }
            }
            best
        };
        let by_embedding = |vector: &[f32]| best_per_operation(vector, depth, &options);
        let ids = |ranked: &[(String, ChunkId, f32)]| -> Vec<String> {
            ranked.iter().map(|(id, ..)| id.clone()).collect()
        };
        let by_words = |text: &str| {
            self.keywords.ranked(text, depth, |id| {
                self.knows(id) && first_chunk(index, id).is_some()
            })
        };
        let dense = by_embedding(&vector);
        let mut rankings = vec![ids(&dense)];
        if self.hybrid {
            rankings.push(by_words(query));
        }
        let most_examples = self.most_examples();
        if most_examples > 0 {
            // Each operation by its nearest text, its record's or one of its examples'.
            let keep = |c: ChunkRef<'_>| self.is_known(&c, &[ACTION_KIND, EXAMPLE_KIND]);
            let options = run.env.search.options(Some(&keep));
            // Deep enough that each operation's nearest text is among the hits.
            let depth = depth * (1 + most_examples);
            rankings.push(ids(&best_per_operation(&vector, depth, &options)));
        }
        if let Some(guess) = guess {
            let guessed = run.embedding(guess)?;
            rankings.push(ids(&by_embedding(&guessed)));
            if self.hybrid {
                rankings.push(by_words(guess));
            }
        }
        let mut operations: Vec<String> = match rankings.len() {
            1 => rankings.swap_remove(0),
            _ => reciprocal_rank_fusion(&rankings, RRF_K)
                .into_iter()
                .map(|(id, _)| id)
                .collect(),
        };
        operations.truncate(self.ranked_k.max(self.pool));

        let mut chunks: Vec<RetrievedChunk> = Vec::new();
        for id in operations.iter().take(self.ranked_k) {
            let (chunk, score) = match dense.iter().find(|(seen, ..)| seen == id) {
                Some(&(_, chunk, score)) => (chunk, score),
                None => {
                    let Some(chunk) = first_chunk(index, id) else {
                        continue;
                    };
                    let row = index.row_of(chunk).expect("a document's chunk has a row");
                    (chunk, dot(&vector, index.vector(row)))
                }
            };
            let Some(c) = index.row_of(chunk).map(|row| index.chunk(row)) else {
                continue;
            };
            run.chunk_of.entry(id.clone()).or_insert(chunk);
            let new = !run.ranked.contains(&chunk);
            if new {
                run.ranked.push(chunk);
            }
            chunks.push(passages::retrieved(&c, score, new));
        }
        let ms = started.elapsed().as_millis() as u64;
        run.sink.emit(Event::Retrieved {
            cycle,
            origin: Origin::Question,
            query: query.to_string(),
            chunks: chunks.clone(),
        });
        run.trace.steps.push(Step::Retrieve(Retrieval {
            cycle,
            origin: Origin::Question,
            query: query.to_string(),
            k: self.ranked_k,
            hits: chunks,
            ms,
        }));
        Ok(operations)
    }

    /// The guess: the operation ids the model expects the API to give `request`, as their
    /// words ("suspendUser, banUser" → "suspend user ban user"); `None` when it wrote none.
    async fn guess(
        &self,
        run: &mut Run<'_>,
        request: &str,
    ) -> Result<Option<String>, StrategyError> {
        let chat = ChatRequest {
            messages: vec![
                Message::system(GUESS_PROMPT.trim()),
                Message::user(format!("Request: {request}")),
            ],
            sampling: Sampling {
                max_tokens: GUESS_MAX_TOKENS,
                stop: vec!["\n".into()],
                ..Sampling::default()
            },
            ..ChatRequest::default()
        };
        let model = self.finder(run.env.model);
        let completion = run.chat(model, 1, "guess", chat, &self.control).await?;
        let text = completion.text.trim();
        let words = guessed_words(text);
        let outcome = if words.is_some() { "guessed" } else { "none" };
        run.record_action(step(
            1,
            "guess",
            outcome,
            Some(text.to_string()),
            String::new(),
        ));
        Ok(words)
    }

    /// The model that finds the operation (writes the guess, weighs the pick):
    /// [`Actions::pick_model`], else the chat model `chat`.
    fn finder<'m>(&'m self, chat: &'m dyn ChatModel) -> &'m dyn ChatModel {
        self.pick_model.as_deref().unwrap_or(chat)
    }

    /// The pick: which operation carries out `request`, of those just `ranked` (best
    /// first); `None` when none does. Weighed where the model can weigh and
    /// [`Actions::weigh`] is on, else written.
    async fn pick(
        &self,
        run: &mut Run<'_>,
        conversation: &Conversation,
        ranked: &[String],
        request: &str,
    ) -> Result<Option<String>, StrategyError> {
        let weigher = self.finder(run.env.model);
        if self.weigh && weigher.can_score() {
            let pool = &ranked[..ranked.len().min(self.pool)];
            return self.pick_by_weight(run, weigher, pool, request).await;
        }
        let found = &ranked[..ranked.len().min(self.k)];
        self.pick_by_writing(run, conversation, found, request)
            .await
    }

    /// The weighed pick ([`Actions::weigh`]), in two scoring calls: the request reading of
    /// every operation of the `pool` (the search's best first; each line without what the
    /// operation returns), then the list reading of the shortlist (the pool's best by both
    /// rankings, fused) with "none" among them, read with the request and, where
    /// [`Actions::calibration`] is above 0, again with a blank one. `model` weighs.
    async fn pick_by_weight(
        &self,
        run: &mut Run<'_>,
        model: &dyn ChatModel,
        pool: &[String],
        request: &str,
    ) -> Result<Option<String>, StrategyError> {
        let lines: Vec<(&String, &Action)> = pool
            .iter()
            .filter_map(|id| self.lookup(id).map(|(action, _)| (id, action)))
            .collect();
        if lines.is_empty() {
            return Ok(None);
        }
        // Each operation read alone: its line without what it returns.
        let items: Vec<ScoreItem> = lines
            .iter()
            .map(|(_, action)| ScoreItem {
                messages: vec![
                    Message::system(ASKED_SYSTEM),
                    Message::user(format!(
                        "{ASKED_PROMPT}\nOperation: {}",
                        action.line_without_returns()
                    )),
                ],
                continuation: request.to_string(),
            })
            .collect();
        let asked = run.score(model, 1, "pick: request reading", items).await?;

        // The shortlist keeps the search's order, so the list reads as it did ranked.
        let mut by_reading: Vec<usize> = (0..lines.len()).collect();
        by_reading.sort_by(|&i, &j| asked[j].total_cmp(&asked[i]));
        let searched: Vec<usize> = (0..lines.len()).collect();
        let mut shortlist: Vec<usize> =
            reciprocal_rank_fusion(&[searched, by_reading], SHORTLIST_RRF_K)
                .into_iter()
                .take(self.pick_k)
                .map(|(i, _)| i)
                .collect();
        // The other terms: each named, with its weight and its reading of each line.
        let mut terms: Vec<(&str, f32, Vec<f32>)> = Vec::new();
        let vote_weight = self.vote_weight();
        if vote_weight > 0.0 && self.most_examples() > 0 {
            // Embedded already for the search, in a new request's first turn.
            let vector = run.embedding(request)?;
            let votes = self.votes(run.env.index, &run.env.search, &vector);
            // The operation most voted for (first) is listed, however it read.
            let most = votes.first();
            if let Some(at) = most.and_then(|(id, _)| lines.iter().position(|l| l.0 == id)) {
                if !shortlist.contains(&at) {
                    shortlist.push(at);
                }
            }
            let share = |id: &String| votes.iter().find(|v| v.0 == *id).map_or(0.0, |v| v.1);
            let shares = lines.iter().map(|l| share(l.0)).collect();
            terms.push(("vote", vote_weight, shares));
        }
        // The log-probability the probe gives each line's operation; its likeliest is listed.
        if let Some(probe) = self.probe(run.env.index) {
            let vector = run.embedding(request)?;
            let p = probe.probabilities(&vector);
            let logs: Vec<f32> = lines
                .iter()
                .map(|(id, _)| probe.log_probability(&p, id))
                .collect();
            let likeliest = (0..lines.len()).max_by(|&i, &j| logs[i].total_cmp(&logs[j]));
            if let Some(at) = likeliest.filter(|at| !shortlist.contains(at)) {
                shortlist.push(at);
            }
            terms.push(("probe", self.probe_weight(), logs));
        }
        shortlist.sort_unstable();
        let list: Vec<String> = shortlist.iter().map(|&i| lines[i].1.line()).collect();
        let ids: Vec<&str> = shortlist
            .iter()
            .map(|&i| lines[i].0.as_str())
            .chain([NONE])
            .collect();
        // The blank read follows the request's read in the same call: the two prompts
        // share every token up to the request, which the model then runs once.
        let mut requests = vec![request];
        if self.calibration > 0.0 {
            requests.push(BLANK_REQUEST);
        }
        let items: Vec<ScoreItem> = requests
            .iter()
            .flat_map(|request| {
                let messages = pick_messages(&list, request);
                ids.iter().map(move |id| ScoreItem {
                    messages: messages.clone(),
                    continuation: format!(r#"{{"operation_id": {}}}"#, Value::from(*id)),
                })
            })
            .collect();
        let read = run.score(model, 1, "pick: list reading", items).await?;
        let (asked_list, blank) = read.split_at(ids.len());
        let listed: Vec<f32> = (0..ids.len())
            .map(|k| asked_list[k] - blank.get(k).map_or(0.0, |b| self.calibration * b))
            .collect();

        let weight = self.nearness_weight();
        if weight > 0.0 {
            // Embedded already for the search, in a new request's first turn.
            let vector = run.embedding(request)?;
            let mut near = vec![0.0; lines.len()];
            for &i in &shortlist {
                near[i] = nearness(run.env.index, &vector, lines[i].0);
            }
            terms.insert(0, ("near", weight, near));
        }
        let n = shortlist.len();
        let total: Vec<f32> = (0..n)
            .map(|k| {
                let i = shortlist[k];
                let read = asked[i] + self.list_weight * listed[k];
                terms.iter().fold(read, |sum, t| sum + t.1 * t.2[i])
            })
            .collect();
        let best = (0..n)
            .max_by(|&i, &j| total[i].total_cmp(&total[j]))
            .expect("a line at least");
        let best_listed = listed[..n].iter().copied().fold(f32::MIN, f32::max);
        let none_listed = listed[n] > best_listed + NONE_MARGIN;
        let picked = (!none_listed).then(|| lines[shortlist[best]].0.clone());
        let unlisted = (0..lines.len()).filter(|i| !shortlist.contains(i));
        let text = shortlist
            .iter()
            .enumerate()
            .map(|(k, &i)| {
                let terms: String = terms
                    .iter()
                    .map(|(name, _, v)| format!(", {name} {:.2}", v[i]))
                    .collect();
                format!(
                    "{}: request {:.2}, list {}{terms}, total {:.2}",
                    lines[i].0,
                    asked[i],
                    list_text(asked_list[k], blank.get(k)),
                    total[k]
                )
            })
            .chain([format!(
                "none: list {}",
                list_text(asked_list[n], blank.get(n))
            )])
            .chain(unlisted.map(|i| format!("{}: request {:.2}, not listed", lines[i].0, asked[i])))
            .collect::<Vec<_>>()
            .join("\n");
        run.record_pick(&picked, text);
        Ok(picked)
    }

    /// The written pick: the model writes one id of the operations available (those just
    /// `found` first), held to them where it can be (local models).
    async fn pick_by_writing(
        &self,
        run: &mut Run<'_>,
        conversation: &Conversation,
        found: &[String],
        request: &str,
    ) -> Result<Option<String>, StrategyError> {
        let mut ids: Vec<String> = found.to_vec();
        for id in conversation.available() {
            if !ids.contains(id) {
                ids.push(id.clone());
            }
        }
        let lines: Vec<String> = ids
            .iter()
            .filter_map(|id| self.lookup(id))
            .map(|(action, _)| action.line())
            .collect();
        let request = ChatRequest {
            messages: pick_messages(&lines, request),
            sampling: Sampling {
                max_tokens: PICK_MAX_TOKENS,
                ..Sampling::default()
            },
            constraint: Some(Constraint::JsonSchema(object(&[(
                "operation_id",
                json!({"enum": ids.iter().map(String::as_str).chain([NONE]).collect::<Vec<_>>()}),
            )]))),
            ..ChatRequest::default()
        };
        let completion = run
            .chat(run.env.model, 1, "pick", request, &self.control)
            .await?;
        let text = completion.text.trim();
        let picked = ids
            .iter()
            .find(|id| text.contains(&format!("\"{id}\"")))
            .cloned();
        run.record_pick(&picked, text.to_string());
        Ok(picked)
    }

    /// One model turn: the conversation in, the actions it asked for out. With `picked`
    /// (models without native tools), the turn calls that operation: the model writes its
    /// inputs.
    async fn ask_model(
        &self,
        run: &mut Run<'_>,
        conversation: &mut Conversation,
        turn: usize,
        tools: bool,
        picked: Option<String>,
    ) -> Result<Vec<ModelCall>, StrategyError> {
        let lookup = |id: &str| self.lookup(id).map(|(action, _)| action);
        // A picked operation that takes no inputs leaves the model nothing to write: its call
        // is whole without a model turn (asked anyway, the 0.5B model writes `"params":
        // {"none"}`, which no reader can take, again on each correction).
        if let Some(id) = picked
            .as_deref()
            .filter(|id| lookup(id).is_some_and(Action::takes_no_inputs))
        {
            let written = format!(
                r#"{{"action": "execute_action", "operation_id": {}, "params": {{}}}}"#,
                Value::from(id)
            );
            let call = call_of_text(&written);
            conversation
                .messages
                .push(Message::assistant(call.written.clone()));
            let outcome = "written without the model: the operation takes no inputs";
            run.record_action(ActionStep {
                operation_id: Some(id.to_string()),
                ..step(turn, "act", outcome, Some(written), String::new())
            });
            return Ok(vec![call]);
        }
        let system = if tools { TOOLS_PROMPT } else { SYSTEM_PROMPT };
        let mut messages = vec![Message::system(system.trim())];
        messages.extend(conversation.recent().iter().cloned());
        let mut request = ChatRequest {
            messages,
            sampling: Sampling {
                max_tokens: self.max_tokens,
                ..Sampling::default()
            },
            ..ChatRequest::default()
        };
        if tools {
            request.tools = tool_defs(&conversation.available);
        } else {
            // The turn is held to the protocol: a call of an operation available (the one
            // picked, where there is one) with inputs copied from what the user said, or
            // (without a pick) a search, a question or a reply.
            let operations: Vec<&Action> = match &picked {
                Some(id) => lookup(id).into_iter().collect(),
                None => conversation
                    .available
                    .iter()
                    .filter_map(|id| lookup(id))
                    .collect(),
            };
            let schema = fill::turn_schema(&operations, &conversation.sources, picked.is_none());
            request.constraint = Some(Constraint::JsonSchema(schema));
        }
        let completion = run
            .chat(run.env.model, turn, "act", request, &self.control)
            .await?;
        if !tools {
            let call = call_of_text(&completion.text);
            conversation
                .messages
                .push(Message::assistant(call.written.clone()));
            return Ok(vec![call]);
        }
        let calls = calls_of_tools(&completion);
        let mut message = Message::assistant(completion.text.trim());
        message.tool_calls = calls.iter().filter_map(|c| c.tool_call.clone()).collect();
        conversation.messages.push(message);
        Ok(calls)
    }

    /// `execute_action`: checked, confirmed where needed, sent (or not).
    async fn execute(
        &self,
        run: &mut Run<'_>,
        conversation: &Conversation,
        turn: usize,
        operation_id: &str,
        params: &Value,
        tally: &mut Tally,
    ) -> Result<Executed, StrategyError> {
        let mut step = ActionStep {
            cycle: turn,
            action: "execute_action".into(),
            operation_id: Some(operation_id.to_string()),
            params: Some(params.clone()),
            ..ActionStep::default()
        };
        let Some((action, executor)) = self.lookup(operation_id) else {
            let mut listed = conversation.available.clone();
            listed.truncate(12);
            step.outcome = "unknown_operation".into();
            step.result = format!(
                "There is no operation {operation_id:?}. Operations you can call: {}.",
                listed.join(", ")
            );
            return Ok(Executed::invalid(step));
        };
        if let Some(chunk) = run.chunk_for(operation_id) {
            if !run.citations.contains(&chunk) {
                run.citations.push(chunk);
            }
        }
        // Held to the sources while written where the model could be; checked again here
        // for replies no decoder held (tool calls, servers that ignore the schema).
        let (mut checked, mut repairs) = fill::keep(action, params, &conversation.sources);
        self.take_back_ungiven(
            run,
            turn,
            action,
            &conversation.sources,
            &mut checked,
            &mut repairs,
        )
        .await?;
        let prepared = action.prepare(&checked);
        step.repairs = repairs.clone();
        step.checked_params = Some(checked.clone());
        // Required credentials the query needs and nobody configured: the user is asked to
        // configure them, with any input the call lacks.
        let unset = executor.unset_credentials(action);
        let question_for = |missing: Vec<String>| {
            let question = match (missing.is_empty(), unset.is_empty()) {
                (_, true) => missing_question(action, &missing),
                (true, false) => credential_question(action, &unset),
                (false, false) => format!(
                    "{} {}",
                    missing_question(action, &missing),
                    credential_question(action, &unset)
                ),
            };
            let asked: Vec<String> = missing.iter().chain(&unset).cloned().collect();
            Question { question, asked }
        };
        let asking = |missing: Vec<String>, mut step: ActionStep| {
            let Question { question, asked } = question_for(missing);
            step.outcome = "missing".into();
            step.text = Some(question.clone());
            step.result = format!(
                "Missing required inputs: {}. Nothing was sent; the user was asked: {question}",
                asked.join(", ")
            );
            step.asked = asked;
            Executed {
                end: Some((question, Termination::AskedUser)),
                ..Executed::new(step)
            }
        };
        let prepared = match prepared {
            Ok(_) if !unset.is_empty() => return Ok(asking(Vec::new(), step)),
            Ok(prepared) => prepared,
            Err(Invalid::Missing(missing)) => return Ok(asking(missing, step)),
            Err(invalid) => {
                let missing = invalid.missing().to_vec();
                let unasked = (!missing.is_empty()).then(|| question_for(missing));
                step.outcome = "invalid".into();
                step.result = with_repairs(&invalid.to_string(), &repairs);
                return Ok(Executed {
                    unasked,
                    ..Executed::invalid(step)
                });
            }
        };
        let preview = executor.preview(&prepared);
        if let Some((_, _, earlier)) = tally
            .done
            .iter()
            .find(|(op, params, _)| op == operation_id && *params == checked)
        {
            step.outcome = "repeated".into();
            step.request = Some(preview_json(&preview));
            step.result = format!(
                "This exact request was already carried out ({earlier}); it was not sent again. \
                 Respond to the user."
            );
            return Ok(Executed::new(step));
        }
        let watched = Watched {
            inner: self.confirm.as_ref(),
            answer: Mutex::new(None),
        };
        let outcome = executor.execute(&prepared, &watched).await;
        step.confirmed = *watched.answer.lock().expect("confirmation lock");
        step.request = outcome.request().map(preview_json);
        let mut notes = repairs.clone();
        let unprovided = executor.unprovided_credentials(operation_id);
        if outcome.sent() && !unprovided.is_empty() {
            notes.push(format!(
                "sent without {}: credentials the user configures (--header, --credential), \
                 never the model",
                unprovided.join(", ")
            ));
        }
        step.result = with_repairs(&outcome.to_string(), &notes);
        let mut executed = Executed::new(step);
        match &outcome {
            Outcome::DryRun(request) => {
                executed.step.outcome = "dry_run".into();
                let text = format!("Dry run: nothing was sent. The request would be:\n{request}");
                executed.end = Some((text, Termination::DryRun));
                executed.success = true;
            }
            Outcome::Declined(_) => executed.step.outcome = "declined".into(),
            Outcome::Response(response) => {
                executed.step.outcome = "response".into();
                executed.step.status = Some(response.status);
                executed.success = outcome.is_success();
                executed.said = Some(response.body.clone());
            }
            Outcome::Failed(_) => executed.step.outcome = "failed".into(),
            Outcome::Invalid(_) => {
                executed.step.outcome = "invalid".into();
                executed.invalid = true;
            }
        }
        Ok(executed)
    }

    /// The value check ([`Actions::value_margin`]): each required input of `checked` filled
    /// with the user's words that the model judges not given is taken out of it, with a note
    /// in `repairs`.
    async fn take_back_ungiven(
        &self,
        run: &mut Run<'_>,
        turn: usize,
        action: &Action,
        sources: &Sources,
        checked: &mut Value,
        repairs: &mut Vec<String>,
    ) -> Result<(), StrategyError> {
        let model = self.finder(run.env.model);
        let Some(margin) = self.value_margin.filter(|_| model.can_score()) else {
            return Ok(());
        };
        let judged = given::judged(action, checked, sources);
        if judged.is_empty() {
            return Ok(());
        }
        let items = given::items(sources.messages(), action, &judged);
        let read = run
            .score(model, turn, "inputs: given by the user?", items)
            .await?;
        for ((input, value), gain) in judged.iter().zip(given::gains(&read)) {
            if gain < margin {
                if let Value::Object(map) = checked {
                    map.remove(&input.name);
                }
                repairs.push(format!(
                    "{}: {value} judged not given by the user (log P(value) − log P(NONE) \
                     {gain:.2}, below {margin}); asked for",
                    input.name
                ));
            }
        }
        Ok(())
    }

    /// The required inputs of available operations that a question names (`noteId`, or its
    /// words, `note id`).
    fn names_in(&self, question: &str, available: &[String]) -> Vec<String> {
        let lower = question.to_lowercase();
        let squashed = squash(question);
        let mut names: Vec<String> = Vec::new();
        for id in available {
            let Some((action, _)) = self.lookup(id) else {
                continue;
            };
            for input in action.inputs.iter().filter(|i| i.required) {
                if question_names(&lower, &squashed, &input.name) && !names.contains(&input.name) {
                    names.push(input.name.clone());
                }
            }
        }
        names
    }
}

/// Whether a question (`lower`, and `squashed` by [`squash`]) names the input `name`: the name
/// as a word of its own (`id`, but not the `id` in `post_ids` or `provide`), its words spaced
/// out (`post ids`), or a name longer than three letters with case and punctuation ignored
/// (`post_ids` for `post_ids[]`).
fn question_names(lower: &str, squashed: &str, name: &str) -> bool {
    let spaced = crate::words(name).join(" ");
    has_word(lower, &name.to_lowercase())
        || (spaced.contains(' ') && has_word(lower, &spaced))
        || (name.len() > 3 && squashed.contains(&squash(name)))
}

/// Whether `text` holds `word` with no letter, digit or `_` right before or after it.
fn has_word(text: &str, word: &str) -> bool {
    let joined = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    !word.is_empty()
        && text.match_indices(word).any(|(at, _)| {
            !joined(text[..at].chars().next_back())
                && !joined(text[at + word.len()..].chars().next())
        })
}

impl Strategy for Actions {
    fn name(&self) -> &'static str {
        "actions"
    }

    fn config(&self) -> Value {
        let apis: Vec<Value> = self
            .apis
            .iter()
            .map(|api| {
                json!({
                    "title": api.catalog.title,
                    "version": api.catalog.version,
                    "operations": api.catalog.actions.len(),
                    "base_url": api.executor.base_url(),
                    "dry_run": api.executor.config().dry_run,
                })
            })
            .collect();
        json!({
            "k": self.k,
            "ranked_k": self.ranked_k,
            "hybrid": self.hybrid,
            "guess": self.guess,
            "weigh": self.weigh,
            "pool": self.pool,
            "pick_k": self.pick_k,
            "list_weight": self.list_weight,
            "calibration": self.calibration,
            "nearness_weight": self.nearness_weight(),
            "vote_weight": self.vote_weight(),
            "probe_weight": self.probe_weight(),
            "value_margin": self.value_margin,
            "pick_model": self.pick_model.as_ref().map(|m| m.id()),
            "max_turns": self.max_turns,
            "max_invalid": self.max_invalid,
            "max_finds": self.max_finds,
            "max_tokens": self.max_tokens,
            "apis": apis,
        })
    }

    fn run<'a>(
        &'a self,
        question: &'a str,
        env: Env<'a>,
        sink: &'a mut dyn Sink,
    ) -> BoxFuture<'a, Result<Answer, StrategyError>> {
        Box::pin(async move {
            let mut conversation = Conversation::new();
            self.turn(&mut conversation, question, env, sink).await
        })
    }
}

/// The most messages of a conversation a model call sees: 24, the exchanges of the last few
/// requests, so a long chat does not outgrow a small model's context.
pub const MAX_HISTORY: usize = 24;

/// A conversation with the `actions` strategy (`walkrag chat --strategy actions`): its
/// messages, the operations found so far (they stay available), and what the user said.
#[derive(Debug, Clone, Default)]
pub struct Conversation {
    /// The messages after the system prompt.
    messages: Vec<Message>,
    /// Operations found so far, first found first.
    available: Vec<String>,
    /// What the user wrote and what the API answered: where input values are copied from.
    sources: Sources,
    /// The request waiting for the user's answer to a question: searched again with it.
    pending: Option<Pending>,
}

/// A request waiting for the user's answer.
#[derive(Debug, Clone)]
struct Pending {
    /// What the request was searched with.
    query: String,
    /// What the user was asked.
    question: String,
}

impl Conversation {
    pub fn new() -> Self {
        Self::default()
    }

    /// The operations found so far, first found first.
    pub fn available(&self) -> &[String] {
        &self.available
    }

    /// The messages so far (after the system prompt).
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// Adds operations; returns those not available before.
    fn add_available(&mut self, ids: &[String]) -> Vec<String> {
        let fresh: Vec<String> = ids
            .iter()
            .filter(|id| !self.available.contains(id))
            .cloned()
            .collect();
        self.available.extend(fresh.iter().cloned());
        fresh
    }

    /// The messages a model call sees: the last [`MAX_HISTORY`], starting at a user message
    /// (so a tool result never comes without its call).
    fn recent(&self) -> &[Message] {
        let history = &self.messages;
        let mut start = history.len().saturating_sub(MAX_HISTORY);
        while start < history.len() && history[start].role != walkrag_core::Role::User {
            start += 1;
        }
        if start == history.len() {
            start = 0;
        }
        &history[start..]
    }

    /// Replaces the text of the last assistant message.
    fn rewrite_last(&mut self, text: String) {
        if let Some(message) = self
            .messages
            .iter_mut()
            .rev()
            .find(|m| m.role == walkrag_core::Role::Assistant)
        {
            message.content = text;
        }
    }

    /// Gives the model the result of one of its calls.
    fn answer(&mut self, tools: bool, call: &ModelCall, result: &str) {
        match (&call.tool_call, tools) {
            (Some(tool_call), true) => self
                .messages
                .push(Message::tool(tool_call.id.clone(), result)),
            _ => match &call.call {
                // The exchange ends; the user's next message follows.
                Call::Respond { .. } | Call::Ask { .. } => {}
                Call::Unreadable { .. } => self.messages.push(Message::user(result)),
                Call::Execute { operation_id, .. } => self.messages.push(Message::user(format!(
                    "Result of execute_action {operation_id}:\n{result}"
                ))),
                Call::Find { .. } => self
                    .messages
                    .push(Message::user(format!("Result of find_actions:\n{result}"))),
            },
        }
    }
}

/// An action the model asked for.
#[derive(Debug, Clone, PartialEq)]
enum Call {
    Find {
        query: String,
    },
    Execute {
        operation_id: String,
        params: Value,
    },
    Ask {
        question: String,
    },
    Respond {
        text: String,
    },
    /// Nothing that could be acted on; says why.
    Unreadable {
        text: String,
    },
}

impl Call {
    fn name(&self) -> &'static str {
        match self {
            Call::Find { .. } => "find_actions",
            Call::Execute { .. } => "execute_action",
            Call::Ask { .. } => "ask_user",
            Call::Respond { .. } => "respond",
            Call::Unreadable { .. } => "unreadable",
        }
    }

    /// The call as the protocol writes it (what the conversation keeps of the model's turn).
    fn written(&self) -> String {
        let value = match self {
            Call::Find { query } => json!({"action": "find_actions", "query": query}),
            Call::Execute {
                operation_id,
                params,
            } => {
                json!({"action": "execute_action", "operation_id": operation_id, "params": params})
            }
            Call::Ask { question } => json!({"action": "ask_user", "question": question}),
            Call::Respond { text } => json!({"action": "respond", "text": text}),
            Call::Unreadable { .. } => Value::Null,
        };
        value.to_string()
    }
}

/// A call and how it came: a tool call (with its id), or text.
#[derive(Debug, Clone)]
struct ModelCall {
    call: Call,
    tool_call: Option<ToolCall>,
    /// What the conversation keeps of the model's turn (protocol models).
    written: String,
}

/// The first action in a protocol model's text. Text without any object is a reply to the
/// user.
fn call_of_text(text: &str) -> ModelCall {
    let mut reader = ObjectReader::new();
    let mut raws = reader.push(text);
    raws.extend(reader.finish());
    let mut objects = 0;
    for raw in &raws {
        if let Raw::Object(object) = raw {
            objects += 1;
            if let Some(call) = call_of_object(object) {
                return ModelCall {
                    written: call.written(),
                    call,
                    tool_call: None,
                };
            }
        }
    }
    let prose = text.trim().trim_matches('`').trim();
    let call = if objects == 0 && !prose.is_empty() && !prose.contains('{') {
        Call::Respond {
            text: prose.to_string(),
        }
    } else if prose.is_empty() {
        Call::Unreadable {
            text: "the reply was empty".into(),
        }
    } else {
        Call::Unreadable {
            text: "no object with a known \"action\"".into(),
        }
    };
    let written = match &call {
        Call::Unreadable { .. } => text.trim().to_string(),
        other => other.written(),
    };
    ModelCall {
        call,
        tool_call: None,
        written,
    }
}

/// The action an object asks for, in the protocol's own keys (the tool-call form's
/// arguments carry the tool's name as `action`). Local models are held to the protocol while
/// they write; a server that ignores the schema is not repaired after the fact.
fn call_of_object(object: &Map<String, Value>) -> Option<Call> {
    let text = |key: &str| object.get(key).map(value_text).filter(|t| !t.is_empty());
    match object.get("action").and_then(Value::as_str)?.trim() {
        "execute_action" => Some(Call::Execute {
            operation_id: text("operation_id")?,
            params: object.get("params").cloned().unwrap_or_else(|| json!({})),
        }),
        "find_actions" => Some(Call::Find {
            query: text("query")?,
        }),
        "ask_user" => Some(Call::Ask {
            question: text("question")?,
        }),
        "respond" => Some(Call::Respond {
            text: text("text")?,
        }),
        _ => None,
    }
}

/// The calls of a tool-calling model's turn; text without calls is a reply to the user.
fn calls_of_tools(completion: &Completion) -> Vec<ModelCall> {
    let mut out = Vec::new();
    for (i, tool_call) in completion.tool_calls.iter().enumerate() {
        let mut tool_call = tool_call.clone();
        if tool_call.id.is_empty() {
            tool_call.id = format!("call_{i}");
        }
        let call = match serde_json::from_str::<Value>(&tool_call.arguments) {
            Ok(Value::Object(mut args)) => {
                args.insert("action".into(), Value::from(tool_call.name.clone()));
                call_of_object(&args).unwrap_or_else(|| Call::Unreadable {
                    text: format!("{} with arguments {}", tool_call.name, tool_call.arguments),
                })
            }
            Ok(_) | Err(_) if tool_call.arguments.trim().is_empty() => Call::Unreadable {
                text: format!("{} without arguments", tool_call.name),
            },
            _ => Call::Unreadable {
                text: format!("the arguments of {} are not a JSON object", tool_call.name),
            },
        };
        out.push(ModelCall {
            written: call.written(),
            call,
            tool_call: Some(tool_call),
        });
    }
    if out.is_empty() {
        let text = completion.text.trim();
        let call = if text.is_empty() {
            Call::Unreadable {
                text: "the reply was empty".into(),
            }
        } else {
            Call::Respond { text: text.into() }
        };
        out.push(ModelCall {
            written: call.written(),
            call,
            tool_call: None,
        });
    }
    out
}

/// The built-in actions as tools; `execute_action` names the operations available.
fn tool_defs(available: &[String]) -> Vec<ToolDef> {
    vec![
        ToolDef {
            name: "execute_action".into(),
            description: "Call an API operation listed in the conversation with its inputs. \
                          Leave out required inputs the user did not give: they will be asked for."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "operation_id": {"type": "string", "enum": available},
                    "params": {"type": "object", "description": "input name → value"},
                },
                "required": ["operation_id"],
            }),
        },
        string_tool(
            "find_actions",
            "Search the API for operations that do something.",
            "query",
        ),
        string_tool(
            "ask_user",
            "Ask the user a question when the request is unclear.",
            "question",
        ),
        string_tool("respond", "Tell the user the result.", "text"),
    ]
}

/// A built-in action that takes one string, `field`.
fn string_tool(name: &str, description: &str, field: &str) -> ToolDef {
    ToolDef {
        name: name.into(),
        description: description.into(),
        parameters: json!({
            "type": "object",
            "properties": {field: {"type": "string"}},
            "required": [field],
        }),
    }
}

/// What asking for `missing` inputs of `action` says to the user: each by name, with what
/// it means.
pub fn missing_question(action: &Action, missing: &[String]) -> String {
    let what = doing(action);
    let parts: Vec<String> = missing
        .iter()
        .map(|name| {
            match action
                .input(name)
                .and_then(|input| input.description.as_deref())
            {
                Some(description) if !description.trim().is_empty() => {
                    let description: String = one_line(description).chars().take(80).collect();
                    format!("{name} ({})", description.trim_end_matches('.'))
                }
                _ => name.clone(),
            }
        })
        .collect();
    let list = and_list(&parts);
    let which = if parts.len() == 1 { "it" } else { "they" };
    format!("For {what} I need {list}. What should {which} be?")
}

/// The question for required credential inputs that no configured credential fills
/// ([`crate::Executor::unset_credentials`]): the user configures them, since a credential is
/// never taken from the conversation.
pub fn credential_question(action: &Action, unset: &[String]) -> String {
    let flags: Vec<String> = unset
        .iter()
        .map(|name| format!("--credential {name}=VALUE"))
        .collect();
    let (what, them) = if unset.len() == 1 {
        ("a credential", "it")
    } else {
        ("credentials", "them")
    };
    format!(
        "For {} I need {}, {what} never taken from the conversation: configure {them} \
         (walkrag {}), then ask again.",
        doing(action),
        and_list(unset),
        and_list(&flags)
    )
}

/// The operation a question is for: its id, with its summary where it has one.
fn doing(action: &Action) -> String {
    match action.summary.as_deref().map(str::trim) {
        Some(summary) if !summary.is_empty() => format!(
            "{} ({})",
            action.operation_id,
            summary.trim_end_matches('.')
        ),
        _ => action.operation_id.clone(),
    }
}

/// `a`, `a and b`, `a, b and c`.
fn and_list(parts: &[String]) -> String {
    match parts.len() {
        0 | 1 => parts.join(""),
        n => format!("{} and {}", parts[..n - 1].join(", "), parts[n - 1]),
    }
}

/// The answer when the model never replied: what was carried out, if anything.
fn summary(done: &[(String, Value, String)], otherwise: &str) -> String {
    if done.is_empty() {
        return otherwise.to_string();
    }
    let lines: Vec<String> = done
        .iter()
        .map(|(_, _, what)| format!("- {what}"))
        .collect();
    format!("Carried out:\n{}", lines.join("\n"))
}

fn with_repairs(result: &str, repairs: &[String]) -> String {
    if repairs.is_empty() {
        return result.to_string();
    }
    format!("{result}\nNote: {}", repairs.join("; "))
}

/// The request as the trace holds it (never credentials: a preview has none).
fn preview_json(preview: &RequestPreview) -> Value {
    serde_json::to_value(preview).expect("a preview serialises")
}

fn value_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.trim().to_string(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// The words of the identifiers in a guess (at most three distinct ones, each at most 60
/// characters, so a rambling or looping reply cannot swamp the search); `None` when there
/// are none.
fn guessed_words(text: &str) -> Option<String> {
    let mut ids: Vec<&str> = Vec::new();
    for id in text
        .split(|c: char| c == ',' || c.is_whitespace())
        .map(|id| id.trim_matches(|c: char| !c.is_alphanumeric()))
        .filter(|id| !id.is_empty() && id.len() <= 60)
    {
        if !ids.iter().any(|seen| seen.eq_ignore_ascii_case(id)) {
            ids.push(id);
        }
        if ids.len() == 3 {
            break;
        }
    }
    let words: Vec<String> = ids.into_iter().flat_map(crate::action::words).collect();
    (!words.is_empty()).then(|| words.join(" "))
}

/// Rank constant of the fusion of embedding and word rankings (the usual 60).
const RRF_K: f32 = 60.0;

/// Every operation of some APIs by its words ([`Action::keyword_text`]).
#[derive(Default)]
struct Keywords {
    ids: Vec<String>,
    bm25: Bm25,
}

impl Keywords {
    fn of(apis: &[Api]) -> Self {
        let actions = apis.iter().flat_map(|api| &api.catalog.actions);
        Self {
            ids: actions.clone().map(|a| a.operation_id.clone()).collect(),
            bm25: Bm25::new(actions.map(Action::keyword_text)),
        }
    }

    /// The `n` operations sharing most words with `query` that `keep` accepts, best first.
    fn ranked(&self, query: &str, n: usize, keep: impl Fn(&str) -> bool) -> Vec<String> {
        self.bm25
            .ranked(query)
            .into_iter()
            .map(|(position, _)| &self.ids[position])
            .filter(|id| keep(id))
            .take(n)
            .cloned()
            .collect()
    }
}

/// How near `vector` (a request's) comes to the operation `id` in `index`: its similarity
/// to the nearest chunk of the operation's record or of one of its example requests
/// ([`crate::ActionRecord::examples_of`]); 0 for an operation the index does not hold.
fn nearness(index: &Index, vector: &[f32], id: &str) -> f32 {
    let examples = (1..).map_while(|n| index.document(&DocId(example_id(id, n))));
    index
        .document(&DocId(id.to_string()))
        .into_iter()
        .chain(examples)
        .flat_map(|doc| doc.chunks.iter().map(|chunk| chunk.id(&doc.doc)))
        .filter_map(|chunk| index.row_of(chunk))
        .map(|row| dot(vector, index.vector(row)))
        .reduce(f32::max)
        .unwrap_or(0.0)
}

/// The first chunk of the operation `id`'s record in `index`.
fn first_chunk(index: &Index, id: &str) -> Option<ChunkId> {
    let doc = index.document(&DocId(id.to_string()))?;
    doc.chunks.first().map(|chunk| chunk.id(&doc.doc))
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// The operation a chunk belongs to: its record's `operation_id`, else its document id.
fn operation_of(c: &ChunkRef<'_>) -> String {
    c.doc
        .metadata
        .get("operation_id")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| c.doc.id.0.clone())
}

/// Asks the real confirmation and remembers whether it was asked and what it said.
struct Watched<'c> {
    inner: &'c dyn Confirm,
    answer: Mutex<Option<bool>>,
}

impl Confirm for Watched<'_> {
    fn confirm(&self, request: &RequestPreview) -> bool {
        let yes = self.inner.confirm(request);
        *self.answer.lock().expect("confirmation lock") = Some(yes);
        yes
    }
}

/// What one request has done so far.
#[derive(Default)]
struct Tally {
    /// Requests carried out: operation, inputs as checked, `METHOD URL`.
    done: Vec<(String, Value, String)>,
    /// Whether the model has called an operation for this request.
    called: bool,
    /// Whether a reply or question before any operation was already sent back.
    sent_back: bool,
}

impl Tally {
    /// Whether a reply, or a question naming none of the inputs (`asked`), comes too early:
    /// no operation has been called for the request yet. Small models answer "Topic 1234
    /// updated" or ask "What would you like to do?" instead of calling the operation that
    /// fits; such a reply is sent back once (the second is accepted: small talk, or a request
    /// no operation fits). Records that it was sent back.
    fn premature(&mut self, asked: &[String]) -> bool {
        let early = !self.called && !self.sent_back && asked.is_empty();
        self.sent_back |= early;
        early
    }
}

/// The step of a reply or question (`text`) sent back as premature: the model is told that no
/// operation was called yet, and to call one or `again`.
fn premature(turn: usize, action: &str, text: String, again: &str) -> ActionStep {
    let result = format!(
        "Nothing has been done yet: no operation was called for this request. If one of the \
         operations listed fits, call it now with the inputs the request gives (the user is \
         asked for any that are missing); if none fits, {again} again."
    );
    step(turn, action, "premature", Some(text), result)
}

/// A step of turn `cycle`: `action`, what came of it, what the model said and was told.
fn step(
    cycle: usize,
    action: &str,
    outcome: &str,
    text: Option<String>,
    result: String,
) -> ActionStep {
    ActionStep {
        cycle,
        action: action.into(),
        text,
        outcome: outcome.into(),
        result,
        ..ActionStep::default()
    }
}

/// What came of one `execute_action`.
#[derive(Default)]
struct Executed {
    step: ActionStep,
    /// How the exchange ends early: missing inputs are asked for (the question goes to the
    /// user), or a dry run's answer says what would have been sent. A dry run is a success.
    end: Option<(String, Termination)>,
    /// The call was refused before any request was built (a correction is due).
    invalid: bool,
    /// A 2xx answer, or a dry run's complete request.
    success: bool,
    /// Text the API answered (values in it may be used in later calls).
    said: Option<String>,
    /// For a refused call that lacked required inputs, the question asking for them.
    unasked: Option<Question>,
}

/// A question for the user and the inputs it asks for: the model's `ask_user`, or the one a
/// refused call's missing required inputs call for, kept in case the model answers instead
/// of correcting the call.
#[derive(Clone, Debug)]
struct Question {
    question: String,
    asked: Vec<String>,
}

impl Question {
    /// Asks it: recorded as an `ask_user` step (with `result`, empty for the model's own
    /// question) and left pending for the user's reply.
    fn ask(
        self,
        run: &mut Run<'_>,
        conversation: &mut Conversation,
        query: &str,
        turn: usize,
        result: &str,
    ) -> (String, Termination) {
        conversation.pending = Some(Pending {
            query: query.to_string(),
            question: self.question.clone(),
        });
        let question = Some(self.question.clone());
        run.record_action(ActionStep {
            asked: self.asked,
            ..step(turn, "ask_user", "asked", question, result.to_string())
        });
        (self.question, Termination::AskedUser)
    }
}

impl Executed {
    fn new(step: ActionStep) -> Self {
        Self {
            step,
            ..Self::default()
        }
    }

    fn invalid(step: ActionStep) -> Self {
        Self {
            invalid: true,
            ..Self::new(step)
        }
    }
}

/// One request being handled: the trace, the costs, what was found.
struct Run<'s> {
    env: Env<'s>,
    sink: &'s mut dyn Sink,
    trace: Trace,
    cost: Cost,
    started: Instant,
    /// Chunks of the operations found, in the order found.
    ranked: Vec<ChunkId>,
    /// The first chunk found of each operation.
    chunk_of: HashMap<String, ChunkId>,
    /// Chunks of the operations the model called.
    citations: Vec<ChunkId>,
    /// The texts embedded so far ([`Run::embedding`]).
    embeddings: HashMap<String, Vec<f32>>,
}

impl<'s> Run<'s> {
    fn new(strategy: &Actions, request: &str, env: Env<'s>, sink: &'s mut dyn Sink) -> Self {
        Self {
            env,
            sink,
            trace: Trace {
                question: request.to_string(),
                strategy: strategy.name().to_string(),
                model: env.model.id().to_string(),
                embedder: env.embedder.id().to_string(),
                config: strategy.config(),
                steps: Vec::new(),
            },
            cost: Cost::default(),
            started: Instant::now(),
            ranked: Vec::new(),
            chunk_of: HashMap::new(),
            citations: Vec::new(),
            embeddings: HashMap::new(),
        }
    }

    /// The embedding of `text`, embedded once per request: the search and the weighed
    /// pick both read the request's.
    fn embedding(&mut self, text: &str) -> Result<Vec<f32>, StrategyError> {
        if let Some(vector) = self.embeddings.get(text) {
            return Ok(vector.clone());
        }
        let vector = self.env.embedder.embed_one(text)?;
        self.embeddings.insert(text.to_string(), vector.clone());
        Ok(vector)
    }

    fn record_action(&mut self, step: ActionStep) {
        tracing::info!(
            action = %step.action,
            operation = step.operation_id.as_deref().unwrap_or(""),
            outcome = %step.outcome,
            "action"
        );
        self.sink.emit(Event::Action(Box::new(step.clone())));
        self.trace.steps.push(Step::Action(step));
    }

    /// Gives the model `step`'s result for `call`, and records the step.
    fn answer(&mut self, to: &mut Conversation, tools: bool, call: &ModelCall, step: ActionStep) {
        to.answer(tools, call, &step.result);
        self.record_action(step);
    }

    /// Records the pick: `picked` (`None` when none fits), with `text` saying how it came.
    fn record_pick(&mut self, picked: &Option<String>, text: String) {
        let outcome = if picked.is_some() { "picked" } else { "none" };
        self.record_action(ActionStep {
            operation_id: picked.clone(),
            ..step(1, "pick", outcome, Some(text), String::new())
        });
    }

    /// The chunk to cite for an operation: the one found, else its record's first chunk.
    fn chunk_for(&self, operation_id: &str) -> Option<ChunkId> {
        let found = self.chunk_of.get(operation_id).copied();
        found.or_else(|| first_chunk(self.env.index, operation_id))
    }

    /// Calls `model` and records the call; a stop cancels the generation and keeps what came.
    async fn chat(
        &mut self,
        model: &dyn ChatModel,
        cycle: usize,
        purpose: &str,
        request: ChatRequest,
        control: &Control,
    ) -> Result<Completion, ChatError> {
        let (result, call) = llm::call(model, cycle, purpose, request, control, &mut |_| {}).await;
        self.trace.steps.push(Step::Llm(call));
        if let Ok(out) = &result {
            self.cost.add_call(out.usage);
        }
        result
    }

    /// Asks `model` to weigh `items` and records the call.
    async fn score(
        &mut self,
        model: &dyn ChatModel,
        cycle: usize,
        purpose: &str,
        items: Vec<ScoreItem>,
    ) -> Result<Vec<f32>, ChatError> {
        let steps = &mut self.trace.steps;
        llm::score_recorded(model, cycle, purpose, items, steps, &mut self.cost).await
    }

    /// The answer: `text` to the user (also sent as one `token` event).
    fn finish(self, text: String, found: bool, termination: Termination, cycles: usize) -> Answer {
        self.sink.emit(Event::Token { text: text.clone() });
        Answer {
            answer: text.clone(),
            text,
            found,
            citations: self.citations,
            shown: Vec::new(),
            ranked: self.ranked,
            termination,
            cycles,
            usage: self.cost,
            elapsed_ms: self.started.elapsed().as_millis() as u64,
            trace: self.trace,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocol_objects_are_read_in_the_protocol_s_keys_only() {
        let read = |text: &str| call_of_text(text).call;
        let fenced = "```json\n{\"action\": \"execute_action\", \"operation_id\": \"getNote\", \"params\": {\"noteId\": \"1\"}}\n```";
        let execute = Call::Execute {
            operation_id: "getNote".into(),
            params: json!({"noteId": "1"}),
        };
        let respond = |text: &str| Call::Respond { text: text.into() };
        let find = Call::Find {
            query: "delete notes".into(),
        };
        for (text, call) in [
            (fenced, execute),
            (
                "{\"action\": \"respond\", \"text\": \"Done\"}\n{\"action\": \"ask_user\"}",
                respond("Done"),
            ),
            (r#"{"action": "find_actions", "query": "delete notes"#, find),
            ("The note was created.", respond("The note was created.")),
        ] {
            assert_eq!(read(text), call, "{text}");
        }
        // Other spellings are not guessed at: the model is told and tries again.
        for other in [
            "{\"action\": \"getNote\", \"noteId\": \"1\"}",
            "{\"operationId\": \"createNote\", \"title\": \"x\"}",
            "{\"tool\": \"respond\", \"text\": \"Done\"}",
            "{\"foo\": 1}",
            "",
        ] {
            assert!(matches!(read(other), Call::Unreadable { .. }), "{other}");
        }
    }

    #[test]
    fn a_long_conversation_is_cut_at_a_user_message() {
        let mut conversation = Conversation::new();
        for i in 0..20 {
            conversation
                .messages
                .push(Message::user(format!("request {i}")));
            conversation.messages.push(Message::assistant("{}"));
            conversation.messages.push(Message::tool("c", "result"));
        }
        let recent = conversation.recent();
        assert!(recent.len() <= MAX_HISTORY);
        assert_eq!(recent[0].role, walkrag_core::Role::User);
        assert_eq!(recent.last().unwrap().content, "result");
        let short = Conversation {
            messages: vec![Message::user("a"), Message::assistant("b")],
            ..Conversation::new()
        };
        assert_eq!(short.recent().len(), 2);
    }

    #[test]
    fn a_guess_is_read_as_the_words_of_at_most_three_ids() {
        assert_eq!(
            guessed_words("suspendUser, banUser").as_deref(),
            Some("suspend user ban user")
        );
        assert_eq!(
            guessed_words("`createBackup`, startBackup, backupSite, runBackupNow").as_deref(),
            Some("create backup start backup backup site")
        );
        assert_eq!(
            guessed_words("getTags, getTags, gettags, listTags").as_deref(),
            Some("get tags list tags")
        );
        assert_eq!(guessed_words("  ,  ").as_deref(), None);
        let long = "a".repeat(61);
        assert_eq!(guessed_words(&long), None);
    }

    #[test]
    fn a_question_names_an_input_by_a_word_of_its_own() {
        let names = |question: &str, name: &str| {
            question_names(&question.to_lowercase(), &squash(question), name)
        };
        let question = "What is the missing required input for the 'post_ids' parameter?";
        assert!(names(question, "post_ids[]"));
        assert!(
            !names(question, "id"),
            "the id in post_ids is not the input id"
        );
        assert!(!names("Could you provide it?", "id"));
        assert!(names("Which id, and which post ids?", "id"));
        assert!(names("Which post ids?", "post_ids[]"));
        assert!(!names("Which post?", "post_id"));
    }

    #[test]
    fn a_question_for_missing_inputs_names_each() {
        let catalog = Catalog::parse(
            r#"{"openapi": "3.0.0", "info": {"title": "t", "version": "1"}, "paths": {"/a/{id}": {"post": {
                "operationId": "addThing", "summary": "Add a thing.",
                "parameters": [{"name": "id", "in": "path", "required": true, "description": "The box's id.", "schema": {"type": "string"}}],
                "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}}}}}}}}"#,
        )
        .unwrap();
        let action = &catalog.actions[0];
        assert_eq!(
            missing_question(action, &["id".into()]),
            "For addThing (Add a thing) I need id (The box's id). What should it be?"
        );
        assert_eq!(
            missing_question(action, &["id".into(), "name".into()]),
            "For addThing (Add a thing) I need id (The box's id) and name. What should they be?"
        );
        assert_eq!(
            credential_question(action, &["token".into()]),
            "For addThing (Add a thing) I need token, a credential never taken from the conversation: \
             configure it (walkrag --credential token=VALUE), then ask again."
        );
    }
}
