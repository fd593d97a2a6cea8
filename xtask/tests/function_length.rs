//! No function over 80 lines unless its doc comment says why it must be one: a line of it
//! starting with "One function because" (issue #41: code a newcomer can carry on).
//!
//! Every `fn` counts, from the line of its `fn` keyword to the line of its closing brace:
//! free functions, methods, trait methods with a default body and functions nested in other
//! functions (a closure is part of its function). The code read is that of every crate of
//! the workspace (`crates/*/src`) and of `xtask/src`, found by following the `mod`
//! declarations from each crate root (`lib.rs`, `main.rs`, `bin/NAME.rs`, `bin/NAME/main.rs`:
//! `xtask::source_tree`); test code is not: items under `#[cfg(test)]` (a `mod tests` in its
//! own file too) and `#[test]` functions. Functions written inside a macro's input are not
//! seen.
#![expect(clippy::unwrap_used, reason = "tests fail loudly")]

use std::path::{Path, PathBuf};

use syn::visit::{self, Visit};
use syn::{Attribute, Block, Signature};
use xtask::source_tree::{Crate, doc_lines, is_cfg_test};

/// The most lines a function may have without saying why it must be one.
const MAX_LINES: usize = 80;

/// What a doc comment's line starts with to say why its function must be one.
const REASON: &str = "One function because";

/// A function over `MAX_LINES` lines without a reason.
#[derive(Debug, PartialEq)]
struct LongFunction {
    /// Its file, as the message shows it.
    file: PathBuf,
    /// The line of its `fn`.
    line: usize,
    /// `name`, `Type::name`, `Trait::name`, `outer::name`.
    name: String,
    /// Lines from its `fn` to its closing brace.
    lines: usize,
}

/// The crate roots in the source folder `src`: `lib.rs`, `main.rs`, `bin/NAME.rs` and
/// `bin/NAME/main.rs` (each a crate of its own), relative to `src`.
fn crate_roots(src: &Path) -> Vec<String> {
    let mut roots: Vec<String> =
        ["lib.rs", "main.rs"].into_iter().filter(|r| src.join(r).exists()).map(str::to_owned).collect();
    let mut bins: Vec<String> = std::fs::read_dir(src.join("bin"))
        .into_iter()
        .flatten()
        .filter_map(|e| {
            let path = e.unwrap().path();
            let name = path.file_name()?.to_string_lossy().into_owned();
            if path.is_dir() && path.join("main.rs").exists() {
                Some(format!("bin/{name}/main.rs"))
            } else {
                path.extension().is_some_and(|e| e == "rs").then(|| format!("bin/{name}"))
            }
        })
        .collect();
    bins.sort();
    roots.extend(bins);
    roots
}

/// The functions over `MAX_LINES` lines without a reason in `krate`, its files shown under
/// `shown` (the crate's source folder from the repository's root).
fn long_functions(krate: &Crate, shown: &Path) -> Vec<LongFunction> {
    let mut found = Vec::new();
    for file in krate.files.iter().filter(|f| !is_cfg_test(&f.attrs)) {
        let mut finder = Finder { names: Vec::new(), found: Vec::new() };
        finder.visit_file(&file.ast);
        found.extend(finder.found.into_iter().map(|(line, name, lines)| LongFunction {
            file: shown.join(&file.path),
            line,
            name,
            lines,
        }));
    }
    found
}

/// Finds the long functions of a file.
struct Finder {
    /// The items around the one visited: impl types, traits, functions.
    names: Vec<String>,
    /// Line, name and length of each long function without a reason.
    found: Vec<(usize, String, usize)>,
}

impl Finder {
    /// Checks the function of `attrs`, `sig` and `body`, then the functions inside it.
    fn function(&mut self, attrs: &[Attribute], sig: &Signature, body: &Block, visit_inside: impl FnOnce(&mut Self)) {
        if is_cfg_test(attrs) || attrs.iter().any(|a| a.path().is_ident("test")) {
            return;
        }
        let line = sig.fn_token.span.start().line;
        let lines = body.brace_token.span.close().start().line + 1 - line;
        let name = self.names.iter().chain([&sig.ident.to_string()]).cloned().collect::<Vec<_>>().join("::");
        let reasoned = doc_lines(attrs).iter().any(|l| l.trim_start().starts_with(REASON));
        if lines > MAX_LINES && !reasoned {
            self.found.push((line, name, lines));
        }
        self.names.push(sig.ident.to_string());
        visit_inside(self);
        self.names.pop();
    }

    /// Visits the items of a named scope (an impl's type, a trait), unless test code.
    fn scope(&mut self, attrs: &[Attribute], name: String, visit_inside: impl FnOnce(&mut Self)) {
        if is_cfg_test(attrs) {
            return;
        }
        self.names.push(name);
        visit_inside(self);
        self.names.pop();
    }
}

