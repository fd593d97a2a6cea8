//! The configured kernel: built-in Gray-Scott or a user's WGSL file, with its parameters.

use std::collections::BTreeMap;
use std::path::Path;

use wgpipe_compute::gray_scott::{self, GrayScottParams};
use wgpipe_compute::{KernelSpec, WgslSource};
use wgpipe_storage::{AttrValue, Attributes};

use super::error::{ConfigError, Result};
use super::model::KernelSection;
use super::source::Source;

/// Name of the built-in kernel.
pub const GRAY_SCOTT: &str = gray_scott::NAME;

/// A kernel ready to be instantiated with one run's parameters.
#[derive(Debug, Clone)]
pub enum ResolvedKernel {
    /// The built-in Gray-Scott model.
    GrayScott,
    /// A user's shader; `params` are the members of its `struct Params` in declaration order.
    Custom {
        /// The kernel with its parameter block still empty.
        spec: KernelSpec,
        /// Members of `struct Params`, in declaration order.
        params: Vec<String>,
    },
}

impl ResolvedKernel {
    /// Reads and validates the kernel of `[kernel]`; WGSL paths are relative to `base_dir`.
    pub(crate) fn resolve(section: &KernelSection, base_dir: &Path, src: &Source) -> Result<Self> {
        let Some(wgsl) = &section.wgsl else {
            return match section.name.as_deref() {
                None | Some(GRAY_SCOTT) => {
                    if section.fields.is_some() {
                        return Err(src.invalid(
                            "kernel.fields",
                            "the gray-scott kernel has the fields u and v: remove the key, or choose stored fields with output.fields",
                        ));
                    }
                    Ok(ResolvedKernel::GrayScott)
                }
                Some(other) => Err(src.invalid(
                    "kernel.name",
                    format!("unknown kernel {other:?}: use \"{GRAY_SCOTT}\", or give a custom shader with kernel.wgsl"),
                )),
            };
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
        let spec = KernelSpec::new(name, code, fields, Vec::new());
        let checked = spec.check().map_err(kernel_err)?;
        Ok(ResolvedKernel::Custom { params: checked.params_members(), spec })
    }

    /// Valid parameter names.
    pub fn param_names(&self) -> Vec<String> {
        match self {
            ResolvedKernel::GrayScott => GrayScottParams::names().into_iter().map(str::to_owned).collect(),
            ResolvedKernel::Custom { params, .. } => params.clone(),
        }
    }

    /// Field names, in the kernel's layout order.
    pub fn fields(&self) -> Vec<String> {
        match self {
            ResolvedKernel::GrayScott => gray_scott::FIELDS.iter().map(|s| (*s).to_owned()).collect(),
            ResolvedKernel::Custom { spec, .. } => spec.fields.clone(),
        }
    }

    /// Fields stored when `output.fields` is not given: `v` for Gray-Scott, else all.
    pub fn default_output_fields(&self) -> Vec<String> {
        match self {
            ResolvedKernel::GrayScott => vec!["v".to_owned()],
            ResolvedKernel::Custom { spec, .. } => spec.fields.clone(),
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

    /// The kernel with `params` filled in.
    pub fn spec(&self, params: &BTreeMap<String, f64>) -> KernelSpec {
        match self {
            ResolvedKernel::GrayScott => Self::gray_scott_params(params).kernel(),
            ResolvedKernel::Custom { spec, params: names } => {
                let mut spec = spec.clone();
                spec.params = names.iter().map(|n| params.get(n).copied().unwrap_or(0.0) as f32).collect();
                spec
            }
        }
    }

    /// Stream attributes: the parameters, seed and noise (Gray-Scott: `gray_scott_attributes`).
    pub fn attributes(&self, params: &BTreeMap<String, f64>, seed: u64, noise: f32) -> Attributes {
        match self {
            ResolvedKernel::GrayScott => crate::gray_scott_attributes(&Self::gray_scott_params(params), seed, noise),
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

    /// The initial state of a run (every field, field after field).
    ///
    /// Gray-Scott: [`gray_scott::initial_state`]. A custom kernel: every field 0, except the
    /// last, which holds the Gray-Scott `v` pattern (1 on the centred square
    /// rows [2·rows/5, 3·rows/5) × cols [2·cols/5, 3·cols/5), 0 elsewhere, plus `noise`).
    pub fn initial_state(&self, rows: usize, cols: usize, seed: u64, noise: f32) -> Vec<f32> {
        let gs = gray_scott::initial_state(rows, cols, seed, noise);
        match self {
            ResolvedKernel::GrayScott => gs,
            ResolvedKernel::Custom { spec, .. } => {
                let cells = rows * cols;
                let mut state = vec![0.0; spec.fields.len() * cells];
                let last = state.len() - cells;
                state[last..].copy_from_slice(&gs[cells..]);
                state
            }
        }
    }
}
