//! A small reader of Rust source text: the items a generated page is made from (structs and
//! enums with their doc comments and attributes, `impl Default` literals, consts and
//! functions), found without compiling the crate and without a parser dependency.
//!
//! It reads items at a file's top level only; bodies are kept as tokens for the renderer to
//! read, and everything else (uses, other impls, modules, macros) is skipped.

use std::collections::BTreeSet;

use anyhow::{Context, Result, bail};

/// One token of Rust source. Comments are dropped except doc comments.
#[derive(Debug, Clone, PartialEq)]
pub enum Tok {
    /// An identifier or keyword (raw identifiers without their `r#`).
    Ident(String),
    /// A string literal, unescaped.
    Str(String),
    /// A number, character or byte literal, as written.
    Lit(String),
    /// A lifetime such as `'de`.
    Lifetime(String),
    /// Punctuation: one character, or `::`, `->` or `=>`.
    Punct(String),
    /// The text of one `///` line (its first space removed).
    Doc(String),
}

impl Tok {
    /// Whether this is punctuation `p`.
    pub fn is(&self, p: &str) -> bool {
        matches!(self, Tok::Punct(q) if q == p)
    }

    /// Whether this is identifier `name`.
    pub fn is_ident(&self, name: &str) -> bool {
        matches!(self, Tok::Ident(i) if i == name)
    }

    /// The token as source text, for messages.
    pub fn text(&self) -> String {
        match self {
            Tok::Ident(s) | Tok::Lit(s) | Tok::Punct(s) => s.clone(),
            Tok::Str(s) => format!("{s:?}"),
            Tok::Lifetime(s) => format!("'{s}"),
            Tok::Doc(s) => format!("///{s}"),
        }
    }
}

/// Tokens as source text, for messages.
pub fn tokens_text(toks: &[Tok]) -> String {
    let mut out = String::new();
    for (i, t) in toks.iter().enumerate() {
        let glue = i == 0
            || matches!(t, Tok::Punct(p) if [".", ",", ")", "]", ":", "::", "(", "!"].contains(&p.as_str()))
            || matches!(&toks[i - 1], Tok::Punct(p) if ["(", "[", "::", ".", "!"].contains(&p.as_str()));
        if !glue {
            out.push(' ');
        }
        out.push_str(&t.text());
    }
    out
}

/// Splits Rust source into tokens.
pub fn tokenize(src: &str) -> Result<Vec<Tok>> {
    let chars: Vec<char> = src.chars().collect();
    let mut toks = Vec::new();
    let mut i = 0;
    let line_of = |i: usize| chars[..i].iter().filter(|c| **c == '\n').count() + 1;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c.is_whitespace() {
            i += 1;
        } else if c == '/' && next == Some('/') {
            let end = chars[i..].iter().position(|c| *c == '\n').map_or(chars.len(), |n| i + n);
            let text: String = chars[i..end].iter().collect();
            if let Some(doc) = text.strip_prefix("///").filter(|d| !d.starts_with('/')) {
                toks.push(Tok::Doc(doc.strip_prefix(' ').unwrap_or(doc).to_owned()));
            }
            i = end;
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            loop {
                match (chars.get(i), chars.get(i + 1)) {
                    (Some('/'), Some('*')) => (depth, i) = (depth + 1, i + 2),
                    (Some('*'), Some('/')) => (depth, i) = (depth - 1, i + 2),
                    (Some(_), _) => i += 1,
                    (None, _) => bail!("line {}: unterminated block comment", line_of(i)),
                }
                if depth == 0 {
                    break;
                }
            }
        } else if let Some((value, end)) = string_literal(&chars, i).with_context(|| format!("line {}", line_of(i)))? {
            toks.push(Tok::Str(value));
            i = end;
        } else if c == '\'' {
            // A character literal ('a', '\n') or a lifetime ('de).
            if next == Some('\\') || chars.get(i + 2) == Some(&'\'') {
                let from = if next == Some('\\') { i + 3 } else { i + 2 };
                let end = (from..chars.len())
                    .find(|&j| chars[j] == '\'')
                    .with_context(|| format!("line {}: unterminated character literal", line_of(i)))?;
                toks.push(Tok::Lit(chars[i..=end].iter().collect()));
                i = end + 1;
            } else {
                let end = ident_end(&chars, i + 1);
                toks.push(Tok::Lifetime(chars[i + 1..end].iter().collect()));
                i = end;
            }
        } else if c.is_ascii_digit() {
            let mut end = i;
            while end < chars.len() {
                let d = chars[end];
                let exponent_sign =
                    (d == '+' || d == '-') && matches!(chars[end - 1], 'e' | 'E') && !is_hex(&chars[i..end]);
                let decimal_point = d == '.' && chars.get(end + 1).is_some_and(char::is_ascii_digit);
                if d.is_alphanumeric() || d == '_' || decimal_point || exponent_sign {
                    end += 1;
                } else {
                    break;
                }
            }
            toks.push(Tok::Lit(chars[i..end].iter().collect()));
            i = end;
        } else if c.is_alphabetic() || c == '_' {
            let start = if c == 'r' && next == Some('#') { i + 2 } else { i };
            let end = ident_end(&chars, start);
            toks.push(Tok::Ident(chars[start..end].iter().collect()));
            i = end;
        } else {
            let pair: String = chars[i..(i + 2).min(chars.len())].iter().collect();
            if ["::", "->", "=>"].contains(&pair.as_str()) {
                toks.push(Tok::Punct(pair));
                i += 2;
            } else {
                toks.push(Tok::Punct(c.to_string()));
                i += 1;
            }
        }
    }
    Ok(toks)
}

