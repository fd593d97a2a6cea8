//! The keys of the config file, read from the config model's structs: for each table and
//! key its name as serde reads it, its TOML type, its default and accepted values, and its
//! doc comment.
//!
//! A doc comment may hold two paragraphs the page shows apart: `Accepted values: ...` (for
//! every key whose type does not list them itself: not booleans or enums) and `Default: ...`
//! (for keys whose default the model leaves unset or empty, so that the program decides;
//! refused where the model holds the value, which would say it twice).

use anyhow::{Context, Result, bail};

use super::rust_items::{Items, Member, Ty, TypeDef};
use super::serde_attrs::{SerdeAttrs, field_name, variant_name};
use super::values::{Renderer, Value, arg, is_float, is_integer, is_list, is_map, toml_string};

/// The struct the whole file deserializes into.
pub const ROOT_TYPE: &str = "ConfigFile";

/// The page's content.
#[derive(Debug)]
pub struct Reference {
    /// The root struct's doc comment: the page's introduction.
    pub intro: String,
    /// One per field of the root struct, in source order.
    pub tables: Vec<Table>,
}

/// A table of the file (`[output]`, `[[runs]]`), or a top-level key.
#[derive(Debug)]
pub struct Table {
    /// How the file spells it: `[output]`, `[[runs]]`, `[sweep]`.
    pub heading: String,
    /// The first paragraph of the root field's doc comment.
    pub summary: String,
    /// The table's struct's doc comment (empty for a single key).
    pub doc: String,
    /// Its keys; a top-level key that is no table of fixed keys is its own one key.
    pub keys: Vec<Key>,
    /// Whether this is one key (a table of any keys, such as `[sweep]`) rather than a table
    /// of named keys.
    pub single: bool,
}

/// One key.
#[derive(Debug)]
pub struct Key {
    /// Its full name, as error messages name it: `output.sink`, `runs[i].run.seed`.
    pub name: String,
    /// Its TOML type: `integer`, `array of strings`, ...
    pub ty: String,
    /// Its default, as Markdown.
    pub default: String,
    /// Its default as TOML, where the model holds one (not for keys that are unset, empty or
    /// required by default).
    pub toml_default: Option<String>,
    /// What it accepts, as Markdown (one line, or a list).
    pub accepted: String,
    /// Other names serde accepts for it.
    pub aliases: Vec<String>,
    /// The rest of its doc comment.
    pub doc: String,
}

/// A doc comment split into its description and its `Accepted values:` and `Default:`
/// paragraphs.
#[derive(Debug, Default)]
struct Doc {
    text: String,
    accepted: Option<String>,
    default: Option<String>,
}

impl Doc {
    fn of(lines: &[String]) -> Doc {
        let mut doc = Doc::default();
        let mut paragraphs: Vec<String> = Vec::new();
        let text = lines.join("\n");
        for paragraph in text.split("\n\n").map(str::trim).filter(|p| !p.is_empty()) {
            if let Some(rest) = paragraph.strip_prefix("Accepted values:") {
                doc.accepted = Some(rest.trim().to_owned());
            } else if let Some(rest) = paragraph.strip_prefix("Default:") {
                doc.default = Some(rest.trim().to_owned());
            } else {
                paragraphs.push(paragraph.to_owned());
            }
        }
        doc.text = intra_doc_links_as_code(&paragraphs.join("\n\n"));
        doc
    }

    /// The first paragraph.
    fn summary(&self) -> String {
        self.text.split("\n\n").next().unwrap_or_default().to_owned()
    }
}

