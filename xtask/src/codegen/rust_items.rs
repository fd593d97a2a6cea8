//! The items of Rust source files that the configuration reference is made from, read with
//! `syn` from the source text (no build of the crate): structs and enums with their doc
//! comments and attributes, `impl Default` bodies, hand-written `impl Deserialize`s, consts
//! and functions.
//!
//! Only a file's top-level items are read (not those of inline modules such as `mod tests`);
//! expressions stay `syn` trees for the renderer (`values.rs`) to read.

use std::collections::BTreeSet;

use anyhow::{Result, bail};
use quote::ToTokens;
use syn::punctuated::Punctuated;
use syn::{Attribute, Block, Expr, Fields, GenericArgument, ImplItem, Item, PathArguments, Token, Type};

use crate::source_tree::doc_lines;

/// A type as written: the last segment of its path and its generic arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ty {
    /// `Option`, `Vec`, `String`, `KernelSection`, ...
    pub name: String,
    /// Generic arguments (lifetimes left out).
    pub args: Vec<Ty>,
}

impl Ty {
    /// The type `ty` names, references looked through: `&std::collections::BTreeMap<String,
    /// Vec<f64>>` is `BTreeMap<String, Vec<f64>>`. A type of another form (a tuple, a slice)
    /// is named by its tokens, without arguments: no key of the config file has one.
    pub fn of(ty: &Type) -> Ty {
        match ty {
            Type::Reference(r) => Ty::of(&r.elem),
            Type::Paren(p) => Ty::of(&p.elem),
            Type::Group(g) => Ty::of(&g.elem),
            Type::Path(p) if p.qself.is_none() && !p.path.segments.is_empty() => {
                let last = &p.path.segments[p.path.segments.len() - 1];
                let args = match &last.arguments {
                    PathArguments::AngleBracketed(a) => a
                        .args
                        .iter()
                        .filter_map(|arg| match arg {
                            GenericArgument::Type(t) => Some(Ty::of(t)),
                            _ => None,
                        })
                        .collect(),
                    _ => Vec::new(),
                };
                Ty { name: last.ident.to_string(), args }
            }
            other => Ty { name: other.to_token_stream().to_string(), args: Vec::new() },
        }
    }
}

impl std::fmt::Display for Ty {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name)?;
        if !self.args.is_empty() {
            let args: Vec<String> = self.args.iter().map(Ty::to_string).collect();
            write!(f, "<{}>", args.join(", "))?;
        }
        Ok(())
    }
}

/// A named struct field or an enum variant: name, doc lines, attributes and types.
#[derive(Clone)]
pub struct Member {
    /// The field's or variant's name.
    pub name: String,
    /// Its doc comment, line by line.
    pub docs: Vec<String>,
    /// Its attributes.
    pub attrs: Vec<Attribute>,
    /// A field's type; a tuple variant's payload types (empty for a unit variant).
    pub types: Vec<Ty>,
    /// Whether this is a variant with named fields (`Name { .. }`), whose fields are not read.
    pub has_named_fields: bool,
}

/// A struct with named fields, or an enum.
#[derive(Clone)]
pub struct TypeDef {
    /// The type's name.
    pub name: String,
    /// Its doc comment, line by line.
    pub docs: Vec<String>,
    /// Its attributes.
    pub attrs: Vec<Attribute>,
    /// Whether it is an enum (else a struct).
    pub is_enum: bool,
    /// Fields or variants, in source order.
    pub members: Vec<Member>,
}

impl TypeDef {
    /// The traits named in its `#[derive(...)]` attributes.
    pub fn derives(&self) -> BTreeSet<String> {
        self.attrs
            .iter()
            .filter(|a| a.path().is_ident("derive"))
            .filter_map(|a| a.parse_args_with(Punctuated::<syn::Path, Token![,]>::parse_terminated).ok())
            .flatten()
            .filter_map(|path| path.segments.last().map(|s| s.ident.to_string()))
            .collect()
    }
}

/// The items of some source files that a generated page reads.
#[derive(Default)]
pub struct Items {
    /// Structs with named fields and enums.
    pub types: Vec<TypeDef>,
    /// `impl Default for T`: the type's name and the body of its `default()`.
    pub default_impls: Vec<(String, Block)>,
    /// Types with a hand-written `impl Deserialize for T`.
    pub deserialize_impls: BTreeSet<String>,
    /// Functions: name and body.
    pub fns: Vec<(String, Block)>,
    /// Consts and statics: name and value expression.
    pub consts: Vec<(String, Expr)>,
}

impl Items {
    /// Adds the top-level items of one file's source.
    pub fn read(&mut self, src: &str) -> Result<()> {
        let file = syn::parse_file(src).map_err(|e| {
            let at = e.span().start();
            anyhow::anyhow!("line {}, column {}: {e}", at.line, at.column + 1)
        })?;
        for item in file.items {
            match item {
                Item::Struct(s) => {
                    if let Fields::Named(fields) = &s.fields {
                        let members = fields.named.iter().map(field).collect();
                        self.types.push(type_def(&s.ident, s.attrs, false, members));
                    }
                }
                Item::Enum(e) => {
                    let members = e.variants.iter().map(variant).collect();
                    self.types.push(type_def(&e.ident, e.attrs, true, members));
                }
                Item::Impl(i) => self.impl_block(&i)?,
                Item::Fn(f) => self.fns.push((f.sig.ident.to_string(), *f.block)),
                Item::Const(c) => self.consts.push((c.ident.to_string(), *c.expr)),
                Item::Static(s) => self.consts.push((s.ident.to_string(), *s.expr)),
                _ => {}
            }
        }
        Ok(())
    }

