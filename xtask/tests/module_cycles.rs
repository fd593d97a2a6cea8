//! No import cycles between the modules of a crate: for every crate of the workspace, the
//! graph of its top-level modules (an edge `a -> b` for each `crate::b` path, or `super::b`
//! that climbs to the crate root, written in `a`'s files) must have no strongly connected
//! component of more than one module. A cycle means two modules each need the other, so
//! neither can be read, tested or moved alone: the shared type or helper belongs in one of
//! them, or lower.
//!
//! Modules are the crate root's children: `a.rs`, or a folder `a/` (with `a.rs` or
//! `a/mod.rs`), whose submodules count as `a`. A path through a crate-root re-export
//! (`crate::Frame` where the root says `pub use frame::Frame`) is an edge to the module that
//! defines it. Comments (doc comments included) and string and character literals are
//! skipped; `#[cfg(test)]` code is counted like any other code.
#![expect(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The crates checked: a name for messages, the source folder, the root file's name. The
/// runner's binary is a crate of its own, so `src/bin` is not part of the library's graph.
const CRATES: &[(&str, &str, &str)] = &[
    ("wgpipe-compute", "crates/compute/src", "lib.rs"),
    ("wgpipe-storage", "crates/storage/src", "lib.rs"),
    ("wgpipe", "crates/runner/src", "lib.rs"),
    ("wgpipe (bin)", "crates/runner/src/bin/wgpipe", "main.rs"),
];

/// Cycles tolerated while a change on its way removes them (none now): each listed one must
/// still be a cycle (delete the line when it is not), and no other may appear.
const KNOWN_CYCLES: &[(&str, &[&str])] = &[];

#[test]
fn no_module_depends_on_itself_through_others() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut report = String::new();
    let mut known_found = BTreeSet::new();
    for &(name, dir, root_file) in CRATES {
        let sources = read_crate(&root.join(dir), root_file);
        assert!(sources.len() > 1, "{dir}: no modules found");
        let graph = ModuleGraph::new(root_file, &sources);
        for cycle in graph.cycles() {
            let members: Vec<&str> = cycle.iter().map(String::as_str).collect();
            if KNOWN_CYCLES.iter().any(|&(c, m)| c == name && m == members.as_slice()) {
                known_found.insert((name, members.join(",")));
                continue;
            }
            writeln!(report, "{name} ({dir}): {}", graph.describe(&cycle)).unwrap();
        }
    }
    for &(name, members) in KNOWN_CYCLES {
        if !known_found.contains(&(name, members.join(","))) {
            writeln!(report, "{name}: {members:?} is no longer a cycle: remove it from KNOWN_CYCLES").unwrap();
        }
    }
    assert!(report.is_empty(), "import cycles between modules (move the shared item down):\n{report}");
}

#[test]
fn finds_a_cycle_through_crate_super_and_a_root_reexport() {
    let sources = fixture(&[
        ("lib.rs", "mod a; mod b; mod c; mod d; pub use c::Thing;"),
        // a -> b through a grouped `crate::` path.
        ("a.rs", "use crate::{b::B, d};\n// crate::c::Hidden (a comment)\nconst S: &str = \"crate::c\";"),
        // b -> c through the crate root's re-export, written in a folder module's submodule.
        ("b/mod.rs", "mod inner;"),
        ("b/inner.rs", "pub fn f() -> crate::Thing { super::super::Thing::default() }"),
        // c -> a through `super::` from a top-level module; `tests` stays inside `c`.
        ("c.rs", "use super::a;\n#[cfg(test)]\nmod tests { use super::*; }\n/* crate::d /* nested */ */"),
        // d is only depended on: no cycle.
        ("d.rs", "pub(crate) fn g(_: char) -> char { '\"' }"),
    ]);
    let graph = ModuleGraph::new("lib.rs", &sources);
    assert_eq!(graph.cycles(), [vec!["a".to_owned(), "b".to_owned(), "c".to_owned()]]);
    let described = graph.describe(&graph.cycles()[0]);
    assert!(described.contains("b -> c (b/inner.rs:1"), "{described}");
    assert!(!graph.edges["a"].contains_key("c"), "comments and strings are not code");
    assert!(graph.edges["d"].is_empty(), "`pub(crate)` and a '\"' literal are not paths");
}

