//! # wgpipe-compute
//!
//! The GPU half of wgpipe: it finds adapters on every wgpu backend (Vulkan, Metal, DX12, GL),
//! opens devices, runs field-stencil WGSL kernels on them and reads frames back through a
//! ring of staging buffers. It knows nothing of storage: frames come out as bytes in buffers
//! the caller owns.
//!
//! ```
//! use wgpipe_compute::{gray_scott, open_devices, DeviceSelector, FieldSim, FrameProducer, Grid, ReadbackConfig};
//!
//! // The default selection: each physical adapter once, hardware preferred.
//! let gpu = open_devices(&DeviceSelector::All, 1)?.remove(0);
//! let params = gray_scott::GrayScottParams::default();
//! let grid = Grid::new(&[32, 32])?;
//! let sim = FieldSim::new(&gpu, &params.kernel(), &grid, &gray_scott::initial_state(32, 32, 0, 0.0))?;
//! // 3 frames of 8 steps each, holding field 1 (`v`), read back through 2 staging buffers.
//! let config = ReadbackConfig { steps_per_frame: 8, frames: 3, staging_buffers: 2, fields: vec![1], work_ahead: true };
//! let mut frames = FrameProducer::new(sim, config)?;
//! let mut buf = vec![0u8; frames.frame_bytes()];
//! let mut steps = Vec::new();
//! while let Some(info) = frames.next_into(&mut buf)? {
//!     steps.push(info.step);
//! }
//! assert_eq!(steps, [8, 16, 24]);
//! assert_eq!(buf.len(), 32 * 32 * 4); // one f32 field of 32 × 32 cells
//! # Ok::<(), wgpipe_compute::Error>(())
//! ```
//!
//! - [`list_adapters`] / [`open_devices`]: discovery and selection ([`DeviceSelector`]; the
//!   default takes each physical adapter once, hardware first: [`default_picks`]).
//! - [`Grid`]: the shape of a 1-, 2- or 3-D grid (`[nz, ny, nx]`, C order, x fastest).
//! - [`KernelSpec`]: a WGSL step shader, its fields, parameters, rank and [`Boundary`]; it is
//!   compiled after a prelude generated from them ([`KernelSpec::prelude`]).
//!   [`gray_scott`] (2-D) and [`gray_scott_3d`] (the ADIOS2 tutorial's model) are built in,
//!   each with a plain-Rust twin; [`cpu_twin`] has the prelude's helpers.
//! - [`FieldSim`]: a kernel's state on one device (a ping-pong buffer pair per field).
//! - [`FrameProducer`]: steps + readback, with frame n+1 computing while frame n is copied out;
//!   frames as f32, as f16 converted on the GPU ([`OutputDType`]) or ZFP-compressed on the GPU
//!   ([`FieldEncoding`], [`zfp`]), each with the GPU's own
//!   time from timestamp queries where the device has `TIMESTAMP_QUERY` ([`FrameInfo::gpu_time`]).
//! - [`tuning`]: how kernels are laid out on an adapter (cells per invocation, workgroup
//!   shapes), chosen for you; for benchmarks, tests and producers that want the same choices.
//! - [`Block`] / [`BlockSim`]: one grid split into blocks (ranks or devices), each with one
//!   ghost layer per face, the halos exchanged every step through [`Faces`]
//!   ([`exchange_in_process`] within one process); bit-identical to the whole grid's run.

mod adapter_summary;
mod adapters;
pub mod analysis;
pub mod cpu_twin;
mod default_pick;
mod device;
mod error;
mod f16_pack;
mod field_sim;
pub mod gray_scott;
pub mod gray_scott_3d;
mod grid;
mod halo;
pub mod headless;
mod invocation_width;
mod kernel;
mod limits;
pub mod noise;
mod output_dtype;
mod pipeline;
mod prelude;
mod readback;
pub mod shipped;
mod timestamps;
pub mod tuning;
mod wgsl_check;
pub mod zfp;

pub use adapter_summary::AdapterSummary;
pub use adapters::{DeviceSelector, list_adapters, open_devices};
pub use analysis::{AnalysisOutput, AnalysisSpec, BlockAnalysis, BlockStatistics, MAX_PDF_BINS, Reduction};
pub use default_pick::{DefaultPick, default_picks};
pub use device::GpuDevice;
pub use error::{Error, NO_ADAPTER_HINT, Result};
pub use field_sim::FieldSim;
pub use grid::Grid;
pub use halo::{Block, BlockSim, Faces, Side, exchange_faces, exchange_in_process};
pub use kernel::{KernelSpec, MAX_WGSL_BYTES, WgslSource};
pub use limits::GridFootprint;
pub use output_dtype::{FieldEncoding, OutputDType};
pub use prelude::{Boundary, UnknownBoundary};
pub use readback::{BlockObserver, FrameInfo, FrameProducer, FrameSource, ReadbackConfig};
pub use wgsl_check::{CheckedWgsl, PRELUDE_NAME, WgslError};

/// Re-export of the wgpu version this crate is built on, for users who pass wgpu types.
pub use wgpu;
