//! Every relative link of the docs leads somewhere: the file exists (relative to the page
//! that links it), and an `#anchor` (on the same page or another) is the anchor of one of
//! that page's headings, by mdBook's rules (`xtask::markdown`). External `http(s)` links are
//! not followed.
//!
//! The pages: the Markdown files at the repository's root (README.md, CHANGELOG.md, ...) and
//! at each crate's root, and everything under `docs/` except the built book (`docs/book`).
//! A page of the book (`docs/src/`) may link only inside the book, since the built book holds
//! nothing else: a file of the repository is linked by its URL.
#![expect(clippy::unwrap_used, reason = "tests fail loudly")]

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};

use xtask::markdown::{heading_ids, links};

/// The book's sources, from the repository's root.
const BOOK_SRC: &str = "docs/src";
/// The built book, from the repository's root: not checked.
const BOOK_OUT: &str = "docs/book";

/// The `.md` files in `dir` (and below it when `recursive`), skipping `skip`.
fn markdown_files(dir: &Path, recursive: bool, skip: &Path, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries {
        let path = entry.unwrap().path();
        if path == skip {
            continue;
        }
        if path.is_dir() {
            if recursive {
                markdown_files(&path, true, skip, found);
            }
        } else if path.extension().is_some_and(|e| e == "md") {
            found.push(path);
        }
    }
}

/// The pages checked under `root`, sorted.
fn pages(root: &Path) -> Vec<PathBuf> {
    let skip = root.join(BOOK_OUT);
    let mut found = Vec::new();
    markdown_files(root, false, &skip, &mut found);
    markdown_files(&root.join("docs"), true, &skip, &mut found);
    for krate in std::fs::read_dir(root.join("crates")).into_iter().flatten() {
        markdown_files(&krate.unwrap().path(), false, &skip, &mut found);
    }
    found.sort();
    found
}

/// `path` with `.` and `..` resolved lexically.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// `%20` and the like decoded.
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
        match (bytes[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Whether `target` names a scheme (`https:`, `mailto:`): not a file of the repository.
fn is_external(target: &str) -> bool {
    let end = target.find(['/', '#', '?']).unwrap_or(target.len());
    target[..end].contains(':')
}

/// The broken links of `pages` under `root`, one line each: `page:line: target: why`.
fn broken_links(root: &Path, pages: &[PathBuf]) -> Vec<String> {
    let root = normalize(root);
    let book = root.join(BOOK_SRC);
    let mut anchors: HashMap<PathBuf, Vec<String>> = HashMap::new();
    let mut broken = Vec::new();
    for page in pages {
        let page = normalize(page);
        let text = std::fs::read_to_string(&page).unwrap();
        let shown = page.strip_prefix(&root).unwrap_or(&page).display().to_string();
        for link in links(&text) {
            if is_external(&link.target) {
                continue;
            }
            let mut report = |why: String| broken.push(format!("{shown}:{}: {}: {why}", link.line, link.target));
            let (path, anchor) = match link.target.split_once('#') {
                Some((path, anchor)) => (percent_decode(path), Some(anchor)),
                None => (percent_decode(&link.target), None),
            };
            let path = path.split('?').next().unwrap_or_default().to_owned();
            if path.starts_with('/') {
                report("an absolute path: write it relative to the page".to_owned());
                continue;
            }
            let target = if path.is_empty() { page.clone() } else { normalize(&page.parent().unwrap().join(&path)) };
            if !target.starts_with(&root) {
                report("leads out of the repository".to_owned());
                continue;
            }
            if page.starts_with(&book) && !target.starts_with(&book) {
                report(format!("leads out of the book ({BOOK_SRC}), which the built book does not hold: link its URL"));
                continue;
            }
            if !target.exists() {
                report(format!("{} does not exist", target.strip_prefix(&root).unwrap_or(&target).display()));
                continue;
            }
            let Some(anchor) = anchor.filter(|a| !a.is_empty()) else { continue };
            // Anchors into source files (GitHub's #L10) are not headings.
            if target.extension().is_none_or(|e| e != "md") {
                continue;
            }
            let ids = anchors
                .entry(target.clone())
                .or_insert_with(|| heading_ids(&std::fs::read_to_string(&target).unwrap_or_default()));
            let anchor = percent_decode(anchor);
            if !ids.contains(&anchor) {
                let near: Vec<&String> = ids.iter().filter(|id| id.contains(&anchor) || anchor.contains(*id)).collect();
                let hint = if near.is_empty() { String::new() } else { format!(" (near: {near:?})") };
                report(format!(
                    "no heading of {} has the anchor #{anchor}{hint}",
                    target.strip_prefix(&root).unwrap_or(&target).display()
                ));
            }
        }
    }
    broken
}

#[test]
fn every_relative_link_of_the_docs_resolves() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let pages = pages(&root);
    assert!(pages.iter().any(|p| p.ends_with("README.md")), "no README.md found under {}", root.display());
    let broken = broken_links(&root, &pages);
    assert!(broken.is_empty(), "broken links in the docs:\n{}", broken.join("\n"));
}

/// A fresh directory for a fixture, under the system temp dir.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("xtask-doc-links-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("docs/src/sub")).unwrap();
    dir
}

#[test]
fn broken_file_links_and_anchors_are_found() {
    let root = scratch("fixture");
    let write = |path: &str, text: &str| std::fs::write(root.join(path), text).unwrap();
    write(
        "README.md",
        "# Title\n\n## Same\n\n## Same\n\n[ok](docs/src/b.md) [dup](#same-1) [there](docs/src/b.md#part-two) \
         [web](https://example.com/x#y) [dir](docs/src/sub/) `[code](gone.md)`\n\
         [gone](missing.md) and [bad anchor](docs/src/b.md#nope)\n\n[third](#same-2)\n",
    );
    write("docs/src/b.md", "# B\n\n## Part two\n\n[up](../../README.md) [ok](sub/c.md#c) [self](#b)\n");
    write("docs/src/sub/c.md", "# C\n");
    let pages = pages(&root);
    assert_eq!(pages.len(), 3, "{pages:?}");
    let broken = broken_links(&root, &pages);
    let expected = [
        "README.md:8: missing.md: missing.md does not exist",
        "README.md:8: docs/src/b.md#nope: no heading of docs/src/b.md has the anchor #nope",
        "README.md:10: #same-2: no heading of README.md has the anchor #same-2 (near: [\"same\"])",
        "docs/src/b.md:5: ../../README.md: leads out of the book (docs/src), which the built book does not hold: link \
         its URL",
    ];
    assert_eq!(broken, expected);
    std::fs::remove_dir_all(&root).unwrap();
}
