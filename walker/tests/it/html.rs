//! The HTML trace in a real browser: headless Chromium loads the page of a scripted two-hop
//! walk, runs its script, and takes a screenshot. Runs where a Chromium is installed
//! (`chromium`, `chromium-browser`, `google-chrome`, or the path in `WALKRAG_CHROMIUM`);
//! elsewhere it says so and checks nothing.

use std::path::PathBuf;
use std::process::Command;

use walkrag_walker::graph::Graph;
use walkrag_walker::html;
use walkrag_walker::testing::{block_on, chunk_of, env, test_index, ScriptedChatModel, Turn};
use walkrag_walker::{Strategy, Walk};

fn chromium() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("WALKRAG_CHROMIUM") {
        return Some(path.into());
    }
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find(|name| {
            Command::new(name)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
        .map(PathBuf::from)
}

#[test]
fn the_html_trace_renders_in_headless_chromium() {
    let Some(browser) = chromium() else {
        eprintln!("no Chromium found: the HTML trace was not rendered (set WALKRAG_CHROMIUM)");
        return;
    };
    let t = test_index();
    let (d1, d2) = (chunk_of(&t.index, "d1"), chunk_of(&t.index, "d2"));
    let model = ScriptedChatModel::new(vec![
        Turn::Reply(format!(
            "{{\"fact\": \"The mayor of Velmora is Ilsa Brandt.\", \"relevance\": \"names the mayor\", \"source\": \"{d1}\"}}\n\
             {{\"nextSource\": \"Ilsa Brandt\", \"expectedInfo\": \"where she was born\"}}"
        )),
        Turn::Reply(format!(
            "{{\"fact\": \"Ilsa Brandt was born in Kessel.\", \"relevance\": \"birthplace\", \"source\": \"{d2}\"}}\n{{\"sufficient\": true}}"
        )),
        Turn::Reply(format!("Answer: Kessel\nSources: [{d2}], [{d1}]")),
    ]);
    let walk = Walk {
        k: 3,
        ..Walk::default()
    };
    let answer = block_on(walk.run(
        "Velmora mayor: which town or village was the mayor born in?",
        env(&t.index, &model),
        &mut |_| {},
    ))
    .unwrap();
    let graph = Graph::of(&answer, &t.index);
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("trace.html");
    std::fs::write(&page, html::render(&answer, &graph)).unwrap();
    let url = format!("file://{}", page.display());
    let headless = |extra: &[&str]| {
        Command::new(&browser)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
            ])
            .args(extra)
            .arg(&url)
            .output()
            .expect("chromium runs")
    };

    // The DOM after the page's script ran holds every node of the graph.
    let dom = headless(&["--dump-dom"]);
    assert!(
        dom.status.success(),
        "{}",
        String::from_utf8_lossy(&dom.stderr)
    );
    let dom = String::from_utf8_lossy(&dom.stdout);
    for node in &graph.nodes {
        assert!(
            dom.contains(&format!("data-id=\"{}\"", node.id)),
            "{}",
            node.id
        );
    }

    let shot = dir.path().join("trace.png");
    let out = headless(&[
        &format!("--screenshot={}", shot.display()),
        "--window-size=1800,640",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let png = std::fs::read(&shot).expect("a screenshot was written");
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    let width = u32::from_be_bytes(png[16..20].try_into().unwrap());
    assert_eq!(width, 1800);
    assert!(
        png.len() > 20_000,
        "the page is not blank ({} bytes)",
        png.len()
    );
    if let Some(keep) = std::env::var_os("WALKRAG_KEEP_SCREENSHOT") {
        std::fs::copy(&shot, keep).unwrap();
    }
}