fn is_hex(digits: &[char]) -> bool {
    digits.len() > 1 && digits[0] == '0' && matches!(digits[1], 'x' | 'X')
}

fn ident_end(chars: &[char], start: usize) -> usize {
    (start..chars.len()).find(|&j| !(chars[j].is_alphanumeric() || chars[j] == '_')).unwrap_or(chars.len())
}

/// A string literal starting at `i` (plain, raw, byte or C string): its value and where it
/// ends; `None` when none starts there.
fn string_literal(chars: &[char], i: usize) -> Result<Option<(String, usize)>> {
    let mut j = i;
    // An identifier that merely starts with b, c or r is not a prefix.
    if i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_') {
        return Ok(None);
    }
    if matches!(chars.get(j), Some('b' | 'c')) {
        j += 1;
    }
    let raw = chars.get(j) == Some(&'r');
    if raw {
        j += 1;
    }
    let hashes = chars[j..].iter().take_while(|c| **c == '#').count();
    if !raw && hashes > 0 {
        return Ok(None);
    }
    j += hashes;
    if chars.get(j) != Some(&'"') {
        return Ok(None);
    }
    j += 1;
    let mut value = String::new();
    loop {
        let Some(&c) = chars.get(j) else { bail!("unterminated string literal") };
        if c == '"' && chars[j + 1..].iter().take(hashes).filter(|c| **c == '#').count() == hashes {
            return Ok(Some((value, j + 1 + hashes)));
        }
        if c == '\\' && !raw {
            let Some(&e) = chars.get(j + 1) else { bail!("unterminated string literal") };
            j += 2;
            match e {
                'n' => value.push('\n'),
                't' => value.push('\t'),
                'r' => value.push('\r'),
                '0' => value.push('\0'),
                '\n' => {
                    while chars.get(j).is_some_and(|c| c.is_whitespace()) {
                        j += 1;
                    }
                }
                'u' => {
                    let close = chars[j..].iter().position(|c| *c == '}').context("bad \\u escape")? + j;
                    let hex: String = chars[j + 1..close].iter().filter(|c| **c != '_').collect();
                    let code = u32::from_str_radix(&hex, 16).context("bad \\u escape")?;
                    value.push(char::from_u32(code).context("bad \\u escape")?);
                    j = close + 1;
                }
                'x' => {
                    let hex: String = chars[j..j + 2].iter().collect();
                    value.push(char::from(u8::from_str_radix(&hex, 16).context("bad \\x escape")?));
                    j += 2;
                }
                other => value.push(other),
            }
            continue;
        }
        value.push(c);
        j += 1;
    }
}

/// An attribute `#[path(args)]` or `#[path = value]`: its path and the tokens after it.
#[derive(Debug, Clone)]
pub struct Attr {
    /// `serde`, `derive`, `doc`, ...
    pub path: String,
    /// The tokens inside the parentheses, or after `=`.
    pub args: Vec<Tok>,
}

