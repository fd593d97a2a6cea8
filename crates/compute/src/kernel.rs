//! Field-stencil kernel descriptions: WGSL source, field names and a parameter block.

use std::io::Read;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use crate::error::{Error, Result};
use crate::invocation_width::InvocationWidth;
use crate::prelude::{self, Boundary, Indexing, VectorViews, WorkgroupShapes};
use crate::wgsl_check::{self, CELLS_PER_INVOCATION_Y, CELLS_PER_INVOCATION_Z, CheckedWgsl};

/// The largest WGSL file [`WgslSource::from_file`] reads (1 MiB: shaders are kilobytes).
pub const MAX_WGSL_BYTES: u64 = 1 << 20;

/// WGSL text with the name it is reported under (its file path, or a built-in name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WgslSource {
    /// File path or built-in name, used in error messages.
    pub name: String,
    /// The kernel's WGSL, without the prelude.
    pub code: String,
}

impl WgslSource {
    /// WGSL given as text.
    pub fn new(name: impl Into<String>, code: impl Into<String>) -> Self {
        WgslSource { name: name.into(), code: code.into() }
    }

    /// WGSL read from a file; the path names it in errors.
    ///
    /// Only a regular file of at most [`MAX_WGSL_BYTES`] is read, so a path such as
    /// `/dev/zero` or a multi-gigabyte file is an error instead of a read that never ends
    /// or exhausts memory.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let failed = |source| Error::ReadShader { path: path.to_owned(), source };
        let refuse = |message: String| failed(std::io::Error::new(std::io::ErrorKind::InvalidInput, message));
        // Before opening: opening a FIFO would block.
        let meta = std::fs::metadata(path).map_err(failed)?;
        if !meta.is_file() {
            return Err(refuse("not a regular file: give the path of a .wgsl file".to_owned()));
        }
        if meta.len() > MAX_WGSL_BYTES {
            return Err(refuse(format!("{} bytes, more than a shader's limit of {MAX_WGSL_BYTES}", meta.len())));
        }
        let file = std::fs::File::open(path).map_err(failed)?;
        let mut code = String::new();
        file.take(MAX_WGSL_BYTES + 1).read_to_string(&mut code).map_err(failed)?;
        if code.len() as u64 > MAX_WGSL_BYTES {
            return Err(refuse(format!("more than a shader's limit of {MAX_WGSL_BYTES} bytes")));
        }
        Ok(WgslSource { name: path.display().to_string(), code })
    }
}

/// How many validated shaders [`validated`] remembers (a run has one or a few; the oldest is
/// forgotten first).
const REMEMBERED_SHADERS: usize = 32;

/// Shaders naga has validated, by their composed text (prelude and kernel).
static VALIDATED: Mutex<Vec<Arc<CheckedWgsl>>> = Mutex::new(Vec::new());

/// [`wgsl_check::check`], remembered: one run checks its kernels when its config loads, when
/// its pipeline is planned and when each job compiles on its device, and naga's validation is
/// the slow part of each (milliseconds per shader), so a text validated once is not validated
/// again. The result depends on the text only; errors are not remembered (they end the run).
fn validated(file: &str, prelude: &str, code: &str) -> std::result::Result<Arc<CheckedWgsl>, wgsl_check::WgslError> {
    let source = wgsl_check::compose(prelude, code);
    let remembered = |cache: &[Arc<CheckedWgsl>]| cache.iter().find(|c| c.source == source).cloned();
    if let Some(checked) = remembered(&VALIDATED.lock().unwrap_or_else(PoisonError::into_inner)) {
        return Ok(checked);
    }
    let checked = Arc::new(wgsl_check::check(file, prelude, code)?);
    let mut cache = VALIDATED.lock().unwrap_or_else(PoisonError::into_inner);
    if remembered(&cache).is_none() {
        if cache.len() >= REMEMBERED_SHADERS {
            cache.remove(0);
        }
        cache.push(Arc::clone(&checked));
    }
    Ok(checked)
}

