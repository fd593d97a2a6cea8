//! A crate's source as `syn` syntax trees: its root file (`lib.rs`, `main.rs`) and every
//! module file its `mod name;` declarations lead to, found as rustc finds them (`name.rs` or
//! `name/mod.rs` beside the declaring file's module, `#[path = "..."]` relative to the
//! declaring file's folder). Read without building the crate; files no `mod` declares (a
//! `bin/` folder, an orphan) are not part of it.
//!
//! The module-cycle and function-length tests and the public API record read crates with it.
//! `use_leaves` flattens a `use` tree into the paths it imports, `doc_lines` gives an item's
//! doc comment.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use proc_macro2::Ident;
use syn::{Attribute, Expr, Item, UseTree};

/// One file of a crate.
pub struct ModuleFile {
    /// The module it defines, from the crate root: `[]` for the root file, `[a, b]` for
    /// `a/b.rs`.
    pub module: Vec<String>,
    /// The file, relative to the crate's source folder.
    pub path: PathBuf,
    /// The attributes of the `mod` declarations leading to it, from the root down (inline
    /// modules around a declaration included): `#[cfg(test)]`, `#[cfg(feature = "..")]`,
    /// `#[doc(hidden)]` hold for everything in the file.
    pub attrs: Vec<Attribute>,
    /// Its syntax tree.
    pub ast: syn::File,
}

/// A crate's files, the root file first.
pub struct Crate {
    /// Every file of the crate, in the order the `mod` declarations were met.
    pub files: Vec<ModuleFile>,
}

impl Crate {
    /// Reads the crate whose root file is `root_file` (such as `lib.rs`) in folder `dir`.
    pub fn read(dir: &Path, root_file: &str) -> Result<Crate> {
        Crate::parse(root_file, |path| std::fs::read_to_string(dir.join(path)).ok())
            .with_context(|| format!("reading the crate at {}", dir.join(root_file).display()))
    }

    /// The crate whose root file is `root_file`, its files' text from `read` (given a path
    /// relative to the crate's folder, `None` where there is no such file).
    pub fn parse(root_file: &str, read: impl Fn(&Path) -> Option<String>) -> Result<Crate> {
        let mut reader = Reader { read: &read, files: Vec::new() };
        let root = PathBuf::from(root_file);
        let src = read(&root).with_context(|| format!("no {root_file}"))?;
        reader.file(Vec::new(), root, Vec::new(), &src)?;
        Ok(Crate { files: reader.files })
    }

    /// The crate of `sources` (path relative to the crate's folder, text): a fixture.
    pub fn from_sources(root_file: &str, sources: &[(&str, &str)]) -> Result<Crate> {
        let by_path: BTreeMap<PathBuf, &str> = sources.iter().map(|&(p, s)| (PathBuf::from(p), s)).collect();
        Crate::parse(root_file, |path| by_path.get(path).map(|s| (*s).to_owned()))
    }

    /// The file defining `module` (a module of its own file, not an inline one).
    pub fn file(&self, module: &[String]) -> Option<&ModuleFile> {
        self.files.iter().find(|f| f.module == module)
    }
}

/// Walks the `mod` declarations of a crate's files.
struct Reader<'r> {
    read: &'r dyn Fn(&Path) -> Option<String>,
    files: Vec<ModuleFile>,
}

