//! No import cycles between the modules of a crate: for every library crate and the `wgpipe`
//! binary (the Python crate is a thin binding, xtask a tool), the
//! graph of its top-level modules (an edge `a -> b` for each `crate::b` path, or `super::b`
//! that climbs to the crate root, written in `a`'s code) must have no strongly connected
//! component of more than one module. A cycle means two modules each need the other, so
//! neither can be read, tested or moved alone: the shared type or helper belongs in one of
//! them, or lower.
//!
//! Modules are the crate root's children (`mod a;` or an inline `mod a { .. }`), and their
//! files are found by following the `mod` declarations from the root file
//! (`xtask::source_tree`); submodules count as their top-level module. The paths are read
//! from `syn`'s syntax trees: `use` trees (grouped ones too), paths in expressions, types,
//! patterns and bounds, and the tokens of macro invocations and `macro_rules!` bodies
//! (`format!("{}", crate::b::X)`, `$crate::b`). A path through a crate-root import
//! (`crate::Frame` where the root says `pub use frame::Frame`) is an edge to the module that
//! defines it. Comments, doc comments and string literals are not code; `#[cfg(test)]` code
//! is counted like any other code.
#![expect(clippy::unwrap_used, reason = "tests fail loudly")]

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use proc_macro2::{Ident, TokenStream, TokenTree};
use syn::Item;
use syn::visit::{self, Visit};
use xtask::source_tree::{Crate, use_leaves};

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
        let krate = Crate::read(&root.join(dir), root_file).unwrap_or_else(|e| panic!("{e:#}"));
        assert!(krate.files.len() > 1, "{dir}: no modules found");
        let graph = ModuleGraph::new(&krate);
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
    let krate = Crate::from_sources(
        "lib.rs",
        &[
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
        ],
    )
    .unwrap();
    let graph = ModuleGraph::new(&krate);
    assert_eq!(graph.cycles(), [vec!["a".to_owned(), "b".to_owned(), "c".to_owned()]]);
    let described = graph.describe(&graph.cycles()[0]);
    assert!(described.contains("b -> c (b/inner.rs:1"), "{described}");
    assert!(!graph.edges["a"].contains_key("c"), "comments and strings are not code");
    assert!(graph.edges["d"].is_empty(), "`pub(crate)` and a '\"' literal are not paths");
}

#[test]
fn an_acyclic_crate_passes() {
    let krate = Crate::from_sources(
        "main.rs",
        &[
            (
                "main.rs",
                "mod a; mod b; mod c { fn g() { assert!(crate::b::f(\"x\").is_empty()); } } mod d; fn helper() {}",
            ),
            ("a.rs", "use crate::b; fn f() { crate::helper(); let _ = r#\"crate::a\"#; }"),
            ("b.rs", "pub fn f<'a>(x: &'a str) -> &'a str { x }\nmacro_rules! m { () => { $crate::d::h() } }"),
            ("d.rs", "pub fn h() {}"),
        ],
    )
    .unwrap();
    let graph = ModuleGraph::new(&krate);
    assert!(graph.cycles().is_empty());
    assert_eq!(graph.edges["a"].keys().collect::<Vec<_>>(), ["b"]);
    assert_eq!(graph.edges["c"].keys().collect::<Vec<_>>(), ["b"], "a path inside a macro's arguments is code");
    assert_eq!(graph.edges["b"].keys().collect::<Vec<_>>(), ["d"], "so is a `$crate` path of a macro_rules! body");
}

/// Where a reference was written: file, line, the path as written.
type Evidence = (PathBuf, usize, String);

/// The crate's top-level modules and, for each, the modules its code names.
struct ModuleGraph {
    edges: BTreeMap<String, BTreeMap<String, Evidence>>,
}

