//! Errors of the compute crate.

use std::path::PathBuf;

use crate::wgsl_check::WgslError;

/// Result with the compute crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Hint printed when no adapter exists at all.
pub const NO_ADAPTER_HINT: &str = "install a GPU driver with Vulkan, Metal, DX12 or GL support; \
on a headless Linux machine without a GPU, install lavapipe (Mesa's Vulkan on the CPU): \
`apt-get install mesa-vulkan-drivers libvulkan1`";

/// Everything that can go wrong on the GPU side.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// wgpu sees no adapter on any backend.
    #[error("no GPU adapter found on any backend: {NO_ADAPTER_HINT}")]
    NoAdapter,
    /// Adapters exist, but none matches the selection.
    #[error("no GPU adapter matches {selector}; available: {available}; list them with `wgpipe devices`")]
    NoMatchingAdapter {
        /// The selection as the user wrote it.
        selector: String,
        /// The adapters that exist, one per `index: name (backend)`.
        available: String,
    },
    /// A device selection string or value is malformed.
    #[error(
        "invalid device selection {0:?}: use \"all\", \"all-backends\", a backend (vulkan, gl, metal, dx12), a name substring, or a list of indices"
    )]
    InvalidSelector(String),
    /// The adapter refused to open a device.
    #[error("cannot open device on adapter {adapter}: {message}")]
    RequestDevice {
        /// Adapter name and backend.
        adapter: String,
        /// wgpu's reason.
        message: String,
    },
    /// A WGSL file could not be read.
    #[error("cannot read WGSL file {path}: {source}")]
    ReadShader {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// WGSL failed to parse or validate.
    #[error("invalid WGSL: {0}")]
    Wgsl(WgslError),
    /// A kernel description does not fit its shader or grid.
    #[error("invalid kernel {kernel}: {message}")]
    InvalidKernel {
        /// Kernel name.
        kernel: String,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// An encoding of the frames (a ZFP rate, ...) is not valid.
    #[error("invalid {what}: {message}")]
    InvalidEncoding {
        /// The setting as given, e.g. `ZFP rate 40`.
        what: String,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// A grid shape is not a valid grid.
    #[error("invalid grid {shape:?}: {message}")]
    InvalidGrid {
        /// The shape as given, slowest axis first.
        shape: Vec<usize>,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// A block of a split grid (or a set of blocks) is not valid: [`crate::Block`].
    #[error("invalid block {what} of the {global} grid: {message}")]
    InvalidBlock {
        /// The block: `at offset [..] of shape [..]`, or which blocks.
        what: String,
        /// The whole grid, e.g. `24×20×16`.
        global: String,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// The grid or state does not fit the device (or any device: sizes that overflow).
    #[error("a {grid} grid with {fields} fields does not fit {device}: {message}")]
    TooLarge {
        /// The grid, e.g. `64×64×64`.
        grid: String,
        /// Fields.
        fields: usize,
        /// `device <label>`, or `any device` for a limit of the kernels themselves.
        device: String,
        /// The sizes, the limit exceeded and what to change.
        message: String,
    },
    /// An application's [`crate::FrameSource`] failed to record a frame.
    #[error("frame source {source_name}: {message}")]
    Source {
        /// The source's name.
        source_name: String,
        /// Its error.
        message: String,
    },
    /// wgpu reported a validation or out-of-memory error.
    #[error("GPU error on device {device}: {message}")]
    Gpu {
        /// Device label.
        device: String,
        /// wgpu's message.
        message: String,
    },
    /// The device was lost (driver reset, GPU removed, ...).
    #[error("device {device} was lost: {message}")]
    DeviceLost {
        /// Device label.
        device: String,
        /// wgpu's reason.
        message: String,
    },
    /// The GPU did not finish a submission in time.
    #[error(
        "device {device} did not finish its work within {seconds} s: the GPU may be hung or far too slow for this grid"
    )]
    Timeout {
        /// Device label.
        device: String,
        /// Seconds waited.
        seconds: u64,
    },
    /// A caller-provided buffer has the wrong size.
    #[error("output buffer holds {got} bytes but a frame needs {expected}")]
    BufferSize {
        /// Bytes needed.
        expected: usize,
        /// Bytes given.
        got: usize,
    },
}

impl From<WgslError> for Error {
    fn from(e: WgslError) -> Self {
        Error::Wgsl(e)
    }
}
