//! Which adapters the default selection (`"all"`) opens: each physical adapter once, hardware
//! preferred.
//!
//! wgpu lists one GPU once per backend that reaches it (Vulkan and GL on Linux, DX12 and GL on
//! Windows), and lists CPU rasterizers (lavapipe, llvmpipe, WARP, SwiftShader) beside real GPUs.
//! Opening them all runs one GPU twice, through two drivers that contend for it, and adds a CPU
//! "device" whose streams finish last. This module decides from [`AdapterSummary`] values alone,
//! so the rule is tested without a GPU.

use std::fmt;

use crate::adapter_summary::AdapterSummary;

/// Why the default selection takes or leaves one adapter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DefaultPick {
    /// Taken: a hardware adapter (discrete, integrated, virtual or unknown type).
    Hardware,
    /// Taken: a CPU adapter, because no hardware adapter exists.
    CpuFallback,
    /// Left: the same physical adapter as adapter `of`, which is reached through a preferred
    /// backend (native APIs before GL).
    SameAdapterAs {
        /// The [`AdapterSummary::index`] of the adapter taken instead.
        of: usize,
    },
    /// Left: a CPU adapter, while a hardware adapter exists.
    CpuBesideHardware,
}

impl DefaultPick {
    /// Whether the default selection opens the adapter.
    pub fn is_picked(self) -> bool {
        matches!(self, DefaultPick::Hardware | DefaultPick::CpuFallback)
    }
}

impl fmt::Display for DefaultPick {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DefaultPick::Hardware => f.write_str("hardware adapter"),
            DefaultPick::CpuFallback => f.write_str("CPU adapter, used because no hardware adapter exists"),
            DefaultPick::SameAdapterAs { of } => write!(f, "same adapter as {of}, through a less preferred backend"),
            DefaultPick::CpuBesideHardware => f.write_str("CPU adapter, left out because a hardware adapter exists"),
        }
    }
}

/// Backend preference among views of one physical adapter: native APIs before GL.
fn backend_rank(backend: wgpu::Backend) -> u8 {
    match backend {
        wgpu::Backend::Vulkan | wgpu::Backend::Metal | wgpu::Backend::Dx12 => 0,
        wgpu::Backend::Gl => 2,
        _ => 1,
    }
}

/// The adapter's name without what drivers add to it, so that two views of one GPU compare
/// equal: GL renderers append `/PCIe/SSE2` (NVIDIA) or a parenthesised driver description
/// (Mesa: `AMD Radeon RX 6800 XT (radeonsi, navi21, LLVM …)` where Vulkan says
/// `(RADV NAVI21)`), and Mesa's GL prefixes `Mesa ` (`Mesa Intel(R) UHD Graphics 770`).
fn base_name(name: &str) -> String {
    let mut s = name.to_lowercase().replace("(r)", "").replace("(tm)", "");
    if let Some(cut) = s.find('/') {
        s.truncate(cut);
    }
    let mut s = s.trim();
    while s.ends_with(')')
        && let Some(open) = s.rfind('(')
    {
        s = s[..open].trim_end();
    }
    s.strip_prefix("mesa ").unwrap_or(s).trim().to_owned()
}

/// Whether two adapters on different backends are the same physical adapter: same vendor id,
/// same device id where both backends know it (GL reports 0), and the same base name.
fn same_physical(a: &AdapterSummary, b: &AdapterSummary) -> bool {
    a.backend != b.backend
        && a.vendor == b.vendor
        && (a.device == b.device || a.device == 0 || b.device == 0)
        && base_name(&a.name) == base_name(&b.name)
}

