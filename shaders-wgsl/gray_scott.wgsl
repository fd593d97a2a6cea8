// Gray-Scott reaction-diffusion on a 2-D grid, one explicit Euler step. Fields u, v.
//   u' = u + dt * (Du * L(u) - u v^2 + F (1 - u))
//   v' = v + dt * (Dv * L(v) + u v^2 - (F + k) v)
// L is the prelude's 9-point Laplacian. Twin: wgpipe_compute::gray_scott::cpu_step.

struct Params {
    feed: f32,
    kill: f32,
    du: f32,
    dv: f32,
    dt: f32,
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
    let lu = laplacian9_u(c);
    let lv = laplacian9_v(c);
    let uvv = u * v * v;
    u_out[c.i] = u + params.dt * (params.du * lu - uvv + params.feed * (1.0 - u));
    v_out[c.i] = v + params.dt * (params.dv * lv + uvv - (params.feed + params.kill) * v);
}
