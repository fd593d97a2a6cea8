//! `wgpipe devices`: what `devices.select` can choose from, and what the default takes.

use anyhow::bail;
use wgpipe::compute::{NO_ADAPTER_HINT, default_picks, list_adapters};

/// Prints one line per adapter, in the order index selection uses, with a `*` on the adapters
/// the default selection (`"all"`) opens and the reason for each verdict.
pub fn devices() -> anyhow::Result<()> {
    let adapters = list_adapters();
    if adapters.is_empty() {
        bail!("wgpu sees no GPU adapter: {NO_ADAPTER_HINT}");
    }
    let picks = default_picks(&adapters);
    out!("{:>5}  {:<44} {:<8} {:<14} {:<40} default (\"all\")", "index", "name", "backend", "type", "driver");
    for (a, pick) in adapters.iter().zip(picks) {
        out!(
            "{}{:>4}  {:<44} {:<8} {:<14} {:<40} {}",
            if pick.is_picked() { '*' } else { ' ' },
            a.index,
            a.name,
            format!("{:?}", a.backend).to_lowercase(),
            format!("{:?}", a.device_type),
            a.driver,
            pick
        );
    }
    out!(
        "* = opened by the default devices.select = \"all\" (each physical adapter once, hardware preferred); \
         \"all-backends\" opens every line; also [INDEX, ...], a backend (vulkan, gl, ...) or a name substring"
    );
    out!(
        "kernels that declare `override CELLS_PER_INVOCATION_X` (the shipped Gray-Scott ones) update that many \
         cells per invocation on Cpu adapters and 1 on the others; the prelude's WORKGROUP_X/Y/Z are \
         16x16 (2-D) and 8x8x4 (3-D) on Cpu adapters, 64x4 and 32x2x4 on the others (guide: Writing a kernel)"
    );
    Ok(())
}