impl ModuleGraph {
    fn new(krate: &Crate) -> ModuleGraph {
        let root = &krate.files[0].ast;
        let modules: BTreeSet<String> = root
            .items
            .iter()
            .filter_map(|item| match item {
                Item::Mod(m) => Some(m.ident.to_string()),
                _ => None,
            })
            .collect();
        let exports = root_imports(&root.items, &modules);
        let mut edges: BTreeMap<String, BTreeMap<String, Evidence>> =
            modules.iter().map(|m| (m.clone(), BTreeMap::new())).collect();
        for file in &krate.files {
            let mut paths = Paths { module: file.module.clone(), found: Vec::new() };
            paths.visit_file(&file.ast);
            for found in paths.found {
                let Some(from) = found.from.first() else { continue };
                let to = if modules.contains(&found.target) {
                    Some(found.target)
                } else {
                    exports.get(&found.target).cloned()
                };
                if let Some(to) = to.filter(|to| to != from) {
                    let evidence = (file.path.clone(), found.line, found.written);
                    edges.get_mut(from).unwrap().entry(to).or_insert(evidence);
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

/// Names the crate root imports from its modules (`pub use a::X;`, `use a::{X, Y as Z};`),
/// each mapped to the module that defines it.
fn root_imports(items: &[Item], modules: &BTreeSet<String>) -> BTreeMap<String, String> {
    let mut imports = BTreeMap::new();
    for item in items {
        let Item::Use(u) = item else { continue };
        for (path, name) in use_leaves(&u.tree) {
            let path: Vec<String> = path.iter().map(Ident::to_string).collect();
            let from_root = if path.first().is_some_and(|s| s == "crate" || s == "self") { &path[1..] } else { &path };
            if let (Some(module), Some(name)) = (from_root.first().filter(|m| modules.contains(*m)), name) {
                imports.insert(name.to_string(), module.clone());
            }
        }
    }
    imports
}

/// A path leaving its top-level module.
struct Found {
    /// The module it is written in (inline modules included).
    from: Vec<String>,
    /// Its line.
    line: usize,
    /// The path as written, up to the name below the crate root.
    written: String,
    /// The name below the crate root it leads to.
    target: String,
}

/// Collects the paths of a file that leave their top-level module: `crate::x`, `$crate::x`,
/// and `super::` chains that climb to the crate root.
struct Paths {
    /// The module being read: the file's, then any inline module's inside it.
    module: Vec<String>,
    found: Vec<Found>,
}

impl Paths {
    /// Records `segments` if they start at the crate root or climb to it.
    fn path(&mut self, segments: &[Ident]) {
        let Some(first) = segments.first() else { return };
        let (mut base, mut rest) = (self.module.clone(), segments);
        if first == "crate" {
            (base, rest) = (Vec::new(), &segments[1..]);
        } else if first == "super" {
            while rest.first().is_some_and(|s| s == "super") {
                base.pop();
                rest = &rest[1..];
            }
        } else {
            return;
        }
        // A path staying inside a top-level module is no edge.
        let Some(target) = rest.first().filter(|_| base.is_empty()) else { return };
        let shown = segments.len() - rest.len() + 1;
        let written: Vec<String> = segments[..shown].iter().map(Ident::to_string).collect();
        let (line, target) = (first.span().start().line, target.to_string());
        self.found.push(Found { from: self.module.clone(), line, written: written.join("::"), target });
    }

    /// Records the paths among a macro's tokens: `crate :: a`, `$crate :: a`, `super :: a`.
    fn tokens(&mut self, tokens: TokenStream) {
        let tokens: Vec<TokenTree> = tokens.into_iter().collect();
        let is_colon = |t: Option<&TokenTree>| matches!(t, Some(TokenTree::Punct(p)) if p.as_char() == ':');
        for (i, token) in tokens.iter().enumerate() {
            match token {
                TokenTree::Group(g) => self.tokens(g.stream()),
                TokenTree::Ident(start) if start == "crate" || start == "super" => {
                    let after_colons = i > 1 && is_colon(tokens.get(i - 1)) && is_colon(tokens.get(i - 2));
                    if after_colons {
                        continue;
                    }
                    let mut segments = vec![start.clone()];
                    let mut j = i + 1;
                    while is_colon(tokens.get(j)) && is_colon(tokens.get(j + 1)) {
                        let Some(TokenTree::Ident(next)) = tokens.get(j + 2) else { break };
                        segments.push(next.clone());
                        j += 3;
                    }
                    if segments.len() > 1 {
                        self.path(&segments);
                    }
                }
                _ => {}
            }
        }
    }
}

impl<'ast> Visit<'ast> for Paths {
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        // A `mod a;` file is read on its own, with its own module path.
        if m.content.is_some() {
            self.module.push(m.ident.to_string());
            visit::visit_item_mod(self, m);
            self.module.pop();
        }
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        for (path, _) in use_leaves(&u.tree) {
            self.path(&path);
        }
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segments: Vec<Ident> = path.segments.iter().map(|s| s.ident.clone()).collect();
        if segments.len() > 1 {
            self.path(&segments);
        }
        visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.tokens(mac.tokens.clone());
        visit::visit_macro(self, mac);
    }
}