/// A type as written: the last segment of its path and its generic arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ty {
    /// `Option`, `Vec`, `String`, `KernelSection`, ...
    pub name: String,
    /// Generic arguments (lifetimes left out).
    pub args: Vec<Ty>,
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
#[derive(Debug, Clone)]
pub struct Member {
    /// The field's or variant's name.
    pub name: String,
    /// Its `///` lines.
    pub docs: Vec<String>,
    /// Its attributes.
    pub attrs: Vec<Attr>,
    /// A field's type; a tuple variant's payload types (empty for a unit variant).
    pub types: Vec<Ty>,
    /// Whether this is a variant with named fields (`Name { .. }`), whose fields are not read.
    pub has_named_fields: bool,
}

/// A struct with named fields, or an enum.
#[derive(Debug, Clone)]
pub struct TypeDef {
    /// The type's name.
    pub name: String,
    /// Its `///` lines.
    pub docs: Vec<String>,
    /// Its attributes.
    pub attrs: Vec<Attr>,
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
            .filter(|a| a.path == "derive")
            .flat_map(|a| a.args.iter())
            .filter_map(|t| match t {
                Tok::Ident(name) => Some(name.clone()),
                _ => None,
            })
            .collect()
    }
}

/// The items of some source files that a generated page reads.
#[derive(Debug, Default)]
pub struct Items {
    /// Structs with named fields and enums.
    pub types: Vec<TypeDef>,
    /// `impl Default for T`: the type's name and its `default()` body.
    pub default_impls: Vec<(String, Vec<Tok>)>,
    /// Types with a hand-written `impl Deserialize for T`.
    pub deserialize_impls: BTreeSet<String>,
    /// Functions: name and body.
    pub fns: Vec<(String, Vec<Tok>)>,
    /// Consts and statics: name and value expression.
    pub consts: Vec<(String, Vec<Tok>)>,
}

impl Items {
    /// Adds the top-level items of one file's source.
    pub fn read(&mut self, src: &str) -> Result<()> {
        let toks = tokenize(src)?;
        let mut p = 0;
        let mut docs = Vec::new();
        let mut attrs = Vec::new();
        while p < toks.len() {
            match &toks[p] {
                Tok::Doc(d) => {
                    docs.push(d.clone());
                    p += 1;
                    continue;
                }
                Tok::Punct(h) if h == "#" => {
                    let (attr, end) = attribute(&toks, p)?;
                    if let Some(attr) = attr {
                        doc_attr(&attr, &mut docs);
                        attrs.push(attr);
                    }
                    p = end;
                    continue;
                }
                _ => {}
            }
            p = skip_visibility(&toks, p);
            let keyword = match &toks[p] {
                Tok::Ident(k) => k.as_str(),
                _ => "",
            };
            p = match keyword {
                "struct" | "enum" => {
                    let (def, end) = type_def(&toks, p, std::mem::take(&mut docs), std::mem::take(&mut attrs))?;
                    if let Some(def) = def {
                        self.types.push(def);
                    }
                    end
                }
                "impl" => self.impl_block(&toks, p)?,
                "fn" | "const" | "static" if matches!(toks.get(p + 1), Some(Tok::Ident(_))) => {
                    self.value_item(&toks, p, keyword == "fn")?
                }
                _ => skip_item(&toks, p)?,
            };
            docs.clear();
            attrs.clear();
        }
        Ok(())
    }

    /// Records a `Default` or `Deserialize` impl; skips any other.
    fn impl_block(&mut self, toks: &[Tok], p: usize) -> Result<usize> {
        let open = find_top(toks, p, "{")?;
        let header = &toks[p..open];
        let close = group_end(toks, open)?;
        let Some(for_at) = header.iter().position(|t| t.is_ident("for")) else { return Ok(close + 1) };
        let trait_name = header[..for_at].iter().rev().find_map(|t| match t {
            Tok::Ident(n) => Some(n.as_str()),
            _ => None,
        });
        let Some(Tok::Ident(self_ty)) = header.get(for_at + 1) else { return Ok(close + 1) };
        match trait_name {
            Some("Default") => {
                let body = &toks[open + 1..close];
                let Some(f) = body.iter().position(|t| t.is_ident("default")) else {
                    bail!("impl Default for {self_ty}: no fn default")
                };
                let fn_open = find_top(body, f, "{")?;
                let fn_close = group_end(body, fn_open)?;
                self.default_impls.push((self_ty.clone(), body[fn_open + 1..fn_close].to_vec()));
            }
            Some("Deserialize") => {
                self.deserialize_impls.insert(self_ty.clone());
            }
            _ => {}
        }
        Ok(close + 1)
    }

