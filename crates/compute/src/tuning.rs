//! How a kernel is laid out on an adapter: the choices the shipped kernels make per adapter
//! (cells per invocation, workgroup shapes, vector views, indexing), the limits a kernel's
//! declarations are checked against, and how readback spreads a frame's copy over threads.
//!
//! Running a kernel needs none of it: [`crate::KernelSpec`] and [`crate::FieldSim`] choose for
//! the adapter. It is here for the benchmarks that sweep the choices (`cargo xtask bench
//! kernel`), for tests that pin one, and for an application's own producer that wants the
//! choices the shipped kernels make ([`workgroup_size`] with [`workgroup_shapes`]).

pub use crate::invocation_width::{
    InvocationWidth, pipeline_constants, prefers_wide_invocations, resolve, resolve_rows_and_planes, widest,
    workgroup_shapes,
};
pub use crate::prelude::{Indexing, VectorViews, WorkgroupShapes, workgroup_size};
pub use crate::readback::COPY_BYTES_PER_THREAD;
pub use crate::wgsl_check::{
    CELLS_PER_INVOCATION_X, CELLS_PER_INVOCATION_Y, CELLS_PER_INVOCATION_Z, DeclaredCells, MAX_CELLS_PER_INVOCATION_X,
    MAX_CELLS_PER_INVOCATION_YZ,
};
