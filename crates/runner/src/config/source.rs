//! Reading a config: TOML text plus `--set` overrides, with every key traceable to the line
//! or argument it came from, so that any later error can say where to fix it.

use toml::de::{DeTable, DeValue};

use super::model::ConfigFile;
use crate::config_error::{ConfigError, Origin, Result};

/// The text a config was read from and the `--set` overrides applied on top.
#[derive(Debug, Clone)]
pub(crate) struct Source {
    /// File path (or built-in name) for messages.
    name: String,
    text: String,
    /// `(dotted key, argument as written)`, in command-line order.
    sets: Vec<(String, String)>,
}

/// 1-based line of byte `offset` in `text`.
fn line_of(text: &str, offset: usize) -> usize {
    text.get(..offset).unwrap_or(text).matches('\n').count() + 1
}

/// Splits `runs[1].kernel.params.feed` into `["runs", "1", "kernel", "params", "feed"]`.
fn segments(key: &str) -> Vec<&str> {
    key.split(['.', '[', ']']).filter(|s| !s.is_empty()).collect()
}

/// Byte offset of the deepest part of `key` present in `table`.
fn locate(table: &DeTable<'_>, key: &[&str]) -> Option<usize> {
    let (first, rest) = key.split_first()?;
    let (k, v) = table.iter().find(|(k, _)| k.get_ref() == first)?;
    let here = k.span().start;
    Some(locate_value(v.get_ref(), rest).unwrap_or(here))
}

fn locate_value(value: &DeValue<'_>, key: &[&str]) -> Option<usize> {
    match value {
        DeValue::Table(t) => locate(t, key),
        DeValue::Array(a) => {
            let (first, rest) = key.split_first()?;
            let item = a.get(first.parse::<usize>().ok()?)?;
            Some(locate_value(item.get_ref(), rest).unwrap_or(item.span().start))
        }
        _ => None,
    }
}

/// Whether `--set` key `set` covers `key` (equal, or one contains the other).
fn covers(set: &str, key: &str) -> bool {
    let (s, k) = (segments(set), segments(key));
    s.iter().zip(&k).all(|(a, b)| a == b)
}

/// Whether `key` is a dotted TOML bare key: `[A-Za-z0-9_-]+` parts joined by dots.
fn is_dotted_key(key: &str) -> bool {
    !key.is_empty()
        && key.split('.').all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'))
}

/// Puts every entry of `from` into `into`, descending into tables present in both.
fn merge(into: &mut toml::Table, from: toml::Table) {
    for (k, v) in from {
        match (into.get_mut(&k), v) {
            (Some(toml::Value::Table(a)), toml::Value::Table(b)) => merge(a, b),
            (_, v) => {
                into.insert(k, v);
            }
        }
    }
}

/// Parses one `--set key=value`: the value as TOML (`128`, `0.02`, `true`, `[0, 1]`,
/// `"text"`), else as a bare string (`--set output.sink=raw`).
fn parse_set(arg: &str) -> Result<(String, toml::Table)> {
    let bad = |message: &str| ConfigError::BadSet { arg: arg.to_owned(), message: message.to_owned() };
    let (key, value) = arg.split_once('=').ok_or_else(|| bad("expected key=value, e.g. --set grid.rows=128"))?;
    let key = key.trim();
    if !is_dotted_key(key) {
        return Err(bad("the key must be dotted names, e.g. grid.rows or kernel.params.feed"));
    }
    let value = value.trim();
    let table = toml::from_str::<toml::Table>(&format!("{key} = {value}"))
        .or_else(|_| toml::from_str::<toml::Table>(&format!("{key} = {}", toml::Value::from(value))))
        .map_err(|e| bad(&format!("cannot read the value: {}", e.message())))?;
    Ok((key.to_owned(), table))
}

/// serde names Rust types in what it expected (`expected usize`); say what a user may write.
fn plain_types(message: &str) -> String {
    [
        ("expected usize", "expected a whole number, 0 or more"),
        ("expected u64", "expected a whole number, 0 or more"),
        ("expected u32", "expected a whole number from 0 to 4294967295"),
        ("expected f32", "expected a number"),
        ("expected f64", "expected a number"),
    ]
    .iter()
    .fold(message.to_owned(), |m, (rust, plain)| m.replace(rust, plain))
}

