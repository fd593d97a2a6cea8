//! The `#[serde(...)]` attributes that change what a TOML file may say: names, defaults,
//! skipped and flattened fields. Any other serde attribute is refused, so that the generated
//! reference never describes a key differently from how serde reads it.

use anyhow::{Result, bail};

use super::rust_items::{Attr, Tok, split_top, tokens_text};

/// The serde attributes of one struct, enum, field or variant.
#[derive(Debug, Default)]
pub struct SerdeAttrs {
    /// `default` (`Some(None)`) or `default = "path"` (`Some(Some(path))`).
    pub default: Option<Option<String>>,
    /// `rename = "name"`.
    pub rename: Option<String>,
    /// `rename_all = "rule"`.
    pub rename_all: Option<String>,
    /// `alias = "name"`, each one.
    pub aliases: Vec<String>,
    /// `skip` or `skip_deserializing`: not read from the file.
    pub skip: bool,
    /// `flatten`: the field's keys sit in its parent's table.
    pub flatten: bool,
    /// `untagged` (an enum whose variants are told apart by their values).
    pub untagged: bool,
}

/// Attributes that do not change which keys and values are read.
const NEUTRAL: &[&str] = &[
    "deny_unknown_fields",
    "skip_serializing",
    "skip_serializing_if",
    "bound",
    "crate",
    "expecting",
    "serialize_with",
];

impl SerdeAttrs {
    /// Reads the `#[serde(...)]` attributes among `attrs`; `owner` names their item in errors.
    pub fn of(attrs: &[Attr], owner: &str) -> Result<Self> {
        let mut out = SerdeAttrs::default();
        for attr in attrs.iter().filter(|a| a.path == "serde") {
            for piece in split_top(&attr.args)? {
                let (key, value) = match piece {
                    [Tok::Ident(k)] => (k.as_str(), None),
                    [Tok::Ident(k), eq, Tok::Str(v)] if eq.is("=") => (k.as_str(), Some(v.clone())),
                    _ => bail!(
                        "{owner}: serde attribute `{}` has a form the generator does not read",
                        tokens_text(piece)
                    ),
                };
                match (key, value) {
                    ("default", path) => out.default = Some(path),
                    ("rename", Some(name)) => out.rename = Some(name),
                    ("rename_all", Some(rule)) => out.rename_all = Some(rule),
                    ("alias", Some(name)) => out.aliases.push(name),
                    ("skip" | "skip_deserializing", None) => out.skip = true,
                    ("flatten", None) => out.flatten = true,
                    ("untagged", None) => out.untagged = true,
                    (k, _) if NEUTRAL.contains(&k) => {}
                    (k, _) => bail!(
                        "{owner}: serde attribute `{k}` changes how the file is read, and the reference generator \
                         (xtask/src/codegen/) does not know it: teach it there"
                    ),
                }
            }
        }
        Ok(out)
    }
}

/// The name serde reads a field `name` (snake_case) under with container rule `rule`.
pub fn field_name(name: &str, rule: Option<&str>) -> Result<String> {
    let words: Vec<&str> = name.split('_').collect();
    join_words(&words.iter().map(|w| w.to_lowercase()).collect::<Vec<_>>(), rule, name)
}

/// The name serde reads a variant `name` (PascalCase) under with container rule `rule`.
pub fn variant_name(name: &str, rule: Option<&str>) -> Result<String> {
    if rule.is_none() {
        return Ok(name.to_owned());
    }
    let mut words: Vec<String> = Vec::new();
    for c in name.chars() {
        match words.last_mut() {
            Some(word) if !c.is_uppercase() => word.push(c),
            _ => words.push(c.to_lowercase().collect()),
        }
    }
    join_words(&words, rule, name)
}

/// Lowercase `words` joined by serde's `rule` (`None`: snake_case, a field's own spelling).
fn join_words(words: &[String], rule: Option<&str>, name: &str) -> Result<String> {
    let capitalized = |w: &String| {
        let mut c = w.chars();
        c.next().map(|f| f.to_uppercase().chain(c).collect::<String>()).unwrap_or_default()
    };
    Ok(match rule.unwrap_or("snake_case") {
        "lowercase" => words.concat(),
        "UPPERCASE" => words.concat().to_uppercase(),
        "PascalCase" => words.iter().map(capitalized).collect(),
        "camelCase" => {
            let mut out = words.first().cloned().unwrap_or_default();
            out.extend(words.iter().skip(1).map(capitalized));
            out
        }
        "snake_case" => words.join("_"),
        "SCREAMING_SNAKE_CASE" => words.join("_").to_uppercase(),
        "kebab-case" => words.join("-"),
        "SCREAMING-KEBAB-CASE" => words.join("-").to_uppercase(),
        other => bail!("{name}: unknown serde rename_all rule {other:?}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renames_as_serde_does() -> Result<()> {
        assert_eq!(variant_name("ZeroFlux", Some("lowercase"))?, "zeroflux");
        assert_eq!(variant_name("ZeroFlux", Some("kebab-case"))?, "zero-flux");
        assert_eq!(variant_name("ZeroFlux", Some("snake_case"))?, "zero_flux");
        assert_eq!(variant_name("ZeroFlux", None)?, "ZeroFlux");
        assert_eq!(field_name("steps_per_frame", Some("camelCase"))?, "stepsPerFrame");
        assert_eq!(field_name("steps_per_frame", None)?, "steps_per_frame");
        assert!(field_name("x", Some("Title Case")).is_err());
        Ok(())
    }
}
