//! The Gray-Scott reaction-diffusion model: wgpipe's flagship kernel.
//!
//! Fields `u` and `v` on a periodic rows × cols grid, advanced by explicit Euler steps:
//!
//! ```text
//! u' = u + dt · (Du · L(u) − u·v² + F · (1 − u))
//! v' = v + dt · (Dv · L(v) + u·v² − (F + k) · v)
//! ```
//!
//! where L is the 9-point Laplacian (weights 0.5 on edge neighbours, 0.25 on diagonals).
//! The shader is `shaders-wgsl/gray_scott.wgsl`; [`cpu_step`] is its plain-Rust twin.

mod initial;

pub use initial::initial_state;

use crate::cpu_twin::laplacian9;
use crate::kernel::{KernelSpec, WgslSource};

/// The step shader.
pub const WGSL: &str = include_str!("../../../../shaders-wgsl/gray_scott.wgsl");

/// Field names, in the shader's layout order.
pub const FIELDS: [&str; 2] = ["u", "v"];

/// Model parameters.
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

impl GrayScottParams {
    /// The parameter block in the shader's `Params` order.
    pub fn to_uniform(&self) -> Vec<f32> {
        vec![self.du, self.dv, self.feed, self.kill, self.dt]
    }

    /// The kernel to hand to [`crate::FieldSim::new`].
    pub fn kernel(&self) -> KernelSpec {
        KernelSpec::new(
            "gray-scott",
            WgslSource::new("shaders-wgsl/gray_scott.wgsl", WGSL),
            FIELDS.iter().map(|f| (*f).to_owned()).collect(),
            self.to_uniform(),
        )
    }
}

/// One step on the CPU: reads `state` (u then v) and writes the next state to `next`.
///
/// The same arithmetic, in the same order, as the shader.
pub fn cpu_step(state: &[f32], next: &mut [f32], rows: usize, cols: usize, p: &GrayScottParams) {
    let cells = rows * cols;
    let (u_now, v_now) = state.split_at(cells);
    let (u_next, v_next) = next.split_at_mut(cells);
    for r in 0..rows {
        for c in 0..cols {
            let i = r * cols + c;
            let u = u_now[i];
            let v = v_now[i];
            let lu = laplacian9(u_now, rows, cols, r, c);
            let lv = laplacian9(v_now, rows, cols, r, c);
            let uvv = u * v * v;
            u_next[i] = u + p.dt * (p.du * lu - uvv + p.feed * (1.0 - u));
            v_next[i] = v + p.dt * (p.dv * lv + uvv - (p.feed + p.kill) * v);
        }
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
