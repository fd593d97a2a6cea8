//! Default values as TOML: the Rust expressions of `impl Default` literals, `#[serde(default
//! = "...")]` functions and consts rendered as what a user would write in the file.

use anyhow::{Context, Result, bail};

use quote::ToTokens;
use syn::punctuated::Punctuated;
use syn::{Block, Expr, Lit, Token, UnOp};

use super::rust_items::{Items, Ty, TypeDef, tail};
use super::serde_attrs::{SerdeAttrs, variant_name};

/// What a key holds when the file does not give it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// `None`: the program decides (the doc comment says how).
    Unset,
    /// An empty list or table.
    Empty(String),
    /// A value, as TOML.
    Given(String),
    /// The key must be given.
    Required,
}

/// Integer types, by name.
const INTEGERS: &[&str] = &["u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32", "i64", "i128", "isize"];
/// Float types, by name.
const FLOATS: &[&str] = &["f32", "f64"];
/// Conversions that do not change a value: `"x".to_owned()` is `"x"`.
const CONVERSIONS: &[&str] = &["to_owned", "to_string", "into", "to_path_buf", "clone", "into_owned"];

/// Whether `ty` is an integer type.
pub fn is_integer(ty: &Ty) -> bool {
    INTEGERS.contains(&ty.name.as_str())
}

/// Whether `ty` is a float type.
pub fn is_float(ty: &Ty) -> bool {
    FLOATS.contains(&ty.name.as_str())
}

/// Whether `ty` is a list type.
pub fn is_list(ty: &Ty) -> bool {
    ["Vec", "BTreeSet", "HashSet"].contains(&ty.name.as_str())
}

/// Whether `ty` is a map type (a TOML table with any keys).
pub fn is_map(ty: &Ty) -> bool {
    ["BTreeMap", "HashMap"].contains(&ty.name.as_str())
}

/// `ty`'s first type argument, or an error naming `ty`.
pub fn arg(ty: &Ty, n: usize) -> Result<&Ty> {
    ty.args.get(n).with_context(|| format!("type {ty} lacks argument {n}"))
}

/// TOML's basic string for `s`.
pub fn toml_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Renders default values with the definitions of `items`.
pub struct Renderer<'a> {
    /// Where consts, functions and enums are looked up.
    pub items: &'a Items,
}

