//! How many consecutive cells along x each invocation of a kernel updates, on a given adapter
//! (and how many rows and planes, for a kernel that declares them: [`resolve_rows_and_planes`]).
//!
//! Why it depends on the adapter: a CPU driver (lavapipe, llvmpipe) runs each storage-buffer
//! load lane by lane, so a step costs about its number of loads, and an invocation that slides
//! a stencil window along 8 cells loads each column once instead of three times: on lavapipe
//! the shipped Gray-Scott kernels run well ahead of the one-cell shaders they replaced (the
//! 2-D one also lost a `%` per neighbour; `cargo xtask bench kernel` measures both against
//! them). A GPU coalesces the loads of neighbouring invocations into wide memory
//! transactions, which 8 cells per invocation break up (neighbouring invocations then read
//! addresses 32 bytes apart): on a GPU the same kernels at 8 cells run well behind their speed
//! at one cell (`cargo xtask bench kernel`'s `other-width`; docs, "Benchmarks", "On a real
//! GPU"). A kernel that declares its width
//! `override CELLS_PER_INVOCATION_X: u32 = N;` therefore gets N on CPU adapters and 1 on every
//! other; `const` pins it; [`InvocationWidth::Cells`] forces a width (tests, benchmarks).
//!
//! The width never changes a result: the shipped kernels compute each cell with the same
//! operations in the same order whatever the width (the tests compare widths bit for bit).
//!
//! The prelude's workgroup shapes ([`WorkgroupShapes`]) follow the same rule
//! ([`workgroup_shapes`]): what makes a GPU's loads coalesce also wants rows of 32
//! invocations or more along x, which on a CPU driver would leave narrow grids idle at 8
//! cells per invocation.

use crate::adapter_summary::AdapterSummary;
use crate::error::{Error, Result};
use crate::prelude::WorkgroupShapes;
use crate::wgsl_check::{
    CELLS_PER_INVOCATION_X, CELLS_PER_INVOCATION_Y, CELLS_PER_INVOCATION_Z, CheckedWgsl, DeclaredCells,
    MAX_CELLS_PER_INVOCATION_X,
};

/// Who chooses a kernel's cells per invocation along x (and, for a kernel that declares
/// them `override`, along y and z: [`resolve_rows_and_planes`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum InvocationWidth {
    /// The kernel's `const`, or, for an `override`, its default on CPU adapters and 1 on GPUs.
    #[default]
    PerAdapter,
    /// This many cells per invocation along x, and one row and one plane (an overridable
    /// `CELLS_PER_INVOCATION_Y` or `_Z` gets 1; a `const` one keeps its value); the kernel
    /// must declare `override CELLS_PER_INVOCATION_X` (or its `const` must equal it).
    Cells(u32),
}

/// Whether `adapter` is one that wide invocations help: a CPU driver.
pub fn prefers_wide_invocations(adapter: &AdapterSummary) -> bool {
    adapter.is_cpu()
}

/// The workgroup shapes a kernel's prelude gives it on `adapter` ([`WorkgroupShapes`]): the
/// CPU drivers' on a CPU driver, the GPUs' on every other adapter. Chosen by the same rule as
/// the width, for the same reason: a GPU coalesces the loads of neighbouring invocations,
/// which rows of 32 invocations along x keep contiguous.
pub fn workgroup_shapes(adapter: &AdapterSummary) -> WorkgroupShapes {
    if prefers_wide_invocations(adapter) { WorkgroupShapes::CpuDriver } else { WorkgroupShapes::Gpu }
}

