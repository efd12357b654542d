//! `walkrag`: multi-turn retrieval over long documents, from the command line.
//!
//! The command-line contract (flags, `--json` shapes, exit codes) is ../shared/INTERFACE.md;
//! each subcommand lives in its own module under `cmd/`.

mod cmd;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// `walkrag --version`: the crate version and the commit it was built from (cli/build.rs).
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("WALKRAG_COMMIT"),
    ")"
);

/// walkrag: ask multi-hop questions of long documents, with local models.
///
/// Models come from the models directory ($WALKRAG_MODELS, default ~/.cache/walkrag/models),
/// filled by scripts/fetch-models.sh. Logs go to stderr (set RUST_LOG=debug for more);
/// results go to stdout, as JSON Lines with --json.
///
/// Exit codes: 0 success, 1 nothing found, 2 error.
///
/// Start with `walkrag index DIR` then `walkrag ask "QUESTION"`; `walkrag CMD --help` has
/// examples for each command.
#[derive(Parser)]
#[command(name = "walkrag", version = VERSION, max_term_width = 100)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    Index(cmd::index::Args),
    Search(cmd::query::SearchArgs),
    Outline(cmd::query::OutlineArgs),
    Show(cmd::query::ShowArgs),
    Ask(cmd::ask::Args),
    Eval(cmd::eval::Args),
    Chat(cmd::chat::Args),
    Embed(cmd::embed::Args),
    Serve(cmd::serve::Args),
    Mcp(cmd::serve::McpArgs),
    #[command(subcommand)]
    Models(cmd::models::Command),
    #[command(subcommand)]
    Bench(cmd::bench::Command),
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .with_ansi(colour(
            std::io::IsTerminal::is_terminal(&std::io::stderr()),
            std::env::var_os("NO_COLOR").as_deref(),
        ))
        .init();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Index(args) => cmd::index::run(args),
        Command::Search(args) => cmd::query::search(args),
        Command::Outline(args) => cmd::query::outline(args),
        Command::Show(args) => cmd::query::show(args),
        Command::Ask(args) => cmd::ask::run(args),
        Command::Eval(args) => cmd::eval::run(args),
        Command::Chat(args) => cmd::chat::run(args),
        Command::Embed(args) => cmd::embed::run(args),
        Command::Serve(args) => cmd::serve::run(args),
        Command::Mcp(args) => cmd::serve::mcp(args),
        Command::Models(command) => cmd::models::run(command),
        Command::Bench(command) => cmd::bench::run(command),
    };
    match result {
        Ok(code) => code,
        // A reader that stopped reading (`walkrag embed | head`) is not an error.
        Err(err) if is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("walkrag: error: {err:#}");
            ExitCode::from(2)
        }
    }
}

/// Colour in the logs only on a terminal, and not there either when `NO_COLOR` is set to
/// anything but the empty string (no-color.org): a log file or a pipe gets plain text.
fn colour(terminal: bool, no_color: Option<&std::ffi::OsStr>) -> bool {
    terminal && no_color.is_none_or(|v| v.is_empty())
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain()
        .filter_map(|e| e.downcast_ref::<std::io::Error>())
        .any(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
}

#[cfg(test)]
mod tests {
    use super::colour;
    use std::ffi::OsStr;

    #[test]
    fn colour_only_on_a_terminal_without_no_color() {
        assert!(colour(true, None));
        assert!(colour(true, Some(OsStr::new(""))));
        assert!(!colour(true, Some(OsStr::new("1"))));
        assert!(!colour(false, None));
        assert!(!colour(false, Some(OsStr::new(""))));
    }
}
