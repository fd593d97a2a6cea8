//! The benchmark page agrees with the benches' JSON reports: every table between
//! `<!-- bench-report:... -->` markers of `docs/src/benchmarks.md` is what `cargo xtask
//! bench-report` renders from `docs/src/bench/*.json`, and every JSON file there feeds one.
//! No GPU and no benchmark run: it reads the files only.

use std::path::Path;

#[test]
fn the_benchmark_page_is_what_its_json_files_render() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    if let Err(e) = xtask::bench_report::check(&root) {
        panic!("{e:#}");
    }
}
