//! `wgpipe devices`: what `devices.select` can choose from.

use anyhow::bail;
use wgpipe::compute::{NO_ADAPTER_HINT, list_adapters};

/// Prints one line per adapter, in the order index selection uses.
pub fn devices() -> anyhow::Result<()> {
    let adapters = list_adapters();
    if adapters.is_empty() {
        bail!("wgpu sees no GPU adapter: {NO_ADAPTER_HINT}");
    }
    println!("{:>5}  {:<44} {:<8} {:<14} driver", "index", "name", "backend", "type");
    for a in adapters {
        println!(
            "{:>5}  {:<44} {:<8} {:<14} {}",
            a.index,
            a.name,
            format!("{:?}", a.backend).to_lowercase(),
            format!("{:?}", a.device_type),
            a.driver
        );
    }
    println!("select with devices.select = \"all\", [INDEX, ...], a backend (vulkan, gl, ...) or a name substring");
    Ok(())
}
