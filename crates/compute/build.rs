//! Validates every shader in `shaders-wgsl/` with naga, each after the prelude it is compiled
//! with (for every boundary rule), so an invalid shader fails the build with
//! `file:line:column: message` instead of failing at run time.

#[path = "src/prelude.rs"]
#[allow(dead_code, reason = "build.rs uses only `generate_for`; the library uses the rest")]
mod prelude;
#[path = "src/shipped.rs"]
#[allow(dead_code, reason = "build.rs reads the list only")]
mod shipped;
#[path = "src/wgsl_check.rs"]
#[allow(dead_code, reason = "build.rs uses only `check`; the library uses the rest")]
mod wgsl_check;

use std::path::Path;

fn main() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("shaders-wgsl");
    println!("cargo:rerun-if-changed={}", dir.display());
    println!("cargo:rerun-if-changed={}", dir.join("shared").display());
    for file in ["src/prelude.rs", "src/shipped.rs", "src/wgsl_check.rs"] {
        println!("cargo:rerun-if-changed={file}");
    }
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
        let Some(shader) = shipped::ALL.iter().find(|s| s.file == name) else {
            failures.push(format!(
                "{name} is not listed in crates/compute/src/shipped.rs: add it with its rank and fields, \
                 so that it is validated with its prelude"
            ));
            continue;
        };
        // Every boundary rule for whole grids; blocks (split domains) take the periodic one;
        // each with both adapters' workgroup shapes, with and without vector views.
        let preludes = prelude::Boundary::ALL
            .map(|b| (b, prelude::Indexing::Whole))
            .into_iter()
            .chain([(prelude::Boundary::Periodic, prelude::Indexing::Block)])
            .flat_map(|(b, i)| prelude::WorkgroupShapes::ALL.map(|s| (b, i, s)))
            .flat_map(|(b, i, s)| prelude::VectorViews::ALL.map(|v| (b, i, s, v)));
        for (boundary, indexing, shapes, views) in preludes {
            let checked = prelude::generate_for(shader.rank, boundary, shader.fields, indexing, shapes, views)
                .map_err(|e| format!("{name}: {e}"))
                .and_then(|p| wgsl_check::check(&name, &p, shader.source).map_err(|e| e.to_string()));
            if let Err(e) = checked {
                failures.push(format!(
                    "{e} (with the {boundary} prelude, {indexing:?} indexing, {} shapes, vector views {views:?})",
                    shapes.name()
                ));
            }
        }
    }
    if !failures.is_empty() {
        for f in &failures {
            println!("cargo::error=invalid WGSL: {f}");
        }
        std::process::exit(1);
    }
}
