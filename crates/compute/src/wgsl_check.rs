//! Composing a kernel's WGSL with its generated prelude, and validating it with naga.
//!
//! This file depends on nothing but `std` and `naga` because `build.rs` includes it too:
//! the shaders in `shaders-wgsl/` are validated at build time by the very code that
//! validates user WGSL at run time, so both report errors the same way.

use std::fmt;

/// How errors name the prelude, which is generated rather than read from a file.
pub const PRELUDE_NAME: &str = "wgpipe's generated prelude (print it with KernelSpec::prelude)";

/// A WGSL problem located in the file the user knows (their kernel, or the prelude).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WgslError {
    /// The file (or name) the offending line belongs to.
    pub file: String,
    /// 1-based line, when naga could locate the problem.
    pub line: Option<u32>,
    /// 1-based column, when naga could locate the problem.
    pub column: Option<u32>,
    /// naga's explanation.
    pub message: String,
}

impl fmt::Display for WgslError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.line, self.column) {
            (Some(l), Some(c)) => write!(f, "{}:{l}:{c}: {}", self.file, self.message),
            _ => write!(f, "{}: {}", self.file, self.message),
        }
    }
}

/// A kernel validated by naga: the composed source and its module. Made only by checking a
/// kernel (`KernelSpec::check`, `KernelSpec::check_for`); fields may be added.
#[derive(Debug)]
#[non_exhaustive]
pub struct CheckedWgsl {
    /// Prelude followed by the kernel's text: what gets compiled.
    pub source: String,
    /// naga's IR of `source`.
    pub module: naga::Module,
    /// `@workgroup_size` of the entry point `main`.
    pub workgroup_size: [u32; 3],
    /// Cells each invocation updates along x: the kernel's [`CELLS_PER_INVOCATION_X`] (an
    /// `override` lets wgpipe choose it per adapter when it builds the pipeline,
    /// [`crate::tuning`]).
    pub cells_per_invocation_x: DeclaredCells,
    /// Rows along y each invocation updates: the kernel's [`CELLS_PER_INVOCATION_Y`].
    pub cells_per_invocation_y: DeclaredCells,
    /// Planes along z each invocation updates: the kernel's [`CELLS_PER_INVOCATION_Z`].
    pub cells_per_invocation_z: DeclaredCells,
}

/// Name of the optional kernel constant (`const CELLS_PER_INVOCATION_X: u32 = 4u;`) saying
/// that each invocation updates that many consecutive cells along x, from x = id.x × N; the
/// dispatch then has N times fewer invocations along x. Fewer, wider invocations share the
/// loads of overlapping stencils, which is what CPU drivers such as lavapipe pay for; a GPU
/// loses by it (neighbouring invocations no longer load neighbouring addresses). Declared
/// `override CELLS_PER_INVOCATION_X: u32 = 8u;` it is chosen per adapter
/// ([`crate::tuning`]); declared `const`, it is fixed.
pub const CELLS_PER_INVOCATION_X: &str = "CELLS_PER_INVOCATION_X";

/// The largest [`CELLS_PER_INVOCATION_X`] accepted.
pub const MAX_CELLS_PER_INVOCATION_X: u32 = 64;

/// Name of the optional kernel constant saying that each invocation updates that many rows
/// along y, from y = id.y × N (with [`CELLS_PER_INVOCATION_X`] cells in each): the dispatch
/// has N times fewer invocations along y. A brick of several rows and planes
/// ([`CELLS_PER_INVOCATION_Z`]) shares the loads of its rows' y and z neighbours, which a CPU
/// driver pays for one by one. `override` gives it the declared value on CPU drivers and 1
/// on GPUs (as for the width), `const` fixes it.
pub const CELLS_PER_INVOCATION_Y: &str = "CELLS_PER_INVOCATION_Y";

