//! `cargo xtask bench-report`: the tables of the benchmark page (`docs/src/benchmarks.md`),
//! rendered from the benches' JSON reports (`docs/src/bench/*.json`), so that every figure on
//! the page is one a file records, with the command that measured it and the machine;
//! `--check` only says where the page and the files disagree (`xtask/tests/bench_report.rs`
//! runs it with the tests).
//!
//! The page marks each generated region:
//!
//! ```text
//! <!-- bench-report:KIND bench/FILE.json [bench/MORE.json ...] [glance=LABEL,...] -->
//! ...rendered from the files...
//! <!-- /bench-report -->
//! ```
//!
//! KIND names the renderer (the module `tables`); `glance` is the at-a-glance table, one row per
//! headline figure of every other region, linked to its section. Every JSON file under
//! `docs/src/bench/` must feed a region: one superseded by a newer measurement is deleted
//! (the history is git's), not left beside it.

mod json;
mod tables;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};

use crate::markdown::heading_ids;
use json::BenchJson;

/// The benchmark page, from the workspace root.
pub const PAGE: &str = "docs/src/benchmarks.md";
/// The directory of the JSON reports, from the page's directory.
pub const JSON_DIR: &str = "bench";

/// The opening marker of a region, before its KIND and files.
const OPEN: &str = "<!-- bench-report:";
/// The closing marker of a region.
const CLOSE: &str = "<!-- /bench-report -->";

/// `cargo xtask bench-report`'s arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// Write nothing; fail if the page differs from what the JSON files give
    #[arg(long)]
    pub check: bool,
}

/// Entry point of `cargo xtask bench-report`.
pub fn main(args: &Args) -> Result<ExitCode> {
    let root = crate::codegen::workspace_root();
    if args.check {
        check(&root)?;
        println!("{PAGE} agrees with {}/{JSON_DIR}/*.json", page_dir());
        return Ok(ExitCode::SUCCESS);
    }
    let path = root.join(PAGE);
    let page = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let rendered = render(&root, &page)?;
    if rendered == page {
        println!("{PAGE} is up to date");
    } else {
        std::fs::write(&path, rendered).with_context(|| format!("writing {}", path.display()))?;
        println!("wrote {PAGE}");
    }
    Ok(ExitCode::SUCCESS)
}

/// The page's directory from the workspace root (`docs/src`).
fn page_dir() -> &'static str {
    PAGE.rsplit_once('/').map_or(".", |(dir, _)| dir)
}

/// Errors unless the page under `root` is what its JSON files render, naming the regions
/// that differ, and unless every JSON file feeds a region.
pub fn check(root: &Path) -> Result<()> {
    let path = root.join(PAGE);
    let page = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let rendered = render(root, &page)?;
    if rendered != page {
        let stale: Vec<String> = regions(&page)?
            .iter()
            .zip(regions(&rendered)?.iter())
            .filter(|(a, b)| page[a.body.clone()] != rendered[b.body.clone()])
            .map(|(a, _)| a.label())
            .collect();
        bail!(
            "{PAGE} differs from what {}/{JSON_DIR}/*.json give in {}: run `cargo xtask bench-report`",
            page_dir(),
            if stale.is_empty() { "its regions".to_owned() } else { stale.join(", ") }
        );
    }
    let used: BTreeSet<String> = regions(&page)?.into_iter().flat_map(|r| r.files).collect();
    let unused: Vec<String> = json_files(&root.join(page_dir()))?.into_iter().filter(|f| !used.contains(f)).collect();
    if !unused.is_empty() {
        bail!(
            "no region of {PAGE} shows {}: render it on the page, or delete it if a newer measurement replaced it \
             (git keeps the history)",
            unused.join(", ")
        );
    }
    Ok(())
}

/// The JSON files under `src/bench/`, as the page names them (`bench/NAME.json`), sorted.
fn json_files(src: &Path) -> Result<Vec<String>> {
    let dir = src.join(JSON_DIR);
    let mut names = Vec::new();
    for entry in std::fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))? {
        let path: PathBuf = entry?.path();
        if path.extension().is_some_and(|e| e == "json")
            && let Some(name) = path.file_name()
        {
            names.push(format!("{JSON_DIR}/{}", name.to_string_lossy()));
        }
    }
    names.sort();
    Ok(names)
}

/// One generated region of the page.
#[derive(Debug, Clone)]
struct Region {
    /// The renderer.
    kind: String,
    /// The JSON files it renders, from the page's directory.
    files: Vec<String>,
    /// `key=value` options after the files.
    options: Vec<(String, String)>,
    /// The byte range of its generated text: after the opening marker's line, up to the
    /// closing marker.
    body: std::ops::Range<usize>,
    /// The anchor of the heading the region sits under.
    anchor: String,
}

impl Region {
    /// How errors name it.
    fn label(&self) -> String {
        format!("bench-report:{} {}", self.kind, self.files.join(" "))
    }

    /// The value of option `key`, if given.
    fn option(&self, key: &str) -> Option<&str> {
        self.options.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }
}