impl Source {
    /// The file path or built-in name.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// Where the value of `key` came from: the last `--set` covering it, else its line in
    /// the file, else the file.
    pub(crate) fn origin(&self, key: &str) -> Origin {
        if let Some((_, arg)) = self.sets.iter().rev().find(|(k, _)| covers(k, key)) {
            return Origin::Set(arg.clone());
        }
        let offset = DeTable::parse(&self.text).ok().and_then(|t| locate(t.get_ref(), &segments(key)));
        match offset {
            Some(o) => Origin::Line { file: self.name.clone(), line: line_of(&self.text, o) },
            None => Origin::File(self.name.clone()),
        }
    }

    /// An [`ConfigError::Invalid`] for `key`, placed where its value came from.
    pub(crate) fn invalid(&self, key: &str, message: impl Into<String>) -> ConfigError {
        ConfigError::Invalid { origin: self.origin(key), key: key.to_owned(), message: message.into() }
    }
}

/// Reads `text` (named `name` in messages), applies `sets` and deserializes the result.
pub(crate) fn parse(name: &str, text: &str, sets: &[String]) -> Result<(ConfigFile, Source)> {
    let mut doc: toml::Table = toml::from_str(text).map_err(|e| ConfigError::Syntax {
        origin: match e.span() {
            Some(s) => Origin::Line { file: name.to_owned(), line: line_of(text, s.start) },
            None => Origin::File(name.to_owned()),
        },
        message: e.message().trim().to_owned(),
    })?;
    let mut source = Source { name: name.to_owned(), text: text.to_owned(), sets: Vec::new() };
    for arg in sets {
        let (key, table) = parse_set(arg)?;
        merge(&mut doc, table);
        source.sets.push((key, arg.clone()));
    }
    let file = serde_path_to_error::deserialize::<_, ConfigFile>(toml::Value::Table(doc)).map_err(|e| {
        let path = e.path().to_string();
        let message = e.inner().message().trim().to_owned();
        // An unknown key is reported at its table; point at the key itself when we can.
        let key = match message.strip_prefix("unknown field `").and_then(|m| m.split_once('`')) {
            Some((unknown, _)) if path == "." => unknown.to_owned(),
            Some((unknown, _)) if !path.ends_with(unknown) => format!("{path}.{unknown}"),
            _ => path,
        };
        let message =
            if message.starts_with("unknown field") { format!("{message}; remove or rename the key") } else { message };
        source.invalid(&key, plain_types(&message))
    })?;
    Ok((file, source))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_point_at_lines_and_set_arguments() {
        let text = "[grid]\nrows = 4\n\n[[runs]]\nname = \"a\"\n[[runs]]\nname = \"b\"\nrun.seed = 3\n";
        let (_, src) = parse("c.toml", text, &["grid.cols=9".to_owned()])
            .map_err(|e| e.to_string())
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(src.origin("grid.rows"), Origin::Line { file: "c.toml".into(), line: 2 });
        assert_eq!(src.origin("grid.cols"), Origin::Set("grid.cols=9".into()));
        assert_eq!(src.origin("runs[1].run.seed"), Origin::Line { file: "c.toml".into(), line: 8 });
        assert_eq!(src.origin("output.path"), Origin::File("c.toml".into()));
    }

    #[test]
    fn unknown_keys_and_wrong_types_name_key_and_line() {
        let e = parse("c.toml", "[grid]\nrows = 4\nrowz = 5\n", &[]).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(
            e.starts_with("c.toml line 3: grid.rowz: unknown field `rowz`, expected one of `shape`, `rows`, `cols`"),
            "{e}"
        );
        let e = parse("c.toml", "[run]\n\nframes = \"x\"\n", &[]).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.starts_with("c.toml line 3: run.frames: invalid type"), "{e}");
        let e = parse("c.toml", "", &["io.io_buffer=-1".to_owned()]).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.starts_with("--set io.io_buffer=-1: io.io_buffer: invalid value"), "{e}");
        let e = parse("c.toml", "x = = 1", &[]).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.starts_with("c.toml line 1: invalid TOML"), "{e}");
        let e = parse("c.toml", "", &["grid.rows".to_owned()]).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.starts_with("--set grid.rows: expected key=value"), "{e}");
        let (f, _) = parse("c.toml", "", &["output.sink=raw".to_owned()])
            .map_err(|e| e.to_string())
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(f.output.sink, "raw");
    }
}