/// The cells per invocation along x `kernel` (named `name` in errors) runs with on `adapter`.
///
/// An overridable kernel on a GPU gets 1, or, where the dispatch at 1 would exceed the
/// device's workgroups per dimension (`dispatch_fits(width)` false: a grid wider than the
/// workgroup's width × 65535 cells), the smallest width up to the declared one that fits:
/// a grid a CPU adapter could run is never refused on a GPU for the width wgpipe chose.
pub fn resolve(
    width: InvocationWidth,
    kernel: &CheckedWgsl,
    name: &str,
    adapter: &AdapterSummary,
    dispatch_fits: &dyn Fn(u32) -> bool,
) -> Result<u32> {
    let declared = kernel.cells_per_invocation_x.cells;
    match width {
        InvocationWidth::PerAdapter if kernel.cells_per_invocation_x.overridable => {
            if prefers_wide_invocations(adapter) {
                return Ok(declared);
            }
            Ok((1..declared).find(|w| dispatch_fits(*w)).unwrap_or(declared))
        }
        InvocationWidth::PerAdapter => Ok(declared),
        InvocationWidth::Cells(n) => check_forced(n, kernel, name),
    }
}

/// The rows (along y) and planes (along z) each invocation of `kernel` updates on `adapter`:
/// a `const` declaration's value; for an `override`, its declared value on CPU adapters under
/// [`InvocationWidth::PerAdapter`], else 1. Why per adapter: a brick of rows and planes per
/// invocation shares the loads of its y and z neighbours, which a CPU driver runs one by one
/// (`cargo xtask bench kernel` measures the 3-D Gray-Scott at 8 × 2 × 2 cells against
/// 8 × 1 × 1 on lavapipe as `row-of-8`); on a GPU, where it is not measured, the kernels keep
/// one cell.
pub fn resolve_rows_and_planes(width: InvocationWidth, kernel: &CheckedWgsl, adapter: &AdapterSummary) -> [u32; 2] {
    let per_invocation = |declared: &DeclaredCells| {
        // An override keeps its declared value only where wgpipe chooses per adapter, on a CPU.
        let just_one =
            declared.overridable && !(width == InvocationWidth::PerAdapter && prefers_wide_invocations(adapter));
        if just_one { 1 } else { declared.cells }
    };
    [per_invocation(&kernel.cells_per_invocation_y), per_invocation(&kernel.cells_per_invocation_z)]
}

/// The width a size check before the devices open must allow for: the widest `kernel` may
/// run with under `width` (an overridable kernel widens up to its declared width when a
/// GPU's dispatch would not fit, [`resolve`]).
pub fn widest(width: InvocationWidth, kernel: &CheckedWgsl, name: &str) -> Result<u32> {
    match width {
        InvocationWidth::PerAdapter => Ok(kernel.cells_per_invocation_x.cells),
        InvocationWidth::Cells(n) => check_forced(n, kernel, name),
    }
}

/// `n` if `kernel` can run with it: an override takes any width from 1 to 64, a `const` (or
/// no declaration, which means 1) only its own.
fn check_forced(n: u32, kernel: &CheckedWgsl, name: &str) -> Result<u32> {
    let invalid = |message: String| Error::InvalidKernel { kernel: name.to_owned(), message };
    if !(1..=MAX_CELLS_PER_INVOCATION_X).contains(&n) {
        return Err(invalid(format!("{n} cells per invocation asked for: give 1 to {MAX_CELLS_PER_INVOCATION_X}")));
    }
    let x = kernel.cells_per_invocation_x;
    if x.overridable || n == x.cells {
        return Ok(n);
    }
    let fixed = if x.declared {
        format!("its `const {CELLS_PER_INVOCATION_X}` is {}", x.cells)
    } else {
        format!("it declares no {CELLS_PER_INVOCATION_X}, which means 1")
    };
    Err(invalid(format!(
        "{n} cells per invocation asked for, but the kernel's width is fixed ({fixed}): declare \
         `override {CELLS_PER_INVOCATION_X}: u32 = {}u;` to let the width be chosen, and write the kernel for any \
         width (a loop over `j < {CELLS_PER_INVOCATION_X}` from x = id.x * {CELLS_PER_INVOCATION_X})",
        x.cells
    )))
}

