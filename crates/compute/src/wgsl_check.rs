//! Composing a kernel's WGSL with the field-stencil prelude, and validating it with naga.
//!
//! This file depends on nothing but `std` and `naga` because `build.rs` includes it too:
//! the shaders in `shaders-wgsl/` are validated at build time by the very code that
//! validates user WGSL at run time, so both report errors the same way.

use std::fmt;

/// The prelude every field-stencil kernel is compiled with (bindings, indexing, Laplacian).
pub const PRELUDE: &str = include_str!("../../../shaders-wgsl/shared/field_stencil.wgsl");

/// Where the prelude's text comes from, for error messages.
pub const PRELUDE_PATH: &str = "shaders-wgsl/shared/field_stencil.wgsl";

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
fn prelude_lines() -> u32 {
    u32::try_from(PRELUDE.lines().count()).unwrap_or(u32::MAX)
}

/// Prelude + kernel, with the kernel starting on a fresh line.
pub fn compose(kernel: &str) -> String {
    let mut s = String::with_capacity(PRELUDE.len() + kernel.len() + 1);
    s.push_str(PRELUDE);
    if !PRELUDE.ends_with('\n') {
        s.push('\n');
    }
    s.push_str(kernel);
    s
}

/// Maps a location in the composed text back to the kernel file or the prelude.
fn locate(file: &str, loc: Option<naga::SourceLocation>, message: String) -> WgslError {
    let Some(loc) = loc else {
        return WgslError { file: file.to_owned(), line: None, column: None, message };
    };
    let pl = prelude_lines();
    let (file, line) = if loc.line_number > pl {
        (file.to_owned(), loc.line_number - pl)
    } else {
        (PRELUDE_PATH.to_owned(), loc.line_number)
    };
    WgslError { file, line: Some(line), column: Some(loc.line_position), message }
}

/// Parses and validates `kernel` (composed with the prelude); `file` names it in errors.
///
/// The kernel must have exactly one compute entry point called `main`.
pub fn check(file: &str, kernel: &str) -> Result<CheckedWgsl, WgslError> {
    let source = compose(kernel);
    let module =
        naga::front::wgsl::parse_str(&source).map_err(|e| locate(file, e.location(&source), e.message().to_owned()))?;
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
        locate(file, e.location(&source), message)
    })?;
    let entry =
        module.entry_points.iter().find(|ep| ep.name == "main" && ep.stage == naga::ShaderStage::Compute).ok_or_else(
            || WgslError {
                file: file.to_owned(),
                line: None,
                column: None,
                message: "no compute entry point named `main`: declare `@compute @workgroup_size(X, Y) fn main(...)`"
                    .to_owned(),
            },
        )?;
    let workgroup_size = entry.workgroup_size;
    Ok(CheckedWgsl { source, module, workgroup_size })
}