/// A field-stencil kernel: named f32 fields on a grid of rank 1, 2 or 3, advanced one step per
/// dispatch of the WGSL entry point `main`, one invocation per cell (or per
/// `CELLS_PER_INVOCATION_X` consecutive cells along x, when the kernel declares that constant
/// or override: see [`InvocationWidth`]).
///
/// The WGSL is compiled after a prelude generated from [`KernelSpec::rank`],
/// [`KernelSpec::boundary`] and [`KernelSpec::fields`] ([`KernelSpec::prelude`] shows it): it
/// binds `grid` (nx, ny, nz, cells), each field as `NAME_in` (this step, read-only) and
/// `NAME_out` (next step), and offers `in_grid(id)`, `cell(id)` (the cell and its neighbours'
/// indices), `neighbour(c, ..)`, the rank's Laplacian per field (`laplacian3_NAME`,
/// `laplacian9_NAME`, `laplacian7_NAME`), `global_index(c)` (the cell's index in the whole
/// grid), `uniform_noise(i)` (draw it as `uniform_noise(global_index(c))`, so that a grid split
/// into blocks draws the same noise) and the step `clock`. A kernel with parameters declares
/// its own `struct Params` bound at `@group(0) @binding(1)`; [`KernelSpec::params`] fills it.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelSpec {
    /// Kernel name for messages and metadata.
    pub name: String,
    /// The step shader.
    pub wgsl: WgslSource,
    /// Field names, in binding order; each must be a WGSL identifier (letters, digits, `_`).
    pub fields: Vec<String>,
    /// Values of the `Params` uniform, in declaration order (f32 members only).
    pub params: Vec<f32>,
    /// Rank of the grids the kernel is written for: 1, 2 (the default) or 3.
    pub rank: usize,
    /// What the stencil sees beyond the grid's faces (default periodic).
    pub boundary: Boundary,
    /// Seed of the prelude's `uniform_noise` (default 0).
    pub seed: u64,
    /// Cells per invocation along x: chosen per adapter (the default) or forced; see
    /// [`InvocationWidth`]. Never changes a result, only the speed.
    pub invocation_width: InvocationWidth,
    /// The prelude's `WORKGROUP_X/Y/Z`: `None` (the default) chooses them per adapter
    /// ([`crate::invocation_width::workgroup_shapes`]); `Some` forces them (tests,
    /// benchmarks). Never changes a result, only the speed.
    pub workgroup_shapes: Option<WorkgroupShapes>,
}

impl KernelSpec {
    /// A 2-D, periodic kernel from its parts; see [`KernelSpec::with_rank`] and
    /// [`KernelSpec::with_boundary`] for others.
    pub fn new(name: impl Into<String>, wgsl: WgslSource, fields: Vec<String>, params: Vec<f32>) -> Self {
        KernelSpec {
            name: name.into(),
            wgsl,
            fields,
            params,
            rank: 2,
            boundary: Boundary::Periodic,
            seed: 0,
            invocation_width: InvocationWidth::PerAdapter,
            workgroup_shapes: None,
        }
    }

    /// The same kernel compiled with `shapes` as its prelude's workgroup shapes on every
    /// adapter ([`WorkgroupShapes`]).
    pub fn with_workgroup_shapes(mut self, shapes: WorkgroupShapes) -> Self {
        self.workgroup_shapes = Some(shapes);
        self
    }

    /// The same kernel run with `width` cells per invocation along x ([`InvocationWidth`]).
    pub fn with_invocation_width(mut self, width: InvocationWidth) -> Self {
        self.invocation_width = width;
        self
    }

    /// The same kernel for grids of `rank` (1, 2 or 3).
    pub fn with_rank(mut self, rank: usize) -> Self {
        self.rank = rank;
        self
    }

    /// The same kernel with another boundary rule.
    pub fn with_boundary(mut self, boundary: Boundary) -> Self {
        self.boundary = boundary;
        self
    }

    /// The same kernel with another noise seed.
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Index of a field by name.
    pub fn field_index(&self, name: &str) -> Option<usize> {
        self.fields.iter().position(|f| f == name)
    }

    /// Indices of `names`, or an error listing the fields this kernel has.
    pub fn field_indices(&self, names: &[String]) -> Result<Vec<usize>> {
        names
            .iter()
            .map(|n| {
                self.field_index(n).ok_or_else(|| Error::InvalidKernel {
                    kernel: self.name.clone(),
                    message: format!("it has no field {n:?}; its fields are {:?}", self.fields),
                })
            })
            .collect()
    }

    /// The prelude this kernel is compiled with on a whole grid, with the CPU drivers'
    /// workgroup shapes (or the forced ones) and vector views; errors when rank or field names
    /// are invalid.
    pub fn prelude(&self) -> Result<String> {
        self.prelude_for(Indexing::Whole, self.workgroup_shapes.unwrap_or_default(), VectorViews::Bound)
    }

    /// The prelude this kernel is compiled with on a grid held as `indexing` says (a whole
    /// grid, or a block with ghost layers: [`crate::BlockSim`]), with `shapes` as
    /// `WORKGROUP_X/Y/Z` and `views` behind `load4_NAME`/`store4_NAME`.
    pub fn prelude_for(&self, indexing: Indexing, shapes: WorkgroupShapes, views: VectorViews) -> Result<String> {
        prelude::generate_for(self.rank, self.boundary, &self.fields, indexing, shapes, views)
            .map_err(|message| Error::InvalidKernel { kernel: self.name.clone(), message })
    }

