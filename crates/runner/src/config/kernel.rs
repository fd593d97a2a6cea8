//! The configured kernel: built-in Gray-Scott or a user's WGSL file, with its parameters.

use std::collections::BTreeMap;
use std::path::Path;

use wgpipe_compute::gray_scott::{self, GrayScottParams};
use wgpipe_compute::gray_scott_3d::{self, GrayScott3dParams};
use wgpipe_compute::{Boundary, Grid, KernelSpec, WgslSource};
use wgpipe_storage::{AttrValue, Attributes};

use super::model::KernelSection;
use super::source::Source;
use crate::config_error::{ConfigError, Result};

/// Name of the built-in 2-D kernel.
pub const GRAY_SCOTT: &str = gray_scott::NAME;

/// Name of the built-in 3-D kernel.
pub const GRAY_SCOTT_3D: &str = gray_scott_3d::NAME;

/// A kernel ready to be instantiated with one run's parameters.
#[derive(Debug, Clone)]
pub enum ResolvedKernel {
    /// The built-in 2-D Gray-Scott model.
    GrayScott {
        /// `kernel.boundary`.
        boundary: Boundary,
    },
    /// The built-in 3-D Gray-Scott model of the ADIOS2 tutorial.
    GrayScott3d {
        /// `kernel.boundary`.
        boundary: Boundary,
    },
    /// A user's shader; `params` are the members of its `struct Params` in declaration order.
    Custom {
        /// The kernel (rank and boundary set) with its parameter block still empty.
        spec: KernelSpec,
        /// Members of `struct Params`, in declaration order.
        params: Vec<String>,
    },
}

