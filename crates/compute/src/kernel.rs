//! Field-stencil kernel descriptions: WGSL source, field names and a parameter block.

use std::io::Read;
use std::path::Path;

use crate::error::{Error, Result};
use crate::wgsl_check::{self, CheckedWgsl};

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

/// A field-stencil kernel: named f32 fields on a rows × cols grid, advanced one step per
/// dispatch of the WGSL entry point `main`.
///
/// The WGSL is compiled after the prelude `shaders-wgsl/shared/field_stencil.wgsl`, which
/// binds `grid` (rows, cols, cells, fields), the previous state `src` and the next state `dst`
/// (each holding every field, field after field), and offers `at`, `cell_index` and
/// `laplacian9` on the periodic grid. A kernel with parameters declares its own
/// `struct Params` bound at `@group(0) @binding(3)`; [`KernelSpec::params`] fills it.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelSpec {
    /// Kernel name for messages and metadata.
    pub name: String,
    /// The step shader.
    pub wgsl: WgslSource,
    /// Field names, in the order the shader lays them out in `src`/`dst`.
    pub fields: Vec<String>,
    /// Values of the `Params` uniform, in declaration order (f32 members only).
    pub params: Vec<f32>,
}

impl KernelSpec {
    /// A kernel from its parts.
    pub fn new(name: impl Into<String>, wgsl: WgslSource, fields: Vec<String>, params: Vec<f32>) -> Self {
        KernelSpec { name: name.into(), wgsl, fields, params }
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

    /// Validates the WGSL with naga and checks that fields and workgroup size make sense.
    pub fn check(&self) -> Result<CheckedWgsl> {
        let invalid = |message: String| Error::InvalidKernel { kernel: self.name.clone(), message };
        if self.fields.is_empty() {
            return Err(invalid("it declares no fields: list at least one".to_owned()));
        }
        for (i, f) in self.fields.iter().enumerate() {
            if f.is_empty() || self.fields[..i].contains(f) {
                return Err(invalid(format!("field names must be unique and non-empty, got {:?}", self.fields)));
            }
        }
        let checked = wgsl_check::check(&self.wgsl.name, &self.wgsl.code)?;
        if checked.workgroup_size[2] != 1 {
            return Err(invalid(format!(
                "{}: `main` has workgroup size {:?}; field-stencil kernels are 2-D, use @workgroup_size(X, Y)",
                self.wgsl.name, checked.workgroup_size
            )));
        }
        Ok(checked)
    }
}