/// The pipeline constants that give the compiled kernel `cells` per invocation along x, y
/// and z (none for what its text fixes), keyed as wgpu looks them up: by the override's
/// `@id` when it has one, else by its name.
pub fn pipeline_constants(kernel: &CheckedWgsl, cells: [u32; 3]) -> Vec<(String, f64)> {
    let declared = [
        (CELLS_PER_INVOCATION_X, &kernel.cells_per_invocation_x),
        (CELLS_PER_INVOCATION_Y, &kernel.cells_per_invocation_y),
        (CELLS_PER_INVOCATION_Z, &kernel.cells_per_invocation_z),
    ];
    declared
        .into_iter()
        .zip(cells)
        .filter(|((_, d), _)| d.overridable)
        .map(|((name, d), n)| (d.id.map_or_else(|| name.to_owned(), |id| id.to_string()), f64::from(n)))
        .collect()
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests fail loudly")]
mod tests {
    use super::*;
    use crate::prelude::{self, Boundary};
    use crate::wgsl_check;

    fn kernel(declaration: &str) -> CheckedWgsl {
        let prelude = prelude::generate(2, Boundary::Periodic, &["u".to_owned()]).unwrap();
        let code = format!(
            "{declaration}\n@compute @workgroup_size(8, 4)\nfn main(@builtin(global_invocation_id) id: vec3<u32>) {{}}\n"
        );
        wgsl_check::check("k.wgsl", &prelude, &code).unwrap()
    }

    fn adapter(device_type: wgpu::DeviceType) -> AdapterSummary {
        AdapterSummary {
            index: 0,
            name: "a".to_owned(),
            backend: wgpu::Backend::Vulkan,
            device_type,
            driver: String::new(),
            vendor: 0,
            device: 0,
        }
    }

    #[test]
    fn an_override_is_wide_on_cpu_drivers_and_one_cell_on_gpus() {
        let k = kernel("override CELLS_PER_INVOCATION_X: u32 = 8u;");
        assert!(k.cells_per_invocation_x.overridable);
        let fits = |_: u32| true;
        let on = |t| resolve(InvocationWidth::PerAdapter, &k, "k", &adapter(t), &fits).unwrap();
        assert_eq!(on(wgpu::DeviceType::Cpu), 8);
        for gpu in [wgpu::DeviceType::DiscreteGpu, wgpu::DeviceType::IntegratedGpu, wgpu::DeviceType::VirtualGpu] {
            assert_eq!(on(gpu), 1, "{gpu:?}");
        }
        assert_eq!(resolve(InvocationWidth::Cells(3), &k, "k", &adapter(wgpu::DeviceType::Cpu), &fits).unwrap(), 3);
        assert_eq!(widest(InvocationWidth::PerAdapter, &k, "k").unwrap(), 8);
        assert_eq!(pipeline_constants(&k, [3, 1, 1]), [(CELLS_PER_INVOCATION_X.to_owned(), 3.0)]);
        // A grid too wide for one cell per invocation on a GPU widens to the first width that fits.
        let gpu = adapter(wgpu::DeviceType::DiscreteGpu);
        assert_eq!(resolve(InvocationWidth::PerAdapter, &k, "k", &gpu, &|w| w >= 3).unwrap(), 3);
        assert_eq!(resolve(InvocationWidth::PerAdapter, &k, "k", &gpu, &|_| false).unwrap(), 8, "the widest");
        // An override with an @id is set by its id.
        let with_id = kernel("@id(7) override CELLS_PER_INVOCATION_X: u32 = 8u;");
        assert_eq!(pipeline_constants(&with_id, [2, 1, 1]), [("7".to_owned(), 2.0)]);
    }

    #[test]
    fn a_const_or_no_declaration_is_fixed_and_a_forced_width_must_fit() {
        let fixed = kernel("const CELLS_PER_INVOCATION_X: u32 = 4u;");
        let none = kernel("");
        let fits = |_: u32| true;
        for t in [wgpu::DeviceType::Cpu, wgpu::DeviceType::DiscreteGpu] {
            assert_eq!(resolve(InvocationWidth::PerAdapter, &fixed, "k", &adapter(t), &fits).unwrap(), 4);
            assert_eq!(resolve(InvocationWidth::PerAdapter, &none, "k", &adapter(t), &fits).unwrap(), 1);
        }
        assert_eq!(widest(InvocationWidth::PerAdapter, &fixed, "k").unwrap(), 4);
        assert!(pipeline_constants(&fixed, [4, 1, 1]).is_empty());
        let cpu = adapter(wgpu::DeviceType::Cpu);
        let err = resolve(InvocationWidth::Cells(1), &fixed, "k", &cpu, &fits).unwrap_err().to_string();
        assert!(err.contains("its `const CELLS_PER_INVOCATION_X` is 4"), "{err}");
        assert!(err.contains("declare `override CELLS_PER_INVOCATION_X: u32 = 4u;`"), "{err}");
        let err = resolve(InvocationWidth::Cells(2), &none, "k", &cpu, &fits).unwrap_err().to_string();
        assert!(err.contains("it declares no CELLS_PER_INVOCATION_X, which means 1"), "{err}");
        let overridable = kernel("override CELLS_PER_INVOCATION_X: u32 = 8u;");
        for bad in [0, 65] {
            let err = widest(InvocationWidth::Cells(bad), &overridable, "k").unwrap_err();
            assert!(err.to_string().contains("give 1 to 64"), "{bad}: {err}");
        }
    }

    #[test]
    fn rows_and_planes_per_invocation_follow_the_adapter_unless_fixed() {
        let k = kernel(
            "override CELLS_PER_INVOCATION_X: u32 = 8u;\n@id(3) override CELLS_PER_INVOCATION_Y: u32 = 2u;\n\
             override CELLS_PER_INVOCATION_Z: u32 = 4u;",
        );
        let (cpu, gpu) = (adapter(wgpu::DeviceType::Cpu), adapter(wgpu::DeviceType::DiscreteGpu));
        assert_eq!(resolve_rows_and_planes(InvocationWidth::PerAdapter, &k, &cpu), [2, 4]);
        assert_eq!(resolve_rows_and_planes(InvocationWidth::PerAdapter, &k, &gpu), [1, 1]);
        // A forced width is a plain row of cells per invocation, on any adapter.
        assert_eq!(resolve_rows_and_planes(InvocationWidth::Cells(8), &k, &cpu), [1, 1]);
        assert_eq!(
            pipeline_constants(&k, [8, 2, 4]),
            [(CELLS_PER_INVOCATION_X.to_owned(), 8.0), ("3".to_owned(), 2.0), (CELLS_PER_INVOCATION_Z.to_owned(), 4.0)]
        );
        assert_eq!(k.cells_per_workgroup_with([8, 2, 4]), [64, 8, 4], "the 8 × 4 workgroup, times the brick");
        // A const is fixed everywhere, and undeclared means 1.
        let fixed = kernel("const CELLS_PER_INVOCATION_Z: u32 = 2u;");
        for (width, adapter) in [(InvocationWidth::PerAdapter, &gpu), (InvocationWidth::Cells(1), &cpu)] {
            assert_eq!(resolve_rows_and_planes(width, &fixed, adapter), [1, 2]);
        }
        assert!(pipeline_constants(&fixed, [1, 1, 2]).is_empty());
        for bad in ["const CELLS_PER_INVOCATION_Y: u32 = 17u;", "override CELLS_PER_INVOCATION_Z: i32 = 2i;"] {
            let prelude = prelude::generate(2, Boundary::Periodic, &["u".to_owned()]).unwrap();
            let code = format!("{bad}\n@compute @workgroup_size(8, 4)\nfn main() {{}}\n");
            let err = wgsl_check::check("k.wgsl", &prelude, &code).unwrap_err().to_string();
            assert!(err.contains("must be a u32 literal from 1 to 16"), "{bad}: {err}");
        }
    }
}