/// For each adapter of `adapters` (in the same order), whether the default selection takes it
/// and why.
///
/// Two adapters on the *same* backend are never duplicates (two identical GPUs are two
/// devices); a view through another backend of an adapter already taken is left out. CPU
/// adapters are taken only when no hardware adapter exists.
pub fn default_picks(adapters: &[AdapterSummary]) -> Vec<DefaultPick> {
    let mut order: Vec<usize> = (0..adapters.len()).collect();
    order.sort_by_key(|&i| (backend_rank(adapters[i].backend), adapters[i].index));
    let mut picks: Vec<Option<DefaultPick>> = vec![None; adapters.len()];
    let mut kept: Vec<usize> = Vec::new();
    for i in order {
        let a = &adapters[i];
        if let Some(&k) = kept.iter().find(|&&k| same_physical(&adapters[k], a)) {
            picks[i] = Some(DefaultPick::SameAdapterAs { of: adapters[k].index });
        } else {
            kept.push(i);
        }
    }
    let any_hardware = kept.iter().any(|&k| !adapters[k].is_cpu());
    for k in kept {
        picks[k] = Some(match (adapters[k].is_cpu(), any_hardware) {
            (false, _) => DefaultPick::Hardware,
            (true, false) => DefaultPick::CpuFallback,
            (true, true) => DefaultPick::CpuBesideHardware,
        });
    }
    picks.into_iter().map(|p| p.unwrap_or(DefaultPick::CpuBesideHardware)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use wgpu::{Backend, DeviceType};

    const NVIDIA: u32 = 0x10de;
    const MESA: u32 = 0x10005;

    fn adapter(
        index: usize,
        name: &str,
        backend: Backend,
        device_type: DeviceType,
        vendor: u32,
        device: u32,
    ) -> AdapterSummary {
        AdapterSummary { index, name: name.to_owned(), backend, device_type, driver: String::new(), vendor, device }
    }

    fn lavapipe(index: usize) -> AdapterSummary {
        adapter(index, "llvmpipe (LLVM 15.0.6, 256 bits)", Backend::Vulkan, DeviceType::Cpu, MESA, 0)
    }

    fn llvmpipe_gl(index: usize) -> AdapterSummary {
        adapter(index, "llvmpipe (LLVM 15.0.6, 256 bits)", Backend::Gl, DeviceType::Cpu, MESA, 0)
    }

    fn rtx(index: usize, backend: Backend) -> AdapterSummary {
        match backend {
            Backend::Gl => adapter(index, "NVIDIA GeForce RTX 3080/PCIe/SSE2", backend, DeviceType::Other, NVIDIA, 0),
            _ => adapter(index, "NVIDIA GeForce RTX 3080", backend, DeviceType::DiscreteGpu, NVIDIA, 0x2206),
        }
    }

    #[test]
    fn a_real_gpu_is_taken_once_and_lavapipe_is_left_out() {
        // wgpu's order: backend, then name (Vulkan before GL).
        let list = [rtx(0, Backend::Vulkan), lavapipe(1), rtx(2, Backend::Gl), llvmpipe_gl(3)];
        let picks = default_picks(&list);
        assert_eq!(
            picks,
            [
                DefaultPick::Hardware,
                DefaultPick::CpuBesideHardware,
                DefaultPick::SameAdapterAs { of: 0 },
                DefaultPick::SameAdapterAs { of: 1 },
            ]
        );
    }

    #[test]
    fn without_hardware_one_view_of_the_cpu_adapter_is_taken() {
        let picks = default_picks(&[lavapipe(0), llvmpipe_gl(1)]);
        assert_eq!(picks, [DefaultPick::CpuFallback, DefaultPick::SameAdapterAs { of: 0 }]);
    }

    #[test]
    fn gl_is_left_out_even_when_listed_first() {
        let picks = default_picks(&[rtx(0, Backend::Gl), rtx(1, Backend::Vulkan)]);
        assert_eq!(picks, [DefaultPick::SameAdapterAs { of: 1 }, DefaultPick::Hardware]);
    }

    #[test]
    fn two_identical_gpus_on_one_backend_are_both_taken() {
        let picks = default_picks(&[rtx(0, Backend::Vulkan), rtx(1, Backend::Vulkan), rtx(2, Backend::Gl)]);
        assert_eq!(picks, [DefaultPick::Hardware, DefaultPick::Hardware, DefaultPick::SameAdapterAs { of: 0 }]);
    }

    #[test]
    fn different_gpus_of_one_vendor_are_not_merged() {
        let other = adapter(1, "NVIDIA RTX A6000", Backend::Gl, DeviceType::Other, NVIDIA, 0);
        let picks = default_picks(&[rtx(0, Backend::Vulkan), other]);
        assert_eq!(picks, [DefaultPick::Hardware, DefaultPick::Hardware]);
    }

    #[test]
    fn integrated_and_discrete_gpus_are_both_hardware() {
        let intel = adapter(1, "Intel(R) UHD Graphics 770", Backend::Vulkan, DeviceType::IntegratedGpu, 0x8086, 0x4680);
        let picks = default_picks(&[rtx(0, Backend::Vulkan), intel, lavapipe(2)]);
        assert_eq!(picks, [DefaultPick::Hardware, DefaultPick::Hardware, DefaultPick::CpuBesideHardware]);
    }

    #[test]
    fn mesa_gl_names_match_their_vulkan_names() {
        let intel_vk = adapter(
            0,
            "Intel(R) UHD Graphics 770 (ADL-S GT1)",
            Backend::Vulkan,
            DeviceType::IntegratedGpu,
            0x8086,
            0x4680,
        );
        let intel_gl =
            adapter(1, "Mesa Intel(R) UHD Graphics 770 (ADL-S GT1)", Backend::Gl, DeviceType::IntegratedGpu, 0x8086, 0);
        let amd_vk =
            adapter(2, "AMD Radeon RX 6800 XT (RADV NAVI21)", Backend::Vulkan, DeviceType::DiscreteGpu, 0x1002, 0x73bf);
        let amd_gl = adapter(
            3,
            "AMD Radeon RX 6800 XT (radeonsi, navi21, LLVM 15.0.7, DRM 3.49)",
            Backend::Gl,
            DeviceType::Other,
            0x1002,
            0,
        );
        let picks = default_picks(&[intel_vk, intel_gl, amd_vk, amd_gl]);
        assert_eq!(
            picks,
            [
                DefaultPick::Hardware,
                DefaultPick::SameAdapterAs { of: 0 },
                DefaultPick::Hardware,
                DefaultPick::SameAdapterAs { of: 2 }
            ]
        );
    }

    #[test]
    fn every_adapter_gets_a_verdict_and_at_least_one_is_picked() {
        assert!(default_picks(&[]).is_empty());
        let list = [llvmpipe_gl(0)];
        assert_eq!(default_picks(&list), [DefaultPick::CpuFallback]);
        assert!(DefaultPick::CpuFallback.is_picked() && !DefaultPick::SameAdapterAs { of: 0 }.is_picked());
    }
}
