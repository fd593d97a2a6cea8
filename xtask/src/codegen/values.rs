//! Default values as TOML: the Rust expressions of `impl Default` literals, `#[serde(default
//! = "...")]` functions and consts rendered as what a user would write in the file.

use anyhow::{Context, Result, bail};

use super::rust_items::{Items, Tok, Ty, TypeDef, group_end, split_top, tokens_text};
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
                // The function's value: its last expression.
                let last = body.iter().rposition(|t| t.is(";")).map_or(0, |s| s + 1);
                self.render(&body[last..], ty)
            }
            Some(None) => self.type_default(ty),
            None if container.default.is_some() => match self.items.default_impl(&owner.name) {
                Some(body) => {
                    let literal = struct_literal(body, &owner.name)
                        .with_context(|| format!("impl Default for {}", owner.name))?;
                    let expr = literal
                        .iter()
                        .find(|(name, _)| name == field)
                        .with_context(|| format!("impl Default for {}: no value for {field}", owner.name))?;
                    self.render(&expr.1, ty)
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
                let variant =
                    def.members
                        .iter()
                        .find(|v| def.is_enum && v.attrs.iter().any(|a| a.path == "default"))
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

    /// The expression `toks`, of type `ty`, as TOML.
    pub fn render(&self, toks: &[Tok], ty: &Ty) -> Result<Value> {
        let mut toks = toks;
        while let [rest @ .., dot, Tok::Ident(method), open, close] = toks
            && dot.is(".")
            && open.is("(")
            && close.is(")")
            && CONVERSIONS.contains(&method.as_str())
        {
            toks = rest;
        }
        let fail = || format!("cannot show the default `{}` (type {ty}) as TOML", tokens_text(toks));
        let value = match toks {
            [Tok::Str(s)] => Value::Given(toml_string(s)),
            [Tok::Lit(n)] => Value::Given(number(n, ty).with_context(fail)?),
            [minus, Tok::Lit(n)] if minus.is("-") => Value::Given(format!("-{}", number(n, ty).with_context(fail)?)),
            [Tok::Ident(b)] if b == "true" || b == "false" => Value::Given(b.clone()),
            [Tok::Ident(none)] if none == "None" => Value::Unset,
            [Tok::Ident(name)] if name.chars().all(|c| c.is_ascii_uppercase() || c == '_' || c.is_ascii_digit()) => {
                let expr = self.unique(&self.items.consts, name, "const")?;
                self.render(expr, ty)?
            }
            [Tok::Ident(mac), bang, open, .., close]
                if mac == "vec" && bang.is("!") && open.is("[") && close.is("]") =>
            {
                self.list(&toks[3..toks.len() - 1], ty)?
            }
            [open, .., close] if open.is("[") && close.is("]") => self.list(&toks[1..toks.len() - 1], ty)?,
            _ => match call(toks) {
                Some((path, args)) => self.call(&path, args, ty).with_context(fail)?,
                None => match path(toks).as_deref() {
                    Some([enum_name, variant]) => {
                        let def = self.items.type_def(enum_name).with_context(fail)?;
                        self.render_variant(def, variant)?
                    }
                    _ => bail!(fail()),
                },
            },
        };
        Ok(value)
    }

    /// A call `path(args)` as TOML: constructors of the value they are given, `Some`, a
    /// variant of an enum serde reads by its content, or a type's default.
    fn call(&self, path: &[String], args: &[Tok], ty: &Ty) -> Result<Value> {
        let last = path.last().map(String::as_str).unwrap_or_default();
        match (path, last) {
            ([some], _) if some == "Some" => self.render(args, arg(ty, 0)?),
            (_, "from") if path.len() == 2 => self.render(args, ty),
            (_, "new" | "default") if args.is_empty() => self.type_default(ty),
            ([enum_name, variant], _) => {
                let def = self.items.type_def(enum_name).with_context(|| format!("no type {enum_name}"))?;
                let member = def
                    .members
                    .iter()
                    .find(|m| &m.name == variant)
                    .with_context(|| format!("{enum_name} has no variant {variant}"))?;
                match member.types.as_slice() {
                    [payload] => self.render(args, payload),
                    _ => bail!("{enum_name}::{variant} does not hold one value"),
                }
            }
            _ => bail!("unknown call"),
        }
    }

    /// The items of a list literal as a TOML array.
    fn list(&self, toks: &[Tok], ty: &Ty) -> Result<Value> {
        let element = arg(ty, 0)?;
        let parts = split_top(toks)?
            .into_iter()
            .map(|piece| match self.render(piece, element)? {
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
    fn unique<'i>(&self, list: &'i [(String, Vec<Tok>)], name: &str, what: &str) -> Result<&'i [Tok]> {
        let mut found = list.iter().filter(|(n, _)| n == name);
        match (found.next(), found.next()) {
            (Some((_, toks)), None) => Ok(toks),
            (None, _) => bail!("no {what} {name} in the config model's files"),
            (Some(_), Some(_)) => bail!("two {what}s named {name} in the config model's files: rename one"),
        }
    }
}

/// A number literal as TOML: its type suffix removed; an integer written for a float gets
/// its `.0`.
fn number(literal: &str, ty: &Ty) -> Result<String> {
    let suffix = INTEGERS.iter().chain(FLOATS).find(|s| literal.ends_with(*s) && !literal.starts_with("0x"));
    let digits = suffix.map_or(literal, |s| literal[..literal.len() - s.len()].trim_end_matches('_'));
    if digits.is_empty() || !digits.starts_with(|c: char| c.is_ascii_digit()) {
        bail!("not a number: {literal}");
    }
    let is_float_text = digits.contains(['.', 'e', 'E']) && !digits.starts_with("0x");
    Ok(if is_float(ty) && !is_float_text { format!("{digits}.0") } else { digits.to_owned() })
}

/// `a::b::c(args)`: the path's names and the argument tokens.
fn call(toks: &[Tok]) -> Option<(Vec<String>, &[Tok])> {
    let open = toks.iter().position(|t| t.is("("))?;
    let close = group_end(toks, open).ok()?;
    if close != toks.len() - 1 {
        return None;
    }
    Some((path(&toks[..open])?, &toks[open + 1..close]))
}

/// `a::b::c` (turbofish arguments left out): its names.
fn path(toks: &[Tok]) -> Option<Vec<String>> {
    let mut names = Vec::new();
    let mut j = 0;
    while j < toks.len() {
        match &toks[j] {
            Tok::Ident(n) => names.push(n.clone()),
            t if t.is("::") => {}
            t if t.is("<") => {
                // A turbofish: skip to its `>`.
                j += toks[j..].iter().position(|t| t.is(">"))?;
            }
            _ => return None,
        }
        j += 1;
    }
    (!names.is_empty()).then_some(names)
}

/// The fields of the struct literal (`Name { .. }` or `Self { .. }`) that `body` ends with.
fn struct_literal(body: &[Tok], name: &str) -> Result<Vec<(String, Vec<Tok>)>> {
    let mut start = None;
    let mut j = 0;
    while j + 1 < body.len() {
        let names_type = body[j].is_ident(name) || body[j].is_ident("Self");
        if names_type && body[j + 1].is("{") {
            start = Some(j + 1);
        }
        j = if body[j].is("(") || body[j].is("[") || body[j].is("{") { group_end(body, j)? + 1 } else { j + 1 };
    }
    let open = start.with_context(|| format!("the body does not end with a `{name} {{ .. }}` literal"))?;
    let close = group_end(body, open)?;
    split_top(&body[open + 1..close])?
        .into_iter()
        .map(|piece| match piece {
            [Tok::Ident(field), colon, expr @ ..] if colon.is(":") && !expr.is_empty() => {
                Ok((field.clone(), expr.to_vec()))
            }
            _ => bail!("`{}`: give each field as `name: value`", tokens_text(piece)),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::rust_items::{parse_type, tokenize};
    use super::*;

    fn render(src: &str, ty: &str, expr: &str) -> Result<Value> {
        let mut items = Items::default();
        items.read(src)?;
        Renderer { items: &items }.render(&tokenize(expr)?, &parse_type(&tokenize(ty)?)?)
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