impl Reader<'_> {
    /// Parses `path`, the file of `module`, and then the files its declarations lead to.
    fn file(&mut self, module: Vec<String>, path: PathBuf, attrs: Vec<Attribute>, src: &str) -> Result<()> {
        let ast = syn::parse_file(src).map_err(|e| {
            let at = e.span().start();
            anyhow::anyhow!("{}:{}:{}: {e}", path.display(), at.line, at.column + 1)
        })?;
        // `a.rs`'s submodules live in `a/`; those of `lib.rs`, `main.rs`, `mod.rs` beside it.
        let folder = path.parent().unwrap_or(Path::new("")).to_path_buf();
        let owns_folder = module.is_empty() || path.file_name().is_some_and(|n| n == "mod.rs");
        let children = match module.last() {
            Some(name) if !owns_folder => folder.join(name),
            _ => folder.clone(),
        };
        let items = ast.items.clone();
        self.files.push(ModuleFile { module: module.clone(), path: path.clone(), attrs: attrs.clone(), ast });
        let at = Place { module, file: path, folder, children, attrs };
        self.declarations(&items, &at)
    }

    /// Follows the `mod name;` declarations among `items` (inline modules' too).
    fn declarations(&mut self, items: &[Item], at: &Place) -> Result<()> {
        for item in items {
            let Item::Mod(m) = item else { continue };
            let mut module = at.module.clone();
            module.push(m.ident.to_string());
            let mut attrs = at.attrs.clone();
            attrs.extend(m.attrs.iter().cloned());
            match &m.content {
                Some((_, inner)) => {
                    let inline = Place {
                        module,
                        file: at.file.clone(),
                        folder: at.folder.clone(),
                        children: at.children.join(m.ident.to_string()),
                        attrs,
                    };
                    self.declarations(inner, &inline)?;
                }
                None => {
                    let (path, src) = self.module_file(m, at)?;
                    self.file(module, path, attrs, &src)?;
                }
            }
        }
        Ok(())
    }

    /// The file and text of module `m` declared at `at`.
    fn module_file(&self, m: &syn::ItemMod, at: &Place) -> Result<(PathBuf, String)> {
        let candidates = match path_attr(&m.attrs) {
            Some(path) => vec![at.folder.join(path)],
            None => {
                let name = m.ident.to_string();
                vec![at.children.join(format!("{name}.rs")), at.children.join(name).join("mod.rs")]
            }
        };
        for path in &candidates {
            if let Some(src) = (self.read)(path) {
                return Ok((path.clone(), src));
            }
        }
        let tried: Vec<String> = candidates.iter().map(|p| p.display().to_string()).collect();
        bail!("{}: `mod {};` has no file (tried {})", at.file.display(), m.ident, tried.join(", "))
    }
}

/// Where declarations are read: the module, its file, the file's folder, the folder of its
/// submodules' files, the attributes holding there.
struct Place {
    module: Vec<String>,
    file: PathBuf,
    folder: PathBuf,
    children: PathBuf,
    attrs: Vec<Attribute>,
}

/// The value of a `#[path = "..."]` attribute.
fn path_attr(attrs: &[Attribute]) -> Option<String> {
    attrs.iter().filter(|a| a.path().is_ident("path")).find_map(|a| match &a.meta {
        syn::Meta::NameValue(syn::MetaNameValue {
            value: syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }),
            ..
        }) => Some(s.value()),
        _ => None,
    })
}

/// The paths a `use` tree imports, each with the name it binds (none for a glob):
/// `a::{b::C, d as e, f::*, self}` is `a::b::C` (C), `a::d` (e), `a::f` (none) and `a` (a).
pub fn use_leaves(tree: &UseTree) -> Vec<(Vec<Ident>, Option<Ident>)> {
    fn walk(tree: &UseTree, prefix: &mut Vec<Ident>, out: &mut Vec<(Vec<Ident>, Option<Ident>)>) {
        let with = |prefix: &[Ident], last: &Ident| [prefix, std::slice::from_ref(last)].concat();
        match tree {
            UseTree::Path(p) => {
                prefix.push(p.ident.clone());
                walk(&p.tree, prefix, out);
                prefix.pop();
            }
            UseTree::Name(n) if n.ident == "self" => out.push((prefix.clone(), prefix.last().cloned())),
            UseTree::Name(n) => out.push((with(prefix, &n.ident), Some(n.ident.clone()))),
            UseTree::Rename(r) => out.push((with(prefix, &r.ident), Some(r.rename.clone()))),
            UseTree::Glob(_) => out.push((prefix.clone(), None)),
            UseTree::Group(g) => g.items.iter().for_each(|t| walk(t, prefix, out)),
        }
    }
    let mut out = Vec::new();
    walk(tree, &mut Vec::new(), &mut out);
    out
}

