//! What wgpu tells about one adapter: the value discovery lists, selection and the default
//! pick decide on, and an opened device keeps.

use std::fmt;

/// What wgpu tells about one adapter, in the order [`crate::list_adapters`] returns them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdapterSummary {
    /// Position in [`crate::list_adapters`]; what index selection refers to.
    pub index: usize,
    /// Adapter name, e.g. "llvmpipe (LLVM 15.0.6, 256 bits)".
    pub name: String,
    /// Backend: Vulkan, Metal, Dx12, Gl.
    pub backend: wgpu::Backend,
    /// Discrete, integrated, virtual, CPU, other.
    pub device_type: wgpu::DeviceType,
    /// Driver name and version info.
    pub driver: String,
    /// PCI vendor id (GL derives it from the vendor string; 0 when unknown).
    pub vendor: u32,
    /// PCI device id (0 when the backend does not know it, as on GL).
    pub device: u32,
}

impl fmt::Display for AdapterSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} ({:?}, {:?}, {})", self.index, self.name, self.backend, self.device_type, self.driver)
    }
}

impl AdapterSummary {
    /// Whether the adapter computes on the host's CPU (lavapipe, llvmpipe, WARP, SwiftShader):
    /// its buffers live in host memory and its work takes the host's cores.
    pub fn is_cpu(&self) -> bool {
        self.device_type == wgpu::DeviceType::Cpu
    }

    /// What `adapter` says about itself, at position `index` of the enumeration.
    pub(crate) fn new(index: usize, adapter: &wgpu::Adapter) -> Self {
        let info = adapter.get_info();
        let driver = match (info.driver.is_empty(), info.driver_info.is_empty()) {
            (true, true) => "unknown driver".to_owned(),
            (false, true) => info.driver.clone(),
            (true, false) => info.driver_info.clone(),
            (false, false) => format!("{} {}", info.driver, info.driver_info),
        };
        AdapterSummary {
            index,
            name: info.name,
            backend: info.backend,
            device_type: info.device_type,
            driver,
            vendor: info.vendor,
            device: info.device,
        }
    }
}
