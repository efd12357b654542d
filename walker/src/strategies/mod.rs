//! The strategies, one file each, and [`by_name`], which builds one from its name and the
//! user's [`Options`]. They use the rest of the crate (the reader, the search-side helpers,
//! the trace, `run.rs`); nothing outside this folder imports them.

pub mod ask;
pub mod docs;
pub mod linked;
pub mod roam;
pub mod single;
pub mod toc;
pub mod walk;

use walkrag_core::ChatModel;

use crate::strategy::{AnswerModel, Strategy};

/// Every strategy name the CLI contract knows, in the order `--help` lists them.
pub const STRATEGY_NAMES: [&str; 8] = [
    "walk", "single", "links", "roam", "toc", "sections", "docs", "actions",
];

/// The strategies this build can run (`actions` needs an API: see [`by_name`]).
pub const AVAILABLE: [&str; 8] = STRATEGY_NAMES;

/// Settings a user may give any strategy; `None` keeps the strategy's default.
#[derive(Clone, Default)]
pub struct Options {
    /// Stops and hints from outside (strategies that loop honour them).
    pub control: crate::control::Control,
    /// Chunks retrieved per search.
    pub k: Option<usize>,
    /// Most retrieval cycles (multi-cycle strategies).
    pub max_cycles: Option<usize>,
    /// Facts remembered across questions (strategies that gather facts use it).
    pub memory: Option<std::sync::Arc<crate::search::memory::Memory>>,
    /// The model that reads whole documents (`docs`); `None`: the chat model.
    pub reader: Option<std::sync::Arc<dyn ChatModel>>,
    /// `links`, `walk`: unread names of the passages searched per hop (see
    /// [`linked::Linked::names`], [`walk::Walk::names`]).
    pub names: Option<usize>,
    /// `walk`: where next sources come from (see [`crate::NextSources`]).
    pub next_sources: walk::NextSources,
    /// `toc`, `sections`, `roam`: the question's nearest passages whose sections are listed
    /// as leads (see [`crate::Toc::leads`]).
    pub leads: Option<usize>,
    /// The model of every strategy's answer step; `None`: the chat model.
    pub answer_model: Option<AnswerModel>,
}

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("k", &self.k)
            .field("max_cycles", &self.max_cycles)
            .field("memory", &self.memory.is_some())
            .field("reader", &self.reader.as_ref().map(|m| m.id().to_string()))
            .field("answer_model", &self.answer_model)
            .finish_non_exhaustive()
    }
}

/// A strategy picked by name. `actions` is not built here: it needs an API to call (a
/// catalogue, an executor with its credentials, a confirmation), which the CLI sets up
/// (`walkrag ask --strategy actions`) and a library builds with `walkrag_actions::Actions`.
pub fn by_name(name: &str, options: &Options) -> Result<Box<dyn Strategy>, UnknownStrategy> {
    match name {
        "single" => {
            let mut single = single::Single::default();
            if let Some(k) = options.k {
                single.k = k;
            }
            single.answer_model = options.answer_model.clone();
            Ok(Box::new(single))
        }
        "links" => {
            let mut linked = linked::Linked::default();
            if let Some(k) = options.k {
                linked.k = k;
            }
            if let Some(max_cycles) = options.max_cycles {
                linked.max_cycles = max_cycles;
            }
            if let Some(names) = options.names {
                linked.names = names;
            }
            linked.answer_model = options.answer_model.clone();
            Ok(Box::new(linked))
        }
        "walk" => {
            let mut walk = walk::Walk::default();
            if let Some(k) = options.k {
                walk.k = k;
            }
            if let Some(max_cycles) = options.max_cycles {
                walk.max_cycles = max_cycles;
            }
            walk.control = options.control.clone();
            walk.memory = options.memory.clone();
            walk.next_sources = options.next_sources;
            if let Some(names) = options.names {
                walk.names = names;
            }
            walk.answer_model = options.answer_model.clone();
            Ok(Box::new(walk))
        }
        "toc" | "sections" => {
            let mut toc = toc::Toc {
                chooser: if name == "toc" {
                    toc::SectionChooser::Model
                } else {
                    toc::SectionChooser::Search
                },
                ..toc::Toc::default()
            };
            if let Some(k) = options.k {
                toc.k = k;
            }
            if let Some(leads) = options.leads {
                toc.leads = leads;
            }
            toc.answer_model = options.answer_model.clone();
            Ok(Box::new(toc))
        }
        "roam" => {
            let mut roam = roam::Roam::default();
            if let Some(k) = options.k {
                roam.k = k;
            }
            if let Some(max_cycles) = options.max_cycles {
                roam.max_turns = max_cycles;
            }
            if let Some(leads) = options.leads {
                roam.leads = leads;
            }
            roam.answer_model = options.answer_model.clone();
            Ok(Box::new(roam))
        }
        "docs" => {
            let mut docs = docs::Docs::default();
            if let Some(k) = options.k {
                docs.k = k;
            }
            docs.reader = options.reader.clone();
            docs.answer_model = options.answer_model.clone();
            Ok(Box::new(docs))
        }
        "actions" => Err(UnknownStrategy::NeedsApi),
        other => Err(UnknownStrategy::Unknown(other.to_string())),
    }
}

#[derive(Debug, thiserror::Error)]
pub enum UnknownStrategy {
    #[error("no strategy is called {0:?}; available: {available}", available = AVAILABLE.join(", "))]
    Unknown(String),
    #[error(
        "the actions strategy calls an API and is set up from an index of OpenAPI operations: \
         `walkrag ask REQUEST --strategy actions` or `walkrag eval --spec SPEC --requests FILE` \
         (in Rust, walkrag_actions::Actions)"
    )]
    NeedsApi,
}
