//! The shaders shipped in `shaders-wgsl/`, with what their prelude is generated from.
//!
//! The one list of them: the library compiles the built-in models from it, and `build.rs`
//! (which includes this file, hence `std` only) validates every shader in the folder with its
//! own prelude, refusing a shader that is not listed here.

/// A shipped shader and the prelude it is compiled with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shipped {
    /// Path from the repository root, used in error messages.
    pub file: &'static str,
    /// The WGSL text.
    pub source: &'static str,
    /// Grid rank the kernel is written for.
    pub rank: usize,
    /// Field names, in binding order.
    pub fields: &'static [&'static str],
}

/// The 2-D Gray-Scott step (`gray_scott` module).
pub const GRAY_SCOTT: Shipped = Shipped {
    file: "shaders-wgsl/gray_scott.wgsl",
    source: include_str!("../shaders-wgsl/gray_scott.wgsl"),
    rank: 2,
    fields: &["u", "v"],
};

/// The 3-D Gray-Scott step of the ADIOS2 tutorial (`gray_scott_3d` module).
pub const GRAY_SCOTT_3D: Shipped = Shipped {
    file: "shaders-wgsl/gray_scott_3d.wgsl",
    source: include_str!("../shaders-wgsl/gray_scott_3d.wgsl"),
    rank: 3,
    fields: &["u", "v"],
};

/// Heat diffusion, the example of a user kernel (`configs/heat.toml`, `examples/custom_kernel.rs`).
pub const HEAT: Shipped = Shipped {
    file: "shaders-wgsl/heat.wgsl",
    source: include_str!("../shaders-wgsl/heat.wgsl"),
    rank: 2,
    fields: &["u"],
};

/// Every shipped shader.
pub const ALL: [Shipped; 3] = [GRAY_SCOTT, GRAY_SCOTT_3D, HEAT];
