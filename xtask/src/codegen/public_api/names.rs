//! The modules of a crate (each file's and each inline one) and where a path written in one
//! of them leads: a module, items of the crate, or another crate's item. Resolution follows
//! what the modules define, their `use` imports (globs too) and `crate`, `self` and `super`;
//! a first segment the crate does not define is another crate's (`std`, `wgpu`, a prelude
//! name such as `Default`).

use std::collections::HashMap;

use syn::{Attribute, Item};

use crate::source_tree::{Crate, is_cfg_test, use_leaves};

/// How deep imports may lead to imports before a path counts as unresolved (a guard
/// against import cycles).
const MAX_DEPTH: usize = 32;

/// An item of a module: the module's index and the item's index among its items.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ItemId {
    /// The module, an index into `Modules::list`.
    pub module: usize,
    /// The item, an index into the module's items.
    pub index: usize,
}

/// One module: a file's or an inline one's.
pub struct Module<'a> {
    /// Its path from the crate root (`[]` for the root).
    pub path: Vec<String>,
    /// Its items.
    pub items: &'a [Item],
    /// The attributes holding for all of it: those of the `mod` declarations leading to it
    /// and its own inner attributes.
    pub attrs: Vec<&'a Attribute>,
}

/// Where a path leads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A module of the crate (an index into `Modules::list`).
    Module(usize),
    /// Items of the crate with that name (a type and a function may share one).
    Items(Vec<ItemId>),
    /// Something of another crate: the path, from that crate's name.
    External(Vec<String>),
}

/// Every module of a crate.
pub struct Modules<'a> {
    /// The modules, the root first.
    pub list: Vec<Module<'a>>,
    by_path: HashMap<Vec<String>, usize>,
}

impl<'a> Modules<'a> {
    /// The modules of `krate`.
    pub fn of(krate: &'a Crate) -> Modules<'a> {
        let mut modules = Modules { list: Vec::new(), by_path: HashMap::new() };
        for file in &krate.files {
            let mut attrs: Vec<&Attribute> = file.attrs.iter().collect();
            attrs.extend(&file.ast.attrs);
            modules.add(file.module.clone(), &file.ast.items, attrs);
        }
        modules
    }

    /// Adds a module and the inline modules among its items.
    fn add(&mut self, path: Vec<String>, items: &'a [Item], attrs: Vec<&'a Attribute>) {
        self.by_path.insert(path.clone(), self.list.len());
        self.list.push(Module { path: path.clone(), items, attrs: attrs.clone() });
        for item in items {
            if let Item::Mod(m) = item
                && let Some((_, inner)) = &m.content
            {
                let mut inner_attrs = attrs.clone();
                inner_attrs.extend(&m.attrs);
                let mut inner_path = path.clone();
                inner_path.push(m.ident.to_string());
                self.add(inner_path, inner, inner_attrs);
            }
        }
    }

    /// The item `id` names.
    pub fn item(&self, id: ItemId) -> &'a Item {
        &self.list[id.module].items[id.index]
    }

    /// The module at `path`, if the crate has it.
    pub fn module(&self, path: &[String]) -> Option<usize> {
        self.by_path.get(path).copied()
    }

    /// Whether module `m` is test code or hidden from the docs.
    pub fn excluded(&self, m: usize) -> bool {
        let attrs = &self.list[m].attrs;
        is_cfg_test(attrs.iter().copied()) || is_doc_hidden(attrs.iter().copied())
    }

    /// Where `segments`, written in module `from`, lead; `None` for a path of the crate
    /// that leads nowhere (an item of a variant, an unresolved name).
    pub fn resolve(&self, from: usize, segments: &[String]) -> Option<Target> {
        self.resolve_at(from, segments, 0)
    }

    fn resolve_at(&self, from: usize, segments: &[String], depth: usize) -> Option<Target> {
        let first = segments.first()?;
        if depth > MAX_DEPTH {
            return None;
        }
        let (mut target, rest) = match first.as_str() {
            "crate" => (Target::Module(0), &segments[1..]),
            "self" => (Target::Module(from), &segments[1..]),
            "super" => {
                let supers = segments.iter().take_while(|s| *s == "super").count();
                let path = &self.list[from].path;
                let parent = path.get(..path.len().checked_sub(supers)?)?;
                (Target::Module(self.module(parent)?), &segments[supers..])
            }
            name => match self.lookup(from, name, depth + 1) {
                Some(target) => (target, &segments[1..]),
                None => return Some(Target::External(segments.to_vec())),
            },
        };
        for segment in rest {
            target = match target {
                Target::Module(m) => self.lookup(m, segment, depth + 1)?,
                Target::External(mut path) => {
                    path.push(segment.clone());
                    Target::External(path)
                }
                Target::Items(_) => return None,
            };
        }
        Some(target)
    }

    /// What `name` means in module `m`: a child module, items it defines, or what it imports.
    fn lookup(&self, m: usize, name: &str, depth: usize) -> Option<Target> {
        let module = &self.list[m];
        let mut found = Vec::new();
        for (index, item) in module.items.iter().enumerate() {
            match item {
                Item::Mod(child) if child.ident == name => {
                    return self.module(&[module.path.as_slice(), &[name.to_owned()]].concat()).map(Target::Module);
                }
                Item::ExternCrate(e) if e.rename.as_ref().map_or(&e.ident, |(_, r)| r) == name => {
                    return Some(Target::External(vec![e.ident.to_string()]));
                }
                _ if item_name(item).is_some_and(|n| n == name) => found.push(ItemId { module: m, index }),
                _ => {}
            }
        }
        if !found.is_empty() {
            return Some(Target::Items(found));
        }
        self.imported(m, name, depth)
    }