impl Renderer<'_> {
    /// The value serde gives field `field` of `owner` when the file leaves it out.
    pub fn field_default(&self, owner: &TypeDef, field: &str, ty: &Ty, attrs: &SerdeAttrs) -> Result<Value> {
        let container = SerdeAttrs::of(&owner.attrs, &owner.name)?;
        match &attrs.default {
            Some(Some(path)) => {
                let name = path.rsplit("::").next().unwrap_or(path);
                let body = self.unique(&self.items.fns, name, "function")?;
                let value = tail(body).with_context(|| format!("fn {name} does not end with its value"))?;
                self.render(value, ty)
            }
            Some(None) => self.type_default(ty),
            None if container.default.is_some() => match self.items.default_impl(&owner.name) {
                Some(body) => {
                    let expr = literal_field(body, &owner.name, field)
                        .with_context(|| format!("impl Default for {}", owner.name))?;
                    self.render(expr, ty)
                }
                None if owner.derives().contains("Default") => self.type_default(ty),
                None => bail!("{}: #[serde(default)] without a Default impl", owner.name),
            },
            None if ty.name == "Option" => Ok(Value::Unset),
            None => Ok(Value::Required),
        }
    }

    /// `Default::default()` of `ty`.
    fn type_default(&self, ty: &Ty) -> Result<Value> {
        let name = ty.name.as_str();
        Ok(match name {
            "Option" => Value::Unset,
            _ if is_list(ty) => Value::Empty("[]".to_owned()),
            _ if is_map(ty) => Value::Empty("{}".to_owned()),
            "String" | "PathBuf" => Value::Given("\"\"".to_owned()),
            "bool" => Value::Given("false".to_owned()),
            _ if is_integer(ty) => Value::Given("0".to_owned()),
            _ if is_float(ty) => Value::Given("0.0".to_owned()),
            _ => {
                let def = self.items.type_def(name).with_context(|| format!("no default known for type {ty}"))?;
                let variant = def
                    .members
                    .iter()
                    .find(|v| def.is_enum && v.attrs.iter().any(|a| a.path().is_ident("default")))
                    .with_context(|| format!("{name}: derived Default of a type the reference cannot show"))?;
                self.render_variant(def, &variant.name)?
            }
        })
    }

    /// A unit variant of a derived enum as the string serde reads.
    fn render_variant(&self, def: &TypeDef, variant: &str) -> Result<Value> {
        let rule = SerdeAttrs::of(&def.attrs, &def.name)?.rename_all;
        let member = def
            .members
            .iter()
            .find(|m| m.name == variant)
            .with_context(|| format!("{} has no variant {variant}", def.name))?;
        let name = match SerdeAttrs::of(&member.attrs, &member.name)?.rename {
            Some(name) => name,
            None => variant_name(variant, rule.as_deref())?,
        };
        Ok(Value::Given(toml_string(&name)))
    }

    /// The expression `expr`, of type `ty`, as TOML.
    pub fn render(&self, expr: &Expr, ty: &Ty) -> Result<Value> {
        let expr = without_conversions(expr);
        let fail = || format!("cannot show the default `{}` (type {ty}) as TOML", expr.to_token_stream());
        let value = match expr {
            Expr::Lit(lit) => literal(&lit.lit, ty).with_context(fail)?,
            Expr::Unary(syn::ExprUnary { op: UnOp::Neg(_), expr: inner, .. }) => match inner.as_ref() {
                Expr::Lit(syn::ExprLit { lit: lit @ (Lit::Int(_) | Lit::Float(_)), .. }) => {
                    Value::Given(format!("-{}", number(lit, ty).with_context(fail)?))
                }
                _ => bail!(fail()),
            },
            Expr::Path(p) => match path_names(&p.path).as_slice() {
                [none] if none == "None" => Value::Unset,
                [name] if name.chars().all(|c| c.is_ascii_uppercase() || c == '_' || c.is_ascii_digit()) => {
                    let expr = self.unique(&self.items.consts, name, "const")?;
                    self.render(expr, ty)?
                }
                [enum_name, variant] => {
                    let def = self.items.type_def(enum_name).with_context(fail)?;
                    self.render_variant(def, variant)?
                }
                _ => bail!(fail()),
            },
            Expr::Macro(m) if m.mac.path.is_ident("vec") => {
                let items =
                    m.mac.parse_body_with(Punctuated::<Expr, Token![,]>::parse_terminated).with_context(fail)?;
                self.list(&items, ty)?
            }
            Expr::Array(array) => self.list(&array.elems, ty)?,
            Expr::Call(call) => match call.func.as_ref() {
                Expr::Path(p) => self.call(&path_names(&p.path), &call.args, ty).with_context(fail)?,
                _ => bail!(fail()),
            },
            _ => bail!(fail()),
        };
        Ok(value)
    }

    /// A call `path(args)` as TOML: constructors of the value they are given, `Some`, a
    /// variant of an enum serde reads by its content, or a type's default.
    fn call(&self, path: &[String], args: &Punctuated<Expr, Token![,]>, ty: &Ty) -> Result<Value> {
        let last = path.last().map(String::as_str).unwrap_or_default();
        let one_arg = || match args.iter().collect::<Vec<_>>().as_slice() {
            [arg] => Ok(*arg),
            _ => bail!("{} takes one value here", path.join("::")),
        };
        match (path, last) {
            ([some], _) if some == "Some" => self.render(one_arg()?, arg(ty, 0)?),
            (_, "from") if path.len() == 2 => self.render(one_arg()?, ty),
            (_, "new" | "default") if args.is_empty() => self.type_default(ty),
            ([enum_name, variant], _) => {
                let def = self.items.type_def(enum_name).with_context(|| format!("no type {enum_name}"))?;
                let member = def
                    .members
                    .iter()
                    .find(|m| &m.name == variant)
                    .with_context(|| format!("{enum_name} has no variant {variant}"))?;
                match member.types.as_slice() {
                    [payload] => self.render(one_arg()?, payload),
                    _ => bail!("{enum_name}::{variant} does not hold one value"),
                }
            }
            _ => bail!("unknown call"),
        }
    }

    /// The items of a list literal as a TOML array.
    fn list(&self, items: &Punctuated<Expr, Token![,]>, ty: &Ty) -> Result<Value> {
        let element = arg(ty, 0)?;
        let parts = items
            .iter()
            .map(|item| match self.render(item, element)? {
                Value::Given(v) | Value::Empty(v) => Ok(v),
                other => bail!("a list item is {other:?}"),
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(if parts.is_empty() {
            Value::Empty("[]".to_owned())
        } else {
            Value::Given(format!("[{}]", parts.join(", ")))
        })
    }

    /// The one item called `name` among `list`.
    fn unique<'i, T>(&self, list: &'i [(String, T)], name: &str, what: &str) -> Result<&'i T> {
        let mut found = list.iter().filter(|(n, _)| n == name);
        match (found.next(), found.next()) {
            (Some((_, item)), None) => Ok(item),
            (None, _) => bail!("no {what} {name} in the config model's files"),
            (Some(_), Some(_)) => bail!("two {what}s named {name} in the config model's files: rename one"),
        }
    }
}