impl<'ast> Visit<'ast> for Finder {
    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        self.function(&f.attrs, &f.sig, &f.block, |v| visit::visit_item_fn(v, f));
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        self.function(&f.attrs, &f.sig, &f.block, |v| visit::visit_impl_item_fn(v, f));
    }

    fn visit_trait_item_fn(&mut self, f: &'ast syn::TraitItemFn) {
        match &f.default {
            Some(body) => self.function(&f.attrs, &f.sig, body, |v| visit::visit_trait_item_fn(v, f)),
            None => visit::visit_trait_item_fn(self, f),
        }
    }

    fn visit_item_impl(&mut self, i: &'ast syn::ItemImpl) {
        let name = match i.self_ty.as_ref() {
            syn::Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
            _ => None,
        };
        let name = name.unwrap_or_else(|| quote::ToTokens::to_token_stream(&i.self_ty).to_string());
        self.scope(&i.attrs, name, |v| visit::visit_item_impl(v, i));
    }

    fn visit_item_trait(&mut self, t: &'ast syn::ItemTrait) {
        self.scope(&t.attrs, t.ident.to_string(), |v| visit::visit_item_trait(v, t));
    }

    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if !is_cfg_test(&m.attrs) {
            visit::visit_item_mod(self, m);
        }
    }
}

#[test]
fn no_function_is_over_80_lines_without_a_reason() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut folders: Vec<PathBuf> =
        std::fs::read_dir(root.join("crates")).unwrap().map(|e| e.unwrap().path().join("src")).collect();
    folders.sort();
    folders.push(root.join("xtask/src"));
    let mut found = Vec::new();
    let mut roots_read = 0;
    for src in &folders {
        let shown = src.strip_prefix(&root).unwrap();
        for root_file in crate_roots(src) {
            let krate = Crate::read(src, &root_file).unwrap_or_else(|e| panic!("{e:#}"));
            found.extend(long_functions(&krate, shown));
            roots_read += 1;
        }
    }
    assert!(roots_read >= 6, "only {roots_read} crate roots found: did the layout change?");
    // A file reached from two roots (lib.rs and main.rs of one package) counts once.
    found.sort_by(|a, b| (&a.file, a.line).cmp(&(&b.file, b.line)));
    found.dedup();
    let report: Vec<String> =
        found.iter().map(|f| format!("{}:{}: {} ({} lines)", f.file.display(), f.line, f.name, f.lines)).collect();
    assert!(
        report.is_empty(),
        "{} functions over {MAX_LINES} lines: split each into functions with one job, or say in its doc comment why \
         it must be one (a line starting with \"{REASON}\"):\n{}",
        report.len(),
        report.join("\n")
    );
}

/// A function of `body_lines` lines of statements between its `fn` line and its brace.
fn function(head: &str, body_lines: usize) -> String {
    format!("{head} {{\n{}}}\n", "    let _x = 1;\n".repeat(body_lines))
}

#[test]
fn finds_long_functions_of_every_kind_and_skips_tests_and_reasons() {
    let lib = [
        function("fn short()", 78),
        function("/// Docs.\npub fn long()", 79),
        format!("impl S {{\n{}}}\n", function("    pub(crate) fn method(&self)", 79)),
        format!("trait T {{\n{}    fn required(&self);\n}}\n", function("    fn provided(&self)", 79)),
        format!("fn outer() {{\n{}}}\n", function("    fn nested()", 79)),
        function("/// Fast path.\n///\n/// One function because the loop is the hot path.\nfn reasoned()", 200),
        function("#[test]\nfn a_test()", 200),
        format!("#[cfg(test)]\nmod tests {{\n{}}}\n", function("fn inline_test_helper()", 200)),
        "#[cfg(test)]\nmod more_tests;\nmod other;\n".to_owned(),
    ]
    .concat();
    let test_file = function("fn test_helper()", 200);
    let other = function("fn in_other_file<T>(\n    x: T,\n) -> T\nwhere\n    T: Copy,", 77);
    let krate = Crate::from_sources("lib.rs", &[("lib.rs", &lib), ("more_tests.rs", &test_file), ("other.rs", &other)])
        .unwrap();
    let found: Vec<(String, String, usize)> = long_functions(&krate, Path::new("src"))
        .into_iter()
        .map(|f| (format!("{}:{}", f.file.display(), f.line), f.name, f.lines))
        .collect();
    let expected = [
        ("src/lib.rs:82", "long", 81),
        ("src/lib.rs:164", "S::method", 81),
        ("src/lib.rs:247", "T::provided", 81),
        ("src/lib.rs:330", "outer", 83),
        ("src/lib.rs:331", "outer::nested", 81),
        ("src/other.rs:1", "in_other_file", 83),
    ];
    assert_eq!(found, expected.map(|(at, name, lines)| (at.to_owned(), name.to_owned(), lines)));
}
