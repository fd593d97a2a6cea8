// The 3-D Gray-Scott step as shipped before it updated several cells per invocation (kept by
// `cargo xtask bench kernel` to measure and check the shipped shader against): one cell per
// invocation through the prelude's `cell` and `laplacian7_*`.
//
// Gray-Scott reaction-diffusion on a 3-D grid, the model of the ADIOS2 tutorial; one explicit
// Euler step. Fields u, v.
//   u' = u + dt * (Du * L(u) - u v^2 + F (1 - u) + noise * r)
//   v' = v + dt * (Dv * L(v) + u v^2 - (F + k) v)
// L is the prelude's 7-point Laplacian, r = uniform_noise in [-1, 1), a hash of (seed, cell,
// step). Twin: wgpipe_compute::gray_scott_3d::cpu_step.

struct Params {
    feed: f32,
    kill: f32,
    du: f32,
    dv: f32,
    dt: f32,
    noise: f32,
}

@group(0) @binding(1) var<uniform> params: Params;

@compute @workgroup_size(WORKGROUP_X, WORKGROUP_Y, WORKGROUP_Z)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    if (!in_grid(id)) {
        return;
    }
    let c = cell(id);
    let u = u_in[c.i];
    let v = v_in[c.i];
    let uvv = u * v * v;
    let du = params.du * laplacian7_u(c) - uvv + params.feed * (1.0 - u) + params.noise * uniform_noise(c.i);
    let dv = params.dv * laplacian7_v(c) + uvv - (params.feed + params.kill) * v;
    u_out[c.i] = u + params.dt * du;
    v_out[c.i] = v + params.dt * dv;
}