/// `expr` without the conversions that do not change its value: `"x".to_owned()` is `"x"`.
fn without_conversions(mut expr: &Expr) -> &Expr {
    while let Expr::MethodCall(call) = expr
        && call.args.is_empty()
        && CONVERSIONS.iter().any(|c| call.method == c)
    {
        expr = &call.receiver;
    }
    expr
}

/// A literal of type `ty` as TOML.
fn literal(lit: &Lit, ty: &Ty) -> Result<Value> {
    Ok(Value::Given(match lit {
        Lit::Str(s) => toml_string(&s.value()),
        Lit::Int(_) | Lit::Float(_) => number(lit, ty)?,
        Lit::Bool(b) => b.value.to_string(),
        _ => bail!("not a string, number or boolean"),
    }))
}

/// A number literal as TOML, as written (`100_000`, `1e-7`) without its type suffix; an
/// integer written for a float gets its `.0`.
fn number(lit: &Lit, ty: &Ty) -> Result<String> {
    let (text, suffix, is_int) = match lit {
        Lit::Int(i) => (i.to_string(), i.suffix().to_owned(), true),
        Lit::Float(f) => (f.to_string(), f.suffix().to_owned(), false),
        _ => bail!("not a number: {}", lit.to_token_stream()),
    };
    let digits = text[..text.len() - suffix.len()].trim_end_matches('_');
    Ok(if is_int && is_float(ty) { format!("{digits}.0") } else { digits.to_owned() })
}

/// The names of a path's segments (turbofish arguments left out): `a::b::<T>::c` is `[a, b, c]`.
fn path_names(path: &syn::Path) -> Vec<String> {
    path.segments.iter().map(|s| s.ident.to_string()).collect()
}