    /// Records a `Default` or `Deserialize` impl; skips any other.
    fn impl_block(&mut self, block: &syn::ItemImpl) -> Result<()> {
        let Some((_, trait_path, _)) = &block.trait_ else { return Ok(()) };
        let Type::Path(self_ty) = block.self_ty.as_ref() else { return Ok(()) };
        let (Some(trait_name), Some(self_name)) = (trait_path.segments.last(), self_ty.path.segments.last()) else {
            return Ok(());
        };
        let self_name = self_name.ident.to_string();
        if trait_name.ident == "Default" {
            let body = block.items.iter().find_map(|item| match item {
                ImplItem::Fn(f) if f.sig.ident == "default" => Some(f.block.clone()),
                _ => None,
            });
            let Some(body) = body else { bail!("impl Default for {self_name}: no fn default") };
            self.default_impls.push((self_name, body));
        } else if trait_name.ident == "Deserialize" {
            self.deserialize_impls.insert(self_name);
        }
        Ok(())
    }

    /// The struct or enum called `name`.
    pub fn type_def(&self, name: &str) -> Option<&TypeDef> {
        self.types.iter().find(|t| t.name == name)
    }

    /// The body of `impl Default for name`'s `default()`.
    pub fn default_impl(&self, name: &str) -> Option<&Block> {
        self.default_impls.iter().find(|(n, _)| n == name).map(|(_, b)| b)
    }
}

fn type_def(name: &syn::Ident, attrs: Vec<Attribute>, is_enum: bool, members: Vec<Member>) -> TypeDef {
    TypeDef { name: name.to_string(), docs: doc_lines(&attrs), attrs, is_enum, members }
}

/// A named field (`name: Type`) with its docs and attributes.
fn field(f: &syn::Field) -> Member {
    Member {
        name: f.ident.as_ref().map(ToString::to_string).unwrap_or_default(),
        docs: doc_lines(&f.attrs),
        attrs: f.attrs.clone(),
        types: vec![Ty::of(&f.ty)],
        has_named_fields: false,
    }
}

/// A variant (`Name`, `Name(T, U)`, `Name { .. }`) with its docs and attributes.
fn variant(v: &syn::Variant) -> Member {
    let types = match &v.fields {
        Fields::Unnamed(fields) => fields.unnamed.iter().map(|f| Ty::of(&f.ty)).collect(),
        _ => Vec::new(),
    };
    Member {
        name: v.ident.to_string(),
        docs: doc_lines(&v.attrs),
        attrs: v.attrs.clone(),
        types,
        has_named_fields: matches!(v.fields, Fields::Named(_)),
    }
}

/// The expression a block ends with: its value.
pub fn tail(block: &Block) -> Option<&Expr> {
    match block.stmts.last()? {
        syn::Stmt::Expr(expr, None) => Some(expr),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use anyhow::Context;

    use super::*;

    #[test]
    fn reads_structs_enums_and_default_impls() -> Result<()> {
        let src = r#"
            use x::y;
            /// A thing.
            ///
            /// Second paragraph.
            #[derive(Debug, Default)]
            #[serde(default)]
            pub struct Thing {
                /// Count.
                pub count: Option<Vec<usize>>,
                #[serde(rename = "b")]
                pub(crate) a: &'static std::collections::BTreeMap<String, f64>,
            }
            pub enum E { /// One.
                #[default] One, Two(String, u8), Three { x: u8 } }
            impl Default for Thing { fn default() -> Self { Thing { count: None, a: BTreeMap::new() } } }
            impl<'de> Deserialize<'de> for E { fn deserialize() {} }
            const N: usize = 4;
            fn f() -> u8 { 3 }
            #[cfg(test)]
            mod tests { struct Hidden { x: u8 } }
        "#;
        let mut items = Items::default();
        items.read(src)?;
        let thing = items.type_def("Thing").context("Thing")?;
        assert_eq!(thing.docs, ["A thing.", "", "Second paragraph."]);
        assert!(thing.derives().contains("Default"));
        assert_eq!(thing.members[0].types[0].to_string(), "Option<Vec<usize>>");
        assert_eq!(thing.members[1].types[0].to_string(), "BTreeMap<String, f64>");
        assert!(thing.members[1].attrs[0].path().is_ident("serde"));
        let e = items.type_def("E").context("E")?;
        assert!(e.is_enum);
        assert_eq!(e.members[0].docs, ["One."]);
        assert_eq!(e.members[1].types.len(), 2);
        assert!(e.members[2].has_named_fields);
        assert!(items.default_impl("Thing").and_then(tail).is_some());
        assert!(items.deserialize_impls.contains("E"));
        assert_eq!(items.consts[0].0, "N");
        assert_eq!(items.fns[0].0, "f");
        assert!(items.type_def("Hidden").is_none(), "items inside modules are not top-level");
        Ok(())
    }

    #[test]
    fn a_syntax_error_names_its_line() {
        let error = Items::default().read("struct A {\n  x: u8,\n  y u8 }").err().map(|e| e.to_string());
        assert!(error.as_deref().is_some_and(|e| e.starts_with("line 3")), "{error:?}");
    }
}
