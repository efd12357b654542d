//! `walkrag ask`: answer a question from the index with a strategy, streaming.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{bail, Context};
use walkrag_engine::Index;
use walkrag_walker::graph::Graph;
use walkrag_walker::html;
use walkrag_walker::output::{AnswerLine, TraceFile};
use walkrag_walker::passages::describe;

use walkrag_walker::{
    by_name, Answer, Control, CycleReport, Event, Memory, Options, Origin, Steer, Strategy,
};

/// Ask a question of the indexed documents.
///
/// The strategy retrieves passages from the index, shows them to the chat model and streams
/// its answer, citing passage ids like [1a2b3c4d.0]; the cited sources are listed after it
/// (`walkrag show ID` prints one). What was retrieved goes to stderr, the answer to stdout.
///
/// Strategies:
///   single  embed the question, answer from the top k chunks.
///   links   single's search, then the passages its best passage names (titles, headings,
///           "Section 7.2"), ranked as walk ranks them, and one model call to answer:
///           the walk without its model between searches, the baseline walk must beat.
///   walk    read k chunks, note facts and where to look next, search there, read what is
///           new, and repeat until the facts suffice (or --max-cycles searches, default
///           3: the last one's passages go to the answer unread); then answer from the
///           facts and the passages. Facts stream to stderr as the model writes them;
///           Ctrl-C stops the walk and answers from the facts so far. With --memory
///           its facts are kept for later questions.
///   actions carry out a request with an HTTP API whose OpenAPI spec was indexed
///           (walkrag index openapi.yaml): the operations that fit are found in the
///           index (by their example requests too, where `index --examples` wrote
///           them), the model picks one and fills in its inputs, and walkrag sends it.
///           Missing required inputs are asked for by name, never made up; anything but
///           GET/HEAD/OPTIONS is shown (method, URL, body) and sent only once confirmed
///           on the terminal (--yes confirms all; without a terminal, changes are
///           refused); --dry-run sends nothing. Credentials come from --header,
///           --credential NAME=VALUE and WALKRAG_AUTH_<SCHEME> variables and never reach
///           the model.
///   toc     the model reads the table of contents (every heading with its section id),
///           under it the sections of the question's 10 nearest passages (--leads), and
///           picks 5 sections, most useful first; their text, in that order and within
///           1,000 tokens, is what it answers from. A greeting or thanks is answered
///           without the documents; a pick of nothing answers "not found". When the
///           headings are too many (over 150), deeper levels are left out, then only
///           the documents of the question's best k passages are shown.
///   sections toc without the model's pick: the first 5 sections of the question's
///           nearest passages, in the search's order, read and answered from as toc
///           does; the baseline toc must beat.
///   roam    the model reads the documents as an outline (the top sections with the
///           start of their text, deeper ones closed, each after its section id) and
///           opens up to 5 sections at once; their text appears in place, and it opens
///           more or says it can answer (at most --max-cycles turns, default 3). The
///           open sections' text, within 1,200 tokens (least recently used closed
///           first), is what it answers from; "not found" lists the sections read. With
///           `walkrag chat --strategy roam` sections stay open between questions.
///   docs    the model sees the documents' fields (title, a name, and metadata from
///           .jsonl records or Markdown front matter such as company or date) and
///           chooses documents by them (query_documents: loose text match, date ranges),
///           or searches passages. Each chosen document is read whole (in parts past
///           1,200 tokens) by --doc-reader-model, 4 at a time; what each says streams out as
///           it arrives, and the model answers from it with citations. At most 6
///           documents and 12 reader calls per question.
///
/// Exit code 1 when the model concludes the documents do not answer the question (actions:
/// when the request was not carried out, e.g. a question was asked or it was declined).
///
/// Examples:
///   walkrag ask "Who chairs the board, and where was she born?"
///   walkrag ask "What drove revenue growth?" -k 8 --model openai:gpt-4o-mini
///   walkrag ask "..." --json --trace trace.json
///   walkrag ask "Northwind's 2023 revenue?" --strategy docs --doc-reader-model local:smollm2-135m
///   walkrag ask "Add a pet named Rex" --strategy actions --base-url http://localhost:8080/api
#[derive(clap::Args)]
#[command(verbatim_doc_comment)]
pub struct Args {
    question: String,
    /// Index directory.
    #[arg(long, default_value = super::DEFAULT_INDEX)]
    index: PathBuf,
    #[command(flatten)]
    store: super::query::StoreArg,
    /// Retrieval strategy: walk, single, links, roam, toc, sections, docs, actions.
    #[arg(long, default_value = "walk")]
    strategy: String,
    #[command(flatten)]
    model: super::ModelArg,
    #[command(flatten)]
    strategy_flags: super::strategy_flags::StrategyFlags,
    /// Pause after each walk cycle: Enter goes on, a line of text is a hint (searched for
    /// and shown to the model next), "s" stops and answers.
    #[arg(long)]
    interactive: bool,
    /// One JSON event per line; the last line is the answer.
    #[arg(long)]
    json: bool,
    /// Write the whole trace to FILE.json (every retrieval, prompt and completion, and the
    /// knowledge graph of chunks, facts and descriptors) or FILE.html (the walk drawn as a
    /// graph, each node's text on click; one self-contained file).
    #[arg(long, value_name = "FILE")]
    trace: Option<PathBuf>,
    /// Embedding model [default: the one the index was built with].
    #[arg(long)]
    embedder: Option<String>,
    #[command(flatten)]
    remote: super::query::RemoteEmbedArgs,
    /// Scan every vector instead of walking the HNSW graph.
    #[arg(long)]
    exact: bool,
    /// Remember the walk's facts in INDEX/memory.jsonl and start from the remembered facts
    /// close to the question, so follow-up questions build on earlier ones. Remembered facts
    /// are marked in the output and the trace; delete the file to forget.
    #[arg(long)]
    memory: bool,
    #[command(flatten)]
    actions: super::actions::ActionFlags,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if let Some(path) = &args.trace {
        if !matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("json" | "html")
        ) {
            bail!("--trace takes FILE.json or FILE.html");
        }
    }
    let control = Control::new();
    if args.memory && args.strategy != "walk" {
        bail!("--memory works with the walk strategy (facts are what it remembers)");
    }
    let memory = if args.memory {
        Some(Arc::new(Memory::of_index(&args.index)?))
    } else {
        None
    };
    let flags = &args.strategy_flags;
    let runs = |name: &str| name == args.strategy;
    flags.check(runs)?;
    let options = Options {
        control: control.clone(),
        memory,
        ..flags.options(&args.model, runs, |model| model)?
    };
    let actions = args.strategy == "actions";
    let strategy = if actions {
        None
    } else {
        Some(by_name(&args.strategy, &options)?)
    };
    let (index, embedder) = super::query::open_with_embedder(
        &args.index,
        &args.store,
        args.embedder.as_deref(),
        &args.remote,
    )?;
    let strategy: Box<dyn Strategy> = match strategy {
        Some(strategy) => strategy,
        None => {
            let confirm = super::actions::confirmation(&args.actions);
            let mut actions =
                super::actions::strategy(&index, &args.actions, args.model.spec(), confirm)?;
            if let Some(k) = flags.k {
                actions.k = k;
            }
            if let Some(turns) = flags.max_cycles {
                actions.max_turns = turns;
            }
            actions.control = control.clone();
            Box::new(actions)
        }
    };
    let model = super::load_chat_model(args.model.spec())?;
    let env = super::env(&index, embedder.as_ref(), model.as_ref(), args.exact);
    if args.interactive {
        control.pause_with(Box::new(ask_how_to_go_on));
    }
    let runtime = super::runtime()?;
    runtime.spawn(stop_on_ctrl_c(control));
    let answer = if args.json {
        let mut sink = |event: Event| {
            let mut out = std::io::stdout().lock();
            // A closed stdout ends the output, not the question: the trace is still written.
            let _ = serde_json::to_writer(&mut out, &event)
                .map_err(std::io::Error::from)
                .and_then(|()| writeln!(out))
                .and_then(|()| out.flush());
        };
        let answer = runtime.block_on(strategy.run(&args.question, env, &mut sink))?;
        let mut out = std::io::stdout().lock();
        serde_json::to_writer(&mut out, &AnswerLine::new(&answer))?;
        writeln!(out)?;
        answer
    } else {
        // No spinner where the terminal is also asked things (actions' confirmations,
        // --interactive's pauses).
        let mut human = Human::with_spinner(!actions && !args.interactive);
        let answer = runtime.block_on(strategy.run(&args.question, env, &mut |e| human.show(e)))?;
        human.finish(&answer, &index)?;
        answer
    };
    if let Some(path) = &args.trace {
        write_trace(path, &answer, &index)?;
    }
    Ok(if answer.found {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The first Ctrl-C stops the walk, which then answers from the facts so far; a second one
/// quits at once.
async fn stop_on_ctrl_c(control: Control) {
    if tokio::signal::ctrl_c().await.is_err() {
        return;
    }
    eprintln!("\nstopping: answering from what was found so far (Ctrl-C again to quit)");
    control.stop();
    if tokio::signal::ctrl_c().await.is_ok() {
        std::process::exit(130);
    }
}

/// `--interactive`: after a cycle, asks on stderr how to go on and reads the reply from stdin.
fn ask_how_to_go_on(report: &CycleReport<'_>) -> Steer {
    eprint!(
        "cycle {}: {} facts, {} places to look. Enter: go on · text: a hint · s: stop and answer > ",
        report.cycle,
        report.facts.len(),
        report.descriptors.len()
    );
    let _ = std::io::stderr().flush();
    let mut line = String::new();
    if std::io::stdin().read_line(&mut line).is_err() {
        return Steer::Continue;
    }
    match line.trim() {
        "" => Steer::Continue,
        "s" | "stop" => Steer::Stop,
        hint => Steer::Hint(hint.to_string()),
    }
}

/// Writes the trace (JSON with its knowledge graph, or the HTML page) through a temporary file,
/// so a reader never sees half of it.
fn write_trace(path: &Path, answer: &Answer, index: &Index) -> anyhow::Result<()> {
    let graph = Graph::of(answer, index);
    let contents = if path.extension().and_then(|e| e.to_str()) == Some("html") {
        html::render(answer, &graph)
    } else {
        serde_json::to_string_pretty(&TraceFile {
            trace: &answer.trace,
            answer,
            graph: &graph,
        })? + "\n"
    };
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, contents)
        .and_then(|()| std::fs::rename(&tmp, path))
        .with_context(|| format!("cannot write the trace to {}", path.display()))
}

/// Human output: retrievals and notes on stderr, the answer streamed to stdout.
///
/// With a spinner (a terminal, not `--json`), a line on stderr says what the strategy is
/// doing while nothing else is printed: a local model reads a prompt of a few thousand
/// tokens for seconds before its first word.
#[derive(Default)]
pub(crate) struct Human {
    answering: bool,
    spinner: Option<indicatif::ProgressBar>,
    facts: usize,
}

impl Human {
    /// Human output with a spinner on stderr when `enabled` and stderr is a terminal.
    pub(crate) fn with_spinner(enabled: bool) -> Self {
        let spinner = (enabled && std::io::stderr().is_terminal()).then(|| {
            let bar = indicatif::ProgressBar::new_spinner();
            bar.set_style(
                indicatif::ProgressStyle::with_template("{spinner} {msg} {elapsed}")
                    .expect("template is valid"),
            );
            bar.enable_steady_tick(std::time::Duration::from_millis(120));
            bar.set_message("searching");
            bar
        });
        Self {
            spinner,
            ..Self::default()
        }
    }

    /// Writes to stderr with the spinner's line out of the way.
    fn say(&self, write: impl FnOnce(&mut std::io::StderrLock<'_>)) {
        let write_now = || write(&mut std::io::stderr().lock());
        match &self.spinner {
            Some(bar) => bar.suspend(write_now),
            None => write_now(),
        }
    }

    /// What the spinner says the strategy is doing now.
    fn doing(&self, step: String) {
        if let Some(bar) = &self.spinner {
            bar.set_message(step);
        }
    }

    fn facts_so_far(&self) -> String {
        match self.facts {
            0 => "the model reads the passages".to_string(),
            1 => "the model reads the passages · 1 fact so far".to_string(),
            n => format!("the model reads the passages · {n} facts so far"),
        }
    }

    pub(crate) fn show(&mut self, event: Event) {
        match event {
            Event::Cycle { cycle } if cycle > 1 => {
                self.say(|err| {
                    let _ = writeln!(err, "── cycle {cycle}");
                });
                self.doing(format!("cycle {cycle}: searching"));
            }
            Event::Cycle { .. } => {}
            Event::Retrieved {
                query,
                chunks,
                origin,
                ..
            } => {
                self.say(|err| {
                    // Where the search came from, unless it is the question's own.
                    let _ = match origin {
                        Origin::Question => writeln!(err, "searching: {query}"),
                        other => writeln!(err, "searching ({}): {query}", other.as_str()),
                    };
                    for c in &chunks {
                        let mark = if c.new { ' ' } else { '·' };
                        let _ = writeln!(
                            err,
                            "  {mark}{:.3} [{}] {}",
                            c.score,
                            c.chunk_id,
                            describe(&c.title, &c.section_path, c.page)
                        );
                    }
                });
                self.doing(self.facts_so_far());
            }
            Event::Note { message } => self.say(|err| {
                let _ = writeln!(err, "note: {message}");
            }),
            Event::Fact(fact) => {
                let source = match (fact.trusted, fact.chunk_id) {
                    (true, Some(id)) => format!("[{id}]"),
                    _ => format!("(unverified source {:?})", fact.source),
                };
                let recalled = if fact.remembered { " (remembered)" } else { "" };
                self.say(|err| {
                    let _ = writeln!(err, "  • {} {source}{recalled}", fact.fact);
                });
                self.facts += 1;
                self.doing(self.facts_so_far());
            }
            Event::NextSource(d) => self.say(|err| {
                let _ = writeln!(err, "  → look for: {} — {}", d.next_source, d.expected_info);
            }),
            Event::Action(step) => self.say(|err| super::actions::show_action(err, &step)),
            Event::Token { text } => {
                if !self.answering {
                    self.answering = true;
                    // The answer streams to stdout: the spinner's line would cut into it.
                    if let Some(bar) = self.spinner.take() {
                        bar.finish_and_clear();
                    }
                    if std::io::stderr().is_terminal() {
                        eprintln!();
                    }
                }
                let mut out = std::io::stdout().lock();
                let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
            }
        }
    }

    pub(crate) fn finish(&mut self, answer: &Answer, index: &Index) -> anyhow::Result<()> {
        if let Some(bar) = self.spinner.take() {
            bar.finish_and_clear();
        }
        let mut out = std::io::stdout().lock();
        if !answer.text.ends_with('\n') {
            writeln!(out)?;
        }
        if !answer.citations.is_empty() {
            // Not "Sources": the answer's own last line is already "Sources: [id], …".
            let heading = if answer.trace.strategy == "actions" {
                "Operations called"
            } else {
                "Cited passages"
            };
            writeln!(out, "\n{heading}:")?;
            for id in &answer.citations {
                if let Some(row) = index.row_of(*id) {
                    let c = index.chunk(row);
                    writeln!(
                        out,
                        "  [{id}] {} — {}",
                        describe(&c.doc.title, &c.section().path, c.chunk.page),
                        c.doc.id
                    )?;
                }
            }
        }
        let usage = answer.usage;
        eprintln!(
            "\n{} · {} · {} LLM call{} · {} prompt + {} completion tokens · {:.1} s",
            answer.trace.strategy,
            answer.termination,
            usage.llm_calls,
            if usage.llm_calls == 1 { "" } else { "s" },
            usage.prompt_tokens,
            usage.completion_tokens,
            answer.elapsed_ms as f64 / 1000.0
        );
        Ok(())
    }
}
