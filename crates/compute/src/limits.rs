//! Whether a grid fits a device: the one place that sizes a field-stencil kernel's buffers and
//! dispatch and compares them with the device's wgpu limits.
//!
//! [`crate::FieldSim`] and [`crate::FrameProducer`] check here before creating anything, and
//! so does the runner before it allocates a frame or creates an output, so an impossible grid
//! is an error that names the grid, the bytes and the limit, never a wgpu panic or an
//! allocation that aborts the process. Every size is computed with checked arithmetic.

use crate::error::{Error, Result};

/// Bytes per element: fields are f32.
pub(crate) const F32_BYTES: u64 = 4;

/// The shaders' 32-bit indexing: the prelude computes `r * cols + c` in `i32` and
/// `f * cells + cell` in `u32` (see `shaders-wgsl/shared/field_stencil.wgsl`).
const MAX_CELLS: u64 = i32::MAX as u64;
const MAX_STATE_VALUES: u64 = u32::MAX as u64 + 1;

/// What a field-stencil kernel allocates and dispatches on one device for a grid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GridFootprint {
    /// Grid rows.
    pub rows: usize,
    /// Grid columns.
    pub cols: usize,
    /// Fields of the kernel's state.
    pub fields: usize,
    /// Cells of one field (`rows × cols`).
    pub cells: u64,
    /// Bytes of one state buffer (every field); a simulation holds two (ping-pong).
    pub state_bytes: u64,
    /// Bytes of one frame read back (the fields read); each staging buffer holds one.
    pub frame_bytes: u64,
    /// The kernel's workgroup size: `[x (columns), y (rows)]`.
    pub workgroup_size: [u64; 2],
    /// Workgroups of one step's dispatch: `[x (columns), y (rows)]`.
    pub workgroups: [u64; 2],
}

impl GridFootprint {
    /// Sizes a kernel of `fields` fields and workgroup size `workgroup_size` on a `rows × cols`
    /// grid, reading back `read_fields` fields per frame; errors when the sizes overflow or
    /// exceed what the shaders can index on any device.
    pub fn new(rows: usize, cols: usize, fields: usize, read_fields: usize, workgroup_size: [u32; 3]) -> Result<Self> {
        let too_large =
            |message: String| Error::TooLarge { rows, cols, fields, device: "any device".to_owned(), message };
        let cells = (rows as u64).checked_mul(cols as u64).ok_or_else(|| too_large(overflow("cells")))?;
        let state_values = cells.checked_mul(fields as u64).ok_or_else(|| too_large(overflow("state values")))?;
        let state_bytes = state_values.checked_mul(F32_BYTES).ok_or_else(|| too_large(overflow("state bytes")))?;
        let frame_bytes = cells
            .checked_mul(read_fields as u64)
            .and_then(|v| v.checked_mul(F32_BYTES))
            .ok_or_else(|| too_large(overflow("frame bytes")))?;
        if cells > MAX_CELLS {
            return Err(too_large(format!(
                "{cells} cells per field exceed the {MAX_CELLS} the kernels can index with 32-bit integers: \
                 use a grid of at most {MAX_CELLS} cells"
            )));
        }
        if state_values > MAX_STATE_VALUES {
            return Err(too_large(format!(
                "{state_values} values of state exceed the {MAX_STATE_VALUES} the kernels can index with 32-bit \
                 integers: use a smaller grid (at most {} cells)",
                MAX_STATE_VALUES / (fields.max(1) as u64)
            )));
        }
        let [wx, wy, _] = workgroup_size.map(|w| u64::from(w.max(1)));
        let workgroups = [(cols as u64).div_ceil(wx), (rows as u64).div_ceil(wy)];
        Ok(GridFootprint { rows, cols, fields, cells, state_bytes, frame_bytes, workgroup_size: [wx, wy], workgroups })
    }

