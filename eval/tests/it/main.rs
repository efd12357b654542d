//! walkrag-eval's integration tests: the eval loop over a real on-disk index, with the
//! walker's test embedder and scripted chat model.

mod actions;
mod runner;
