//! walkrag-walker's integration tests: strategies run against a real on-disk index built with
//! a word-hashing test embedder, and a scripted chat model that replays fixed replies.

mod compare;
mod docs;
mod html;
mod links;
mod memory;
mod roam;
mod single;
mod toc;
mod walk;