    /// Records a `fn` (its body) or a `const`/`static` (its value).
    fn value_item(&mut self, toks: &[Tok], p: usize, is_fn: bool) -> Result<usize> {
        let Some(Tok::Ident(name)) = toks.get(p + 1) else { bail!("item without a name") };
        if is_fn {
            let open = find_top(toks, p, "{")?;
            let close = group_end(toks, open)?;
            self.fns.push((name.clone(), toks[open + 1..close].to_vec()));
            Ok(close + 1)
        } else {
            let eq = find_top(toks, p, "=")?;
            let semi = find_top(toks, eq, ";")?;
            self.consts.push((name.clone(), toks[eq + 1..semi].to_vec()));
            Ok(semi + 1)
        }
    }

    /// The struct or enum called `name`.
    pub fn type_def(&self, name: &str) -> Option<&TypeDef> {
        self.types.iter().find(|t| t.name == name)
    }

    /// The body of `impl Default for name`.
    pub fn default_impl(&self, name: &str) -> Option<&[Tok]> {
        self.default_impls.iter().find(|(n, _)| n == name).map(|(_, b)| b.as_slice())
    }
}

/// Adds the text of a `#[doc = "..."]` attribute to `docs`.
fn doc_attr(attr: &Attr, docs: &mut Vec<String>) {
    if attr.path == "doc"
        && let [Tok::Punct(eq), Tok::Str(text)] = attr.args.as_slice()
        && eq == "="
    {
        docs.extend(text.lines().map(|l| l.strip_prefix(' ').unwrap_or(l).to_owned()));
    }
}

/// The attribute starting at `#` at `p` and the position after it; inner attributes
/// (`#![...]`) give `None`.
fn attribute(toks: &[Tok], p: usize) -> Result<(Option<Attr>, usize)> {
    let inner = toks.get(p + 1).is_some_and(|t| t.is("!"));
    let open = p + 1 + usize::from(inner);
    if !toks.get(open).is_some_and(|t| t.is("[")) {
        bail!("`#` not followed by `[`");
    }
    let close = group_end(toks, open)?;
    if inner {
        return Ok((None, close + 1));
    }
    let body = &toks[open + 1..close];
    let path_end = body.iter().position(|t| !matches!(t, Tok::Ident(_)) && !t.is("::")).unwrap_or(body.len());
    let path = match body[..path_end].iter().rev().find_map(|t| match t {
        Tok::Ident(n) => Some(n.clone()),
        _ => None,
    }) {
        Some(path) => path,
        None => bail!("attribute without a path: #[{}]", tokens_text(body)),
    };
    let args = match body.get(path_end) {
        Some(t) if t.is("(") => body[path_end + 1..body.len() - 1].to_vec(),
        Some(_) => body[path_end..].to_vec(),
        None => Vec::new(),
    };
    Ok((Some(Attr { path, args }), close + 1))
}

/// The position after `pub`, `pub(crate)`, `pub(in path)` at `p`, else `p`.
fn skip_visibility(toks: &[Tok], p: usize) -> usize {
    if !toks[p].is_ident("pub") {
        return p;
    }
    match toks.get(p + 1) {
        Some(t) if t.is("(") => group_end(toks, p + 1).map_or(p + 1, |e| e + 1),
        _ => p + 1,
    }
}

/// The index of the delimiter closing the group opened at `open` (`(`, `[` or `{`).
pub fn group_end(toks: &[Tok], open: usize) -> Result<usize> {
    let mut depth = 0usize;
    for (j, t) in toks.iter().enumerate().skip(open) {
        if let Tok::Punct(p) = t {
            match p.as_str() {
                "(" | "[" | "{" => depth += 1,
                ")" | "]" | "}" => {
                    depth = depth.checked_sub(1).context("unbalanced delimiters")?;
                    if depth == 0 {
                        return Ok(j);
                    }
                }
                _ => {}
            }
        }
    }
    bail!("unclosed `{}`", toks[open].text())
}