/// The regions of `page`, in order.
fn regions(page: &str) -> Result<Vec<Region>> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(at) = page[from..].find(OPEN).map(|i| i + from) {
        let line_end = page[at..].find('\n').map_or(page.len(), |i| at + i + 1);
        let spec = page[at + OPEN.len()..line_end].trim_end();
        let spec = spec.strip_suffix("-->").with_context(|| format!("{PAGE}: {:?} does not end in -->", spec))?;
        let close = page[line_end..]
            .find(CLOSE)
            .map(|i| i + line_end)
            .with_context(|| format!("{PAGE}: {OPEN}{spec}--> has no {CLOSE}"))?;
        if page[line_end..close].contains(OPEN) {
            bail!("{PAGE}: {OPEN}{spec}--> is not closed before the next region opens");
        }
        let mut words = spec.split_whitespace();
        let kind = words.next().with_context(|| format!("{PAGE}: a region without a kind"))?.to_owned();
        let (options, files): (Vec<&str>, Vec<&str>) = words.partition(|w| w.contains('='));
        let options =
            options.iter().filter_map(|o| o.split_once('=')).map(|(k, v)| (k.to_owned(), v.to_owned())).collect();
        let anchor = heading_ids(&page[..at]).pop().unwrap_or_default();
        let files = files.into_iter().map(str::to_owned).collect();
        found.push(Region { kind, files, options, body: line_end..close, anchor });
        from = close + CLOSE.len();
    }
    Ok(found)
}

/// `page` with every region's text rendered from its JSON files under `root`.
pub fn render(root: &Path, page: &str) -> Result<String> {
    let src = root.join(page_dir());
    let regions = regions(page)?;
    let mut bodies = Vec::with_capacity(regions.len());
    let mut glance = Vec::new();
    for region in &regions {
        if region.kind == "glance" {
            bodies.push(None);
            continue;
        }
        let files = region.files.iter().map(|f| BenchJson::read(&src, f)).collect::<Result<Vec<_>>>()?;
        let rendered = tables::render(&region.kind, &files, region.option("glance"))
            .with_context(|| format!("{PAGE}: rendering {}", region.label()))?;
        glance.extend(rendered.headlines.into_iter().map(|h| (region.anchor.clone(), h)));
        bodies.push(Some(rendered.body));
    }
    let mut out = String::with_capacity(page.len());
    let mut copied = 0;
    for (region, body) in regions.iter().zip(bodies) {
        out.push_str(&page[copied..region.body.start]);
        let body = body.unwrap_or_else(|| tables::glance(&glance));
        out.push('\n');
        out.push_str(&body);
        out.push('\n');
        copied = region.body.end;
    }
    out.push_str(&page[copied..]);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regions_are_found_with_their_files_options_and_heading() -> Result<()> {
        let page = "# P\n\n## Some bench\n\ntext\n<!-- bench-report:kernel bench/a.json bench/b.json glance=x,y -->\nold\n\
                    <!-- /bench-report -->\nafter\n";
        let r = regions(page)?;
        assert_eq!(r.len(), 1);
        assert_eq!(
            (r[0].kind.as_str(), r[0].files.clone()),
            ("kernel", vec!["bench/a.json".to_owned(), "bench/b.json".to_owned()])
        );
        assert_eq!((r[0].option("glance"), r[0].anchor.as_str()), (Some("x,y"), "some-bench"));
        assert_eq!(&page[r[0].body.clone()], "old\n");
        assert!(regions("<!-- bench-report:kernel bench/a.json -->\nno end\n").is_err());
        assert!(regions("<!-- bench-report:a -->\n<!-- bench-report:b -->\n<!-- /bench-report -->\n").is_err());
        Ok(())
    }

    /// A scratch workspace holding a page with one overhead region and its JSON file.
    fn workspace(name: &str, ratio: f64) -> Result<PathBuf> {
        let root = std::env::temp_dir().join(format!("xtask-bench-report-{name}-{}", std::process::id()));
        std::fs::create_dir_all(root.join("docs/src/bench"))?;
        let summary = |m: f64| serde_json::json!({ "median": m, "min": m, "max": m, "samples": [m] });
        let json = serde_json::json!({
            "command": "cargo xtask bench overhead --json docs/src/bench/o.json",
            "null": { "overhead_ratio": summary(ratio), "goal": 1.05,
                      "compute_only_seconds": summary(1.0), "pipeline_seconds": summary(ratio),
                      "compute_only_frames_per_second": summary(30.0), "pipeline_frames_per_second": summary(29.0),
                      "compute_only_cell_steps_per_second": summary(1e6), "pipeline_cell_steps_per_second": summary(1e6) },
            "parameters": { "rows": 8, "cols": 8, "frames": 30, "steps_per_frame": 16, "io_buffer": 2, "reps": 1 },
            "machine": { "cpus": 2, "adapters": [] },
        });
        std::fs::write(root.join("docs/src/bench/o.json"), json.to_string())?;
        Ok(root)
    }

    #[test]
    fn check_fails_on_a_stale_figure_and_on_a_json_no_region_shows() -> Result<()> {
        let root = workspace("check", 1.01)?;
        let page = "# Benchmarks\n\n## At a glance\n\n<!-- bench-report:glance -->\n<!-- /bench-report -->\n\n\
                    ## Overhead\n\n<!-- bench-report:overhead bench/o.json -->\n<!-- /bench-report -->\n";
        let rendered = render(&root, page)?;
        assert!(rendered.contains("1.010 [1.010–1.010]") && rendered.contains("](#overhead)"), "{rendered}");
        std::fs::write(root.join(PAGE), &rendered)?;
        check(&root)?;
        std::fs::write(root.join(PAGE), rendered.replace("1.010 [1.010–1.010]", "0.990 [0.990–0.990]"))?;
        let stale = check(&root).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(
            stale.contains("bench-report:overhead bench/o.json") && stale.contains("bench-report:glance"),
            "{stale}"
        );
        std::fs::write(root.join(PAGE), &rendered)?;
        std::fs::write(root.join("docs/src/bench/old.json"), "{}")?;
        let unused = check(&root).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(unused.contains("bench/old.json"), "{unused}");
        std::fs::remove_dir_all(&root)?;
        Ok(())
    }
}
