#!/usr/bin/env python3
"""Joins NIST SP 800-63-3's Markdown sources into one plain Markdown file per volume.

Usage: convert.py CHECKOUT OUTDIR, where CHECKOUT is a clone of the public repository
usnistgov/800-63-3 (the commit used is in demo/README.md). Each volume's top file lists its
parts as Jekyll `include_relative` lines; they are joined in that order. Site markup that a
reader does not see (anchors, `div` wrappers, Liquid tags, images) is dropped, entities such as
`&mdash;` become their characters, and links keep only their text, so what is left is the publication's own prose, headings and tables.
"""
import html
import pathlib
import re
import sys

# Each volume's file name and title. The title pages' own headings become plain lines, so
# that the sections sit directly under this one title instead of under two cover headings.
VOLUMES = {
    "sp800-63-3": ("63-3", "Digital Identity Guidelines"),
    "sp800-63a": ("63A", "Enrollment and Identity Proofing"),
    "sp800-63b": ("63B", "Authentication and Lifecycle Management"),
    "sp800-63c": ("63C", "Federation and Assertions"),
}
INCLUDE = re.compile(r"{%\s*include_relative\s+(\S+)\s*%}")
ANCHOR = re.compile(r"<a\s+name=\"[^\"]*\"\s*>\s*</a>\s*", re.I)
LINK = re.compile(r"(?<!!)\[([^\]]+)\]\([^)]*\)")
DROP = re.compile(r"^\s*(</?div[^>]*>|{{.*}}|{%.*%}|!\[[^\]]*\]\([^)]*\)\s*)\s*$")
AUTOLINK = re.compile(r"<(https?://[^>\s]+)>")
BREAK = re.compile(r"<br\s*/?>|</t[dh]>", re.I)
ROW_END = re.compile(r"</(tr|li|table|ol|ul|p)>", re.I)
TAG = re.compile(r"</?[a-zA-Z][^>]*>")


def html_to_text(text: str) -> str:
    """HTML tables and lists become plain lines: one line per row or item, cells apart."""
    text = AUTOLINK.sub(r"\1", text)
    text = BREAK.sub(" ", text)
    text = ROW_END.sub("\n", text)
    return html.unescape(TAG.sub("", text))


def cover(text: str) -> str:
    """The title pages' headings made plain lines; the front matter from "Authority" on
    (abstract, keywords, executive summary) kept as sections under the volume's title."""
    at = re.search(r"^###\s+Authority", text, flags=re.M)
    title_pages, front = (text[: at.start()], text[at.start() :]) if at else (text, "")
    front = re.sub(r"^###\s", "## ", front, flags=re.M)
    return re.sub(r"^#+\s*", "", title_pages, flags=re.M) + front


def clean(text: str) -> str:
    out = []
    for line in html_to_text(text).splitlines():
        if DROP.match(line):
            continue
        line = ANCHOR.sub("", line)
        line = LINK.sub(r"\1", line)
        if line.startswith((" ", "\t")) and not line.lstrip().startswith(("*", "-", "|")) and not re.match(r"\s*\d+\.", line):
            line = " ".join(line.split())  # what was an HTML cell or item, not a nested list
        out.append(line.rstrip())
    # At most one blank line in a row.
    return re.sub(r"\n{3,}", "\n\n", "\n".join(out)).strip() + "\n"


def main() -> None:
    checkout, outdir = map(pathlib.Path, sys.argv[1:3])
    outdir.mkdir(parents=True, exist_ok=True)
    for stem, (name, title) in VOLUMES.items():
        top = (checkout / f"{stem}.md").read_text(encoding="utf-8")
        paths = INCLUDE.findall(top)
        parts = [(checkout / p).read_text(encoding="utf-8") for p in paths]
        parts = [cover(part) if path.endswith("cover.md") else part for path, part in zip(paths, parts)]
        body = f"# NIST SP 800-{name}: {title}\n\n" + clean("\n\n".join(parts))
        target = outdir / f"sp800-{name.lower()}.md"
        target.write_text(body, encoding="utf-8")
        print(f"{target}: {len(body):,} bytes from {len(parts)} parts")


if __name__ == "__main__":
    main()
