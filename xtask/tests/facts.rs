//! Facts the docs state that the code owns: a test fails when they drift apart.
#![expect(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

use std::path::Path;

/// The workspace root.
fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

/// The text after `prefix` up to the first character that is not part of a version.
fn version_after<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let at = text.find(prefix)? + prefix.len();
    let rest = &text[at..];
    Some(&rest[..rest.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(rest.len())])
}

#[test]
fn the_readmes_minimum_rust_is_the_workspaces_rust_version() {
    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    let declared = version_after(&manifest, "rust-version = \"").unwrap();
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let stated = version_after(&readme, "Rust stable ≥ ").expect("the README states `Rust stable ≥ X.Y`");
    assert_eq!(stated, declared, "README.md's minimum Rust differs from Cargo.toml's rust-version");
}

#[test]
fn the_storage_crate_names_as_many_sinks_as_it_ships() {
    let lib = std::fs::read_to_string(root().join("crates/storage/src/lib.rs")).unwrap();
    // `open.rs` registers every sink, whatever the features of this build: `BACKENDS: [Registered; N]`.
    let open = std::fs::read_to_string(root().join("crates/storage/src/open.rs")).unwrap();
    let count: usize = version_after(&open, "const BACKENDS: [Registered; ").unwrap().parse().unwrap();
    let words = ["one", "two", "three", "four", "five", "six", "seven", "eight"];
    let said = format!("{} sinks ship with the crate", words[count - 1]);
    assert!(
        lib.to_lowercase().contains(&said),
        "crates/storage/src/lib.rs should say {said:?}: open.rs registers {count}"
    );
}