    /// Validates the WGSL with naga after its prelude, and checks that the workgroup shape
    /// does not extend along axes the kernel's grids lack, that `CELLS_PER_INVOCATION_X`, if
    /// declared, is a u32 from 1 to 64, and that `CELLS_PER_INVOCATION_Y` and `_Z` are from 1
    /// to 16, above 1 only along axes the grids have.
    ///
    /// Checked with every prelude a device may compile it with (each adapter's workgroup
    /// shapes, unless forced; with and without vector views), so that no device fails on what
    /// this passed; returns the CPU drivers' (or the forced) result, whose shape every device
    /// can fall back to (`FieldSim::new`), so that the size checks before the devices open use
    /// it.
    ///
    /// naga validates each distinct shader (prelude and kernel text) once per process: later
    /// checks of the same text, by this kernel, its clones or an equal kernel with other
    /// parameters or seed, return the first result (see `validated` below).
    pub fn check(&self) -> Result<Arc<CheckedWgsl>> {
        let shapes = match self.workgroup_shapes {
            Some(forced) => forced,
            None => {
                for views in VectorViews::ALL {
                    self.check_for(Indexing::Whole, WorkgroupShapes::Gpu, views)?;
                }
                WorkgroupShapes::CpuDriver
            }
        };
        self.check_for(Indexing::Whole, shapes, VectorViews::Emulated)?;
        self.check_for(Indexing::Whole, shapes, VectorViews::Bound)
    }

    /// [`KernelSpec::check`] with the prelude of `indexing`, `shapes` and `views` alone.
    pub fn check_for(
        &self,
        indexing: Indexing,
        shapes: WorkgroupShapes,
        views: VectorViews,
    ) -> Result<Arc<CheckedWgsl>> {
        let prelude = self.prelude_for(indexing, shapes, views)?;
        let checked = validated(&self.wgsl.name, &prelude, &self.wgsl.code)?;
        let size = checked.workgroup_size;
        if size[self.rank..].iter().any(|n| *n != 1) {
            return Err(Error::InvalidKernel {
                kernel: self.name.clone(),
                message: format!(
                    "{}: `main` has workgroup size {size:?}, which spans axes a {}-D grid lacks (their \
                     invocations would all idle): use @workgroup_size(WORKGROUP_X, WORKGROUP_Y, WORKGROUP_Z)",
                    self.wgsl.name, self.rank
                ),
            });
        }
        let brick = [
            (2, CELLS_PER_INVOCATION_Y, &checked.cells_per_invocation_y),
            (3, CELLS_PER_INVOCATION_Z, &checked.cells_per_invocation_z),
        ];
        if let Some((axis_rank, name, declared)) = brick.iter().find(|(r, _, d)| self.rank < *r && d.cells > 1) {
            return Err(Error::InvalidKernel {
                kernel: self.name.clone(),
                message: format!(
                    "{}: it declares {name} = {}, but a {}-D grid has one cell along that axis (only grids of \
                     rank {axis_rank} or more have more): remove the declaration or set it to 1",
                    self.wgsl.name, declared.cells, self.rank
                ),
            });
        }
        Ok(checked)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel(code: &str) -> KernelSpec {
        KernelSpec::new("k", WgslSource::new("k.wgsl", code), vec!["u".to_owned()], Vec::new())
    }

    const COPY: &str = "@compute @workgroup_size(8, 8)\n\
                        fn main(@builtin(global_invocation_id) id: vec3<u32>) {\n\
                        \x20   let c = cell(id);\n    u_out[c.i] = u_in[c.i]; // kernel.rs memo test\n}\n";

    #[test]
    fn a_shader_is_validated_once_whatever_its_parameters_and_seed() -> Result<()> {
        let first = kernel(COPY).check()?;
        let mut other = kernel(COPY).with_seed(7);
        other.params = vec![1.0];
        assert!(Arc::ptr_eq(&first, &other.check()?), "the same text is not validated again");
        let boundary = kernel(COPY).with_boundary(Boundary::ZeroFlux).check()?;
        assert!(!Arc::ptr_eq(&first, &boundary), "another boundary is another prelude, validated on its own");
        assert_eq!(first.workgroup_size, [8, 8, 1]);
        Ok(())
    }

    #[test]
    fn a_shader_that_does_not_validate_fails_every_time_naming_its_line() {
        let bad = kernel(&COPY.replace("u_in[c.i]", "nope"));
        for _ in 0..2 {
            let e = bad.check().err().map(|e| e.to_string()).unwrap_or_default();
            assert!(e.contains("k.wgsl:4:18: no definition in scope for identifier: `nope`"), "{e}");
        }
    }

    #[test]
    fn rows_or_planes_per_invocation_on_an_axis_the_grid_lacks_are_refused() -> Result<()> {
        // COPY is 2-D: rows are an axis it has, planes one it lacks.
        let rows = kernel(&format!("override CELLS_PER_INVOCATION_Y: u32 = 2u;\n{COPY}")).check()?;
        assert_eq!(rows.cells_per_invocation_y.cells, 2);
        let planes = kernel(&format!("const CELLS_PER_INVOCATION_Z: u32 = 2u;\n{COPY}")).check();
        let e = planes.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.contains("declares CELLS_PER_INVOCATION_Z = 2, but a 2-D grid has one cell along that axis"), "{e}");
        kernel(&format!("const CELLS_PER_INVOCATION_Z: u32 = 1u;\n{COPY}")).check()?;
        Ok(())
    }
}