/// Rustdoc's links to items, `` [`Item`] ``, as code: the book has no page to link them to.
fn intra_doc_links_as_code(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("[`") {
        let after = &rest[at + 1..];
        match after.find("`]") {
            Some(end) if !after[end + 2..].starts_with(['(', '[']) && !after[..end + 1].contains('\n') => {
                out.push_str(&rest[..at]);
                out.push_str(&after[..end + 1]);
                rest = &after[end + 2..];
            }
            _ => {
                out.push_str(&rest[..at + 2]);
                rest = &rest[at + 2..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// Reads the keys of the model in `items`.
pub fn reference(items: &Items) -> Result<Reference> {
    let walker = Walker { items, values: Renderer { items } };
    let root = walker.struct_def(ROOT_TYPE)?;
    let mut tables = Vec::new();
    for field in &root.members {
        let attrs = SerdeAttrs::of(&field.attrs, &field.name)?;
        if attrs.skip {
            continue;
        }
        let name = serde_name(root, field, &attrs)?;
        let ty = &field.types[0];
        let doc = Doc::of(&field.docs);
        let inner = if ty.name == "Option" { arg(ty, 0)? } else { ty };
        let element = is_list(inner).then(|| arg(inner, 0)).transpose()?;
        // A table (`[name]`), an array of tables (`[[name]]`), or one key.
        let nested = match (walker.struct_of(inner), element.and_then(|e| walker.struct_of(e))) {
            (Some(def), _) => Some((def, format!("[{name}]"), format!("{name}."))),
            (None, Some(def)) => Some((def, format!("[[{name}]]"), format!("{name}[i]."))),
            (None, None) => None,
        };
        let table = match nested {
            Some((def, heading, prefix)) => Table {
                doc: without_heading(&docs_text(def), &heading),
                keys: walker.keys(def, &prefix)?,
                heading,
                summary: doc.summary(),
                single: false,
            },
            None => {
                let key = walker.key(root, field, &attrs, name.clone())?;
                let heading = if is_map(inner) { format!("[{name}]") } else { name };
                Table { heading, summary: doc.summary(), doc: String::new(), keys: vec![key], single: true }
            }
        };
        if table.keys.is_empty() {
            bail!("{}: no keys", table.heading);
        }
        tables.push(table);
    }
    Ok(Reference { intro: docs_text(root), tables })
}

/// A table's doc comment without the `` `[table]`: `` it starts with for rustdoc's readers,
/// which the page's heading says already.
fn without_heading(doc: &str, heading: &str) -> String {
    match doc.strip_prefix(&format!("`{heading}`: ")) {
        Some(rest) => sentence_case(rest, true),
        None => doc.to_owned(),
    }
}

/// `text` with its first letter made upper (`upper`) or lower case, unless its first word is
/// an acronym (`IEEE`) or code.
fn sentence_case(text: &str, upper: bool) -> String {
    let mut chars = text.chars();
    let (Some(first), second) = (chars.next(), chars.next()) else { return text.to_owned() };
    if !first.is_alphabetic() || second.is_some_and(char::is_uppercase) {
        return text.to_owned();
    }
    let first: String = if upper { first.to_uppercase().collect() } else { first.to_lowercase().collect() };
    format!("{first}{}", &text[text.chars().next().map_or(0, char::len_utf8)..])
}

fn docs_text(def: &TypeDef) -> String {
    Doc::of(&def.docs).text
}

/// The name serde reads `field` of `owner` under.
fn serde_name(owner: &TypeDef, field: &Member, attrs: &SerdeAttrs) -> Result<String> {
    match &attrs.rename {
        Some(name) => Ok(name.clone()),
        None => field_name(&field.name, SerdeAttrs::of(&owner.attrs, &owner.name)?.rename_all.as_deref()),
    }
}

struct Walker<'a> {
    items: &'a Items,
    values: Renderer<'a>,
}

impl Walker<'_> {
    fn struct_def(&self, name: &str) -> Result<&TypeDef> {
        self.items
            .type_def(name)
            .filter(|d| !d.is_enum)
            .with_context(|| format!("no struct {name} in the config model's files"))
    }

    /// The struct `ty` names (directly or in an `Option`), if it is one of the model's.
    fn struct_of(&self, ty: &Ty) -> Option<&TypeDef> {
        let ty = if ty.name == "Option" { ty.args.first()? } else { ty };
        self.items.type_def(&ty.name).filter(|d| !d.is_enum)
    }

    /// The keys of struct `def`, named `prefix` + their name; nested structs' keys follow
    /// their parent's, dotted (`run.seed`), flattened ones without a prefix of their own.
    fn keys(&self, def: &TypeDef, prefix: &str) -> Result<Vec<Key>> {
        if !SerdeAttrs::of(&def.attrs, &def.name)?.untagged && !def.derives().contains("Deserialize") {
            bail!("{}: the config model's structs derive Deserialize", def.name);
        }
        let mut keys = Vec::new();
        for field in &def.members {
            let attrs = SerdeAttrs::of(&field.attrs, &format!("{}::{}", def.name, field.name))?;
            if attrs.skip {
                continue;
            }
            let name = serde_name(def, field, &attrs)?;
            let ty = &field.types[0];
            if let Some(inner) = self.struct_of(ty) {
                let inner_prefix = if attrs.flatten { prefix.to_owned() } else { format!("{prefix}{name}.") };
                keys.extend(self.keys(inner, &inner_prefix)?);
                continue;
            }
            if is_list(ty)
                && let Some(inner) = self.struct_of(arg(ty, 0)?)
            {
                keys.extend(self.keys(inner, &format!("{prefix}{name}[i]."))?);
                continue;
            }
            keys.push(self.key(def, field, &attrs, format!("{prefix}{name}"))?);
        }
        Ok(keys)
    }

    /// Key `name`: field `field` of `owner`.
    fn key(&self, owner: &TypeDef, field: &Member, attrs: &SerdeAttrs, name: String) -> Result<Key> {
        let at = || format!("`{name}` ({}::{} in the config model)", owner.name, field.name);
        let ty = &field.types[0];
        let doc = Doc::of(&field.docs);
        if doc.text.is_empty() {
            bail!("{}: the field has no doc comment: say what the key does", at());
        }
        let value = self.values.field_default(owner, &field.name, ty, attrs).with_context(at)?;
        let toml_default = match &value {
            Value::Given(v) => Some(v.clone()),
            _ => None,
        };
        let default = match (value, doc.default) {
            (Value::Given(v), Some(_)) => bail!(
                "{}: the doc comment's `Default:` paragraph repeats the model's default `{v}`: remove the paragraph",
                at()
            ),
            (Value::Given(v), None) => format!("`{v}`"),
            (Value::Unset | Value::Empty(_), Some(text)) => text,
            (Value::Empty(v), None) => format!("`{v}` (empty)"),
            (Value::Unset, None) => bail!(
                "{}: the model leaves the default unset: add a `Default:` paragraph to the doc comment saying what \
                 the program does without the key",
                at()
            ),
            (Value::Required, _) => "none: the key is required".to_owned(),
        };
        let listed = self.listed_values(ty).with_context(at)?;
        let accepted = match (listed, doc.accepted) {
            (Some(_), Some(_)) => bail!(
                "{}: the type lists the accepted values itself: remove the doc comment's `Accepted values:` paragraph",
                at()
            ),
            (Some(values), None) => values,
            (None, Some(text)) => text,
            (None, None) => bail!(
                "{}: add an `Accepted values:` paragraph to the doc comment (the type, {}, does not list them)",
                at(),
                self.type_name(ty)?
            ),
        };
        Ok(Key {
            ty: self.type_name(ty).with_context(at)?,
            default,
            toml_default,
            accepted,
            aliases: attrs.aliases.clone(),
            doc: doc.text,
            name,
        })
    }

    /// The accepted values of a boolean or an enum of the model (also in an `Option`), as
    /// Markdown: a list with each enum variant's doc comment.
    fn listed_values(&self, ty: &Ty) -> Result<Option<String>> {
        let ty = if ty.name == "Option" { arg(ty, 0)? } else { ty };
        if ty.name == "bool" {
            return Ok(Some("`true` or `false`".to_owned()));
        }
        let Some(def) = self.items.type_def(&ty.name).filter(|d| d.is_enum) else { return Ok(None) };
        if let Some(v) = def.members.iter().find(|v| v.has_named_fields) {
            bail!("{}::{}: the reference generator does not read variants with named fields", def.name, v.name);
        }
        let rule = SerdeAttrs::of(&def.attrs, &def.name)?.rename_all;
        let mut lines = Vec::new();
        for variant in &def.members {
            let attrs = SerdeAttrs::of(&variant.attrs, &format!("{}::{}", def.name, variant.name))?;
            if attrs.skip {
                continue;
            }
            let doc = sentence_case(&Doc::of(&variant.docs).text.replace('\n', " "), false);
            if doc.is_empty() {
                bail!("{}::{}: the variant has no doc comment: say what it does", def.name, variant.name);
            }
            let label = if self.reads_by_content(def)? {
                match variant.types.as_slice() {
                    [payload] => with_article(&self.type_name(payload)?),
                    _ => bail!("{}::{}: a variant read by its content holds one value", def.name, variant.name),
                }
            } else {
                let name = attrs.rename.map_or_else(|| variant_name(&variant.name, rule.as_deref()), Ok)?;
                format!("`{}`", toml_string(&name))
            };
            lines.push(format!("- {label}: {doc}"));
        }
        Ok(Some(lines.join("\n")))
    }

    /// Whether serde reads enum `def` by its content (untagged, or by a hand-written
    /// `Deserialize`) rather than by variant names.
    fn reads_by_content(&self, def: &TypeDef) -> Result<bool> {
        let untagged = SerdeAttrs::of(&def.attrs, &def.name)?.untagged;
        Ok(untagged || self.items.deserialize_impls.contains(&def.name))
    }

    /// `ty` in TOML's words: `integer`, `array of strings`, `table of floats`.
    fn type_name(&self, ty: &Ty) -> Result<String> {
        let name = ty.name.as_str();
        Ok(match name {
            "Option" => self.type_name(arg(ty, 0)?)?,
            "String" | "str" => "string".to_owned(),
            "PathBuf" | "Path" => "path".to_owned(),
            "bool" => "boolean".to_owned(),
            _ if is_integer(ty) => "integer".to_owned(),
            _ if is_float(ty) => "float".to_owned(),
            _ if is_list(ty) => format!("array of {}", plural(&self.type_name(arg(ty, 0)?)?)),
            _ if is_map(ty) => format!("table of {}", plural(&self.type_name(arg(ty, 1)?)?)),
            _ => {
                let def = self.items.type_def(name).with_context(|| {
                    format!("type {name} is not defined in the config model's files, nor one the generator knows")
                })?;
                if !def.is_enum {
                    "table".to_owned()
                } else if self.reads_by_content(def)? {
                    let kinds = def
                        .members
                        .iter()
                        .map(|v| match v.types.as_slice() {
                            [payload] => self.type_name(payload),
                            _ => bail!("{}::{}: a variant read by its content holds one value", name, v.name),
                        })
                        .collect::<Result<Vec<_>>>()?;
                    one_of(&kinds)
                } else if def.derives().contains("Deserialize") {
                    "string".to_owned()
                } else {
                    bail!("enum {name} is neither derived Deserialize nor deserialized by hand")
                }
            }
        })
    }
}

/// `integer` → `an integer`, `string` → `a string`.
fn with_article(noun: &str) -> String {
    let article = if noun.starts_with(['a', 'e', 'i', 'o', 'u']) { "an" } else { "a" };
    format!("{article} {noun}")
}

/// `a`, `a or b`, `a, b or c`.
fn one_of(kinds: &[String]) -> String {
    match kinds {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

/// The plural of a type's name: `arrays of floats`, `strings`.
fn plural(name: &str) -> String {
    for (one, many) in [("array of ", "arrays of "), ("table of ", "tables of ")] {
        if let Some(rest) = name.strip_prefix(one) {
            return format!("{many}{rest}");
        }
    }
    if name.contains(' ') { format!("values ({name})") } else { format!("{name}s") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doc_paragraphs_and_links() {
        let lines: Vec<String> =
            ["What it does, see [`Thing`].", "", "Accepted values: 1 or more.", "", "Default: the cores.", "", "More."]
                .map(str::to_owned)
                .into();
        let doc = Doc::of(&lines);
        assert_eq!(doc.text, "What it does, see `Thing`.\n\nMore.");
        assert_eq!(doc.accepted.as_deref(), Some("1 or more."));
        assert_eq!(doc.default.as_deref(), Some("the cores."));
        assert_eq!(intra_doc_links_as_code("[`a`](x.md) [`b`]"), "[`a`](x.md) `b`");
        assert_eq!(
            one_of(&["string".into(), "integer".into(), "array of integers".into()]),
            "string, integer or array of integers"
        );
        assert_eq!(plural("array of floats"), "arrays of floats");
        assert_eq!(without_heading("`[io]`: how frames travel.", "[io]"), "How frames travel.");
        assert_eq!(sentence_case("IEEE half", false), "IEEE half");
        assert_eq!(sentence_case("Über alles", false), "über alles");
    }

    #[test]
    fn keys_of_a_small_model() -> Result<()> {
        let src = r#"
            /// The file.
            #[derive(Deserialize)]
            #[serde(deny_unknown_fields)]
            struct ConfigFile {
                /// Output.
                #[serde(default)]
                out: Out,
                /// Runs.
                #[serde(default)]
                runs: Vec<Run>,
                /// Sweep.
                ///
                /// Accepted values: lists.
                ///
                /// Default: no sweep.
                sweep: Option<BTreeMap<String, Vec<f64>>>,
            }
            /// Where.
            #[derive(Deserialize, Default)]
            #[serde(default, rename_all = "kebab-case")]
            struct Out {
                /// Mode.
                io_mode: Mode,
                /// Replace.
                overwrite: bool,
            }
            #[derive(Deserialize, Default)]
            #[serde(rename_all = "lowercase")]
            enum Mode { /// Writer thread.
                #[default] Async, /// Device threads.
                Sync }
            /// A run.
            #[derive(Deserialize)]
            struct Run {
                /// Name.
                ///
                /// Accepted values: letters.
                name: String,
                /// Overrides.
                #[serde(default)]
                run: Over,
            }
            #[derive(Deserialize, Default)]
            struct Over {
                /// Seed.
                ///
                /// Accepted values: 0 or more.
                ///
                /// Default: `run.seed`.
                seed: Option<u64>,
            }
        "#;
        let mut items = Items::default();
        items.read(src)?;
        let r = reference(&items)?;
        let headings: Vec<&str> = r.tables.iter().map(|t| t.heading.as_str()).collect();
        assert_eq!(headings, ["[out]", "[[runs]]", "[sweep]"]);
        let keys: Vec<(&str, &str, &str)> = r
            .tables
            .iter()
            .flat_map(|t| &t.keys)
            .map(|k| (k.name.as_str(), k.ty.as_str(), k.default.as_str()))
            .collect();
        assert_eq!(
            keys,
            [
                ("out.io-mode", "string", "`\"async\"`"),
                ("out.overwrite", "boolean", "`false`"),
                ("runs[i].name", "string", "none: the key is required"),
                ("runs[i].run.seed", "integer", "`run.seed`."),
                ("sweep", "table of arrays of floats", "no sweep."),
            ]
        );
        assert_eq!(r.tables[0].keys[0].accepted, "- `\"async\"`: writer thread.\n- `\"sync\"`: device threads.");
        Ok(())
    }

    #[test]
    fn refuses_undocumented_keys() -> Result<()> {
        let model = |field_doc: &str, ty: &str| {
            format!(
                "/// F.\n#[derive(Deserialize)] struct ConfigFile {{ /// T.\n #[serde(default)] t: T }}\n\
                 #[derive(Deserialize, Default)] #[serde(default)] struct T {{ {field_doc}\n k: {ty} }}"
            )
        };
        let error = |src: String| -> Result<String> {
            let mut items = Items::default();
            items.read(&src)?;
            Ok(format!("{:#}", reference(&items).err().context("expected an error")?))
        };
        assert!(error(model("", "u8"))?.contains("no doc comment"));
        assert!(error(model("/// K.", "u8"))?.contains("Accepted values:"));
        assert!(error(model("/// K.\n///\n/// Accepted values: any.", "Option<u8>"))?.contains("Default:"));
        assert!(error(model("/// K.\n///\n/// Default: 3.", "bool"))?.contains("repeats"));
        Ok(())
    }
}
