//! `--resume`: which streams of an existing output are already complete.

use std::collections::BTreeSet;

use anyhow::{Context, bail};
use wgpipe::config::Config;
use wgpipe::storage::{FieldSpec, open_output};

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
    let shape = config.grid_shape();
    let writes: Vec<FieldSpec> =
        config.output_fields().iter().map(|f| FieldSpec::new(f.clone(), config.stored_dtype(), shape)).collect();
    if out.fields().len() != writes.len() || out.fields().iter().zip(&writes).any(|(a, b)| !a.same_data(b)) {
        let list = |fields: &[FieldSpec]| {
            fields.iter().map(|f| format!("{} {}", f.name, f.describe())).collect::<Vec<_>>().join(", ")
        };
        bail!(
            "cannot resume {}: it holds fields {}, the config writes {}; \
             resume with the config that wrote it, or choose another output.path",
            path.display(),
            list(out.fields()),
            list(&writes)
        );
    }
    Ok(out.streams().iter().filter(|s| s.complete).map(|s| s.name.clone()).collect())
}
