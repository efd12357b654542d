//! The HTML trace: one self-contained file (no network) showing the walk as a graph —
//! question → chunks → facts → descriptors → chunks → answer — with each node's text on
//! click, and every LLM call's prompt and completion below.

use std::collections::HashMap;
use std::fmt::Write;

use crate::answer::Answer;
use crate::trace::graph::{EdgeKind, Graph, NodeKind};
use crate::trace::Step;

const NODE_W: f64 = 200.0;
const NODE_H: f64 = 56.0;
const COL_GAP: f64 = 56.0;
const ROW_GAP: f64 = 18.0;
const MARGIN: f64 = 20.0;

/// The page for `answer`, whose graph is `graph`.
pub fn render(answer: &Answer, graph: &Graph) -> String {
    // Columns: the question, then per cycle its chunks and its facts and descriptors, then
    // the answer.
    let column = |kind: NodeKind, cycle: usize| match kind {
        NodeKind::Question => 0,
        NodeKind::Chunk => 2 * cycle - 1,
        NodeKind::Fact | NodeKind::Descriptor => 2 * cycle,
        NodeKind::Answer => 2 * answer.cycles.max(1) + 1,
    };
    let mut rows: HashMap<usize, usize> = HashMap::new();
    let mut at: HashMap<&str, (f64, f64)> = HashMap::new();
    for node in &graph.nodes {
        let col = column(node.kind, node.cycle.max(1));
        let row = rows.entry(col).or_default();
        let x = MARGIN + col as f64 * (NODE_W + COL_GAP);
        let y = MARGIN + *row as f64 * (NODE_H + ROW_GAP);
        *row += 1;
        at.insert(&node.id, (x, y));
    }
    let columns = rows.keys().max().map_or(1, |m| m + 1);
    let tallest = rows.values().max().copied().unwrap_or(1);
    let width = 2.0 * MARGIN + columns as f64 * (NODE_W + COL_GAP);
    let height = 2.0 * MARGIN + tallest as f64 * (NODE_H + ROW_GAP);

    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" font-family="sans-serif" font-size="12">"#
    );
    for edge in &graph.edges {
        let (Some(&(x1, y1)), Some(&(x2, y2))) =
            (at.get(edge.from.as_str()), at.get(edge.to.as_str()))
        else {
            continue;
        };
        // Across columns: right side to left side. Within a column (a fact leading to a
        // descriptor of the same cycle): bottom to top.
        let d = if x2 > x1 {
            let (x1, y1, y2) = (x1 + NODE_W, y1 + NODE_H / 2.0, y2 + NODE_H / 2.0);
            let mid = (x1 + x2) / 2.0;
            format!("M{x1:.1},{y1:.1} C{mid:.1},{y1:.1} {mid:.1},{y2:.1} {x2:.1},{y2:.1}")
        } else {
            let (x, y1, y2) = (x1 + NODE_W / 2.0, y1 + NODE_H, y2);
            let x2 = x2 + NODE_W / 2.0;
            format!("M{x:.1},{y1:.1} L{x2:.1},{y2:.1}")
        };
        let colour = match edge.kind {
            EdgeKind::Retrieved | EdgeKind::Found => "#9ab",
            EdgeKind::Yielded => "#6a6",
            EdgeKind::Asked => "#d90",
            EdgeKind::Linked => "#48c",
            EdgeKind::Supports => "#a6c",
        };
        let _ = writeln!(
            svg,
            r#"<path d="{d}" fill="none" stroke="{colour}" stroke-width="1.5"/>"#
        );
    }
    for node in &graph.nodes {
        let (x, y) = at[node.id.as_str()];
        let (fill, stroke) = match (node.kind, node.trusted) {
            (NodeKind::Question, _) => ("#eee", "#333"),
            (NodeKind::Chunk, _) => ("#e8f1fa", "#1f77b4"),
            (NodeKind::Fact, Some(false)) => ("#f4f4f4", "#999"),
            (NodeKind::Fact, _) => ("#e9f6e9", "#2ca02c"),
            (NodeKind::Descriptor, _) => ("#fdf1e0", "#e08a00"),
            (NodeKind::Answer, _) => ("#f3e9f8", "#8e44ad"),
        };
        let dash = if node.trusted == Some(false) {
            r#" stroke-dasharray="4 3""#
        } else {
            ""
        };
        let _ = writeln!(
            svg,
            r#"<g class="node" data-id="{}"><rect x="{x:.1}" y="{y:.1}" width="{NODE_W}" height="{NODE_H}" rx="6" fill="{fill}" stroke="{stroke}"{dash}/>"#,
            escape(&node.id)
        );
        let kind = match node.kind {
            NodeKind::Question => "question",
            NodeKind::Chunk => "chunk",
            NodeKind::Fact if node.trusted == Some(false) => "fact (unverified)",
            NodeKind::Fact => "fact",
            NodeKind::Descriptor => "look for",
            NodeKind::Answer => "answer",
        };
        let _ = writeln!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" font-size="10" fill="{stroke}">{kind}</text>"#,
            x + 8.0,
            y + 14.0
        );
        for (i, line) in wrap(&node.label, 31, 2).iter().enumerate() {
            let _ = writeln!(
                svg,
                r#"<text x="{:.1}" y="{:.1}">{}</text>"#,
                x + 8.0,
                y + 30.0 + 14.0 * i as f64,
                escape(line)
            );
        }
        svg.push_str("</g>\n");
    }
    svg.push_str("</svg>\n");

    let texts: HashMap<&str, &str> = graph
        .nodes
        .iter()
        .map(|n| (n.id.as_str(), n.text.as_str()))
        .collect();
    let data = serde_json::to_string(&texts)
        .expect("texts serialize")
        .replace("</", "<\\/");

    let mut calls = String::new();
    for step in &answer.trace.steps {
        match step {
            Step::Llm(call) => {
                let prompt: String = call
                    .messages
                    .iter()
                    .map(|m| format!("── {} ──\n{}\n", m.role.as_str(), m.content))
                    .collect();
                let _ = writeln!(
                calls,
                "<details><summary>cycle {} · {} · {} prompt + {} completion tokens · {:.1} s{}</summary><pre>{}</pre><h4>completion</h4><pre>{}</pre></details>",
                call.cycle,
                escape(&call.purpose),
                call.usage.prompt_tokens,
                call.usage.completion_tokens,
                call.ms as f64 / 1000.0,
                failed(call.error.as_deref()),
                escape(&prompt),
                escape(&call.completion)
            );
            }
            Step::Score(call) => {
                // One line per continuation weighed: its score, then what it continues (the
                // prompt's last line) and itself.
                let lines: String = call
                    .items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| {
                        let score = call.scores.get(i).map_or("-".into(), |s| format!("{s:.2}"));
                        let last = item
                            .messages
                            .last()
                            .and_then(|m| m.content.lines().last())
                            .unwrap_or_default();
                        format!("{score:>8}  {last} ⟶ {}\n", item.continuation)
                    })
                    .collect();
                let _ = writeln!(
                calls,
                "<details><summary>cycle {} · {} · {} continuations weighed · {} prompt tokens · {:.1} s{}</summary><pre>{}</pre></details>",
                call.cycle,
                escape(&call.purpose),
                call.items.len(),
                call.usage.prompt_tokens,
                call.ms as f64 / 1000.0,
                failed(call.error.as_deref()),
                escape(&lines)
            );
            }
            _ => {}
        }
    }
    let usage = answer.usage;
    format!(
        r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>walkrag trace: {title}</title>
<style>
body {{ font-family: sans-serif; margin: 0; color: #222; }}
header {{ padding: 12px 20px; background: #f6f6f6; border-bottom: 1px solid #ddd; }}
header h1 {{ font-size: 18px; margin: 0 0 6px; }}
main {{ display: flex; }}
#graph {{ flex: 1; overflow: auto; }}
#panel {{ width: 280px; padding: 12px 16px; border-left: 1px solid #ddd; white-space: pre-wrap; font-size: 13px; }}
.node {{ cursor: pointer; }}
.node.selected rect {{ stroke-width: 3; }}
section {{ padding: 12px 20px; }}
pre {{ white-space: pre-wrap; background: #fafafa; border: 1px solid #eee; padding: 8px; font-size: 12px; }}
summary {{ cursor: pointer; margin: 4px 0; }}
</style></head>
<body>
<header><h1>{title}</h1>
<div><b>Answer:</b> {answer}</div>
<div>{strategy} · {model} · {termination} after {cycles} cycle(s) · {calls} LLM calls · {prompt} prompt + {completion} completion tokens · {seconds:.1} s</div>
</header>
<main><div id="graph">{svg}</div><div id="panel">Click a node to read it.</div></main>
<section><h3>LLM calls</h3>
{llm_calls}</section>
<script id="texts" type="application/json">{data}</script>
<script>
const texts = JSON.parse(document.getElementById('texts').textContent);
const panel = document.getElementById('panel');
for (const g of document.querySelectorAll('.node')) {{
  g.addEventListener('click', () => {{
    for (const other of document.querySelectorAll('.node.selected')) other.classList.remove('selected');
    g.classList.add('selected');
    panel.textContent = texts[g.dataset.id] || '';
  }});
}}
</script>
</body></html>
"#,
        title = escape(&answer.trace.question),
        answer = escape(&answer.answer),
        strategy = escape(&answer.trace.strategy),
        model = escape(&answer.trace.model),
        termination = answer.termination,
        cycles = answer.cycles,
        calls = usage.llm_calls,
        prompt = usage.prompt_tokens,
        completion = usage.completion_tokens,
        seconds = answer.elapsed_ms as f64 / 1000.0,
        llm_calls = calls,
    )
}

/// Up to `lines` lines of at most `width` characters, the last one ending in "…" if cut.
fn wrap(text: &str, width: usize, lines: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut line = String::new();
    let words = text.split_whitespace();
    for word in words {
        let fits =
            line.chars().count() + word.chars().count() + usize::from(!line.is_empty()) <= width;
        if fits {
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
            continue;
        }
        if !line.is_empty() {
            out.push(std::mem::take(&mut line));
        }
        if out.len() == lines {
            break;
        }
        line = word.chars().take(width).collect();
    }
    if !line.is_empty() && out.len() < lines {
        out.push(line);
    }
    let shown: usize = out.iter().map(|l| l.split_whitespace().count()).sum();
    if shown < text.split_whitespace().count() {
        if let Some(last) = out.last_mut() {
            let keep: String = last.chars().take(width.saturating_sub(1)).collect();
            *last = format!("{keep}…");
        }
    }
    out
}

/// A call summary's ending for the error a call failed with, if any.
fn failed(error: Option<&str>) -> String {
    error
        .map(|e| format!(" · {}", escape(e)))
        .unwrap_or_default()
}

/// `text` safe inside HTML or SVG text and attribute values.
pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::wrap;

    #[test]
    fn wraps_and_marks_cuts() {
        assert_eq!(wrap("a short label", 36, 2), ["a short label"]);
        assert_eq!(wrap("one two three four", 8, 2), ["one two", "three…"]);
        assert_eq!(wrap("", 8, 2), Vec::<String>::new());
    }
}
