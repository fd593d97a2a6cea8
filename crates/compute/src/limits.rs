//! Whether a grid fits a device: the one place that sizes a field-stencil kernel's buffers and
//! dispatch and compares them with the device's wgpu limits.
//!
//! [`crate::FieldSim`] and [`crate::FrameProducer`] check here before creating anything, and
//! so does the runner before it allocates a frame or creates an output, so an impossible grid
//! is an error that names the grid, the bytes and the limit, never a wgpu panic or an
//! allocation that aborts the process. What no device can index at all (2^32 cells or more)
//! is [`Grid::new`]'s to refuse; every size here is computed with checked arithmetic.

use crate::error::{Error, Result};
use crate::grid::Grid;
use crate::prelude::VectorViews;

/// Bytes per element: fields are f32.
pub(crate) const F32_BYTES: u64 = 4;

/// Axis names in dispatch order (x fastest), for messages.
const AXES: [&str; 3] = ["x", "y", "z"];

/// What a field-stencil kernel allocates and dispatches on one device for a grid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GridFootprint {
    /// The grid.
    pub grid: Grid,
    /// Fields of the kernel's state.
    pub fields: usize,
    /// Cells of one field.
    pub cells: u64,
    /// Bytes of one field's buffer; each field has two (ping-pong), each its own binding.
    pub field_bytes: u64,
    /// Bytes of the whole state (every field once), as the host builds it at the start.
    pub state_bytes: u64,
    /// Bytes of one frame read back (the fields read); each staging buffer holds one.
    pub frame_bytes: u64,
    /// The kernel's workgroup size: `[x, y, z]`.
    pub workgroup_size: [u64; 3],
    /// Workgroups of one step's dispatch: `[x, y, z]`.
    pub workgroups: [u64; 3],
}

impl GridFootprint {
    /// Sizes a kernel of `fields` fields and workgroup size `workgroup_size` on `grid`, reading
    /// back `read_fields` fields per frame; errors when a size overflows 64-bit arithmetic.
    pub fn new(grid: &Grid, fields: usize, read_fields: usize, workgroup_size: [u32; 3]) -> Result<Self> {
        let too_large = |what: &str| Error::TooLarge {
            grid: grid.to_string(),
            fields,
            device: "any device".to_owned(),
            message: format!("the number of {what} overflows 64-bit arithmetic: use a smaller grid or fewer fields"),
        };
        let cells = grid.cells() as u64;
        let field_bytes = cells.checked_mul(F32_BYTES).ok_or_else(|| too_large("field bytes"))?;
        let state_bytes = field_bytes.checked_mul(fields as u64).ok_or_else(|| too_large("state bytes"))?;
        let frame_bytes = field_bytes.checked_mul(read_fields as u64).ok_or_else(|| too_large("frame bytes"))?;
        let workgroup_size = workgroup_size.map(|w| u64::from(w.max(1)));
        let dims = [grid.nx(), grid.ny(), grid.nz()];
        let workgroups = [0, 1, 2].map(|a| (dims[a] as u64).div_ceil(workgroup_size[a]));
        Ok(GridFootprint {
            grid: *grid,
            fields,
            cells,
            field_bytes,
            state_bytes,
            frame_bytes,
            workgroup_size,
            workgroups,
        })
    }

    /// Errors unless the fields' storage buffers (two each) fit `limits`: checked on its own
    /// before a kernel's WGSL is generated and validated (a prelude for more fields than any
    /// device binds would take long to generate and parse, where a GPU's limit is in the
    /// millions).
    pub fn check_bindings(&self, limits: &wgpu::Limits, device: &str) -> Result<()> {
        let storage_buffers = 2 * self.fields as u64;
        let max_storage = u64::from(limits.max_storage_buffers_per_shader_stage);
        if storage_buffers > max_storage {
            return Err(self.too_large(
                device,
                format!(
                    "each field takes two storage buffers (NAME_in and NAME_out), {storage_buffers} in all, above \
                     the device's max_storage_buffers_per_shader_stage of {max_storage}: use at most {} fields",
                    max_storage / 2
                ),
            ));
        }
        Ok(())
    }

