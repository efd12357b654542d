//! Prompt templates. Each lives in its own file under `walker/prompts/` so a change to a
//! prompt is a reviewable diff (and a snapshot test diff); `{{name}}` marks a value.

/// The answer step, shared by strategies: passages (and facts, when a strategy has them) in,
/// a short answer with citations out.
pub const ANSWER_SYSTEM: &str = include_str!("../../prompts/answer.system.md");
pub const ANSWER_USER: &str = include_str!("../../prompts/answer.user.md");
/// Worked examples of the answer step, shown as earlier turns of the conversation: a name
/// found across two passages, a yes/no comparison, and "not found". Small models follow a
/// shown reply far better than a described one. The passages are invented, not taken from
/// any evaluation set.
pub const ANSWER_EXAMPLES: &str = include_str!("../../prompts/answer.examples.md");

/// The computed comparison (`Run::compare_sides`): how a two-sided question compares its
/// sides, and which value a side's passage states for it, both weighed, never written.
pub const COMPARE_SYSTEM: &str = include_str!("../../prompts/compare.system.md");
pub const COMPARE_KIND_USER: &str = include_str!("../../prompts/compare.kind.user.md");
pub const COMPARE_KIND_YESNO_USER: &str = include_str!("../../prompts/compare.kind.yesno.user.md");
pub const COMPARE_VALUE_USER: &str = include_str!("../../prompts/compare.value.user.md");

/// The read step of `walk`: facts and next-source descriptors as JSON Lines.
pub const READ_SYSTEM: &str = include_str!("../../prompts/read.system.md");
pub const READ_USER: &str = include_str!("../../prompts/read.user.md");

/// The self-ask call of `walk` ([`crate::NextSources::Asked`]): a cycle's best passages and
/// the question in, the one follow-up question to search for out. Its worked examples are
/// invented, like the answer step's.
pub const ASK_SYSTEM: &str = include_str!("../../prompts/ask.system.md");
pub const ASK_USER: &str = include_str!("../../prompts/ask.user.md");
pub const ASK_EXAMPLES: &str = include_str!("../../prompts/ask.examples.md");

/// The pick of `toc`: section ids from a table of contents (or a direct reply) as JSON.
pub const TOC_SYSTEM: &str = include_str!("../../prompts/toc.system.md");
pub const TOC_USER: &str = include_str!("../../prompts/toc.user.md");

/// A navigation turn of `roam`: the outline with open sections in, `expand_sections` or
/// `answer` out.
pub const ROAM_SYSTEM: &str = include_str!("../../prompts/roam.system.md");
pub const ROAM_USER: &str = include_str!("../../prompts/roam.user.md");

/// The plan of `docs`: the documents' fields and titles in, `query_documents` (filters) or
/// `search_passages` out.
pub const DOCS_SYSTEM: &str = include_str!("../../prompts/docs.system.md");
pub const DOCS_USER: &str = include_str!("../../prompts/docs.user.md");

/// A reader of `docs`: one document (or part) and the query in, what it says out.
pub const DOCS_READ_SYSTEM: &str = include_str!("../../prompts/docs.read.system.md");
pub const DOCS_READ_USER: &str = include_str!("../../prompts/docs.read.user.md");

/// A generated table of contents' entry: a passage in, a heading and a summary out.
pub const CONTENTS_SYSTEM: &str = include_str!("../../prompts/contents.system.md");
pub const CONTENTS_USER: &str = include_str!("../../prompts/contents.user.md");

/// A request of one system prompt (trimmed) and one user message, taking at most
/// `max_tokens`; callers add openings, tools or JSON mode.
pub fn request(system: &str, user: String, max_tokens: usize) -> walkrag_core::ChatRequest {
    use walkrag_core::{ChatRequest, Message, Sampling};
    ChatRequest {
        messages: vec![Message::system(system.trim()), Message::user(user)],
        sampling: Sampling {
            max_tokens,
            ..Sampling::default()
        },
        ..ChatRequest::default()
    }
}

/// [`request`] with the worked examples of `examples_text` (an examples file) as earlier turns,
/// between the instructions and `user`.
pub fn request_with_examples(
    system: &str,
    examples_text: &str,
    user: String,
    max_tokens: usize,
) -> walkrag_core::ChatRequest {
    let mut request = request(system, user, max_tokens);
    request.messages.splice(1..1, examples(examples_text));
    request
}