/// Name of the optional kernel constant saying that each invocation updates that many planes
/// along z, from z = id.z × N: as [`CELLS_PER_INVOCATION_Y`], along z.
pub const CELLS_PER_INVOCATION_Z: &str = "CELLS_PER_INVOCATION_Z";

/// The largest [`CELLS_PER_INVOCATION_Y`] or [`CELLS_PER_INVOCATION_Z`] accepted.
pub const MAX_CELLS_PER_INVOCATION_YZ: u32 = 16;

/// Lines taken by the prelude (and the newline joining it to the kernel).
fn prelude_lines(prelude: &str) -> u32 {
    u32::try_from(prelude.lines().count()).unwrap_or(u32::MAX)
}

/// Prelude + kernel, with the kernel starting on a fresh line.
pub fn compose(prelude: &str, kernel: &str) -> String {
    let mut s = String::with_capacity(prelude.len() + kernel.len() + 1);
    s.push_str(prelude);
    if !prelude.ends_with('\n') {
        s.push('\n');
    }
    s.push_str(kernel);
    s
}

/// Maps a location in the composed text back to the kernel file or the prelude.
fn locate(file: &str, prelude: &str, loc: Option<naga::SourceLocation>, message: String) -> WgslError {
    let Some(loc) = loc else {
        return WgslError { file: file.to_owned(), line: None, column: None, message };
    };
    let pl = prelude_lines(prelude);
    let (file, line) = if loc.line_number > pl {
        (file.to_owned(), loc.line_number - pl)
    } else {
        (PRELUDE_NAME.to_owned(), loc.line_number)
    };
    WgslError { file, line: Some(line), column: Some(loc.line_position), message }
}

/// Parses and validates `kernel` composed with `prelude`; `file` names the kernel in errors.
///
/// The kernel must have exactly one compute entry point called `main`.
pub fn check(file: &str, prelude: &str, kernel: &str) -> Result<CheckedWgsl, WgslError> {
    let source = compose(prelude, kernel);
    let module = naga::front::wgsl::parse_str(&source)
        .map_err(|e| locate(file, prelude, e.location(&source), e.message().to_owned()))?;
    let mut validator =
        naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::all());
    validator.validate(&module).map_err(|e| {
        let mut message = e.as_inner().to_string();
        let mut source_err: Option<&dyn std::error::Error> = std::error::Error::source(e.as_inner());
        while let Some(inner) = source_err {
            message.push_str(": ");
            message.push_str(&inner.to_string());
            source_err = inner.source();
        }
        locate(file, prelude, e.location(&source), message)
    })?;
    let entry =
        module.entry_points.iter().find(|ep| ep.name == "main" && ep.stage == naga::ShaderStage::Compute).ok_or_else(
            || WgslError {
                file: file.to_owned(),
                line: None,
                column: None,
                message: "no compute entry point named `main`: declare \
                          `@compute @workgroup_size(WORKGROUP_X, WORKGROUP_Y, WORKGROUP_Z) fn main(...)`"
                    .to_owned(),
            },
        )?;
    let workgroup_size = entry.workgroup_size;
    let declared = |name: &str, max: u32| {
        declared_cells(&module, kernel, name, max).map_err(|message| WgslError {
            file: file.to_owned(),
            line: None,
            column: None,
            message,
        })
    };
    let cells_per_invocation_x = declared(CELLS_PER_INVOCATION_X, MAX_CELLS_PER_INVOCATION_X)?;
    let cells_per_invocation_y = declared(CELLS_PER_INVOCATION_Y, MAX_CELLS_PER_INVOCATION_YZ)?;
    let cells_per_invocation_z = declared(CELLS_PER_INVOCATION_Z, MAX_CELLS_PER_INVOCATION_YZ)?;
    Ok(CheckedWgsl {
        source,
        module,
        workgroup_size,
        cells_per_invocation_x,
        cells_per_invocation_y,
        cells_per_invocation_z,
    })
}

