//! The Gray-Scott reaction-diffusion model on a 2-D grid: wgpipe's default kernel.
//!
//! Fields `u` and `v` on a periodic rows × cols grid, advanced by explicit Euler steps:
//!
//! ```text
//! u' = u + dt · (Du · L(u) − u·v² + F · (1 − u))
//! v' = v + dt · (Dv · L(v) + u·v² − (F + k) · v)
//! ```
//!
//! where L is the 9-point Laplacian (weights 0.5 on edge neighbours, 0.25 on diagonals).
//! The shader is `shaders-wgsl/gray_scott.wgsl`; [`cpu_step`] is its plain-Rust twin. The 3-D
//! model of the ADIOS2 tutorial ([`crate::gray_scott_3d`]) shares the parameter names and the
//! update formula's twin defined here.
//!
//! This module is the one place the model's facts live on the Rust side: parameter names and
//! defaults ([`GrayScottParams`]), the update's twin, and the initial pattern
//! ([`initial_state`]). The numpy reference in the runner's tests is deliberately written
//! apart from it, from the model's definition, so that it checks this code rather than
//! repeating it.

mod initial;

pub use initial::initial_state;

use crate::cpu_twin::{Cell, laplacian9};
use crate::error::{Error, Result};
use crate::grid::Grid;
use crate::kernel::{KernelSpec, WgslSource};
use crate::prelude::Boundary;
use crate::shipped;

/// Kernel name, in configs (`kernel.name`), metadata and messages.
pub const NAME: &str = "gray-scott";

/// The step shader.
pub const WGSL: &str = shipped::GRAY_SCOTT.source;

/// Field names, in the shader's binding order.
pub const FIELDS: &[&str] = shipped::GRAY_SCOTT.fields;

/// What each field is, for outputs' `long_name` and `units` attributes (CF conventions):
/// `(field, long name, units)`; both concentrations are dimensionless (`"1"`). The 3-D model
/// has the same fields.
pub const FIELD_DESCRIPTIONS: &[(&str, &str, &str)] = &[("u", "activator u", "1"), ("v", "inhibitor v", "1")];

/// Model parameters (the rates shared with the 3-D model).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GrayScottParams {
    /// Diffusion rate of u.
    pub du: f32,
    /// Diffusion rate of v.
    pub dv: f32,
    /// Feed rate F.
    pub feed: f32,
    /// Kill rate k.
    pub kill: f32,
    /// Time step.
    pub dt: f32,
}

impl Default for GrayScottParams {
    /// Du = 0.1, Dv = 0.05, F = 0.014, k = 0.054, dt = 1.
    fn default() -> Self {
        GrayScottParams { du: 0.1, dv: 0.05, feed: 0.014, kill: 0.054, dt: 1.0 }
    }
}

/// An error for a parameter name `model` does not have.
pub(crate) fn unknown_param(model: &str, name: &str, names: &[&str]) -> Error {
    Error::InvalidKernel {
        kernel: model.to_owned(),
        message: format!("it has no parameter {name:?}; its parameters are {}", names.join(", ")),
    }
}

impl GrayScottParams {
    /// Every parameter by name, in the order of the shader's `struct Params`: the one list
    /// that maps names to members.
    fn slots(&mut self) -> [(&'static str, &mut f32); 5] {
        [
            ("feed", &mut self.feed),
            ("kill", &mut self.kill),
            ("du", &mut self.du),
            ("dv", &mut self.dv),
            ("dt", &mut self.dt),
        ]
    }

    /// Parameter names and values, in the shader's `Params` order.
    pub fn named(&self) -> Vec<(&'static str, f32)> {
        let mut copy = *self;
        copy.slots().into_iter().map(|(name, value)| (name, *value)).collect()
    }

    /// Parameter names, in the shader's `Params` order.
    pub fn names() -> Vec<&'static str> {
        Self::default().named().into_iter().map(|(name, _)| name).collect()
    }

    /// Sets parameter `name`; an error lists the valid names.
    pub fn set(&mut self, name: &str, value: f32) -> Result<()> {
        match self.slots().into_iter().find(|(n, _)| *n == name) {
            Some((_, slot)) => {
                *slot = value;
                Ok(())
            }
            None => Err(unknown_param(NAME, name, &Self::names())),
        }
    }

    /// The parameter block in the shader's `Params` order.
    pub fn to_uniform(&self) -> Vec<f32> {
        self.named().into_iter().map(|(_, value)| value).collect()
    }

    /// The kernel to hand to [`crate::FieldSim::new`].
    pub fn kernel(&self) -> KernelSpec {
        KernelSpec::new(
            NAME,
            WgslSource::new(shipped::GRAY_SCOTT.file, WGSL),
            FIELDS.iter().map(|f| (*f).to_owned()).collect(),
            self.to_uniform(),
        )
        .with_rank(shipped::GRAY_SCOTT.rank)
    }
}

/// One explicit Euler update of one cell, the twin of both Gray-Scott shaders: `lu`, `lv` are
/// the Laplacians of u and v, `noise` the term added to u's rate of change (0 in 2-D).
pub(crate) fn euler(u: f32, v: f32, lu: f32, lv: f32, p: &GrayScottParams, noise: f32) -> (f32, f32) {
    let uvv = u * v * v;
    let du = p.du * lu - uvv + p.feed * (1.0 - u) + noise;
    let dv = p.dv * lv + uvv - (p.feed + p.kill) * v;
    (u + p.dt * du, v + p.dt * dv)
}

/// One step on the CPU: reads `state` (u then v) and writes the next state to `next`.
///
/// The same arithmetic, in the same order, as the shader.
pub fn cpu_step(state: &[f32], next: &mut [f32], rows: usize, cols: usize, p: &GrayScottParams) {
    let grid = Grid::for_twin(rows, cols);
    let cells = grid.cells();
    let (u_now, v_now) = state.split_at(cells);
    let (u_next, v_next) = next.split_at_mut(cells);
    for c in Cell::all(&grid, Boundary::Periodic) {
        let (u, v) = euler(u_now[c.i], v_now[c.i], laplacian9(u_now, &c), laplacian9(v_now, &c), p, 0.0);
        u_next[c.i] = u;
        v_next[c.i] = v;
    }
}

/// Runs `steps` CPU steps from `state` and returns the final state.
pub fn cpu_run(mut state: Vec<f32>, rows: usize, cols: usize, p: &GrayScottParams, steps: u64) -> Vec<f32> {
    let mut next = vec![0.0; state.len()];
    for _ in 0..steps {
        cpu_step(&state, &mut next, rows, cols, p);
        std::mem::swap(&mut state, &mut next);
    }
    state
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests fail loudly")]
mod tests {
    use super::*;

    #[test]
    fn parameters_by_name_follow_the_shaders_params_struct() {
        let checked = GrayScottParams::default().kernel().check().unwrap();
        assert_eq!(checked.params_members(), GrayScottParams::names());
        let mut p = GrayScottParams::default();
        for (k, name) in GrayScottParams::names().into_iter().enumerate() {
            p.set(name, k as f32 + 0.5).unwrap();
        }
        assert_eq!(p.to_uniform(), vec![0.5, 1.5, 2.5, 3.5, 4.5]);
        assert_eq!(p, GrayScottParams { feed: 0.5, kill: 1.5, du: 2.5, dv: 3.5, dt: 4.5 });
        let e = p.set("F", 1.0).unwrap_err().to_string();
        assert!(e.contains("\"F\"") && e.contains("feed, kill, du, dv, dt"), "{e}");
    }
}
