//! The README and `docs/*.md` teach commands; each `walkrag …` line in their `sh` blocks must
//! name a subcommand and flags that the binary's `--help` knows, so the docs cannot drift
//! from the CLI unnoticed. (The lines are not run: many need a model and minutes.)

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::{stdout, walkrag};

/// Subcommands that take a subcommand of their own.
const NESTED: &[&str] = &["models", "bench"];

#[test]
fn every_documented_command_uses_known_subcommands_and_flags() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut pages = vec![root.join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/ is readable")
        .map(|entry| entry.expect("docs/ entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    pages.extend(docs);

    let dir = tempfile::tempdir().unwrap();
    let mut helps: HashMap<String, String> = HashMap::new();
    let mut checked = 0;
    let mut problems = Vec::new();
    for page in &pages {
        let text = std::fs::read_to_string(page).unwrap();
        let name = page
            .strip_prefix(&root)
            .unwrap_or(page)
            .display()
            .to_string();
        for command in documented_commands(&text) {
            let words = shell_words(&command);
            let Some(at) = words.iter().position(|w| w == "walkrag") else {
                continue;
            };
            let args = &words[at + 1..];
            let depth = match args.first() {
                Some(first) if NESTED.contains(&first.as_str()) => 2,
                Some(_) => 1,
                None => continue,
            };
            if args.len() < depth {
                problems.push(format!("{name}: `{command}` names no subcommand"));
                continue;
            }
            let path = args[..depth].join(" ");
            let help = helps.entry(path.clone()).or_insert_with(|| {
                let mut help_args: Vec<&str> = args[..depth].iter().map(String::as_str).collect();
                help_args.push("--help");
                let out = walkrag(dir.path(), &help_args);
                if out.status.success() {
                    stdout(&out)
                } else {
                    String::new()
                }
            });
            if help.is_empty() {
                problems.push(format!("{name}: `walkrag {path}` is not a command"));
                continue;
            }
            for flag in args[depth..].iter().filter_map(|w| flag_name(w)) {
                if !names_flag(help, flag) {
                    problems.push(format!("{name}: `walkrag {path}` has no flag {flag}"));
                }
            }
            checked += 1;
        }
    }
    assert!(
        checked >= 20,
        "only {checked} documented commands found: is the parsing broken?"
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The command lines of the `sh` blocks, continuation lines joined and comments cut.
fn documented_commands(markdown: &str) -> Vec<String> {
    let mut commands = Vec::new();
    let mut in_sh = false;
    let mut pending = String::new();
    for line in markdown.lines() {
        let trimmed = line.trim();
        if let Some(fence) = trimmed.strip_prefix("```") {
            in_sh = !in_sh && matches!(fence.trim(), "sh" | "bash" | "shell");
            pending.clear();
            continue;
        }
        if !in_sh {
            continue;
        }
        let code = strip_comment(line);
        match code.trim_end().strip_suffix('\\') {
            Some(head) => {
                pending.push_str(head);
                pending.push(' ');
            }
            None => {
                pending.push_str(code.trim_end());
                let command = std::mem::take(&mut pending);
                // One line may chain several commands.
                for part in command.split(['|', ';']).flat_map(|p| p.split("&&")) {
                    if part.split_whitespace().any(|w| w == "walkrag") {
                        commands.push(part.trim().to_string());
                    }
                }
            }
        }
    }
    commands
}

/// The line without a `#` comment (a `#` outside quotes that starts a word).
fn strip_comment(line: &str) -> &str {
    let mut quote = None;
    let mut previous = ' ';
    for (i, c) in line.char_indices() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), _) if c == q => quote = None,
            (None, '#') if previous.is_whitespace() => return &line[..i],
            _ => {}
        }
        previous = c;
    }
    line
}

/// Shell-like words: quotes group, `[` `]` of optional parts are dropped.
fn shell_words(command: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quote = None;
    for c in command.chars() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), _) if c == q => quote = None,
            (None, '[' | ']') => {}
            (None, c) if c.is_whitespace() => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
            }
            (_, c) => word.push(c),
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}

/// `--name` of `--name=value`, `-k` of `-k`; `None` for values and `-` alone.
fn flag_name(word: &str) -> Option<&str> {
    let name = word.split('=').next()?;
    let long = name
        .strip_prefix("--")
        .is_some_and(|rest| rest.chars().next().is_some_and(|c| c.is_ascii_alphabetic()));
    let short = name.len() == 2
        && name.starts_with('-')
        && name.chars().nth(1).is_some_and(|c| c.is_ascii_alphabetic());
    (long || short).then_some(name)
}

/// Whether `help` lists `flag` as a flag (not as a prefix of a longer one).
fn names_flag(help: &str, flag: &str) -> bool {
    help.match_indices(flag).any(|(i, _)| {
        let before = help[..i].chars().next_back();
        let after = help[i + flag.len()..].chars().next();
        before.is_none_or(|c| c.is_whitespace() || c == ',' || c == '[')
            && after.is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
    })
}

#[test]
fn the_parser_reads_continuations_chains_comments_and_options() {
    let markdown = "text\n```sh\nwalkrag index a b \\\n  --index /tmp/x   # build it\necho hi && walkrag ask \"a # b\" [--json]\n```\n```text\nwalkrag nope\n```\n";
    let commands = documented_commands(markdown);
    assert_eq!(
        commands,
        [
            "walkrag index a b    --index /tmp/x",
            "walkrag ask \"a # b\" [--json]"
        ]
    );
    assert_eq!(
        shell_words(&commands[1]),
        ["walkrag", "ask", "a # b", "--json"]
    );
    assert_eq!(flag_name("--index=/tmp"), Some("--index"));
    assert_eq!(flag_name("-k"), Some("-k"));
    assert_eq!(flag_name("-"), None);
    assert_eq!(flag_name("--"), None);
    assert!(names_flag("  -k <K>\n      --index <INDEX>", "--index"));
    assert!(!names_flag("      --index-dir <D>", "--index"));
}
