//! The 3-D Gray-Scott model of the ADIOS2 tutorial (ADIOS2-Examples `gray-scott`), so that its
//! users can compare wgpipe's output with theirs.
//!
//! Fields `u` and `v` on a periodic L³ grid (any `[nz, ny, nx]` works), explicit Euler steps
//!
//! ```text
//! u' = u + dt · (Du · L(u) − u·v² + F · (1 − u) + noise · r)
//! v' = v + dt · (Dv · L(v) + u·v² − (F + k) · v)
//! ```
//!
//! with the 7-point Laplacian `L(f) = (sum of the 6 face neighbours − 6·f) / 6` and `r` uniform
//! in [−1, 1), drawn per cell and step as a hash of (seed, global cell index, step) (see
//! [`crate::noise`]), so that a run does not depend on how it is split or resumed. Start:
//! u = 1, v = 0, except a centred cube of side 12 where u = 0.25, v = 0.33. It computes in f32.
//!
//! The shader is `shaders-wgsl/gray_scott_3d.wgsl`; [`cpu_step`] is its twin. Parameter names
//! and the update formula's twin are the 2-D model's ([`crate::gray_scott`]); this module adds
//! the tutorial's defaults, `noise`, and the initial cube.

use crate::cpu_twin::{Cell, laplacian7, uniform_noise};
use crate::error::Result;
use crate::gray_scott::{GrayScottParams, euler, unknown_param};
use crate::grid::Grid;
use crate::kernel::{KernelSpec, WgslSource};
use crate::prelude::Boundary;
use crate::shipped;

/// Kernel name, in configs, metadata and messages.
pub const NAME: &str = "gray-scott-3d";

/// The step shader.
pub const WGSL: &str = shipped::GRAY_SCOTT_3D.source;

/// Field names, in the shader's binding order.
pub const FIELDS: &[&str] = shipped::GRAY_SCOTT_3D.fields;

/// The tutorial's grid edge: an L × L × L grid.
pub const L: usize = 64;

/// Half the side of the initial cube: cells `n/2 − 6 ≤ i < n/2 + 6` on each axis.
pub const CUBE_HALF_SIDE: usize = 6;

/// Values inside the initial cube, (u, v); outside, u = 1 and v = 0.
pub const CUBE_VALUES: (f32, f32) = (0.25, 0.33);

/// Model parameters: the 2-D model's rates plus the noise amplitude.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GrayScott3dParams {
    /// Du, Dv, F, k and dt, under the 2-D model's names.
    pub rates: GrayScottParams,
    /// Amplitude of the uniform noise added to u's rate of change each step; 0 makes the run
    /// deterministic whatever the seed.
    pub noise: f32,
}

impl Default for GrayScott3dParams {
    /// The tutorial's `settings-files.json`: Du = 0.2, Dv = 0.1, F = 0.01, k = 0.05, dt = 2,
    /// noise = 1e-7.
    fn default() -> Self {
        GrayScott3dParams { rates: GrayScottParams { du: 0.2, dv: 0.1, feed: 0.01, kill: 0.05, dt: 2.0 }, noise: 1e-7 }
    }
}

impl GrayScott3dParams {
    /// Parameter names and values, in the shader's `Params` order (the rates, then `noise`).
    pub fn named(&self) -> Vec<(&'static str, f32)> {
        let mut named = self.rates.named();
        named.push(("noise", self.noise));
        named
    }

    /// Parameter names, in the shader's `Params` order.
    pub fn names() -> Vec<&'static str> {
        Self::default().named().into_iter().map(|(name, _)| name).collect()
    }

    /// Sets parameter `name`; an error lists the valid names.
    pub fn set(&mut self, name: &str, value: f32) -> Result<()> {
        if name == "noise" {
            self.noise = value;
            return Ok(());
        }
        self.rates.set(name, value).map_err(|_| unknown_param(NAME, name, &Self::names()))
    }

    /// The parameter block in the shader's `Params` order.
    pub fn to_uniform(&self) -> Vec<f32> {
        self.named().into_iter().map(|(_, value)| value).collect()
    }

    /// The kernel to hand to [`crate::FieldSim::new`] with a 3-D grid; `seed` keys the noise.
    pub fn kernel(&self, seed: u64) -> KernelSpec {
        KernelSpec::new(
            NAME,
            WgslSource::new(shipped::GRAY_SCOTT_3D.file, WGSL),
            FIELDS.iter().map(|f| (*f).to_owned()).collect(),
            self.to_uniform(),
        )
        .with_rank(shipped::GRAY_SCOTT_3D.rank)
        .with_seed(seed)
    }
}