/// The first `what` at `p` or after it outside any group.
pub fn find_top(toks: &[Tok], p: usize, what: &str) -> Result<usize> {
    let mut j = p;
    while j < toks.len() {
        if toks[j].is(what) {
            return Ok(j);
        }
        j = if toks[j].is("(") || toks[j].is("[") || (toks[j].is("{") && what != "{") {
            group_end(toks, j)? + 1
        } else {
            j + 1
        };
    }
    bail!("no `{what}` after `{}`", tokens_text(&toks[p..(p + 6).min(toks.len())]))
}

/// Splits `toks` at the commas outside groups and `<...>`; empty pieces are dropped.
pub fn split_top(toks: &[Tok]) -> Result<Vec<&[Tok]>> {
    let mut pieces = Vec::new();
    let (mut start, mut angle, mut j) = (0, 0usize, 0);
    while j < toks.len() {
        let t = &toks[j];
        if t.is("(") || t.is("[") || t.is("{") {
            j = group_end(toks, j)? + 1;
            continue;
        }
        if t.is("<") {
            angle += 1;
        } else if t.is(">") {
            angle = angle.saturating_sub(1);
        } else if t.is(",") && angle == 0 {
            pieces.push(&toks[start..j]);
            start = j + 1;
        }
        j += 1;
    }
    pieces.push(&toks[start..]);
    pieces.retain(|p| !p.is_empty());
    Ok(pieces)
}

/// Skips an item this reader does not record: to the end of its `;` or `{...}`.
fn skip_item(toks: &[Tok], p: usize) -> Result<usize> {
    let mut j = p;
    while j < toks.len() {
        if toks[j].is(";") {
            return Ok(j + 1);
        }
        if toks[j].is("{") {
            let end = group_end(toks, j)?;
            // `const X: T = T { .. };` style items go on to their `;`.
            return Ok(if toks.get(end + 1).is_some_and(|t| t.is(";")) { end + 2 } else { end + 1 });
        }
        j = if toks[j].is("(") || toks[j].is("[") { group_end(toks, j)? + 1 } else { j + 1 };
    }
    Ok(j)
}

/// Reads `struct`/`enum` at `p`; tuple and unit structs give `None`.
fn type_def(toks: &[Tok], p: usize, docs: Vec<String>, attrs: Vec<Attr>) -> Result<(Option<TypeDef>, usize)> {
    let is_enum = toks[p].is_ident("enum");
    let Some(Tok::Ident(name)) = toks.get(p + 1) else { bail!("struct or enum without a name") };
    let mut j = p + 2;
    while j < toks.len() && !toks[j].is("{") && !toks[j].is("(") && !toks[j].is(";") {
        j += 1;
    }
    if !toks.get(j).is_some_and(|t| t.is("{")) {
        return Ok((None, skip_item(toks, p)?));
    }
    let close = group_end(toks, j)?;
    let members = split_top(&toks[j + 1..close])?
        .into_iter()
        .map(|piece| member(piece, is_enum).with_context(|| format!("in {name}")))
        .collect::<Result<Vec<_>>>()?;
    Ok((Some(TypeDef { name: name.clone(), docs, attrs, is_enum, members }), close + 1))
}

