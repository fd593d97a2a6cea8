//! Public items as the record's one-line declarations, printed by `prettyplease` (rustfmt's
//! layout) and joined onto one line: `pub fn wgpipe_compute::Grid::new(shape: &[usize]) ->
//! Result<Grid>`, `pub wgpipe_compute::ReadbackConfig::frames: u64`. Bodies, values and
//! attributes are left out; a declaration names the item by its public path.

use syn::punctuated::Punctuated;
use syn::{Attribute, Fields, ImplItem, Item, Signature, TraitItem, Type, Visibility};

/// `item` printed, its lines joined into one: `pub struct Name<T>;` as `pub struct Name<T>`.
fn one_line(item: Item) -> String {
    let text = prettyplease::unparse(&syn::File { shebang: None, attrs: Vec::new(), items: vec![item] });
    let joined = text.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join(" ");
    let tidy = [("( ", "("), (", )", ")"), (" )", ")"), ("< ", "<"), (", >", ">"), ("[ ", "["), (", ]", "]")];
    let mut line = tidy.iter().fold(joined, |line, (from, to)| line.replace(from, to));
    for end in ["{}", ";"] {
        line = line.strip_suffix(end).unwrap_or(&line).trim_end().to_owned();
    }
    line.strip_suffix(',').unwrap_or(&line).to_owned()
}

/// `text` with the declaration `keyword name` renamed to `keyword path`.
fn named(text: &str, keyword: &str, name: &syn::Ident, path: &str) -> String {
    text.replacen(&format!("{keyword} {name}"), &format!("{keyword} {path}"), 1)
}

/// A type as written: `Option<Vec<u8>>`.
pub fn type_text(ty: &Type) -> String {
    let alias: syn::ItemType = syn::parse_quote!(type T = #ty;);
    one_line(Item::Type(alias)).trim_start_matches("type T = ").to_owned()
}

/// A function's declaration at `path`, with `vis`. Binding modes (`mut self`, `mut x: T`)
/// are the body's business, not the API's, and are left out.
pub fn function(sig: &Signature, vis: Visibility, path: &str) -> String {
    let mut sig = sig.clone();
    for input in &mut sig.inputs {
        match input {
            syn::FnArg::Receiver(r) if r.reference.is_none() => r.mutability = None,
            syn::FnArg::Typed(typed) => {
                if let syn::Pat::Ident(binding) = typed.pat.as_mut() {
                    binding.mutability = None;
                }
            }
            syn::FnArg::Receiver(_) => {}
        }
    }
    let item = syn::ItemFn { attrs: Vec::new(), vis, sig: sig.clone(), block: Box::new(syn::parse_quote!({})) };
    named(&one_line(Item::Fn(item)), "fn", &sig.ident, path)
}

/// The declaration of `item` at `path`: its kind, name and generics, a function's
/// signature, a const's or static's type, a type alias's type. `None` for items the record
/// does not list (a `use`, an impl, a module, a macro).
pub fn declaration(item: &Item, path: &str) -> Option<String> {
    let pub_ = || Visibility::Public(Default::default());
    Some(match item {
        Item::Fn(f) => function(&f.sig, pub_(), path),
        Item::Struct(s) => {
            let header = syn::ItemStruct {
                attrs: Vec::new(),
                fields: Fields::Unit,
                semi_token: Some(Default::default()),
                ..s.clone()
            };
            let tuple =
                matches!(s.fields, Fields::Unnamed(_)).then(|| tuple_fields(&s.fields, true)).unwrap_or_default();
            let line = format!("{}{tuple}", named(&one_line(Item::Struct(header)), "struct", &s.ident, path));
            format!("{}{line}", non_exhaustive(&s.attrs))
        }
        Item::Enum(e) => {
            let header = syn::ItemEnum { attrs: Vec::new(), variants: Punctuated::new(), ..e.clone() };
            format!("{}{}", non_exhaustive(&e.attrs), named(&one_line(Item::Enum(header)), "enum", &e.ident, path))
        }
        Item::Union(u) => {
            let header = syn::ItemStruct {
                attrs: Vec::new(),
                vis: u.vis.clone(),
                struct_token: Default::default(),
                ident: u.ident.clone(),
                generics: u.generics.clone(),
                fields: Fields::Unit,
                semi_token: Some(Default::default()),
            };
            named(&one_line(Item::Struct(header)), "struct", &u.ident, path).replacen("struct", "union", 1)
        }
        Item::Trait(t) => {
            let header = syn::ItemTrait { attrs: Vec::new(), items: Vec::new(), ..t.clone() };
            named(&one_line(Item::Trait(header)), "trait", &t.ident, path)
        }
        Item::Type(t) => {
            named(&one_line(Item::Type(syn::ItemType { attrs: Vec::new(), ..t.clone() })), "type", &t.ident, path)
        }
        Item::Const(c) => format!("pub const {path}: {}", type_text(&c.ty)),
        Item::Static(s) => {
            let mutable = if matches!(s.mutability, syn::StaticMutability::Mut(_)) { "mut " } else { "" };
            format!("pub static {mutable}{path}: {}", type_text(&s.ty))
        }
        _ => return None,
    })
}

/// `#[non_exhaustive] ` where `attrs` hold it (adding or removing it changes what a user's
/// code may write: a struct literal, an exhaustive match), else nothing.
fn non_exhaustive(attrs: &[Attribute]) -> &'static str {
    if attrs.iter().any(|a| a.path().is_ident("non_exhaustive")) { "#[non_exhaustive] " } else { "" }
}