/// The lines of the doc comment that `attrs` hold (`///` lines and `#[doc = "..."]`), each
/// without the one space after `///`.
pub fn doc_lines(attrs: &[Attribute]) -> Vec<String> {
    let mut lines = Vec::new();
    for attr in attrs.iter().filter(|a| a.path().is_ident("doc")) {
        if let syn::Meta::NameValue(nv) = &attr.meta
            && let Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(text), .. }) = &nv.value
        {
            let text = text.value();
            // `/// ` alone is an empty line: a paragraph break.
            let strip = |l: &str| l.strip_prefix(' ').unwrap_or(l).to_owned();
            if text.contains('\n') {
                lines.extend(text.lines().map(strip));
            } else {
                lines.push(strip(&text));
            }
        }
    }
    lines
}

/// Whether `attrs` hold `#[cfg(test)]`: code built for the crate's unit tests only.
pub fn is_cfg_test<'a>(attrs: impl IntoIterator<Item = &'a Attribute>) -> bool {
    attrs.into_iter().any(|a| a.path().is_ident("cfg") && a.parse_args::<syn::Ident>().is_ok_and(|i| i == "test"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_mod_declarations_as_rustc_does() -> Result<()> {
        let krate = Crate::from_sources(
            "lib.rs",
            &[
                ("lib.rs", "mod a; pub mod b; #[cfg(test)] mod t { mod deep; }"),
                ("a.rs", "mod inner;"),
                ("a/inner.rs", "fn f() {}"),
                ("b/mod.rs", "#[path = \"other.rs\"] mod renamed;"),
                ("b/other.rs", ""),
                ("t/deep.rs", ""),
                ("orphan.rs", "this is not Rust, and nobody declares it"),
            ],
        )?;
        let found: Vec<(String, String)> =
            krate.files.iter().map(|f| (f.module.join("::"), f.path.display().to_string())).collect();
        let expected = [
            ("", "lib.rs"),
            ("a", "a.rs"),
            ("a::inner", "a/inner.rs"),
            ("b", "b/mod.rs"),
            ("b::renamed", "b/other.rs"),
            ("t::deep", "t/deep.rs"),
        ];
        assert_eq!(found, expected.map(|(m, p)| (m.to_owned(), p.to_owned())));
        let deep = krate.file(&["t".to_owned(), "deep".to_owned()]).context("t::deep")?;
        assert!(is_cfg_test(&deep.attrs), "the inline module's #[cfg(test)] holds in its files");
        assert!(!is_cfg_test(&krate.files[1].attrs));
        let missing = Crate::from_sources("lib.rs", &[("lib.rs", "mod gone;")]).err().map(|e| e.to_string());
        assert!(missing.is_some_and(|e| e.contains("`mod gone;` has no file")));
        Ok(())
    }

    #[test]
    fn use_trees_as_paths_and_names() -> Result<()> {
        let tree: syn::ItemUse = syn::parse_str("use a::{b::C, d as e, f::*, self};")?;
        let leaves: Vec<(String, Option<String>)> = use_leaves(&tree.tree)
            .into_iter()
            .map(|(path, name)| {
                let path: Vec<String> = path.iter().map(Ident::to_string).collect();
                (path.join("::"), name.map(|n| n.to_string()))
            })
            .collect();
        let some = |s: &str| Some(s.to_owned());
        let expected = [("a::b::C", some("C")), ("a::d", some("e")), ("a::f", None), ("a", some("a"))]
            .map(|(p, n)| (p.to_owned(), n));
        assert_eq!(leaves, expected);
        Ok(())
    }
}
