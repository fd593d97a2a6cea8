//! The generated files are committed as `cargo xtask codegen` writes them, and the
//! configuration reference says what the config loader does: the defaults it shows are the
//! ones a config without the key gets, and the value lists of the library appear in full.
#![expect(clippy::expect_used, reason = "tests fail loudly")]

use wgpipe::config::Config;
use xtask::codegen::{self, Key};

/// The first line where `a` and `b` differ, for the message.
fn first_difference(a: &str, b: &str) -> String {
    let (mut a_lines, mut b_lines) = (a.lines(), b.lines());
    for n in 1.. {
        match (a_lines.next(), b_lines.next()) {
            (Some(x), Some(y)) if x == y => continue,
            (None, None) => break,
            (x, y) => return format!("line {n}: committed {x:?}, generated {y:?}"),
        }
    }
    "line endings or the final newline".to_owned()
}

#[test]
fn committed_generated_files_are_up_to_date() {
    let root = codegen::workspace_root();
    let mut report = String::new();
    for (path, generated) in codegen::generate(&root).expect("generating") {
        let committed = std::fs::read_to_string(root.join(path)).unwrap_or_default();
        if committed != generated {
            report.push_str(&format!("{path}: {}\n", first_difference(&committed, &generated)));
        }
    }
    assert!(
        report.is_empty(),
        "generated files differ from what their source generates: run `cargo xtask codegen` and commit the \
         result\n{report}"
    );
}

fn keys() -> Vec<Key> {
    codegen::config_keys(&codegen::workspace_root()).expect("reading the config model")
}

#[test]
fn the_defaults_shown_are_the_loaders_defaults() {
    let empty = Config::parse("empty", "", ".", &[]).expect("an empty config is valid").file;
    let mut checked = 0;
    for key in keys() {
        // Keys of `[[runs]]` entries exist only in an entry, which has no defaults of its own to compare.
        let (Some(value), false) = (&key.toml_default, key.name.contains("[i]")) else { continue };
        let text = format!("{} = {value}\n", key.name);
        let config = Config::parse("default", &text, ".", &[])
            .unwrap_or_else(|e| panic!("the documented default `{}` is refused: {e}", text.trim()));
        assert_eq!(config.file, empty, "`{}` is not what a config without the key gets", text.trim());
        checked += 1;
    }
    assert!(checked >= 15, "only {checked} keys with a default: did the reader lose keys?");
}

#[test]
fn value_lists_of_the_library_appear_in_full() {
    let keys = keys();
    let accepted = |name: &str| {
        keys.iter().find(|k| k.name == name).map(|k| k.accepted.clone()).unwrap_or_else(|| panic!("no key {name}"))
    };
    let dtypes: Vec<&str> = wgpipe::compute::OutputDType::ALL.iter().map(|d| d.name()).collect();
    let boundaries: Vec<&str> = wgpipe::compute::Boundary::ALL.iter().map(|b| b.name()).collect();
    let kernels = [wgpipe::config::GRAY_SCOTT, wgpipe::config::GRAY_SCOTT_3D];
    for (key, values) in [
        ("output.sink", wgpipe::storage::SINK_NAMES),
        ("output.dtype", dtypes.as_slice()),
        ("kernel.boundary", boundaries.as_slice()),
        ("kernel.name", kernels.as_slice()),
    ] {
        let text = accepted(key);
        for value in values {
            assert!(
                text.contains(&format!("\"{value}\"")),
                "{key} accepts \"{value}\", and its doc comment's `Accepted values:` ({text}) does not say so: add \
                 it in crates/runner/src/config/model.rs, then run `cargo xtask codegen`"
            );
        }
    }
}