/// A tuple struct's fields (`(pub u32, _)`: a private field's type is no part of the API) or
/// a tuple variant's (`(u32, String)`).
fn tuple_fields(fields: &Fields, of_struct: bool) -> String {
    let fields: Vec<String> = fields
        .iter()
        .map(|f| match (&f.vis, of_struct) {
            (_, false) => type_text(&f.ty),
            (Visibility::Public(_), true) => format!("pub {}", type_text(&f.ty)),
            (_, true) => "_".to_owned(),
        })
        .collect();
    format!("({})", fields.join(", "))
}

/// The members of `item` at `path` that the record lists, each with its own path, its line
/// and its attributes (for its `cfg`s): a struct's or union's public named fields, an enum's
/// variants, a trait's items. Members hidden from the docs are left out.
pub fn members<'a>(item: &'a Item, path: &str) -> Vec<(String, String, &'a [Attribute])> {
    let fields = |fields: &mut dyn Iterator<Item = &'a syn::Field>| -> Vec<(String, String, &'a [Attribute])> {
        fields.filter(|f| matches!(f.vis, Visibility::Public(_))).filter_map(|f| field(f, path)).collect()
    };
    let mut found = match item {
        Item::Struct(s) => fields(&mut s.fields.iter()),
        Item::Union(u) => fields(&mut u.fields.named.iter()),
        Item::Enum(e) => e.variants.iter().map(|v| variant(v, path)).collect(),
        Item::Trait(t) => t.items.iter().filter_map(|i| trait_item(i, path)).collect(),
        _ => Vec::new(),
    };
    found.retain(|(_, _, attrs)| !super::names::is_doc_hidden(*attrs) && !crate::source_tree::is_cfg_test(*attrs));
    found
}

/// A named field: `pub wgpipe_compute::ReadbackConfig::frames: u64`.
fn field<'a>(f: &'a syn::Field, path: &str) -> Option<(String, String, &'a [Attribute])> {
    let at = format!("{path}::{}", f.ident.as_ref()?);
    Some((at.clone(), format!("pub {at}: {}", type_text(&f.ty)), f.attrs.as_slice()))
}

/// A variant: `pub wgpipe::Select::Index(usize)`, `pub E::V { a: u8 }`.
fn variant<'a>(v: &'a syn::Variant, path: &str) -> (String, String, &'a [Attribute]) {
    let at = format!("{path}::{}", v.ident);
    let fields = match &v.fields {
        Fields::Unit => String::new(),
        Fields::Unnamed(_) => tuple_fields(&v.fields, false),
        Fields::Named(named) => {
            let fields: Vec<String> = named
                .named
                .iter()
                .filter_map(|f| Some(format!("{}: {}", f.ident.as_ref()?, type_text(&f.ty))))
                .collect();
            format!(" {{ {} }}", fields.join(", "))
        }
    };
    (at.clone(), format!("{}pub {at}{fields}", non_exhaustive(&v.attrs)), v.attrs.as_slice())
}

/// A trait's function, type or const: `pub fn wgpipe_compute::FrameSource::frame_bytes(&self) -> usize`.
fn trait_item<'a>(item: &'a TraitItem, path: &str) -> Option<(String, String, &'a [Attribute])> {
    Some(match item {
        TraitItem::Fn(f) => {
            let at = format!("{path}::{}", f.sig.ident);
            (at.clone(), function(&f.sig, Visibility::Public(Default::default()), &at), f.attrs.as_slice())
        }
        TraitItem::Type(t) => {
            let at = format!("{path}::{}", t.ident);
            let bounds: Vec<String> =
                t.bounds.iter().map(|b| quote::ToTokens::to_token_stream(b).to_string()).collect();
            let bounds = if bounds.is_empty() { String::new() } else { format!(": {}", bounds.join(" + ")) };
            (at.clone(), format!("pub type {at}{bounds}"), t.attrs.as_slice())
        }
        TraitItem::Const(c) => {
            let at = format!("{path}::{}", c.ident);
            (at.clone(), format!("pub const {at}: {}", type_text(&c.ty)), c.attrs.as_slice())
        }
        _ => return None,
    })
}

