//! # wgpipe-compute
//!
//! The GPU half of wgpipe: it finds adapters on every wgpu backend (Vulkan, Metal, DX12, GL),
//! opens devices, runs field-stencil WGSL kernels on them and reads frames back through a
//! ring of staging buffers. It knows nothing of storage: frames come out as bytes in buffers
//! the caller owns.
//!
//! - [`list_adapters`] / [`open_devices`]: discovery and selection ([`DeviceSelector`]).
//! - [`KernelSpec`]: a WGSL step shader, its fields and parameters; [`gray_scott`] is the
//!   flagship model, with a plain-Rust twin ([`gray_scott::cpu_step`]).
//! - [`FieldSim`]: a kernel's state on one device (ping-pong buffers).
//! - [`FrameProducer`]: steps + readback, with frame n+1 computing while frame n is copied out.
//!
//! ```no_run
//! use wgpipe_compute::{gray_scott, open_devices, DeviceSelector, FieldSim, FrameProducer, ReadbackConfig};
//!
//! let gpu = open_devices(&DeviceSelector::All, 1)?.remove(0);
//! let params = gray_scott::GrayScottParams::default();
//! let sim = FieldSim::new(&gpu, &params.kernel(), 64, 64, &gray_scott::initial_state(64, 64, 0, 0.0))?;
//! let config = ReadbackConfig { steps_per_frame: 32, frames: 10, staging_buffers: 2, fields: vec![1], work_ahead: true };
//! let mut frames = FrameProducer::new(sim, config)?;
//! let mut buf = vec![0u8; frames.frame_bytes()];
//! while let Some(info) = frames.next_into(&mut buf)? {
//!     println!("frame {} after {} steps", info.index, info.step);
//! }
//! # Ok::<(), wgpipe_compute::Error>(())
//! ```

mod adapters;
pub mod cpu_twin;
mod device;
mod error;
mod field_sim;
pub mod gray_scott;
mod kernel;
mod limits;
mod readback;
mod wgsl_check;

pub use adapters::{AdapterSummary, DeviceSelector, list_adapters, open_devices};
pub use device::GpuDevice;
pub use error::{Error, NO_ADAPTER_HINT, Result};
pub use field_sim::FieldSim;
pub use kernel::{KernelSpec, MAX_WGSL_BYTES, WgslSource};
pub use limits::GridFootprint;
pub use readback::{FrameInfo, FrameProducer, ReadbackConfig};
pub use wgsl_check::{PRELUDE, PRELUDE_PATH, WgslError};

/// Re-export of the wgpu version this crate is built on, for users who pass wgpu types.
pub use wgpu;
