//! Validates every shader in `shaders-wgsl/` with naga, so an invalid shader fails the build
//! with `file:line:column: message` instead of failing at run time.

#[path = "src/wgsl_check.rs"]
#[expect(dead_code, reason = "build.rs uses only `check`; the library uses the rest")]
mod wgsl_check;

use std::path::Path;

fn main() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shaders-wgsl");
    println!("cargo:rerun-if-changed={}", dir.display());
    println!("cargo:rerun-if-changed={}", dir.join("shared").display());
    println!("cargo:rerun-if-changed=src/wgsl_check.rs");
    let mut failures = Vec::new();
    let entries = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) => {
            println!("cargo::error=cannot read {}: {e}", dir.display());
            std::process::exit(1);
        }
    };
    let mut files: Vec<_> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "wgsl"))
        .collect();
    files.sort();
    for path in files {
        println!("cargo:rerun-if-changed={}", path.display());
        let name = format!("shaders-wgsl/{}", path.file_name().map(|n| n.to_string_lossy()).unwrap_or_default());
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                if let Err(e) = wgsl_check::check(&name, &text) {
                    failures.push(e.to_string());
                }
            }
            Err(e) => failures.push(format!("{name}: cannot read: {e}")),
        }
    }
    if !failures.is_empty() {
        for f in &failures {
            println!("cargo::error=invalid WGSL: {f}");
        }
        std::process::exit(1);
    }
}
