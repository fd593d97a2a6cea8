// The 2-D Gray-Scott step as it was before the prelude wrapped neighbours with `select`
// (commit 58e666e, shaders-wgsl/gray_scott.wgsl and shared/field_stencil.wgsl): every
// neighbour index wrapped with an integer `%`, a fixed 16x16 workgroup. Kept by
// `cargo xtask bench kernel` as the baseline the shipped shader is measured against.
//
// Written against today's bindings (the generated prelude's `grid`, `u_in`/`u_out`,
// `v_in`/`v_out` and `params` order) but using none of its helpers (`cell`, `laplacian9_*`).
// Same update and same summation order as the shipped shader, so both give the same bits.

struct Params {
    feed: f32,
    kill: f32,
    du: f32,
    dv: f32,
    dt: f32,
}

@group(0) @binding(1) var<uniform> params: Params;

// Index of (r, c) wrapped onto the periodic grid; offsets of at most one grid size either way.
fn baseline_index(r: i32, c: i32) -> u32 {
    let rows = i32(grid.ny);
    let cols = i32(grid.nx);
    let rr = (r + rows) % rows;
    let cc = (c + cols) % cols;
    return u32(rr * cols + cc);
}

// 9-point Laplacian of u: w * (neighbour - centre), w = 0.5 on edges, 0.25 on diagonals.
fn baseline_laplacian_u(r: i32, c: i32) -> f32 {
    let x = u_in[baseline_index(r, c)];
    var s = 0.5 * (u_in[baseline_index(r - 1, c)] - x);
    s = s + 0.5 * (u_in[baseline_index(r + 1, c)] - x);
    s = s + 0.5 * (u_in[baseline_index(r, c - 1)] - x);
    s = s + 0.5 * (u_in[baseline_index(r, c + 1)] - x);
    s = s + 0.25 * (u_in[baseline_index(r - 1, c - 1)] - x);
    s = s + 0.25 * (u_in[baseline_index(r - 1, c + 1)] - x);
    s = s + 0.25 * (u_in[baseline_index(r + 1, c - 1)] - x);
    s = s + 0.25 * (u_in[baseline_index(r + 1, c + 1)] - x);
    return s;
}

// The same for v.
fn baseline_laplacian_v(r: i32, c: i32) -> f32 {
    let x = v_in[baseline_index(r, c)];
    var s = 0.5 * (v_in[baseline_index(r - 1, c)] - x);
    s = s + 0.5 * (v_in[baseline_index(r + 1, c)] - x);
    s = s + 0.5 * (v_in[baseline_index(r, c - 1)] - x);
    s = s + 0.5 * (v_in[baseline_index(r, c + 1)] - x);
    s = s + 0.25 * (v_in[baseline_index(r - 1, c - 1)] - x);
    s = s + 0.25 * (v_in[baseline_index(r - 1, c + 1)] - x);
    s = s + 0.25 * (v_in[baseline_index(r + 1, c - 1)] - x);
    s = s + 0.25 * (v_in[baseline_index(r + 1, c + 1)] - x);
    return s;
}

@compute @workgroup_size(16, 16)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    if (id.x >= grid.nx || id.y >= grid.ny) {
        return;
    }
    let r = i32(id.y);
    let c = i32(id.x);
    let i = id.y * grid.nx + id.x;
    let u = u_in[i];
    let v = v_in[i];
    let lu = baseline_laplacian_u(r, c);
    let lv = baseline_laplacian_v(r, c);
    let uvv = u * v * v;
    u_out[i] = u + params.dt * (params.du * lu - uvv + params.feed * (1.0 - u));
    v_out[i] = v + params.dt * (params.dv * lv + uvv - (params.feed + params.kill) * v);
}
