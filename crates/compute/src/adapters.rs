//! Adapter discovery and device selection across every wgpu backend.

use std::fmt;

use crate::adapter_summary::AdapterSummary;
use crate::default_pick::default_picks;
use crate::device::GpuDevice;
use crate::error::{Error, Result};

/// Which adapters to open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeviceSelector {
    /// The default (`"all"`): each physical adapter once, hardware preferred ([`default_picks`]):
    /// a GPU seen through Vulkan and GL is opened once, through Vulkan; CPU adapters (lavapipe,
    /// llvmpipe) only when no hardware adapter exists.
    All,
    /// Every adapter on every backend (`"all-backends"`): one GPU seen through two backends is
    /// opened twice, and CPU adapters join GPUs. For cross-backend tests.
    AllBackends,
    /// Adapters by their [`AdapterSummary::index`].
    Indices(Vec<usize>),
    /// Every adapter of one backend.
    Backend(wgpu::Backend),
    /// Adapters whose name contains this text (case-insensitive).
    Name(String),
}

impl DeviceSelector {
    /// Parses `"all"`, `"all-backends"`, a backend name (`vulkan`, `gl`, `metal`, `dx12`), a
    /// comma-separated list of indices (`"0,1"`), or else a name substring.
    pub fn parse(text: &str) -> Result<Self> {
        let t = text.trim();
        if t.is_empty() {
            return Err(Error::InvalidSelector(text.to_owned()));
        }
        let lower = t.to_ascii_lowercase();
        let backend = match lower.as_str() {
            "all" => return Ok(DeviceSelector::All),
            "all-backends" => return Ok(DeviceSelector::AllBackends),
            "vulkan" | "vk" => Some(wgpu::Backend::Vulkan),
            "gl" | "gles" | "opengl" => Some(wgpu::Backend::Gl),
            "metal" => Some(wgpu::Backend::Metal),
            "dx12" | "d3d12" => Some(wgpu::Backend::Dx12),
            _ => None,
        };
        if let Some(b) = backend {
            return Ok(DeviceSelector::Backend(b));
        }
        if t.chars().all(|c| c.is_ascii_digit() || c == ',' || c == ' ') {
            let indices = t
                .split(',')
                .map(|s| s.trim().parse::<usize>().map_err(|_| Error::InvalidSelector(text.to_owned())))
                .collect::<Result<Vec<_>>>()?;
            return Ok(DeviceSelector::Indices(indices));
        }
        Ok(DeviceSelector::Name(t.to_owned()))
    }

    /// The adapters of `all` (as [`list_adapters`] returns them) that this selection opens.
    pub fn choose<'a>(&self, all: &'a [AdapterSummary]) -> Vec<&'a AdapterSummary> {
        match self {
            DeviceSelector::All => {
                all.iter().zip(default_picks(all)).filter(|(_, p)| p.is_picked()).map(|(a, _)| a).collect()
            }
            _ => all.iter().filter(|a| self.matches(a)).collect(),
        }
    }

    fn matches(&self, a: &AdapterSummary) -> bool {
        match self {
            DeviceSelector::All | DeviceSelector::AllBackends => true,
            DeviceSelector::Indices(ix) => ix.contains(&a.index),
            DeviceSelector::Backend(b) => a.backend == *b,
            DeviceSelector::Name(n) => a.name.to_lowercase().contains(&n.to_lowercase()),
        }
    }
}

impl fmt::Display for DeviceSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceSelector::All => write!(f, "\"all\""),
            DeviceSelector::AllBackends => write!(f, "\"all-backends\""),
            DeviceSelector::Indices(ix) => write!(f, "indices {ix:?}"),
            DeviceSelector::Backend(b) => write!(f, "backend {b:?}"),
            DeviceSelector::Name(n) => write!(f, "name {n:?}"),
        }
    }
}

/// A wgpu instance on every backend, honouring `WGPU_BACKEND` and friends.
fn instance() -> wgpu::Instance {
    wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env())
}

