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

/// A kernel validated by naga: the composed source and its module.
#[derive(Debug)]
pub struct CheckedWgsl {
    /// Prelude followed by the kernel's text: what gets compiled.
    pub source: String,
    /// naga's IR of `source`.
    pub module: naga::Module,
    /// `@workgroup_size` of the entry point `main`.
    pub workgroup_size: [u32; 3],
}

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
    Ok(CheckedWgsl { source, module, workgroup_size })
}

impl CheckedWgsl {
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