#[test]
fn an_acyclic_crate_passes() {
    let sources = fixture(&[
        ("main.rs", "mod a; mod b; fn helper() {}"),
        ("a.rs", "use crate::b; fn f() { crate::helper(); let _ = r#\"crate::a\"#; }"),
        ("b.rs", "pub fn f<'a>(x: &'a str) -> &'a str { x }"),
    ]);
    let graph = ModuleGraph::new("main.rs", &sources);
    assert!(graph.cycles().is_empty());
    assert_eq!(graph.edges["a"].keys().collect::<Vec<_>>(), ["b"]);
}

fn fixture(files: &[(&str, &str)]) -> Vec<(PathBuf, String)> {
    files.iter().map(|&(p, s)| (PathBuf::from(p), s.to_owned())).collect()
}

/// Every `.rs` file under `dir`, as (path relative to `dir`, text); `bin/` is left out
/// unless `dir` is the binary's own folder.
fn read_crate(dir: &Path, root_file: &str) -> Vec<(PathBuf, String)> {
    fn walk(dir: &Path, rel: &Path, skip_bin: bool, out: &mut Vec<(PathBuf, String)>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
        entries.sort();
        for path in entries {
            let name = rel.join(path.file_name().unwrap());
            if path.is_dir() {
                if !(skip_bin && rel.as_os_str().is_empty() && name == Path::new("bin")) {
                    walk(&path, &name, skip_bin, out);
                }
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push((name, std::fs::read_to_string(&path).unwrap()));
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, Path::new(""), root_file == "lib.rs", &mut out);
    out
}

/// Where a reference was written: file, line, the path as written.
type Evidence = (PathBuf, usize, String);

/// The crate's top-level modules and, for each, the modules its code names.
struct ModuleGraph {
    edges: BTreeMap<String, BTreeMap<String, Evidence>>,
}

impl ModuleGraph {
    fn new(root_file: &str, sources: &[(PathBuf, String)]) -> ModuleGraph {
        let modules: BTreeSet<String> =
            sources.iter().filter_map(|(p, _)| module_path(p, root_file).first().cloned()).collect();
        let root_src = &sources.iter().find(|(p, _)| p == Path::new(root_file)).expect("the crate root").1;
        let exports = root_exports(&tokens(root_src), &modules);
        let mut edges: BTreeMap<String, BTreeMap<String, Evidence>> =
            modules.iter().map(|m| (m.clone(), BTreeMap::new())).collect();
        for (path, src) in sources {
            let here = module_path(path, root_file);
            let Some(from) = here.first() else { continue };
            for (line, written, target) in references(&tokens(src), &here) {
                let to = if modules.contains(&target) { Some(target) } else { exports.get(&target).cloned() };
                if let Some(to) = to.filter(|to| to != from) {
                    edges.get_mut(from).unwrap().entry(to).or_insert_with(|| (path.clone(), line, written));
                }
            }
        }
        ModuleGraph { edges }
    }

    /// The strongly connected components of more than one module, each sorted, in order.
    fn cycles(&self) -> Vec<Vec<String>> {
        struct Tarjan<'g> {
            graph: &'g ModuleGraph,
            index: BTreeMap<&'g str, usize>,
            low: BTreeMap<&'g str, usize>,
            stack: Vec<&'g str>,
            found: Vec<Vec<String>>,
        }
        impl<'g> Tarjan<'g> {
            fn visit(&mut self, v: &'g str) {
                let i = self.index.len();
                self.index.insert(v, i);
                self.low.insert(v, i);
                self.stack.push(v);
                let graph = self.graph;
                for w in graph.edges[v].keys() {
                    if !self.index.contains_key(w.as_str()) {
                        self.visit(w);
                        let low = self.low[v].min(self.low[w.as_str()]);
                        self.low.insert(v, low);
                    } else if self.stack.contains(&w.as_str()) {
                        let low = self.low[v].min(self.index[w.as_str()]);
                        self.low.insert(v, low);
                    }
                }
                if self.low[v] == self.index[v] {
                    let at = self.stack.iter().rposition(|&m| m == v).unwrap();
                    let mut component: Vec<String> = self.stack.drain(at..).map(str::to_owned).collect();
                    if component.len() > 1 {
                        component.sort();
                        self.found.push(component);
                    }
                }
            }
        }
        let mut t =
            Tarjan { graph: self, index: BTreeMap::new(), low: BTreeMap::new(), stack: Vec::new(), found: Vec::new() };
        for v in self.edges.keys() {
            if !t.index.contains_key(v.as_str()) {
                t.visit(v);
            }
        }
        t.found.sort();
        t.found
    }

    /// The cycle's modules and each edge between them with where it is written.
    fn describe(&self, cycle: &[String]) -> String {
        let mut text = cycle.join(" / ");
        for from in cycle {
            for (to, (path, line, written)) in &self.edges[from] {
                if cycle.contains(to) {
                    write!(text, "\n    {from} -> {to} ({}:{line} `{written}`)", path.display()).unwrap();
                }
            }
        }
        text
    }
}

/// The module a file defines, from the crate root: `a.rs` and `a/mod.rs` are `[a]`,
/// `a/b.rs` is `[a, b]`, the root file is `[]`.
fn module_path(path: &Path, root_file: &str) -> Vec<String> {
    if path == Path::new(root_file) {
        return Vec::new();
    }
    let mut parts: Vec<String> = path.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    let last = parts.pop().unwrap();
    if last != "mod.rs" {
        parts.push(last.trim_end_matches(".rs").to_owned());
    }
    parts
}

/// Names the crate root re-exports from its modules (`pub use a::X;`, `pub use a::{X, Y as Z};`),
/// each mapped to the module that defines it.
fn root_exports(tokens: &[Token], modules: &BTreeSet<String>) -> BTreeMap<String, String> {
    let mut exports = BTreeMap::new();
    let mut i = 0;
    while i < tokens.len() {
        if tokens[i].is("use") {
            let end = (i..tokens.len()).find(|&j| tokens[j].is(";")).unwrap_or(tokens.len());
            let first = tokens.get(i + 1).map(|t| t.text.as_str()).unwrap_or_default();
            if modules.contains(first) {
                // Each name imported is the last identifier before `,`, `}` or `;`.
                for j in i + 2..end {
                    if tokens[j].is_ident() && tokens.get(j + 1).is_some_and(|t| t.is(",") || t.is("}") || t.is(";")) {
                        exports.insert(tokens[j].text.clone(), first.to_owned());
                    }
                }
            }
            i = end;
        }
        i += 1;
    }
    exports
}

/// Every path that leaves the current top-level module: (line, the path as written, the
/// first segment below the crate root), for `crate::x`, `$crate::x`, and `super::` chains
/// that climb to the root, including grouped imports (`crate::{x::A, y}`).
fn references(tokens: &[Token], file_module: &[String]) -> Vec<(usize, String, String)> {
    let mut found = Vec::new();
    // Inline modules (`mod tests { .. }`), each with the brace depth it opened at.
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < tokens.len() {
        let t = &tokens[i];
        if t.is("{") {
            depth += 1;
        } else if t.is("}") {
            depth = depth.saturating_sub(1);
            if inline.last().is_some_and(|&(_, d)| d == depth) {
                inline.pop();
            }
        } else if t.is("mod") && tokens.get(i + 2).is_some_and(|b| b.is("{")) {
            inline.push((tokens[i + 1].text.clone(), depth));
        }
        let starts_path = (t.is("crate") || t.is("super"))
            && tokens.get(i + 1).is_some_and(|n| n.is("::"))
            && !(i > 0 && (tokens[i - 1].is("::") || tokens[i - 1].is("in")));
        if !starts_path {
            i += 1;
            continue;
        }
        let mut here: Vec<&str> = file_module.iter().map(String::as_str).collect();
        here.extend(inline.iter().map(|(m, _)| m.as_str()));
        let mut j = i;
        let mut base = if t.is("crate") {
            j += 2;
            Some(Vec::new())
        } else {
            while tokens.get(j).is_some_and(|s| s.is("super")) && tokens.get(j + 1).is_some_and(|c| c.is("::")) {
                here.pop();
                j += 2;
            }
            Some(here)
        };
        // A path staying inside a top-level module is no edge.
        if base.as_ref().is_some_and(|b| !b.is_empty()) {
            base = None;
        }
        let written =
            |upto: usize| -> String { tokens[i..upto.min(tokens.len())].iter().map(|t| t.text.as_str()).collect() };
        if base.is_some() {
            match tokens.get(j) {
                Some(n) if n.is_ident() => found.push((t.line, written(j + 1), n.text.clone())),
                Some(n) if n.is("{") => {
                    // Grouped: the first segment of each item at the group's own level.
                    let mut level = 0;
                    let mut expect_item = true;
                    for (k, s) in tokens.iter().enumerate().skip(j) {
                        if s.is("{") {
                            level += 1;
                        } else if s.is("}") {
                            level -= 1;
                            if level == 0 {
                                break;
                            }
                        } else if level == 1 && s.is(",") {
                            expect_item = true;
                        } else if level == 1 && expect_item && s.is_ident() {
                            found.push((s.line, written(k + 1), s.text.clone()));
                            expect_item = false;
                        } else {
                            expect_item = false;
                        }
                    }
                }
                _ => {}
            }
        }
        i = j.max(i + 1);
    }
    found
}

/// A token of Rust source with comments, whitespace and literals' contents dropped.
#[derive(Debug)]
struct Token {
    text: String,
    line: usize,
}

impl Token {
    fn is(&self, s: &str) -> bool {
        self.text == s
    }

    fn is_ident(&self) -> bool {
        self.text.starts_with(|c: char| c.is_alphabetic() || c == '_')
    }
}

/// Rust source as identifiers, `::` and single punctuation; comments (nested block comments
/// too), string, byte, raw and C string literals, character literals and lifetimes are
/// skipped (a literal becomes the token `"`).
fn tokens(src: &str) -> Vec<Token> {
    let chars: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let mut line = 1;
    let mut i = 0;
    let at = |i: usize| chars.get(i).copied().unwrap_or('\0');
    // Skips a quoted literal starting at the quote `chars[i]`; returns the index after it.
    let skip_quoted = |mut i: usize, line: &mut usize| -> usize {
        i += 1;
        while i < chars.len() && chars[i] != '"' {
            if chars[i] == '\\' {
                i += 1;
            }
            if at(i) == '\n' {
                *line += 1;
            }
            i += 1;
        }
        i + 1
    };
    while i < chars.len() {
        let c = chars[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c == '/' && at(i + 1) == '/' {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && at(i + 1) == '*' {
            let mut nesting = 0;
            loop {
                if i >= chars.len() {
                    break;
                } else if chars[i] == '/' && at(i + 1) == '*' {
                    nesting += 1;
                    i += 2;
                } else if chars[i] == '*' && at(i + 1) == '/' {
                    nesting -= 1;
                    i += 2;
                    if nesting == 0 {
                        break;
                    }
                } else {
                    if chars[i] == '\n' {
                        line += 1;
                    }
                    i += 1;
                }
            }
        } else if c == '"' {
            out.push(Token { text: "\"".into(), line });
            i = skip_quoted(i, &mut line);
        } else if c == '\'' {
            // A character literal ('a', '\n', '\u{1F600}', '\'') or a lifetime ('a).
            if at(i + 1) == '\\' {
                i += 2;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if at(i + 2) == '\'' {
                i += 3;
            } else {
                i += 1;
            }
        } else if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            // Literal prefixes: b"..", c"..", r"..", r#".."#, br#".."#, cr".."; r#ident is an identifier.
            let raw = matches!(word.as_str(), "r" | "br" | "cr");
            if raw && (at(i) == '#' || at(i) == '"') {
                let mut hashes = 0;
                while at(i + hashes) == '#' {
                    hashes += 1;
                }
                if at(i + hashes) == '"' {
                    i += hashes + 1;
                    let closing: Vec<char> = std::iter::once('"').chain(std::iter::repeat_n('#', hashes)).collect();
                    while i < chars.len() && !chars[i..].starts_with(&closing) {
                        if chars[i] == '\n' {
                            line += 1;
                        }
                        i += 1;
                    }
                    i += closing.len();
                    out.push(Token { text: "\"".into(), line });
                    continue;
                }
                // `r#ident`: the identifier without its prefix.
                let start = i + 1;
                i = start;
                while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                    i += 1;
                }
                out.push(Token { text: chars[start..i].iter().collect(), line });
                continue;
            }
            if matches!(word.as_str(), "b" | "c") && (at(i) == '"' || at(i) == '\'') {
                if at(i) == '"' {
                    i = skip_quoted(i, &mut line);
                } else {
                    i += 1;
                    while i < chars.len() && chars[i] != '\'' {
                        if chars[i] == '\\' {
                            i += 1;
                        }
                        i += 1;
                    }
                    i += 1;
                }
                out.push(Token { text: "\"".into(), line });
                continue;
            }
            out.push(Token { text: word, line });
        } else if c == ':' && at(i + 1) == ':' {
            out.push(Token { text: "::".into(), line });
            i += 2;
        } else {
            out.push(Token { text: c.to_string(), line });
            i += 1;
        }
    }
    out
}