/// One field (`name: Type`) or variant (`Name`, `Name(T, U)`), with its docs and attributes.
fn member(toks: &[Tok], is_enum: bool) -> Result<Member> {
    let (mut docs, mut attrs, mut j) = (Vec::new(), Vec::new(), 0);
    loop {
        match toks.get(j) {
            Some(Tok::Doc(d)) => {
                docs.push(d.clone());
                j += 1;
            }
            Some(t) if t.is("#") => {
                let (attr, end) = attribute(toks, j)?;
                if let Some(attr) = attr {
                    doc_attr(&attr, &mut docs);
                    attrs.push(attr);
                }
                j = end;
            }
            _ => break,
        }
    }
    j = skip_visibility(toks, j);
    let Some(Tok::Ident(name)) = toks.get(j) else { bail!("expected a name at `{}`", tokens_text(&toks[j..])) };
    let rest = &toks[j + 1..];
    let has_named_fields = is_enum && rest.first().is_some_and(|t| t.is("{"));
    let types = if is_enum {
        match rest.first() {
            Some(t) if t.is("(") => {
                let close = group_end(rest, 0)?;
                split_top(&rest[1..close])?.into_iter().map(parse_type).collect::<Result<_>>()?
            }
            _ => Vec::new(),
        }
    } else {
        if !rest.first().is_some_and(|t| t.is(":")) {
            bail!("field {name}: expected `:`");
        }
        vec![parse_type(&rest[1..]).with_context(|| format!("field {name}"))?]
    };
    Ok(Member { name: name.clone(), docs, attrs, types, has_named_fields })
}

/// A type from its tokens: `std::collections::BTreeMap<String, Vec<f64>>` → `BTreeMap<String, Vec<f64>>`.
pub fn parse_type(toks: &[Tok]) -> Result<Ty> {
    let toks: Vec<&Tok> = toks.iter().filter(|t| !t.is("&") && !matches!(t, Tok::Lifetime(_))).collect();
    let lt = toks.iter().position(|t| t.is("<"));
    let path = &toks[..lt.unwrap_or(toks.len())];
    let name = match path.iter().rev().find_map(|t| match t {
        Tok::Ident(n) if n != "mut" && n != "dyn" => Some(n.clone()),
        _ => None,
    }) {
        Some(name) => name,
        None => bail!("not a type: `{}`", toks.iter().map(|t| t.text()).collect::<String>()),
    };
    let args = match lt {
        None => Vec::new(),
        Some(lt) => {
            let gt = toks.iter().rposition(|t| t.is(">")).context("unclosed `<`")?;
            let inner: Vec<Tok> = toks[lt + 1..gt].iter().map(|t| (*t).clone()).collect();
            split_top(&inner)?.into_iter().map(parse_type).collect::<Result<_>>()?
        }
    };
    Ok(Ty { name, args })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_of_literals_comments_and_lifetimes() -> Result<()> {
        let toks =
            tokenize("/// doc\n// no\n/* x /* y */ */ let c = 'a'; f::<'de>(r#\"q\"\"#, \"a\\\"b\", 1.5e-3, 0..2);")?;
        let texts: Vec<String> = toks.iter().map(Tok::text).collect();
        assert_eq!(
            texts,
            [
                "///doc",
                "let",
                "c",
                "=",
                "'a'",
                ";",
                "f",
                "::",
                "<",
                "'de",
                ">",
                "(",
                "\"q\\\"\"",
                ",",
                "\"a\\\"b\"",
                ",",
                "1.5e-3",
                ",",
                "0",
                ".",
                ".",
                "2",
                ")",
                ";"
            ]
        );
        Ok(())
    }

    #[test]
    fn reads_structs_enums_and_default_impls() -> Result<()> {
        let src = r#"
            use x::y;
            /// A thing.
            #[derive(Debug, Default)]
            #[serde(default)]
            pub struct Thing {
                /// Count.
                pub count: Option<Vec<usize>>,
                #[serde(rename = "b")]
                pub(crate) a: std::collections::BTreeMap<String, f64>,
            }
            pub enum E { /// One.
                #[default] One, Two(String, u8) }
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
        assert_eq!(thing.docs, ["A thing."]);
        assert!(thing.derives().contains("Default"));
        assert_eq!(thing.members[0].types[0].to_string(), "Option<Vec<usize>>");
        assert_eq!(thing.members[1].types[0].to_string(), "BTreeMap<String, f64>");
        assert_eq!(thing.members[1].attrs[0].path, "serde");
        let e = items.type_def("E").context("E")?;
        assert!(e.is_enum);
        assert_eq!(e.members[0].docs, ["One."]);
        assert_eq!(e.members[1].types.len(), 2);
        assert!(items.default_impl("Thing").is_some());
        assert!(items.deserialize_impls.contains("E"));
        assert_eq!(items.consts[0].0, "N");
        assert_eq!(items.fns[0].0, "f");
        assert!(items.type_def("Hidden").is_none(), "items inside modules are not top-level");
        Ok(())
    }
}