/// The initial state, u then v: u = 1, v = 0 except the centred cube
/// `n/2 − 6 ≤ i < n/2 + 6` on every axis of length n (clipped to the grid), where
/// u = 0.25, v = 0.33.
pub fn initial_state(grid: &Grid) -> Vec<f32> {
    let cells = grid.cells();
    let mut state = vec![0.0f32; 2 * cells];
    let (u, v) = state.split_at_mut(cells);
    u.fill(1.0);
    let span = |n: usize| (n / 2).saturating_sub(CUBE_HALF_SIDE)..(n / 2 + CUBE_HALF_SIDE).min(n);
    for z in span(grid.nz()) {
        for y in span(grid.ny()) {
            for x in span(grid.nx()) {
                let i = grid.index(z, y, x);
                (u[i], v[i]) = CUBE_VALUES;
            }
        }
    }
    state
}

/// One step on the CPU, the shader's twin: reads `state` (u then v) after `step` steps and
/// writes the next state to `next`.
pub fn cpu_step(state: &[f32], next: &mut [f32], grid: &Grid, p: &GrayScott3dParams, seed: u64, step: u64) {
    let cells = grid.cells();
    let (u_now, v_now) = state.split_at(cells);
    let (u_next, v_next) = next.split_at_mut(cells);
    for c in Cell::all(grid, Boundary::Periodic) {
        // Grids are at most u32::MAX cells (Grid::new), so the index fits.
        let noise = p.noise * uniform_noise(seed, c.i as u32, step);
        let (u, v) = euler(u_now[c.i], v_now[c.i], laplacian7(u_now, &c), laplacian7(v_now, &c), &p.rates, noise);
        u_next[c.i] = u;
        v_next[c.i] = v;
    }
}

/// Runs steps `first_step .. first_step + steps` on the CPU from `state` and returns the
/// final state.
pub fn cpu_run(
    mut state: Vec<f32>,
    grid: &Grid,
    p: &GrayScott3dParams,
    seed: u64,
    first_step: u64,
    steps: u64,
) -> Vec<f32> {
    let mut next = vec![0.0; state.len()];
    for step in first_step..first_step + steps {
        cpu_step(&state, &mut next, grid, p, seed, step);
        std::mem::swap(&mut state, &mut next);
    }
    state
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests fail loudly")]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_shaders_brick_is_at_most_two_rows_by_two_planes() {
        // `update_brick` in shaders-wgsl/gray_scott_3d.wgsl updates rows y, y + 1 and planes
        // z, z + 1: a larger declared brick would leave cells unwritten.
        let checked = GrayScott3dParams::default().kernel(0).check().unwrap();
        let (y, z) = (checked.cells_per_invocation_y, checked.cells_per_invocation_z);
        assert!(y.overridable && z.overridable, "chosen per adapter");
        assert!((1..=2).contains(&y.cells) && (1..=2).contains(&z.cells), "{y:?} {z:?}");
    }

    #[test]
    fn the_initial_cube_is_the_tutorials() {
        let grid = Grid::new(&[L, L, L]).unwrap();
        let s = initial_state(&grid);
        let (u, v) = s.split_at(grid.cells());
        let inside = |i: usize| (26..38).contains(&i);
        let mut count = 0;
        for z in 0..L {
            for y in 0..L {
                for x in 0..L {
                    let i = grid.index(z, y, x);
                    let expected = if inside(z) && inside(y) && inside(x) { (0.25, 0.33) } else { (1.0, 0.0) };
                    assert_eq!((u[i], v[i]), expected, "at ({z}, {y}, {x})");
                    count += usize::from(expected.1 > 0.0);
                }
            }
        }
        assert_eq!(count, 12 * 12 * 12);
        // A grid smaller than the cube gets the cube clipped to it.
        let small = Grid::new(&[4, 20, 8]).unwrap();
        let v = &initial_state(&small)[small.cells()..];
        assert_eq!(v.iter().filter(|x| **x > 0.0).count(), 4 * 12 * 8);
    }

    #[test]
    fn parameters_by_name_follow_the_shaders_params_struct() {
        let checked = GrayScott3dParams::default().kernel(0).check().unwrap();
        assert_eq!(checked.params_members(), GrayScott3dParams::names());
        assert_eq!(GrayScott3dParams::names(), ["feed", "kill", "du", "dv", "dt", "noise"]);
        assert_eq!(GrayScott3dParams::default().to_uniform(), vec![0.01, 0.05, 0.2, 0.1, 2.0, 1e-7]);
        let mut p = GrayScott3dParams::default();
        p.set("noise", 0.5).unwrap();
        p.set("kill", 0.06).unwrap();
        assert_eq!((p.noise, p.rates.kill), (0.5, 0.06));
        let e = p.set("k", 1.0).unwrap_err().to_string();
        assert!(e.contains("gray-scott-3d") && e.contains("feed, kill, du, dv, dt, noise"), "{e}");
    }
}