/// The public functions, consts and types of an inherent impl of the type at `path`, each
/// with its own path, line and attributes.
pub fn inherent_items<'a>(items: &'a [ImplItem], path: &str) -> Vec<(String, String, &'a [Attribute])> {
    let public = |vis: &Visibility| matches!(vis, Visibility::Public(_));
    items
        .iter()
        .filter_map(|item| match item {
            ImplItem::Fn(f) if public(&f.vis) => {
                let at = format!("{path}::{}", f.sig.ident);
                Some((at.clone(), function(&f.sig, f.vis.clone(), &at), f.attrs.as_slice()))
            }
            ImplItem::Const(c) if public(&c.vis) => {
                let at = format!("{path}::{}", c.ident);
                Some((at.clone(), format!("pub const {at}: {}", type_text(&c.ty)), c.attrs.as_slice()))
            }
            ImplItem::Type(t) if public(&t.vis) => {
                let at = format!("{path}::{}", t.ident);
                Some((at.clone(), format!("pub type {at} = {}", type_text(&t.ty)), t.attrs.as_slice()))
            }
            _ => None,
        })
        .filter(|(_, _, attrs)| !super::names::is_doc_hidden(*attrs) && !crate::source_tree::is_cfg_test(*attrs))
        .collect()
}

/// The header of trait impl `imp`, its self type and trait path given: `impl<T> Trait<T>
/// for Type<T>`.
pub fn impl_header(imp: &syn::ItemImpl, trait_path: syn::Path, self_ty: Type) -> String {
    let mut header = syn::ItemImpl { attrs: Vec::new(), items: Vec::new(), self_ty: Box::new(self_ty), ..imp.clone() };
    if let Some((bang, _, for_)) = imp.trait_.clone() {
        header.trait_ = Some((bang, trait_path, for_));
    }
    one_line(Item::Impl(header))
}

/// The `cfg` attributes among `attrs`, as written: `#[cfg(feature = "hdf5")]`.
pub fn cfgs<'a>(attrs: impl IntoIterator<Item = &'a Attribute>) -> Vec<String> {
    attrs
        .into_iter()
        .filter(|a| a.path().is_ident("cfg"))
        .map(|a| {
            let marker: syn::ItemStruct = syn::parse_quote!(#a struct S;);
            one_line(Item::Struct(marker)).trim_end_matches(" struct S").to_owned()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declarations_on_one_line_at_their_public_path() -> anyhow::Result<()> {
        let item = |src: &str| -> anyhow::Result<Item> { Ok(syn::parse_str(src)?) };
        let long = item(
            "pub fn open_with_a_long_name<T: AsRef<Path>>(path: T, options: &SinkOptions, layout: &StreamLayout, \
             frames: u64) -> Result<Box<dyn Sink>> where T: Clone { todo!() }",
        )?;
        assert_eq!(
            declaration(&long, "c::m::open_with_a_long_name").as_deref(),
            Some(
                "pub fn c::m::open_with_a_long_name<T: AsRef<Path>>(path: T, options: &SinkOptions, layout: \
                 &StreamLayout, frames: u64) -> Result<Box<dyn Sink>> where T: Clone"
            )
        );
        let tuple = item("pub struct Id(pub u32, String);")?;
        assert_eq!(declaration(&tuple, "c::Id").as_deref(), Some("pub struct c::Id(pub u32, _)"));
        let method: syn::ImplItemFn = syn::parse_str("pub fn with(mut self, mut n: u8, r: &mut u8) -> Self { self }")?;
        assert_eq!(
            function(&method.sig, method.vis, "c::S::with"),
            "pub fn c::S::with(self, n: u8, r: &mut u8) -> Self"
        );
        let e = item("#[derive(Debug)] pub enum E<'a> { A, B(&'a str), #[doc(hidden)] H, C { x: u8 } }")?;
        assert_eq!(declaration(&e, "c::E").as_deref(), Some("pub enum c::E<'a>"));
        let variants: Vec<String> = members(&e, "c::E").into_iter().map(|(_, line, _)| line).collect();
        assert_eq!(variants, ["pub c::E::A", "pub c::E::B(&'a str)", "pub c::E::C { x: u8 }"]);
        let c = item("pub const N: [u8; 4] = [0; 4];")?;
        assert_eq!(declaration(&c, "c::N").as_deref(), Some("pub const c::N: [u8; 4]"));
        let attr: syn::ItemStruct = syn::parse_str("#[cfg(all(feature = \"a\", unix))] #[derive(Debug)] struct S;")?;
        assert_eq!(cfgs(&attr.attrs), ["#[cfg(all(feature = \"a\", unix))]"]);
        Ok(())
    }
}