    /// Whether a kernel on this grid gets the prelude's vector views of its fields
    /// ([`VectorViews`]): where the device binds two more storage buffers per field, and a
    /// field's cells are a multiple of 4, so that a view's last `vec4` is whole.
    pub fn vector_views(&self, limits: &wgpu::Limits) -> VectorViews {
        let with_views = 4 * self.fields as u64;
        if self.cells.is_multiple_of(4) && with_views <= u64::from(limits.max_storage_buffers_per_shader_stage) {
            VectorViews::Bound
        } else {
            VectorViews::Emulated
        }
    }

    fn too_large(&self, device: &str, message: String) -> Error {
        Error::TooLarge {
            grid: self.grid.to_string(),
            fields: self.fields,
            device: format!("device {device}"),
            message,
        }
    }

    /// Errors unless the buffers and the dispatch fit `limits` (device `device`, for messages).
    pub fn check(&self, limits: &wgpu::Limits, device: &str) -> Result<()> {
        self.check_bindings(limits, device)?;
        let too_large = |message: String| self.too_large(device, message);
        let (limit_name, limit) = if limits.max_storage_buffer_binding_size <= limits.max_buffer_size {
            ("max_storage_buffer_binding_size", limits.max_storage_buffer_binding_size)
        } else {
            ("max_buffer_size", limits.max_buffer_size)
        };
        if self.field_bytes > limit {
            let cells = limit / F32_BYTES;
            let rank = self.grid.rank() as u32;
            let side = (1..).take_while(|s: &u64| s.checked_pow(rank).is_some_and(|v| v <= cells)).last().unwrap_or(1);
            let example = vec![side.to_string(); rank as usize].join("×");
            return Err(too_large(format!(
                "one field ({} cells × 4 bytes) needs {} bytes in one storage buffer, above the device's \
                 {limit_name} of {limit} bytes: use a grid of at most {cells} cells (e.g. {example})",
                self.cells, self.field_bytes,
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
        let dims = [self.grid.nx(), self.grid.ny(), self.grid.nz()];
        for axis in 0..3 {
            let (groups, size) = (self.workgroups[axis], self.workgroup_size[axis]);
            if groups > max_groups {
                return Err(too_large(format!(
                    "its {} cells along {} need {groups} workgroups of {size} per step, above the device's \
                     max_compute_workgroups_per_dimension of {max_groups}: use at most {} cells along {}",
                    dims[axis],
                    AXES[axis],
                    max_groups * size,
                    AXES[axis]
                )));
            }
        }
        Ok(())
    }

    /// The dispatch as wgpu takes it. Valid once [`GridFootprint::check`] passed, which bounds
    /// every count by the device's `u32` limit.
    pub(crate) fn dispatch(&self) -> [u32; 3] {
        self.workgroups.map(|w| u32::try_from(w).unwrap_or(u32::MAX))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(r: Result<impl std::fmt::Debug>) -> String {
        r.err().map(|e| e.to_string()).unwrap_or_default()
    }

    fn grid(shape: &[usize]) -> Grid {
        Grid::new(shape).unwrap_or_else(|e| panic!("{e}"))
    }

    fn footprint(shape: &[usize], fields: usize, read: usize, wg: [u32; 3]) -> GridFootprint {
        GridFootprint::new(&grid(shape), fields, read, wg).unwrap_or_else(|e| panic!("{e}"))
    }

    /// WebGPU's defaults: storage bindings of 128 MiB, buffers of 256 MiB, 65535 workgroups.
    fn limits() -> wgpu::Limits {
        wgpu::Limits::default()
    }

    #[test]
    fn sizes_are_exact_and_fit_the_default_limits_up_to_the_edge() {
        let f = footprint(&[8192, 4096], 2, 1, [16, 16, 1]);
        assert_eq!((f.cells, f.field_bytes, f.state_bytes, f.frame_bytes), (1 << 25, 1 << 27, 1 << 28, 1 << 27));
        assert_eq!(f.workgroups, [256, 512, 1]);
        assert!(f.check(&limits(), "d").is_ok(), "one field of exactly 128 MiB fits, whatever the state");
        let one_more = footprint(&[8193, 4096], 2, 1, [16, 16, 1]);
        let e = err(one_more.check(&limits(), "0 test (Vulkan)"));
        assert!(e.starts_with("a 8193×4096 grid with 2 fields does not fit device 0 test (Vulkan): one field"), "{e}");
        assert!(
            e.contains("needs 134234112 bytes") && e.contains("max_storage_buffer_binding_size of 134217728"),
            "{e}"
        );
        assert!(e.contains("at most 33554432 cells (e.g. 5792×5792)"), "{e}");
        let cube = footprint(&[323, 323, 323], 2, 1, [4, 4, 4]);
        let e = err(cube.check(&limits(), "d"));
        assert!(e.contains("(e.g. 322×322×322)"), "{e}");
    }

    #[test]
    fn staging_buffers_dispatch_and_bindings_are_checked_too() {
        // Three fields read back (one field, repeated) make a frame above the buffer limit.
        let wide = footprint(&[8192, 4096], 1, 3, [16, 16, 1]);
        let e = err(wide.check(&limits(), "d"));
        assert!(e.contains("staging buffer of 402653184 bytes") && e.contains("max_buffer_size of 268435456"), "{e}");
        let long = footprint(&[1, 65535 * 16 + 1], 1, 1, [16, 16, 1]);
        let e = err(long.check(&limits(), "d"));
        assert!(e.contains("its 1048561 cells along x need 65536 workgroups of 16"), "{e}");
        assert!(e.contains("max_compute_workgroups_per_dimension of 65535: use at most 1048560 cells along x"), "{e}");
        let deep = footprint(&[65535 * 4 + 1, 1, 1], 1, 1, [4, 4, 4]);
        assert!(err(deep.check(&limits(), "d")).contains("cells along z need 65536 workgroups of 4"));
        let many = footprint(&[16, 16], 5, 1, [16, 16, 1]);
        let e = err(many.check(&limits(), "d"));
        assert!(e.contains("10 in all, above the device's max_storage_buffers_per_shader_stage of 8"), "{e}");
        assert!(e.contains("use at most 4 fields"), "{e}");
    }

    #[test]
    fn vector_views_take_four_storage_buffers_per_field_and_whole_vec4s() {
        let mut small = limits();
        small.max_storage_buffers_per_shader_stage = 8;
        let two = footprint(&[4, 4, 8], 2, 2, [8, 8, 4]);
        assert_eq!(two.vector_views(&small), VectorViews::Bound);
        let three = footprint(&[4, 4, 8], 3, 3, [8, 8, 4]);
        assert_eq!(three.vector_views(&small), VectorViews::Emulated, "12 buffers above 8");
        assert!(three.check(&small, "d").is_ok(), "without views the 6 still fit");
        let odd = footprint(&[3, 3, 3], 2, 2, [8, 8, 4]);
        assert_eq!(odd.vector_views(&small), VectorViews::Emulated, "27 cells end in a partial vec4");
    }

    #[test]
    fn what_overflows_is_refused_without_a_device() {
        let g = grid(&[65535, 65537]);
        let e = err(GridFootprint::new(&g, usize::MAX, 1, [16, 16, 1]));
        assert!(e.starts_with("a 65535×65537 grid with"), "{e}");
        assert!(e.contains("does not fit any device") && e.contains("overflows 64-bit arithmetic"), "{e}");
    }
}
