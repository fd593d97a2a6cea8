//! Plain-Rust twins of the prelude's WGSL helpers, summing in the same order as the shaders,
//! so GPU results can be checked against an independent CPU computation.

use crate::grid::Grid;
use crate::prelude::Boundary;

pub use crate::noise::uniform_noise;

/// Twin of the prelude's `Cell`: a cell's index and its neighbours' index offsets per axis,
/// with the boundary rule applied. Offsets along axes the grid lacks are 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cell {
    /// Index of the cell in every field.
    pub i: usize,
    /// Column of the cell, and of its neighbours at x − 1 and x + 1.
    pub x: usize,
    /// Column x − 1.
    pub xm: usize,
    /// Column x + 1.
    pub xp: usize,
    /// Row offsets of rows y − 1, y, y + 1 (multiples of nx).
    pub ym: usize,
    /// Row offset of the cell's own row.
    pub y0: usize,
    /// Row offset of row y + 1.
    pub yp: usize,
    /// Plane offset of plane z − 1 (multiple of nx·ny).
    pub zm: usize,
    /// Plane offset of the cell's own plane.
    pub z0: usize,
    /// Plane offset of plane z + 1.
    pub zp: usize,
}

/// Twin of the prelude's `prev_index`/`next_index`: the coordinates before and after `p` on an
/// axis of `n` cells.
fn around(p: usize, n: usize, boundary: Boundary) -> (usize, usize) {
    match boundary {
        Boundary::Periodic => (if p == 0 { n - 1 } else { p - 1 }, if p + 1 == n { 0 } else { p + 1 }),
        Boundary::ZeroFlux => (p.saturating_sub(1), if p + 1 == n { p } else { p + 1 }),
    }
}

impl Cell {
    /// Cell `(z, y, x)` of `grid` (`z = 0` on 2-D grids, `y = z = 0` on 1-D ones).
    pub fn new(grid: &Grid, boundary: Boundary, z: usize, y: usize, x: usize) -> Cell {
        let (xm, xp) = around(x, grid.nx(), boundary);
        let (ym, yp) = around(y, grid.ny(), boundary);
        let (zm, zp) = around(z, grid.nz(), boundary);
        let (row, plane) = (grid.nx(), grid.nx() * grid.ny());
        Cell {
            i: grid.index(z, y, x),
            x,
            xm,
            xp,
            ym: ym * row,
            y0: y * row,
            yp: yp * row,
            zm: zm * plane,
            z0: z * plane,
            zp: zp * plane,
        }
    }

    /// Every cell of `grid` in index order.
    pub fn all(grid: &Grid, boundary: Boundary) -> impl Iterator<Item = Cell> + '_ {
        (0..grid.nz()).flat_map(move |z| {
            (0..grid.ny()).flat_map(move |y| (0..grid.nx()).map(move |x| Cell::new(grid, boundary, z, y, x)))
        })
    }
}

/// The prelude's `laplacian3_NAME` (1-D): (left − centre) + (right − centre).
pub fn laplacian3(field: &[f32], c: &Cell) -> f32 {
    let x = field[c.i];
    (field[c.xm] - x) + (field[c.xp] - x)
}

/// The prelude's `laplacian9_NAME` (2-D): w · (neighbour − centre) over the 8 neighbours,
/// w = 0.5 on edges and 0.25 on diagonals, in the shader's order.
pub fn laplacian9(field: &[f32], c: &Cell) -> f32 {
    let x = field[c.i];
    let mut s = 0.5 * (field[c.ym + c.x] - x);
    s += 0.5 * (field[c.yp + c.x] - x);
    s += 0.5 * (field[c.y0 + c.xm] - x);
    s += 0.5 * (field[c.y0 + c.xp] - x);
    s += 0.25 * (field[c.ym + c.xm] - x);
    s += 0.25 * (field[c.ym + c.xp] - x);
    s += 0.25 * (field[c.yp + c.xm] - x);
    s += 0.25 * (field[c.yp + c.xp] - x);
    s
}

/// The prelude's `laplacian7_NAME` (3-D): (sum of the 6 face neighbours − 6 · centre) / 6,
/// summed x − 1, x + 1, y − 1, y + 1, z − 1, z + 1 as the shader does.
pub fn laplacian7(field: &[f32], c: &Cell) -> f32 {
    let mut s = field[c.z0 + c.y0 + c.xm];
    s += field[c.z0 + c.y0 + c.xp];
    s += field[c.z0 + c.ym + c.x];
    s += field[c.z0 + c.yp + c.x];
    s += field[c.zm + c.y0 + c.x];
    s += field[c.zp + c.y0 + c.x];
    (s - 6.0 * field[c.i]) * (1.0 / 6.0)
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests fail loudly")]
mod tests {
    use super::*;

    #[test]
    fn neighbours_wrap_or_clamp_at_the_faces() {
        let g = Grid::new(&[2, 3, 4]).unwrap();
        let c = Cell::new(&g, Boundary::Periodic, 0, 0, 3);
        assert_eq!((c.i, c.xm, c.xp, c.ym, c.y0, c.yp, c.zm, c.z0, c.zp), (3, 2, 0, 8, 0, 4, 12, 0, 12));
        let c = Cell::new(&g, Boundary::ZeroFlux, 0, 0, 3);
        assert_eq!((c.xm, c.xp, c.ym, c.yp, c.zm, c.zp), (2, 3, 0, 4, 0, 12));
        let c = Cell::new(&g, Boundary::ZeroFlux, 1, 2, 0);
        assert_eq!((c.i, c.xm, c.xp, c.ym, c.yp, c.zm, c.zp), (20, 0, 1, 4, 8, 0, 12));
        assert_eq!(Cell::all(&g, Boundary::Periodic).map(|c| c.i).collect::<Vec<_>>(), (0..24).collect::<Vec<_>>());
    }

    #[test]
    fn laplacians_vanish_on_constants_and_see_a_spike() {
        let g = Grid::new(&[5, 5, 5]).unwrap();
        let mut f = vec![2.0f32; g.cells()];
        assert!(Cell::all(&g, Boundary::Periodic).all(|c| laplacian7(&f, &c) == 0.0));
        f[g.index(2, 2, 2)] = 8.0;
        let centre = Cell::new(&g, Boundary::Periodic, 2, 2, 2);
        assert_eq!(laplacian7(&f, &centre), -6.0);
        assert_eq!(laplacian7(&f, &Cell::new(&g, Boundary::Periodic, 2, 1, 2)), 1.0);
        assert_eq!(laplacian7(&f, &Cell::new(&g, Boundary::Periodic, 1, 1, 2)), 0.0);
        let g2 = Grid::new(&[3, 3]).unwrap();
        let mut f2 = vec![0.0f32; 9];
        f2[4] = 1.0;
        let corner = Cell::new(&g2, Boundary::ZeroFlux, 0, 0, 0);
        assert_eq!(laplacian9(&f2, &corner), 0.25);
        assert_eq!(laplacian9(&f2, &Cell::new(&g2, Boundary::ZeroFlux, 0, 1, 1)), -3.0);
        let g1 = Grid::new(&[4]).unwrap();
        let f1 = [1.0f32, 0.0, 0.0, 0.0];
        assert_eq!(laplacian3(&f1, &Cell::new(&g1, Boundary::Periodic, 0, 0, 3)), 1.0);
        assert_eq!(laplacian3(&f1, &Cell::new(&g1, Boundary::ZeroFlux, 0, 0, 3)), 0.0);
    }
}