/// The turns of an examples file: each `--- user` or `--- assistant` line starts a message
/// of that role, whose text runs to the next such line.
///
/// # Panics
/// On text before the first turn or an unknown role: example files are compiled in, so
/// either is a bug that the tests catch.
pub fn examples(text: &str) -> Vec<walkrag_core::Message> {
    use walkrag_core::Message;
    let mut turns: Vec<Message> = Vec::new();
    let mut current: Option<(&str, Vec<&str>)> = None;
    let close = |turn: Option<(&str, Vec<&str>)>, turns: &mut Vec<Message>| {
        if let Some((role, lines)) = turn {
            let content = lines.join("\n").trim().to_string();
            turns.push(match role {
                "user" => Message::user(content),
                "assistant" => Message::assistant(content),
                other => panic!("unknown role {other:?} in an examples file"),
            });
        }
    };
    for line in text.lines() {
        if let Some(role) = line.strip_prefix("--- ") {
            close(current.take(), &mut turns);
            current = Some((role.trim(), Vec::new()));
        } else {
            match &mut current {
                Some((_, lines)) => lines.push(line),
                None if line.trim().is_empty() => {}
                None => panic!("text before the first turn of an examples file: {line:?}"),
            }
        }
    }
    close(current, &mut turns);
    turns
}

/// Fills the `{{name}}` placeholders of `template`.
///
/// # Panics
/// When a placeholder has no value or a value has no placeholder: templates and callers are
/// compiled together, so either is a bug that the prompt snapshot tests catch.
pub fn render(template: &str, values: &[(&str, &str)]) -> String {
    let mut out =
        String::with_capacity(template.len() + values.iter().map(|v| v.1.len()).sum::<usize>());
    let mut used = vec![false; values.len()];
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after
            .find("}}")
            .unwrap_or_else(|| panic!("unclosed placeholder in template: {}", &rest[start..]));
        let name = &after[..end];
        let slot = values
            .iter()
            .position(|(key, _)| *key == name)
            .unwrap_or_else(|| panic!("no value for placeholder {{{{{name}}}}}"));
        used[slot] = true;
        out.push_str(values[slot].1);
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    if let Some(unused) = used.iter().position(|u| !u) {
        panic!(
            "the template has no placeholder {{{{{}}}}}",
            values[unused].0
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn examples_alternate_user_and_assistant() {
        use walkrag_core::Role;
        for text in [ANSWER_EXAMPLES, ASK_EXAMPLES] {
            let turns = examples(text);
            assert_eq!(turns.len(), 6);
            for (i, turn) in turns.iter().enumerate() {
                let role = if i % 2 == 0 {
                    Role::User
                } else {
                    Role::Assistant
                };
                assert_eq!(turn.role, role);
                assert!(!turn.content.is_empty());
            }
        }
    }

    #[test]
    fn answer_examples_keep_to_the_answer_grammar() {
        let turns = examples(ANSWER_EXAMPLES);
        // Each example reply keeps to the answer step's grammar: one line of answer, then
        // the sources, then at most one line.
        for reply in turns.iter().skip(1).step_by(2) {
            assert!(reply.content.starts_with("Answer: "), "{}", reply.content);
            assert_eq!(
                reply
                    .content
                    .lines()
                    .nth(1)
                    .map(|l| l.starts_with("Sources:")),
                Some(true)
            );
            assert!(reply.content.lines().count() <= 3);
        }
    }

    #[test]
    fn fills_placeholders() {
        assert_eq!(
            render("Q: {{q}}\n{{p}} and {{q}}", &[("q", "why?"), ("p", "text")]),
            "Q: why?\ntext and why?"
        );
        assert_eq!(render("no placeholders", &[]), "no placeholders");
    }

    #[test]
    #[should_panic(expected = "no value for placeholder {{x}}")]
    fn missing_value_is_a_bug() {
        render("{{x}}", &[]);
    }

    #[test]
    #[should_panic(expected = "no placeholder {{y}}")]
    fn unused_value_is_a_bug() {
        render("{{x}}", &[("x", "1"), ("y", "2")]);
    }
}