/// The value of field `field` in the struct literal (`Name { .. }` or `Self { .. }`) that
/// `body` ends with.
fn literal_field<'b>(body: &'b Block, name: &str, field: &str) -> Result<&'b Expr> {
    let literal = match tail(body) {
        Some(Expr::Struct(s)) if s.path.is_ident(name) || s.path.is_ident("Self") => s,
        _ => bail!("the body does not end with a `{name} {{ .. }}` literal"),
    };
    if let Some(rest) = &literal.rest {
        bail!("`..{}`: give each field as `name: value`", rest.to_token_stream());
    }
    let mut found = None;
    for value in &literal.fields {
        match (&value.member, value.colon_token) {
            (syn::Member::Named(ident), Some(_)) if ident == field => found = Some(&value.expr),
            (syn::Member::Named(_), Some(_)) => {}
            _ => bail!("`{}`: give each field as `name: value`", value.to_token_stream()),
        }
    }
    found.with_context(|| format!("no value for {field}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(src: &str, ty: &str, expr: &str) -> Result<Value> {
        let mut items = Items::default();
        items.read(src)?;
        Renderer { items: &items }.render(&syn::parse_str(expr)?, &Ty::of(&syn::parse_str(ty)?))
    }

    #[test]
    fn renders_rust_defaults_as_toml() -> Result<()> {
        let src = "#[derive(Deserialize)] #[serde(rename_all = \"kebab-case\")] enum B { ZeroFlux, Periodic }\n\
                   enum S { Text(String), Index(usize) }\nconst EDGE: usize = 256;";
        let given = |s: &str| Value::Given(s.to_owned());
        assert_eq!(render(src, "String", "\"a\\\"b\".to_owned()")?, given("\"a\\\"b\""));
        assert_eq!(render(src, "PathBuf", "PathBuf::from(\"out.h5\")")?, given("\"out.h5\""));
        assert_eq!(render(src, "u64", "100_000u64")?, given("100_000"));
        assert_eq!(render(src, "f32", "1")?, given("1.0"));
        assert_eq!(render(src, "f64", "-1e-7")?, given("-1e-7"));
        assert_eq!(render(src, "B", "B::ZeroFlux")?, given("\"zero-flux\""));
        assert_eq!(render(src, "S", "S::Text(\"all\".into())")?, given("\"all\""));
        assert_eq!(render(src, "Option<Vec<usize>>", "Some(vec![EDGE, 2])")?, given("[256, 2]"));
        assert_eq!(render(src, "Option<u8>", "None")?, Value::Unset);
        assert_eq!(render(src, "Vec<u8>", "Vec::new()")?, Value::Empty("[]".to_owned()));
        assert!(render(src, "u8", "compute(3)").is_err(), "a call it does not know is an error, not a guess");
        Ok(())
    }

    #[test]
    fn field_defaults_follow_serdes_rules() -> Result<()> {
        let src = r#"
            #[serde(default)] struct A { x: u32, y: String, z: Option<u8> }
            impl Default for A { fn default() -> Self { let _n = 1; A { x: 7, y: "s".to_owned(), z: Some(2) } } }
            #[derive(Default)] #[serde(default)] struct B { x: u32 }
            struct C { #[serde(default = "crate::c_x")] x: u32, y: Option<u8>, #[serde(default)] v: Vec<u8>, w: u8 }
            fn c_x() -> u32 { 5 }
        "#;
        let mut items = Items::default();
        items.read(src)?;
        let r = Renderer { items: &items };
        let default_of = |owner: &str, field: &str| -> Result<Value> {
            let def = items.type_def(owner).context("type")?;
            let m = def.members.iter().find(|m| m.name == field).context("field")?;
            r.field_default(def, field, &m.types[0], &SerdeAttrs::of(&m.attrs, field)?)
        };
        assert_eq!(default_of("A", "x")?, Value::Given("7".to_owned()));
        assert_eq!(default_of("A", "z")?, Value::Given("2".to_owned()));
        assert_eq!(default_of("B", "x")?, Value::Given("0".to_owned()));
        assert_eq!(default_of("C", "x")?, Value::Given("5".to_owned()));
        assert_eq!(default_of("C", "y")?, Value::Unset);
        assert_eq!(default_of("C", "v")?, Value::Empty("[]".to_owned()));
        assert_eq!(default_of("C", "w")?, Value::Required);
        Ok(())
    }
}
