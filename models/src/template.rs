//! Chat templates: ChatML, the format of both local model families walkrag ships with.
//!
//! GGUF files carry their template as Jinja source (`tokenizer.chat_template`). Rather than
//! run Jinja, walkrag recognises ChatML templates, reads the default system prompt the
//! template inserts when a conversation has none, and renders with a small built-in renderer.
//! Any other template is refused with a clear error.

use walkrag_core::{Message, Role};

use crate::LoadError;

/// A recognised chat template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatMl {
    /// The system prompt the template adds when the first message is not a system message.
    pub default_system: Option<String>,
}

const START: &str = "<|im_start|>";
const END: &str = "<|im_end|>";

impl ChatMl {
    /// Recognises a ChatML template from its Jinja source.
    pub fn from_template(source: &str) -> Result<Self, LoadError> {
        if !source.contains(START) || !source.contains(END) {
            let head: String = source.chars().take(80).collect();
            return Err(LoadError::Unsupported(format!(
                "chat template {head:?}...: walkrag renders ChatML (<|im_start|>role ... <|im_end|>) only"
            )));
        }
        Ok(Self {
            default_system: default_system(source),
        })
    }

    /// The prompt for `messages`, ending with the opening of the assistant's turn.
    pub fn render(&self, messages: &[Message]) -> String {
        let mut out = String::new();
        if let (Some(system), Some(first)) = (&self.default_system, messages.first()) {
            if first.role != Role::System {
                turn(&mut out, "system", system);
            }
        }
        for m in messages {
            match m.role {
                Role::Tool => {
                    let body = format!("<tool_response>\n{}\n</tool_response>", m.content);
                    turn(&mut out, "user", &body);
                }
                Role::Assistant if !m.tool_calls.is_empty() => {
                    let mut body = m.content.clone();
                    for call in &m.tool_calls {
                        if !body.is_empty() {
                            body.push('\n');
                        }
                        body.push_str(&format!(
                            "<tool_call>\n{{\"name\": {}, \"arguments\": {}}}\n</tool_call>",
                            serde_json::Value::String(call.name.clone()),
                            call.arguments
                        ));
                    }
                    turn(&mut out, "assistant", &body);
                }
                role => turn(&mut out, role.as_str(), &m.content),
            }
        }
        out.push_str(START);
        out.push_str("assistant\n");
        out
    }
}

fn turn(out: &mut String, role: &str, content: &str) {
    out.push_str(START);
    out.push_str(role);
    out.push('\n');
    out.push_str(content);
    out.push_str(END);
    out.push('\n');
}

/// The literal system text a template writes after `<|im_start|>system` followed by a newline
/// (a real one or an escaped `\n`), when it is a plain literal rather than an expression.
fn default_system(source: &str) -> Option<String> {
    let mut rest = source;
    while let Some(at) = rest.find("<|im_start|>system") {
        rest = &rest[at + "<|im_start|>system".len()..];
        let Some(body) = rest.strip_prefix("\\n").or_else(|| rest.strip_prefix('\n')) else {
            continue;
        };
        let Some(end) = body.find(END) else { continue };
        let text = &body[..end];
        if !text.is_empty() && !text.contains(['\'', '"', '{', '}', '+']) {
            return Some(text.to_string());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMOLLM: &str = "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";
    const QWEN: &str = r"{%- if tools %}{{- '<|im_start|>system\n' }}{%- if messages[0]['role'] == 'system' %}{{- messages[0]['content'] }}{%- else %}{{- 'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.' }}{%- endif %}{%- else %}{%- if messages[0]['role'] == 'system' %}{{- '<|im_start|>system\n' + messages[0]['content'] + '<|im_end|>\n' }}{%- else %}{{- '<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n' }}{%- endif %}{%- endif %}";

    #[test]
    fn default_system_prompts_are_read_from_both_templates() {
        assert_eq!(
            ChatMl::from_template(SMOLLM)
                .unwrap()
                .default_system
                .as_deref(),
            Some("You are a helpful AI assistant named SmolLM, trained by Hugging Face")
        );
        assert_eq!(
            ChatMl::from_template(QWEN)
                .unwrap()
                .default_system
                .as_deref(),
            Some("You are Qwen, created by Alibaba Cloud. You are a helpful assistant.")
        );
        assert!(ChatMl::from_template("{{ bos_token }}[INST] {{ m }} [/INST]").is_err());
        // An occurrence not followed by a newline does not end the search.
        let later =
            "{{ '<|im_start|>system' + sep }}{{ '<|im_start|>system\nBe kind.<|im_end|>' }}";
        assert_eq!(
            ChatMl::from_template(later)
                .unwrap()
                .default_system
                .as_deref(),
            Some("Be kind.")
        );
    }

    #[test]
    fn rendering_matches_the_chatml_layout() {
        let t = ChatMl::from_template(SMOLLM).unwrap();
        let with_system = t.render(&[Message::system("Be brief."), Message::user("Hi")]);
        assert_eq!(
            with_system,
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
        );
        let without = t.render(&[Message::user("Hi")]);
        assert!(
            without.starts_with("<|im_start|>system\nYou are a helpful AI assistant named SmolLM")
        );
        let tool = t.render(&[Message::user("Hi"), Message::tool("c1", "42")]);
        assert!(
            tool.contains("<|im_start|>user\n<tool_response>\n42\n</tool_response><|im_end|>\n")
        );
    }
}