/// What a kernel declares of one of its cells per invocation ([`CELLS_PER_INVOCATION_X`],
/// [`CELLS_PER_INVOCATION_Y`], [`CELLS_PER_INVOCATION_Z`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeclaredCells {
    /// The constant's value or the override's default; 1 when undeclared.
    pub cells: u32,
    /// Declared `override`: wgpipe chooses it per adapter ([`crate::tuning`]).
    pub overridable: bool,
    /// The override's `@id`, if it has one (wgpu then sets it by id, not by name).
    pub id: Option<u16>,
    /// Whether the kernel declares it at all.
    pub declared: bool,
}

/// The kernel's constant `name`: an error unless it is undeclared or a u32 literal in
/// 1..=`max`.
fn declared_cells(module: &naga::Module, kernel: &str, name: &str, max: u32) -> Result<DeclaredCells, String> {
    let named = |n: &Option<String>| n.as_deref() == Some(name);
    let literal = |init: naga::Handle<naga::Expression>| match module.global_expressions[init] {
        naga::Expression::Literal(naga::Literal::U32(n)) => Some(n),
        _ => None,
    };
    let constant = module.constants.iter().find(|(_, c)| named(&c.name)).map(|(_, c)| literal(c.init));
    let overridden =
        module.overrides.iter().find(|(_, o)| named(&o.name)).map(|(_, o)| (o.init.and_then(literal), o.id));
    let (value, overridable, id) = match (constant, overridden) {
        (Some(value), None) => (value, false, None),
        (None, Some((value, id))) => (value, true, id),
        // naga keeps no abstract-typed constant (`const N = 4;`) in the module: declared
        // without a type, it would be ignored silently (every cell still updated, by N times
        // too many invocations), so it is an error too.
        _ if declares_const(kernel, name) => (None, false, None),
        _ => return Ok(DeclaredCells { cells: 1, overridable: false, id: None, declared: false }),
    };
    let axis = name.rsplit('_').next().unwrap_or("x").to_ascii_lowercase();
    match value.filter(|n| (1..=max).contains(n)) {
        Some(cells) => Ok(DeclaredCells { cells, overridable, id, declared: true }),
        None => Err(format!(
            "{name} must be a u32 literal from 1 to {max}, e.g. `{} {name}: u32 = 2u;` (the cells each \
             invocation updates along {axis}; `override` lets wgpipe choose it per adapter, `const` fixes it)",
            if overridable { "override" } else { "const" }
        )),
    }
}

/// Whether `code` has a `const NAME` declaration (by tokens: comments are not parsed).
fn declares_const(code: &str, name: &str) -> bool {
    let mut tokens = code.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).filter(|t| !t.is_empty());
    let mut previous = "";
    tokens.any(|t| {
        let found = previous == "const" && t == name;
        previous = t;
        found
    })
}

impl CheckedWgsl {
    /// Cells one workgroup covers per axis with `cells_per_invocation` cells per invocation
    /// along x, y and z: the workgroup size times them. The dispatch is the grid divided by it.
    pub fn cells_per_workgroup_with(&self, cells_per_invocation: [u32; 3]) -> [u32; 3] {
        let [x, y, z] = self.workgroup_size;
        let [cx, cy, cz] = cells_per_invocation;
        [x.saturating_mul(cx), y.saturating_mul(cy), z.saturating_mul(cz)]
    }

    /// Member names of the kernel's `struct Params`, in declaration order (the order of
    /// `KernelSpec::params`); empty when it declares none.
    pub fn params_members(&self) -> Vec<String> {
        self.module
            .types
            .iter()
            .find_map(|(_, ty)| match (&ty.name, &ty.inner) {
                (Some(name), naga::TypeInner::Struct { members, .. }) if name == "Params" => {
                    Some(members.iter().map(|m| m.name.clone().unwrap_or_default()).collect())
                }
                _ => None,
            })
            .unwrap_or_default()
    }
}
