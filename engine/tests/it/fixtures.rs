//! Real input files for the index tests: a nested Markdown report, a generated PDF, a JSON
//! Lines corpus, and one file of each kind of bad input.

use std::path::Path;
use std::sync::OnceLock;

use lopdf::content::{Content, Operation};
use lopdf::{dictionary, Object, Stream};
use walkrag_embed::SentenceEmbedder;

pub fn embedder() -> &'static SentenceEmbedder {
    static MODEL: OnceLock<SentenceEmbedder> = OnceLock::new();
    MODEL.get_or_init(|| {
        SentenceEmbedder::load("minilm")
            .expect("minilm is installed (scripts/fetch-models.sh minilm)")
    })
}

pub const REPORT: &str = "\
# Northwind Annual Report 2025

Northwind is a maker of wind turbines for small farms and villages.

## Results

The year closed with record deliveries.

### Revenue

Revenue rose 12% to 48 million euros, driven by the new K7 turbine.

### Costs

Steel prices fell, so material costs dropped by 5%.

## Outlook

Management expects deliveries to grow again in 2026, with a second plant opening in Porto.

## Board

The board met eleven times. The chair is Ana Ruiz.
";

/// A long section that needs several chunks: numbered sentences about gardening.
pub fn long_markdown() -> String {
    let mut text = String::from("# Garden Almanac\n\n## Planting calendar\n\n");
    for i in 0..120 {
        text.push_str(&format!(
            "In week {i} the gardener sows row {i} with beans, waters the seedlings and notes the soil temperature. "
        ));
        if i % 10 == 9 {
            text.push_str("\n\n");
        }
    }
    text.push_str("\n## Tools\n\nA spade, a rake and a watering can.\n");
    text
}

pub const CORPUS: &str = r#"{"id": "p1", "title": "Lake Bled", "text": "Lake Bled is a glacial lake in the Julian Alps in Slovenia, with a church on a small island.", "year": 1900}
{"id": "p2", "title": "Ljubljana", "text": "Ljubljana is the capital and largest city of Slovenia, crossed by the Ljubljanica river.", "year": 1144}
{"id": "p3", "title": "Mount Triglav", "text": "Triglav is the highest mountain of Slovenia and appears on its coat of arms.", "year": 1778}
"#;

/// Pages of the generated PDF.
pub const PDF_PAGES: [&str; 3] = [
    "Field notes on honey bees.",
    "The queen lays up to two thousand eggs a day in spring.",
    "Worker bees perform a waggle dance to point to flowers.",
];

/// A PDF with one line of text per page, written with lopdf.
pub fn pdf_bytes(pages: &[&str]) -> Vec<u8> {
    let mut doc = lopdf::Document::with_version("1.5");
    let pages_id = doc.new_object_id();
    let font_id = doc.add_object(dictionary! {
        "Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Helvetica",
    });
    let resources_id = doc.add_object(dictionary! { "Font" => dictionary! { "F1" => font_id } });
    let mut kids: Vec<Object> = Vec::new();
    for text in pages {
        let content = Content {
            operations: vec![
                Operation::new("BT", vec![]),
                Operation::new("Tf", vec!["F1".into(), 12.into()]),
                Operation::new("Td", vec![72.into(), 720.into()]),
                Operation::new("Tj", vec![Object::string_literal(*text)]),
                Operation::new("ET", vec![]),
            ],
        };
        let content_id = doc.add_object(Stream::new(dictionary! {}, content.encode().unwrap()));
        let page_id = doc.add_object(dictionary! {
            "Type" => "Page", "Parent" => pages_id, "Contents" => content_id,
        });
        kids.push(page_id.into());
    }
    let count = kids.len() as i64;
    doc.objects.insert(
        pages_id,
        Object::Dictionary(dictionary! {
            "Type" => "Pages", "Kids" => kids, "Count" => count,
            "Resources" => resources_id,
            "MediaBox" => vec![0.into(), 0.into(), 595.into(), 842.into()],
        }),
    );
    let catalog_id = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
    doc.trailer.set("Root", catalog_id);
    let mut out = Vec::new();
    doc.save_to(&mut out).unwrap();
    out
}

pub fn write(dir: &Path, name: &str, bytes: impl AsRef<[u8]>) {
    let path = dir.join(name);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
}

/// The good documents: report.md, notes/almanac.md, bees.pdf, corpus.jsonl (3 records),
/// site/llms.txt and readme.txt.
pub fn good_tree(dir: &Path) {
    write(dir, "report.md", REPORT);
    write(dir, "notes/almanac.md", long_markdown());
    write(dir, "bees.pdf", pdf_bytes(&PDF_PAGES));
    write(dir, "corpus.jsonl", CORPUS);
    write(
        dir,
        "site/llms.txt",
        "# Acme API\n\n> Acme sells anvils.\n\n## Docs\n\n- [Quickstart](https://acme.test/q): ordering your first anvil\n",
    );
    write(
        dir,
        "readme.txt",
        "Plain notes: the spare key is under the blue flower pot.\n",
    );
}

/// One file per kind of bad input, plus ignored and hidden files that must not be read.
pub fn bad_tree(dir: &Path) {
    write(dir, "bad/binary.md", b"# Title\n\0\0\0\x01\x02binary");
    write(dir, "bad/empty.txt", "  \n\n");
    write(dir, "bad/latin1.md", b"# Caf\xe9\nna\xefve text\n");
    write(
        dir,
        "bad/broken.pdf",
        b"%PDF-1.4\nthis is not really a pdf\n%%EOF\n",
    );
    write(dir, "bad/notpdf.pdf", b"hello, I am text with a .pdf name");
    write(
        dir,
        "bad/mixed.jsonl",
        "{\"id\": \"m1\", \"title\": \"Good\", \"text\": \"A good record about owls.\"}\n{not json\n{\"id\": \"m2\", \"title\": \"No text\"}\n{\"id\": \"m1\", \"text\": \"duplicate\"}\n",
    );
    #[cfg(unix)]
    std::os::unix::fs::symlink(dir.join("bad/nowhere.md"), dir.join("bad/dangling.md")).unwrap();
    write(dir, ".gitignore", "ignored/\n*.skip.md\n");
    write(dir, "ignored/secret.md", "# Secret\nNever index me.\n");
    write(dir, "draft.skip.md", "# Draft\nNever index me either.\n");
    write(dir, ".hidden/notes.md", "# Hidden\nNor me.\n");
    write(dir, "image.png", b"\x89PNG not indexed");
}