    /// Errors unless the buffers and the dispatch fit `limits` (device `device`, for messages).
    pub fn check(&self, limits: &wgpu::Limits, device: &str) -> Result<()> {
        let too_large = |message: String| Error::TooLarge {
            rows: self.rows,
            cols: self.cols,
            fields: self.fields,
            device: format!("device {device}"),
            message,
        };
        let binding = limits.max_storage_buffer_binding_size.min(limits.max_buffer_size);
        if self.state_bytes > binding {
            let (limit_name, limit) = if limits.max_storage_buffer_binding_size <= limits.max_buffer_size {
                ("max_storage_buffer_binding_size", limits.max_storage_buffer_binding_size)
            } else {
                ("max_buffer_size", limits.max_buffer_size)
            };
            let cells = limit / (self.fields.max(1) as u64 * F32_BYTES);
            return Err(too_large(format!(
                "its state ({} fields × {} cells × 4 bytes) needs {} bytes in one storage buffer, above the \
                 device's {limit_name} of {limit} bytes: use a grid of at most {cells} cells (e.g. {side}×{side}), \
                 or fewer fields",
                self.fields,
                self.cells,
                self.state_bytes,
                side = cells.isqrt(),
            )));
        }
        if self.frame_bytes > limits.max_buffer_size {
            let limit = limits.max_buffer_size;
            return Err(too_large(format!(
                "one frame needs a staging buffer of {} bytes, above the device's max_buffer_size of {limit} \
                 bytes: read back fewer fields or use a smaller grid",
                self.frame_bytes
            )));
        }
        let max_groups = u64::from(limits.max_compute_workgroups_per_dimension);
        let axes = [("columns", self.cols, self.workgroup_size[0]), ("rows", self.rows, self.workgroup_size[1])];
        for ((what, len, size), groups) in axes.into_iter().zip(self.workgroups) {
            if groups > max_groups {
                return Err(too_large(format!(
                    "its {len} {what} need {groups} workgroups of {size} per step, above the device's \
                     max_compute_workgroups_per_dimension of {max_groups}: use at most {} {what}",
                    max_groups * size
                )));
            }
        }
        Ok(())
    }
}

/// The message for a size that does not fit in 64 bits.
fn overflow(what: &str) -> String {
    format!("the number of {what} overflows 64-bit arithmetic: use a smaller grid")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(r: Result<impl std::fmt::Debug>) -> String {
        r.err().map(|e| e.to_string()).unwrap_or_default()
    }

    /// WebGPU's defaults: storage bindings of 128 MiB, buffers of 256 MiB, 65535 workgroups.
    fn limits() -> wgpu::Limits {
        wgpu::Limits::default()
    }

    #[test]
    fn sizes_are_exact_and_fit_the_default_limits_up_to_the_edge() {
        let f = GridFootprint::new(4096, 4096, 2, 1, [16, 16, 1]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((f.cells, f.state_bytes, f.frame_bytes), (1 << 24, 1 << 27, 1 << 26));
        assert_eq!(f.workgroups, [256, 256]);
        assert!(f.check(&limits(), "d").is_ok(), "exactly 128 MiB of state fits");
        let one_more = GridFootprint::new(4097, 4096, 2, 1, [16, 16, 1]).unwrap_or_else(|e| panic!("{e}"));
        let e = err(one_more.check(&limits(), "0 test (Vulkan)"));
        assert!(e.starts_with("grid 4097×4096 with 2 fields does not fit device 0 test (Vulkan): its state"), "{e}");
        assert!(
            e.contains("needs 134250496 bytes") && e.contains("max_storage_buffer_binding_size of 134217728"),
            "{e}"
        );
        assert!(e.contains("at most 16777216 cells (e.g. 4096×4096)"), "{e}");
    }

    #[test]
    fn staging_buffers_and_dispatch_are_checked_too() {
        // Five fields read back (one field, repeated) make a frame above the buffer limit.
        let wide = GridFootprint::new(4096, 4096, 1, 5, [16, 16, 1]).unwrap_or_else(|e| panic!("{e}"));
        let e = err(wide.check(&limits(), "d"));
        assert!(e.contains("staging buffer of 335544320 bytes") && e.contains("max_buffer_size of 268435456"), "{e}");
        let long = GridFootprint::new(1, 65535 * 16 + 1, 1, 1, [16, 16, 1]).unwrap_or_else(|e| panic!("{e}"));
        let e = err(long.check(&limits(), "d"));
        assert!(e.contains("its 1048561 columns need 65536 workgroups of 16"), "{e}");
        assert!(e.contains("max_compute_workgroups_per_dimension of 65535: use at most 1048560 columns"), "{e}");
    }

    #[test]
    fn what_no_device_can_hold_is_refused_without_one() {
        let e = err(GridFootprint::new(100_000, 100_000, 2, 1, [16, 16, 1]));
        assert!(e.starts_with("grid 100000×100000 with 2 fields does not fit any device: 10000000000 cells"), "{e}");
        let e = err(GridFootprint::new(46341, 46341, 1, 1, [16, 16, 1]));
        assert!(e.contains("2147488281 cells per field exceed the 2147483647"), "{e}");
        let e = err(GridFootprint::new(40_000, 40_000, 3, 1, [16, 16, 1]));
        assert!(e.contains("4800000000 values of state exceed the 4294967296"), "{e}");
        let e = err(GridFootprint::new(usize::MAX, usize::MAX, 2, 1, [16, 16, 1]));
        assert!(e.contains("overflows 64-bit arithmetic"), "{e}");
    }
}