    /// What module `m` imports as `name`: by name first, then through its globs.
    fn imported(&self, m: usize, name: &str, depth: usize) -> Option<Target> {
        let leaves: Vec<(Vec<String>, Option<String>)> = self.list[m]
            .items
            .iter()
            .filter_map(|item| match item {
                Item::Use(u) => Some(use_leaves(&u.tree)),
                _ => None,
            })
            .flatten()
            .map(|(path, bound)| (path.iter().map(ToString::to_string).collect(), bound.map(|b| b.to_string())))
            .collect();
        for (path, bound) in &leaves {
            if bound.as_deref() == Some(name) {
                // `use wgpu;`, `use serde as s;`: another crate.
                if let [only] = path.as_slice()
                    && !["crate", "self", "super"].contains(&only.as_str())
                {
                    return Some(Target::External(path.clone()));
                }
                return self.resolve_at(m, path, depth + 1);
            }
        }
        leaves.iter().filter(|(_, bound)| bound.is_none()).find_map(|(path, _)| {
            match self.resolve_at(m, path, depth + 1)? {
                Target::Module(g) if g != m => self.lookup(g, name, depth + 1),
                _ => None,
            }
        })
    }
}

/// The name an item defines, for the items a path can name.
pub fn item_name(item: &Item) -> Option<String> {
    let ident = match item {
        Item::Struct(i) => &i.ident,
        Item::Enum(i) => &i.ident,
        Item::Union(i) => &i.ident,
        Item::Trait(i) => &i.ident,
        Item::TraitAlias(i) => &i.ident,
        Item::Fn(i) => &i.sig.ident,
        Item::Const(i) => &i.ident,
        Item::Static(i) => &i.ident,
        Item::Type(i) => &i.ident,
        Item::Mod(i) => &i.ident,
        Item::Macro(i) => i.ident.as_ref()?,
        _ => return None,
    };
    Some(ident.to_string())
}

/// The outer attributes of `item`.
pub fn attrs(item: &Item) -> &[Attribute] {
    match item {
        Item::Const(i) => &i.attrs,
        Item::Enum(i) => &i.attrs,
        Item::ExternCrate(i) => &i.attrs,
        Item::Fn(i) => &i.attrs,
        Item::ForeignMod(i) => &i.attrs,
        Item::Impl(i) => &i.attrs,
        Item::Macro(i) => &i.attrs,
        Item::Mod(i) => &i.attrs,
        Item::Static(i) => &i.attrs,
        Item::Struct(i) => &i.attrs,
        Item::Trait(i) => &i.attrs,
        Item::TraitAlias(i) => &i.attrs,
        Item::Type(i) => &i.attrs,
        Item::Union(i) => &i.attrs,
        Item::Use(i) => &i.attrs,
        _ => &[],
    }
}

/// Whether `item` is declared `pub` (not `pub(crate)` or narrower).
pub fn is_public(item: &Item) -> bool {
    let vis = match item {
        Item::Const(i) => &i.vis,
        Item::Enum(i) => &i.vis,
        Item::ExternCrate(i) => &i.vis,
        Item::Fn(i) => &i.vis,
        Item::Mod(i) => &i.vis,
        Item::Static(i) => &i.vis,
        Item::Struct(i) => &i.vis,
        Item::Trait(i) => &i.vis,
        Item::TraitAlias(i) => &i.vis,
        Item::Type(i) => &i.vis,
        Item::Union(i) => &i.vis,
        Item::Use(i) => &i.vis,
        _ => return false,
    };
    matches!(vis, syn::Visibility::Public(_))
}

/// Whether `attrs` hold `#[doc(hidden)]`.
pub fn is_doc_hidden<'a>(attrs: impl IntoIterator<Item = &'a Attribute>) -> bool {
    attrs.into_iter().any(|a| a.path().is_ident("doc") && a.parse_args::<syn::Ident>().is_ok_and(|i| i == "hidden"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(target: Option<Target>, modules: &Modules<'_>) -> String {
        match target {
            Some(Target::Module(m)) => format!("mod {}", modules.list[m].path.join("::")),
            Some(Target::Items(ids)) => {
                let found: Vec<String> = ids
                    .iter()
                    .map(|id| {
                        format!(
                            "{}::{}",
                            modules.list[id.module].path.join("::"),
                            item_name(modules.item(*id)).unwrap_or_default()
                        )
                    })
                    .collect();
                found.join(" ")
            }
            Some(Target::External(path)) => format!("extern {}", path.join("::")),
            None => "none".to_owned(),
        }
    }

    #[test]
    fn paths_lead_through_imports_globs_and_super() -> anyhow::Result<()> {
        let krate = Crate::from_sources(
            "lib.rs",
            &[
                ("lib.rs", "mod a; pub mod b { pub use super::a::*; use std::fmt; pub use fmt::Display as Shown; }"),
                ("a.rs", "pub struct A; pub fn A() {} pub(crate) mod deep { pub use crate::b::Shown; }"),
            ],
        )?;
        let modules = Modules::of(&krate);
        let b = modules.module(&["b".to_owned()]).unwrap_or_default();
        let at = |m: usize, path: &str| {
            let segments: Vec<String> = path.split("::").map(str::to_owned).collect();
            names(modules.resolve(m, &segments), &modules)
        };
        assert_eq!(at(0, "crate::b::A"), "a::A a::A", "a glob import, a type and a function of one name");
        assert_eq!(at(b, "Shown"), "extern std::fmt::Display");
        assert_eq!(at(0, "a::deep::Shown"), "extern std::fmt::Display");
        assert_eq!(at(b, "super::a"), "mod a");
        assert_eq!(at(0, "wgpu::Device"), "extern wgpu::Device");
        assert_eq!(at(0, "crate::a::Missing"), "none");
        Ok(())
    }
}