/// Adapters in a stable order (backend, then name) so indices mean the same thing each run.
fn enumerate(instance: &wgpu::Instance) -> Vec<(AdapterSummary, wgpu::Adapter)> {
    let mut adapters = pollster::block_on(instance.enumerate_adapters(wgpu::Backends::all()));
    adapters.sort_by_key(|a| {
        let i = a.get_info();
        (i.backend as u32, i.name, i.device_pci_bus_id)
    });
    adapters.into_iter().enumerate().map(|(i, a)| (AdapterSummary::new(i, &a), a)).collect()
}

/// Every adapter wgpu sees on every backend.
pub fn list_adapters() -> Vec<AdapterSummary> {
    enumerate(&instance()).into_iter().map(|(s, _)| s).collect()
}

/// Opens the selected adapters, each `count` times (a fresh device and queue each time).
///
/// Opening one adapter several times is how one GPU runs several independent streams.
pub fn open_devices(selector: &DeviceSelector, count: usize) -> Result<Vec<GpuDevice>> {
    let instance = instance();
    let all = enumerate(&instance);
    if all.is_empty() {
        return Err(Error::NoAdapter);
    }
    let summaries: Vec<AdapterSummary> = all.iter().map(|(s, _)| s.clone()).collect();
    let chosen: Vec<AdapterSummary> = selector.choose(&summaries).into_iter().cloned().collect();
    if let DeviceSelector::Indices(ix) = selector
        && let Some(bad) = ix.iter().find(|i| **i >= all.len())
    {
        return Err(Error::NoMatchingAdapter {
            selector: format!("index {bad}"),
            available: all.iter().map(|(s, _)| s.to_string()).collect::<Vec<_>>().join("; "),
        });
    }
    if chosen.is_empty() || count == 0 {
        return Err(Error::NoMatchingAdapter {
            selector: selector.to_string(),
            available: all.iter().map(|(s, _)| s.to_string()).collect::<Vec<_>>().join("; "),
        });
    }
    let mut devices = Vec::with_capacity(chosen.len() * count);
    for summary in &chosen {
        for copy in 0..count {
            // An adapter opens one device only, so each copy enumerates a fresh adapter handle.
            let adapter = if copy == 0 {
                all.iter().find(|(s, _)| s.index == summary.index).map(|(_, a)| a.clone())
            } else {
                // On GL every adapter handle of one instance shares that instance's EGL context,
                // which only one thread may hold: two devices on it race (EGL `BadAccess`). A
                // fresh instance gives the copy a context of its own.
                let source = if summary.backend == wgpu::Backend::Gl { self::instance() } else { instance.clone() };
                enumerate(&source).into_iter().find(|(s, _)| s == summary).map(|(_, a)| a)
            };
            let adapter = adapter.ok_or_else(|| Error::RequestDevice {
                adapter: summary.name.clone(),
                message: "the adapter disappeared while devices were being opened".to_owned(),
            })?;
            let label = if count > 1 {
                format!("{}#{copy} {} ({:?})", summary.index, summary.name, summary.backend)
            } else {
                format!("{} {} ({:?})", summary.index, summary.name, summary.backend)
            };
            devices.push(open_guarded(&adapter, summary, label)?);
        }
    }
    Ok(devices)
}

/// Opens one device, turning a panic inside wgpu or its driver into an error that names the
/// adapter. wgpu's backends panic rather than return an error on some driver failures (its GL
/// backend unwraps every EGL call); a user's choice of adapters must not abort the process.
fn open_guarded(adapter: &wgpu::Adapter, summary: &AdapterSummary, label: String) -> Result<GpuDevice> {
    let opened =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| GpuDevice::open(adapter, summary.clone(), label)));
    opened.unwrap_or_else(|panic| {
        let reason = panic
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| panic.downcast_ref::<&str>().copied())
            .unwrap_or("no message");
        Err(Error::RequestDevice {
            adapter: format!("{summary}"),
            message: format!(
                "the driver panicked while opening it ({reason}); choose other adapters with devices.select \
                 (`wgpipe devices` lists them) or open this one once (devices.count = 1)"
            ),
        })
    })
}