impl ResolvedKernel {
    /// Reads and validates the kernel of `[kernel]` for a grid of `rank`; WGSL paths are
    /// relative to `base_dir`.
    pub(crate) fn resolve(section: &KernelSection, rank: usize, base_dir: &Path, src: &Source) -> Result<Self> {
        let boundary = match &section.boundary {
            None => Boundary::default(),
            Some(b) => b.parse::<Boundary>().map_err(|e| src.invalid("kernel.boundary", e.to_string()))?,
        };
        let Some(wgsl) = &section.wgsl else {
            let name = section.name.as_deref().unwrap_or(GRAY_SCOTT);
            let (kernel, model_rank) = match name {
                GRAY_SCOTT => (ResolvedKernel::GrayScott { boundary }, 2),
                GRAY_SCOTT_3D => (ResolvedKernel::GrayScott3d { boundary }, 3),
                other => {
                    return Err(src.invalid(
                        "kernel.name",
                        format!(
                            "unknown kernel {other:?}: use \"{GRAY_SCOTT}\" (2-D), \"{GRAY_SCOTT_3D}\" (3-D), or give \
                             a custom shader with kernel.wgsl"
                        ),
                    ));
                }
            };
            if section.fields.is_some() {
                return Err(src.invalid(
                    "kernel.fields",
                    format!(
                        "the {name} kernel has the fields u and v: remove the key, or choose stored fields with \
                         output.fields"
                    ),
                ));
            }
            if rank != model_rank {
                let shape = if model_rank == 3 { "grid.shape = [64, 64, 64]" } else { "grid.shape = [256, 256]" };
                return Err(src.invalid(
                    "kernel.name",
                    format!(
                        "the {name} kernel runs on {model_rank}-D grids and the grid is {rank}-D: give e.g. {shape}"
                    ),
                ));
            }
            return Ok(kernel);
        };
        let path = base_dir.join(wgsl);
        let kernel_err = |source| ConfigError::Kernel {
            origin: src.origin("kernel.wgsl"),
            key: "kernel.wgsl".into(),
            source: Box::new(source),
        };
        let code = WgslSource::from_file(&path).map_err(kernel_err)?;
        let Some(fields) = section.fields.clone() else {
            return Err(src.invalid("kernel.wgsl", "a custom kernel needs kernel.fields, e.g. fields = [\"u\"]"));
        };
        for f in &fields {
            // The sinks' naming rule: a field becomes a dataset or a file name.
            wgpipe_storage::check_field_name(f).map_err(|e| src.invalid("kernel.fields", e.to_string()))?;
        }
        let name = section
            .name
            .clone()
            .or_else(|| path.file_stem().map(|s| s.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "custom".to_owned());
        let spec = KernelSpec::new(name, code, fields, Vec::new()).with_rank(rank).with_boundary(boundary);
        let checked = spec.check().map_err(kernel_err)?;
        Ok(ResolvedKernel::Custom { params: checked.params_members(), spec })
    }

    /// Valid parameter names.
    pub fn param_names(&self) -> Vec<String> {
        match self {
            ResolvedKernel::GrayScott { .. } => GrayScottParams::names().into_iter().map(str::to_owned).collect(),
            ResolvedKernel::GrayScott3d { .. } => GrayScott3dParams::names().into_iter().map(str::to_owned).collect(),
            ResolvedKernel::Custom { params, .. } => params.clone(),
        }
    }

    /// Field names, in the kernel's layout order.
    pub fn fields(&self) -> Vec<String> {
        match self {
            ResolvedKernel::GrayScott { .. } => gray_scott::FIELDS.iter().map(|s| (*s).to_owned()).collect(),
            ResolvedKernel::GrayScott3d { .. } => gray_scott_3d::FIELDS.iter().map(|s| (*s).to_owned()).collect(),
            ResolvedKernel::Custom { spec, .. } => spec.fields.clone(),
        }
    }

    /// Fields stored when `output.fields` is not given: `v` for the 2-D Gray-Scott, else all
    /// (`u` and `v` for the 3-D one, as the ADIOS2 tutorial stores them).
    pub fn default_output_fields(&self) -> Vec<String> {
        match self {
            ResolvedKernel::GrayScott { .. } => vec!["v".to_owned()],
            _ => self.fields(),
        }
    }

    /// Checks the parameter names of `params` (found at `key`); a custom kernel needs all.
    pub(crate) fn check_params(
        &self,
        params: &BTreeMap<String, f64>,
        key: &str,
        require_all: bool,
        src: &Source,
    ) -> Result<()> {
        let names = self.param_names();
        for (k, v) in params {
            if !names.contains(k) {
                let valid = if names.is_empty() {
                    "none (the shader has no struct Params)".to_owned()
                } else {
                    names.join(", ")
                };
                return Err(src.invalid(&format!("{key}.{k}"), format!("unknown parameter; valid parameters: {valid}")));
            }
            if !v.is_finite() {
                return Err(src.invalid(&format!("{key}.{k}"), "must be a finite number"));
            }
        }
        if require_all && let Some(missing) = names.iter().find(|n| !params.contains_key(*n)) {
            return Err(src.invalid(
                key,
                format!(
                    "parameter {missing} of the shader's struct Params is missing: give every one of {}",
                    names.join(", ")
                ),
            ));
        }
        Ok(())
    }

    /// Gray-Scott parameters: the defaults overridden by `params`, whose names
    /// [`ResolvedKernel::check_params`] has checked.
    fn gray_scott_params(params: &BTreeMap<String, f64>) -> GrayScottParams {
        let mut p = GrayScottParams::default();
        for (k, v) in params {
            // Unknown names were refused with their line when the config was checked.
            let _ = p.set(k, *v as f32);
        }
        p
    }

    /// 3-D Gray-Scott parameters: the tutorial's defaults overridden by `params`.
    fn gray_scott_3d_params(params: &BTreeMap<String, f64>) -> GrayScott3dParams {
        let mut p = GrayScott3dParams::default();
        for (k, v) in params {
            let _ = p.set(k, *v as f32);
        }
        p
    }

    /// The kernel with `params` filled in; `seed` keys the prelude's `uniform_noise` (the 3-D
    /// model's noise).
    pub fn spec(&self, params: &BTreeMap<String, f64>, seed: u64) -> KernelSpec {
        match self {
            ResolvedKernel::GrayScott { boundary } => Self::gray_scott_params(params).kernel().with_boundary(*boundary),
            ResolvedKernel::GrayScott3d { boundary } => {
                Self::gray_scott_3d_params(params).kernel(seed).with_boundary(*boundary)
            }
            ResolvedKernel::Custom { spec, params: names } => {
                let mut spec = spec.clone().with_seed(seed);
                spec.params = names.iter().map(|n| params.get(n).copied().unwrap_or(0.0) as f32).collect();
                spec
            }
        }
    }

    /// Stream attributes: the parameters, seed and noise (Gray-Scott: `gray_scott_attributes`).
    pub fn attributes(&self, params: &BTreeMap<String, f64>, seed: u64, noise: f32) -> Attributes {
        match self {
            ResolvedKernel::GrayScott { .. } => {
                crate::gray_scott_attributes(&Self::gray_scott_params(params), seed, noise)
            }
            ResolvedKernel::GrayScott3d { .. } => {
                crate::gray_scott_3d_attributes(&Self::gray_scott_3d_params(params), seed)
            }
            ResolvedKernel::Custom { spec, .. } => {
                let mut a = Attributes::from([
                    ("kernel".to_owned(), AttrValue::from(spec.name.as_str())),
                    ("seed".to_owned(), AttrValue::from(seed)),
                    ("noise".to_owned(), AttrValue::from(noise)),
                ]);
                // Stored as the f32 the kernel's `Params` uniform holds (as `spec` converts them),
                // so the file records the value that ran, with its type.
                for (k, v) in params {
                    a.insert(k.clone(), AttrValue::from(*v as f32));
                }
                a
            }
        }
    }

    /// The initial state of a run (every field, field after field, each in C order).
    ///
    /// Gray-Scott: [`gray_scott::initial_state`]; 3-D Gray-Scott: the tutorial's cube
    /// ([`gray_scott_3d::initial_state`], which has no initial noise: its noise is the
    /// `noise` parameter, drawn every step). A custom kernel: every field 0, except the last,
    /// which holds the 2-D Gray-Scott `v` pattern (1 on the centred square [2n/5, 3n/5) of y
    /// and x, 0 elsewhere, plus `noise`) on the planes z in [2nz/5, 3nz/5) of a 3-D grid (so 1
    /// on the centred box), or on the one plane of a 1-D or 2-D grid.
    pub fn initial_state(&self, grid: &Grid, seed: u64, noise: f32) -> Vec<f32> {
        match self {
            ResolvedKernel::GrayScott { .. } => gray_scott::initial_state(grid.ny(), grid.nx(), seed, noise),
            ResolvedKernel::GrayScott3d { .. } => gray_scott_3d::initial_state(grid),
            ResolvedKernel::Custom { spec, .. } => {
                let cells = grid.cells();
                // The v field of the 2-D pattern, row by row over every plane.
                let plane = gray_scott::initial_state(grid.ny(), grid.nx(), seed, noise);
                let v_plane = &plane[grid.ny() * grid.nx()..];
                let box_z = 2 * grid.nz() / 5..3 * grid.nz() / 5;
                let mut state = vec![0.0; spec.fields.len() * cells];
                let last = &mut state[(spec.fields.len() - 1) * cells..];
                for (z, out) in last.chunks_exact_mut(v_plane.len()).enumerate() {
                    if grid.rank() < 3 || box_z.contains(&z) {
                        out.copy_from_slice(v_plane);
                    }
                }
                state
            }
        }
    }
}
