//! The `#[serde(...)]` attributes that change what a TOML file may say: names, defaults,
//! skipped and flattened fields. Any other serde attribute is refused, so that the generated
//! reference never describes a key differently from how serde reads it.

use anyhow::{Result, bail};
use syn::meta::ParseNestedMeta;
use syn::{Attribute, LitStr};

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
    pub fn of(attrs: &[Attribute], owner: &str) -> Result<Self> {
        let mut out = SerdeAttrs::default();
        for attr in attrs.iter().filter(|a| a.path().is_ident("serde")) {
            // The error of the closure below, kept whole (syn's error holds a message only).
            let mut refused = None;
            let parsed = attr.parse_nested_meta(|meta| {
                if let Err(e) = out.read(&meta, owner) {
                    refused = Some(e);
                    return Err(meta.error("refused"));
                }
                Ok(())
            });
            if let Some(e) = refused {
                return Err(e);
            }
            if let Err(e) = parsed {
                bail!("{owner}: a serde attribute the generator does not read: {e}");
            }
        }
        Ok(out)
    }

    /// Reads one `key` or `key = "value"` of a `#[serde(...)]` attribute.
    fn read(&mut self, meta: &ParseNestedMeta<'_>, owner: &str) -> Result<()> {
        let key = meta.path.get_ident().map(ToString::to_string).unwrap_or_default();
        let unread = || format!("{owner}: serde attribute `{key}` has a form the generator does not read");
        let value = if meta.input.peek(syn::Token![=]) {
            let value = meta.value().and_then(|v| v.parse::<LitStr>());
            Some(value.map_err(|e| anyhow::anyhow!("{}: {e}", unread()))?.value())
        } else if meta.input.is_empty() || meta.input.peek(syn::Token![,]) {
            None
        } else {
            bail!(unread())
        };
        match (key.as_str(), value) {
            ("default", path) => self.default = Some(path),
            ("rename", Some(name)) => self.rename = Some(name),
            ("rename_all", Some(rule)) => self.rename_all = Some(rule),
            ("alias", Some(name)) => self.aliases.push(name),
            ("skip" | "skip_deserializing", None) => self.skip = true,
            ("flatten", None) => self.flatten = true,
            ("untagged", None) => self.untagged = true,
            (k, _) if NEUTRAL.contains(&k) => {}
            (k, _) => bail!(
                "{owner}: serde attribute `{k}` changes how the file is read, and the reference generator \
                 (xtask/src/codegen/) does not know it: teach it there"
            ),
        }
        Ok(())
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

    #[test]
    fn reads_the_attributes_that_change_the_file_and_refuses_others() -> Result<()> {
        let attrs = |src: &str| -> Result<Vec<Attribute>> {
            Ok(syn::parse_str::<syn::ItemStruct>(&format!("{src} struct S;"))?.attrs)
        };
        let read = SerdeAttrs::of(
            &attrs(
                "#[serde(default = \"crate::f\", rename = \"b\", alias = \"c\")] #[serde(skip_serializing_if = \"x\")]",
            )?,
            "S",
        )?;
        assert_eq!(read.default, Some(Some("crate::f".to_owned())));
        assert_eq!((read.rename.as_deref(), read.aliases.as_slice()), (Some("b"), ["c".to_owned()].as_slice()));
        let error = |src: &str| -> Result<String> {
            Ok(SerdeAttrs::of(&attrs(src)?, "S").err().map(|e| e.to_string()).unwrap_or_default())
        };
        assert!(error("#[serde(deserialize_with = \"f\")]")?.contains("teach it there"));
        assert!(error("#[serde(rename(deserialize = \"x\"))]")?.contains("does not read"));
        assert!(error("#[serde(rename = 3)]")?.contains("does not read"));
        Ok(())
    }
}
