// Field-stencil prelude, the part every kernel shares. wgpipe generates the rest per kernel
// from its rank, boundary rule and field names (workgroup shape, `Cell`, one binding pair and
// one Laplacian per field) and compiles both before the kernel: `KernelSpec::prelude` shows
// the whole text.

// Grid size: nx along x (the fastest axis), ny, nz; 1 along axes the grid lacks.
// cells = nx * ny * nz, the length of every field. For a block of a larger grid, the sizes
// include one ghost layer per face, global_n* is the whole grid and offset_* the block's first
// cell in it; for a whole grid, global_n* = n* and the offsets are 0 (see `global_index`).
struct Grid {
    nx: u32,
    ny: u32,
    nz: u32,
    cells: u32,
    global_nx: u32,
    global_ny: u32,
    global_nz: u32,
    offset_x: u32,
    offset_y: u32,
    offset_z: u32,
}

@group(0) @binding(0) var<uniform> grid: Grid;

// Set by the host before every step (immediate data, so steps in one pass each see their own).
struct Clock {
    // Steps done before this one: low and high 32 bits.
    step: u32,
    step_hi: u32,
    // This step's key of `uniform_noise`, derived from the kernel's seed and the step.
    noise_key: u32,
}

var<immediate> clock: Clock;

// PCG output permutation of a u32 (a bijection): integer arithmetic only, so every device and
// the CPU twin compute the same bits.
fn pcg_hash(x: u32) -> u32 {
    let s = x * 747796405u + 2891336453u;
    let w = ((s >> ((s >> 28u) + 4u)) ^ s) * 277803737u;
    return (w >> 22u) ^ w;
}

// Uniform noise in [-1, 1) for the cell with global linear index `i` (`global_index(c)`) at this step: a hash of
// (seed, i, step), so a run is reproducible, a resumed run draws what an uninterrupted one
// would, and the noise does not depend on how the grid is split into dispatches or domains.
// 24 bits of the hash scaled by 2^-23: exact in f32 on every device.
fn uniform_noise(i: u32) -> f32 {
    let h = pcg_hash(pcg_hash(i) ^ clock.noise_key);
    return f32(h >> 8u) * 1.1920928955078125e-7 - 1.0;
}
