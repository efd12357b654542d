//! `report.md` and `chart.svg`: strategies side by side, for people.

use std::fmt::Write;

use walkrag_walker::html::escape;

use crate::results::RECALL_KS;
use crate::summary::{StrategySummary, Summary};

/// What the report says about the run besides the figures.
pub struct RunInfo<'a> {
    pub model: &'a str,
    pub embedder: &'a str,
    /// The command that produced the run, to reproduce it.
    pub command: &'a str,
    /// `YYYY-MM-DD`.
    pub date: &'a str,
}

/// Colours of the strategies in the chart, in order.
const PALETTE: [&str; 6] = [
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf",
];

/// The Markdown report: one column per strategy.
pub fn markdown(summary: &Summary, order: &[&str], info: &RunInfo<'_>) -> String {
    let columns: Vec<(&str, &StrategySummary)> = order
        .iter()
        .filter_map(|&name| summary.strategies.get(name).map(|s| (name, s)))
        .collect();
    let mut md = String::new();
    let _ = writeln!(md, "# walkrag eval: {}\n", summary.dataset);
    let _ = writeln!(
        md,
        "{} questions · model `{}` · embedder `{}` · {}\n",
        summary.questions, info.model, info.embedder, info.date
    );
    let _ = writeln!(md, "```\n{}\n```\n", info.command);
    let _ = write!(md, "| |");
    for (name, _) in &columns {
        let _ = write!(md, " {name} |");
    }
    let _ = write!(md, "\n|---|");
    for _ in &columns {
        let _ = write!(md, "---:|");
    }
    md.push('\n');
    let mut row = |label: &str, cell: &dyn Fn(&StrategySummary) -> String| {
        let _ = write!(md, "| {label} |");
        for (_, s) in &columns {
            let _ = write!(md, " {} |", cell(s));
        }
        md.push('\n');
    };
    row("questions answered", &|s| {
        if s.errors > 0 {
            format!("{} ({} failed)", s.answered, s.errors)
        } else {
            s.answered.to_string()
        }
    });
    for (i, k) in RECALL_KS.iter().enumerate() {
        row(&format!("recall@{k}"), &|s| {
            format!("{:.3}", s.scores.recall()[i])
        });
    }
    row("answer EM", &|s| format!("{:.3}", s.scores.em));
    row("answer F1", &|s| format!("{:.3}", s.scores.f1));
    if columns.iter().any(|(_, s)| s.scores.in_context.is_some()) {
        row("gold in context", &|s| opt(s.scores.in_context));
        row("right (gold in answer)", &|s| opt(s.scores.right));
        row("reader efficiency", &|s| opt(s.reader_efficiency));
    }
    let kinds: std::collections::BTreeSet<&String> =
        columns.iter().flat_map(|(_, s)| s.by_kind.keys()).collect();
    if kinds.len() > 1 {
        for kind in kinds {
            row(
                &format!("right, {kind} questions"),
                &|s| match s.by_kind.get(kind) {
                    Some(k) => format!("{} ({})", opt(k.right), k.questions),
                    None => "–".into(),
                },
            );
        }
    }
    if columns.iter().any(|(_, s)| s.scores.contains.is_some()) {
        row("contains", &|s| opt(s.scores.contains));
    }
    if columns.iter().any(|(_, s)| s.scores.abstain.is_some()) {
        row("abstain (absent questions)", &|s| opt(s.scores.abstain));
    }
    row("found", &|s| format!("{:.0}%", s.found * 100.0));
    row("LLM calls / question", &|s| format!("{:.2}", s.llm_calls));
    row("prompt tokens / question", &|s| {
        format!("{:.0}", s.prompt_tokens)
    });
    row("completion tokens / question", &|s| {
        format!("{:.0}", s.completion_tokens)
    });
    row("seconds / question", &|s| format!("{:.1}", s.seconds));
    row("cycles / question", &|s| format!("{:.2}", s.cycles));
    row("terminations", &|s| {
        s.terminations
            .iter()
            .map(|(reason, n)| format!("{reason} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    });
    if columns
        .iter()
        .any(|(_, s)| !s.supporting_found_by.is_empty())
    {
        row("supporting documents found first by", &|s| {
            s.supporting_found_by
                .iter()
                .map(|(origin, n)| format!("{} {n}", origin.as_str()))
                .collect::<Vec<_>>()
                .join(", ")
        });
    }
    let _ = writeln!(
        md,
        "\nRecall@k: share of supporting documents (or sections) among the first k distinct \
         ones of the strategy's ranking. EM/F1: SQuAD normalisation, best over the answer and \
         its aliases. Gold in context: the passages the answer step was shown hold the gold \
         answer or an alias (a yes/no gold: every supporting document or section was shown); \
         right: the answer holds it; reader efficiency: right among the questions with the \
         gold in context. Costs are means per question. Found first by: the search that first \
         returned a read chunk of each supporting document (the question's own, a model's \
         descriptor or pick, a hint, the walk's fallback, a link, a name written in a passage, \
         memory).\n"
    );
    md.push_str("![recall@k and cost](chart.svg)\n");
    md
}

fn opt(value: Option<f64>) -> String {
    value.map_or_else(|| "–".into(), |v| format!("{v:.3}"))
}

/// Two panels: recall@k curves per strategy, and seconds per question against recall@5.
pub fn chart_svg(summary: &Summary, order: &[&str]) -> String {
    let series: Vec<(&str, &StrategySummary, &str)> = order
        .iter()
        .filter_map(|&name| summary.strategies.get(name).map(|s| (name, s)))
        .zip(PALETTE.iter().cycle())
        .map(|((name, s), colour)| (name, s, *colour))
        .collect();
    let (w, h) = (760.0, 330.0);
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(svg, r#"<rect width="{w}" height="{h}" fill="white"/>"#);

    // Left: recall@k.
    let left = Panel::new(60.0, 40.0, 280.0, 220.0);
    let kmin = RECALL_KS[0] as f64;
    let kmax = RECALL_KS[RECALL_KS.len() - 1] as f64;
    left.frame(
        &mut svg,
        &format!("recall@k ({})", escape(&summary.dataset)),
    );
    for k in RECALL_KS {
        let x = left.x((k as f64 - kmin) / (kmax - kmin));
        let _ = writeln!(
            svg,
            r#"<text x="{x:.1}" y="{:.1}" text-anchor="middle">{k}</text>"#,
            left.bottom() + 16.0
        );
    }
    let _ = writeln!(
        svg,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">k</text>"#,
        left.x(0.5),
        left.bottom() + 32.0
    );
    for (name, s, colour) in &series {
        let points: Vec<(f64, f64)> = RECALL_KS
            .iter()
            .zip(s.scores.recall())
            .map(|(&k, r)| (left.x((k as f64 - kmin) / (kmax - kmin)), left.y(r)))
            .collect();
        let path: Vec<String> = points
            .iter()
            .map(|(x, y)| format!("{x:.1},{y:.1}"))
            .collect();
        let _ = writeln!(
            svg,
            r#"<polyline points="{}" fill="none" stroke="{colour}" stroke-width="2"><title>{}</title></polyline>"#,
            path.join(" "),
            escape(name)
        );
        for (x, y) in points {
            let _ = writeln!(
                svg,
                r#"<circle cx="{x:.1}" cy="{y:.1}" r="3.5" fill="{colour}"/>"#
            );
        }
    }

    // Right: cost against recall@5.
    let right = Panel::new(440.0, 40.0, 280.0, 220.0);
    right.frame(&mut svg, "seconds per question vs recall@5");
    let max_seconds = series
        .iter()
        .map(|(_, s, _)| s.seconds)
        .fold(0.0, f64::max)
        .max(1e-3)
        * 1.2;
    for i in 0..=4 {
        let v = max_seconds * i as f64 / 4.0;
        let _ = writeln!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            right.x(i as f64 / 4.0),
            right.bottom() + 16.0,
            short(v)
        );
    }
    let _ = writeln!(
        svg,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">seconds per question</text>"#,
        right.x(0.5),
        right.bottom() + 32.0
    );
    for (name, s, colour) in &series {
        let (x, y) = (right.x(s.seconds / max_seconds), right.y(s.scores.recall_5));
        let _ = writeln!(
            svg,
            r#"<circle cx="{x:.1}" cy="{y:.1}" r="5" fill="{colour}"><title>{}: {:.1} s, recall@5 {:.3}, {:.0} tokens</title></circle>"#,
            escape(name),
            s.seconds,
            s.scores.recall_5,
            s.prompt_tokens + s.completion_tokens
        );
        let _ = writeln!(
            svg,
            r#"<text x="{:.1}" y="{:.1}">{}</text>"#,
            x + 8.0,
            y + 4.0,
            escape(name)
        );
    }

    // Legend.
    for (i, (name, _, colour)) in series.iter().enumerate() {
        let x = 60.0 + 140.0 * i as f64;
        let y = h - 14.0;
        let _ = writeln!(
            svg,
            r#"<rect x="{x}" y="{:.1}" width="14" height="4" fill="{colour}"/><text x="{:.1}" y="{y:.1}">{}</text>"#,
            y - 5.0,
            x + 20.0,
            escape(name)
        );
    }
    svg.push_str("</svg>\n");
    svg
}

/// A plot area with y from 0 (bottom) to 1 (top).
struct Panel {
    x0: f64,
    y0: f64,
    w: f64,
    h: f64,
}

impl Panel {
    fn new(x0: f64, y0: f64, w: f64, h: f64) -> Self {
        Self { x0, y0, w, h }
    }
    fn x(&self, fraction: f64) -> f64 {
        self.x0 + self.w * fraction.clamp(0.0, 1.0)
    }
    fn y(&self, value: f64) -> f64 {
        self.y0 + self.h * (1.0 - value.clamp(0.0, 1.0))
    }
    fn bottom(&self) -> f64 {
        self.y0 + self.h
    }
    /// Title, axes and the 0–1 grid of the y axis.
    fn frame(&self, svg: &mut String, title: &str) {
        let _ = writeln!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" font-weight="bold">{title}</text>"#,
            self.x0,
            self.y0 - 14.0
        );
        for i in 0..=4 {
            let v = i as f64 / 4.0;
            let y = self.y(v);
            let _ = writeln!(
                svg,
                r##"<line x1="{:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" text-anchor="end">{v:.2}</text>"##,
                self.x0,
                self.x0 + self.w,
                self.x0 - 6.0,
                y + 4.0
            );
        }
        let _ = writeln!(
            svg,
            r##"<rect x="{}" y="{}" width="{}" height="{}" fill="none" stroke="#888"/>"##,
            self.x0, self.y0, self.w, self.h
        );
    }
}

fn short(v: f64) -> String {
    if v >= 10.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// Today's date (UTC) as `YYYY-MM-DD`.
pub fn today() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (y, m, d) = civil_from_days((secs / 86_400) as i64);
    format!("{y:04}-{m:02}-{d:02}")
}

/// The proleptic Gregorian date of a day count since 1970-01-01.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(20_415), (2025, 11, 23));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    }
}
