//! `cargo xtask codegen`: writes the files generated from the source, so that they are
//! committed, reviewed and read like any other; `--check` only says which are stale
//! (`xtask/tests/codegen.rs` runs that check with the tests).
//!
//! Generated today: `docs/src/config-reference.md`, from the doc comments, serde attributes
//! and `Default` impls of the config model (`crates/runner/src/config/`), and the public API
//! record of each library crate, `docs/public-api/<crate>.txt` (`public_api`). The source is
//! parsed with `syn` from its text, so generating needs no build of the crates and follows
//! their edits at once.

mod config_keys;
mod config_page;
pub mod public_api;
mod rust_items;
mod serde_attrs;
mod values;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};

pub use config_keys::Key;

/// Where the config model lives, from the workspace root.
pub const CONFIG_MODEL_DIR: &str = "crates/runner/src/config";
/// The generated configuration reference, from the workspace root.
pub const CONFIG_REFERENCE: &str = "docs/src/config-reference.md";

/// `cargo xtask codegen`'s arguments: it writes docs/src/config-reference.md from the doc
/// comments of the config model (crates/runner/src/config/) and docs/public-api/*.txt from
/// the library crates' public items.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// Write nothing; fail if a generated file differs from what would be written
    #[arg(long)]
    pub check: bool,
}

/// The workspace root.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Every generated file under `root`: its path from `root` and its content.
pub fn generate(root: &Path) -> Result<Vec<(&'static str, String)>> {
    let mut generated = vec![(CONFIG_REFERENCE, config_reference(root)?)];
    for api in public_api::CRATES {
        generated.push((api.record, public_api::record(root, api)?));
    }
    Ok(generated)
}

/// The configuration reference page, from the `.rs` files of the config model under `root`.
pub fn config_reference(root: &Path) -> Result<String> {
    let reference = config_keys::reference(&read_config_model(root)?)
        .with_context(|| format!("the config model in {CONFIG_MODEL_DIR}/"))?;
    Ok(config_page::render(&reference, &format!("{CONFIG_MODEL_DIR}/")))
}

/// Every key of the config file, as the configuration reference lists them.
pub fn config_keys(root: &Path) -> Result<Vec<Key>> {
    let reference = config_keys::reference(&read_config_model(root)?)
        .with_context(|| format!("the config model in {CONFIG_MODEL_DIR}/"))?;
    Ok(reference.tables.into_iter().flat_map(|t| t.keys).collect())
}

/// The items of the config model's `.rs` files under `root`, read in name order (so that
/// the output does not depend on the directory's order).
fn read_config_model(root: &Path) -> Result<rust_items::Items> {
    let dir = root.join(CONFIG_MODEL_DIR);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .map(|e| e.map(|e| e.path()))
        .collect::<std::io::Result<_>>()
        .with_context(|| format!("reading {}", dir.display()))?;
    files.retain(|p| p.extension().is_some_and(|e| e == "rs"));
    files.sort();
    let mut items = rust_items::Items::default();
    for file in &files {
        let text = std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
        items.read(&text).with_context(|| format!("reading the items of {}", file.display()))?;
    }
    Ok(items)
}

/// The generated files under `root` whose committed content differs from what `generate`
/// gives.
pub fn stale(root: &Path) -> Result<Vec<&'static str>> {
    let mut stale = Vec::new();
    for (path, content) in generate(root)? {
        if std::fs::read_to_string(root.join(path)).ok().as_deref() != Some(content.as_str()) {
            stale.push(path);
        }
    }
    Ok(stale)
}

/// `cargo xtask codegen [--check]`.
pub fn main(args: &Args) -> Result<ExitCode> {
    let check = args.check;
    let root = workspace_root();
    if check {
        let stale = stale(&root)?;
        if stale.is_empty() {
            println!("generated files are up to date");
            return Ok(ExitCode::SUCCESS);
        }
        eprintln!("stale: {}: run `cargo xtask codegen`", stale.join(", "));
        return Ok(ExitCode::FAILURE);
    }
    for (path, content) in generate(&root)? {
        let target = root.join(path);
        if std::fs::read_to_string(&target).ok().as_deref() == Some(content.as_str()) {
            println!("{path}: up to date");
            continue;
        }
        if let Some(dir) = target.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        std::fs::write(&target, content).with_context(|| format!("writing {}", target.display()))?;
        println!("{path}: written");
    }
    Ok(ExitCode::SUCCESS)
}
