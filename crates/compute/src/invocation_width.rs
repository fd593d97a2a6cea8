//! How many consecutive cells along x each invocation of a kernel updates, on a given adapter.
//!
//! Why it depends on the adapter: a CPU driver (lavapipe, llvmpipe) runs each storage-buffer
//! load lane by lane, so a step costs about its number of loads, and an invocation that slides
//! a stencil window along 8 cells loads each column once instead of three times: the shipped
//! Gray-Scott kernels run 2.37× (2-D, 1024²) and 1.27× (3-D, 64³) as fast with 8 cells per
//! invocation on lavapipe (`cargo xtask bench --kernel`). A GPU coalesces the loads of
//! neighbouring invocations into wide memory transactions, which 8 cells per invocation break
//! up (neighbouring invocations then read addresses 32 bytes apart): on an NVIDIA H200 the
//! same 8-cell kernels ran at 0.57× (2-D, 4096²) and 0.44× (3-D, 256³) the speed of one cell
//! per invocation (docs, "Benchmarks"). A kernel that declares its width
//! `override CELLS_PER_INVOCATION_X: u32 = N;` therefore gets N on CPU adapters and 1 on every
//! other; `const` pins it; [`InvocationWidth::Cells`] forces a width (tests, benchmarks).
//!
//! The width never changes a result: the shipped kernels compute each cell with the same
//! operations in the same order whatever the width (the tests compare widths bit for bit).

use crate::adapter_summary::AdapterSummary;
use crate::error::{Error, Result};
use crate::wgsl_check::{CELLS_PER_INVOCATION_X, CheckedWgsl, MAX_CELLS_PER_INVOCATION_X};

/// Who chooses a kernel's cells per invocation along x.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum InvocationWidth {
    /// The kernel's `const`, or, for an `override`, its default on CPU adapters and 1 on GPUs.
    #[default]
    PerAdapter,
    /// This many cells per invocation; the kernel must declare `override CELLS_PER_INVOCATION_X`
    /// (or its `const` must equal it).
    Cells(u32),
}

/// Whether `adapter` is one that wide invocations help: a CPU driver.
pub fn prefers_wide_invocations(adapter: &AdapterSummary) -> bool {
    adapter.device_type == wgpu::DeviceType::Cpu
}

/// The cells per invocation along x `kernel` (named `name` in errors) runs with on `adapter`.
pub fn resolve(width: InvocationWidth, kernel: &CheckedWgsl, name: &str, adapter: &AdapterSummary) -> Result<u32> {
    let declared = kernel.cells_per_invocation_x;
    match width {
        InvocationWidth::PerAdapter if kernel.cells_per_invocation_overridable => {
            Ok(if prefers_wide_invocations(adapter) { declared } else { 1 })
        }
        InvocationWidth::PerAdapter => Ok(declared),
        InvocationWidth::Cells(n) => check_forced(n, kernel, name),
    }
}

/// Every width `kernel` may run with under `width`, on any adapter: what a size check before
/// the devices open must allow for.
pub fn possible(width: InvocationWidth, kernel: &CheckedWgsl, name: &str) -> Result<Vec<u32>> {
    match width {
        InvocationWidth::PerAdapter if kernel.cells_per_invocation_overridable => {
            let mut widths = vec![1, kernel.cells_per_invocation_x];
            widths.dedup();
            Ok(widths)
        }
        InvocationWidth::PerAdapter => Ok(vec![kernel.cells_per_invocation_x]),
        InvocationWidth::Cells(n) => Ok(vec![check_forced(n, kernel, name)?]),
    }
}

/// `n` if `kernel` can run with it: an override takes any width from 1 to 64, a `const` (or
/// no declaration, which means 1) only its own.
fn check_forced(n: u32, kernel: &CheckedWgsl, name: &str) -> Result<u32> {
    let invalid = |message: String| Error::InvalidKernel { kernel: name.to_owned(), message };
    if !(1..=MAX_CELLS_PER_INVOCATION_X).contains(&n) {
        return Err(invalid(format!("{n} cells per invocation asked for: give 1 to {MAX_CELLS_PER_INVOCATION_X}")));
    }
    if kernel.cells_per_invocation_overridable || n == kernel.cells_per_invocation_x {
        return Ok(n);
    }
    Err(invalid(format!(
        "{n} cells per invocation asked for, but the kernel updates {} (its {CELLS_PER_INVOCATION_X} is fixed): \
         declare `override {CELLS_PER_INVOCATION_X}: u32 = {}u;` to let the width be chosen, and write the \
         kernel for any width",
        kernel.cells_per_invocation_x, kernel.cells_per_invocation_x
    )))
}

/// The pipeline constants that give the compiled kernel `cells` per invocation (none when
/// the width is fixed in its text).
pub fn pipeline_constants(kernel: &CheckedWgsl, cells: u32) -> Vec<(&'static str, f64)> {
    if kernel.cells_per_invocation_overridable { vec![(CELLS_PER_INVOCATION_X, f64::from(cells))] } else { Vec::new() }
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
        assert!(k.cells_per_invocation_overridable);
        let on = |t| resolve(InvocationWidth::PerAdapter, &k, "k", &adapter(t)).unwrap();
        assert_eq!(on(wgpu::DeviceType::Cpu), 8);
        for gpu in [wgpu::DeviceType::DiscreteGpu, wgpu::DeviceType::IntegratedGpu, wgpu::DeviceType::VirtualGpu] {
            assert_eq!(on(gpu), 1, "{gpu:?}");
        }
        assert_eq!(resolve(InvocationWidth::Cells(3), &k, "k", &adapter(wgpu::DeviceType::Cpu)).unwrap(), 3);
        assert_eq!(possible(InvocationWidth::PerAdapter, &k, "k").unwrap(), [1, 8]);
        assert_eq!(pipeline_constants(&k, 3), [(CELLS_PER_INVOCATION_X, 3.0)]);
    }

    #[test]
    fn a_const_or_no_declaration_is_fixed_and_a_forced_width_must_fit() {
        let fixed = kernel("const CELLS_PER_INVOCATION_X: u32 = 4u;");
        let none = kernel("");
        for t in [wgpu::DeviceType::Cpu, wgpu::DeviceType::DiscreteGpu] {
            assert_eq!(resolve(InvocationWidth::PerAdapter, &fixed, "k", &adapter(t)).unwrap(), 4);
            assert_eq!(resolve(InvocationWidth::PerAdapter, &none, "k", &adapter(t)).unwrap(), 1);
        }
        assert_eq!(possible(InvocationWidth::PerAdapter, &fixed, "k").unwrap(), [4]);
        assert!(pipeline_constants(&fixed, 4).is_empty());
        let err = resolve(InvocationWidth::Cells(1), &fixed, "k", &adapter(wgpu::DeviceType::Cpu)).unwrap_err();
        assert!(err.to_string().contains("declare `override CELLS_PER_INVOCATION_X: u32 = 4u;`"), "{err}");
        let overridable = kernel("override CELLS_PER_INVOCATION_X: u32 = 8u;");
        for bad in [0, 65] {
            let err = possible(InvocationWidth::Cells(bad), &overridable, "k").unwrap_err();
            assert!(err.to_string().contains("give 1 to 64"), "{bad}: {err}");
        }
    }
}
