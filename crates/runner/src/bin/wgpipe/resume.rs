//! `--resume`: which streams of an existing output are already complete.

use std::collections::BTreeSet;

use anyhow::{Context, bail};
use wgpipe::config::Config;
use wgpipe::storage::open_output;

/// Names of the streams complete in the config's existing output (empty when there is no
/// output yet), after checking that the output holds the fields and grid this config writes.
pub fn complete_streams(config: &Config) -> anyhow::Result<BTreeSet<String>> {
    if config.sink_name() == "null" {
        bail!("--resume needs an output to resume: the null sink stores nothing; set output.sink to hdf5 or raw");
    }
    let path = config.output_path();
    if !path.exists() {
        return Ok(BTreeSet::new());
    }
    let out = open_output(&path).with_context(|| format!("cannot resume {}", path.display()))?;
    let grid = &config.file.grid;
    if out.fields() != config.output_fields() || out.shape() != [grid.rows, grid.cols] {
        bail!(
            "cannot resume {}: it holds fields {:?} on a {}×{} grid, the config writes {:?} on {}×{}; \
             resume with the config that wrote it, or choose another output.path",
            path.display(),
            out.fields(),
            out.shape()[0],
            out.shape()[1],
            config.output_fields(),
            grid.rows,
            grid.cols
        );
    }
    Ok(out.streams().iter().filter(|s| s.complete).map(|s| s.name.clone()).collect())
}
