// Gray-Scott reaction-diffusion, one explicit Euler step. Fields: 0 = u, 1 = v.
//   u' = u + dt * (Du * L(u) - u v^2 + F (1 - u))
//   v' = v + dt * (Dv * L(v) + u v^2 - (F + k) v)

struct Params {
    du: f32,
    dv: f32,
    feed: f32,
    kill: f32,
    dt: f32,
}

@group(0) @binding(3) var<uniform> params: Params;

@compute @workgroup_size(16, 16)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    if (id.x >= grid.cols || id.y >= grid.rows) {
        return;
    }
    let r = i32(id.y);
    let c = i32(id.x);
    let i = id.y * grid.cols + id.x;
    let u = src[i];
    let v = src[grid.cells + i];
    let lu = laplacian9(0u, r, c);
    let lv = laplacian9(1u, r, c);
    let uvv = u * v * v;
    dst[i] = u + params.dt * (params.du * lu - uvv + params.feed * (1.0 - u));
    dst[grid.cells + i] = v + params.dt * (params.dv * lv + uvv - (params.feed + params.kill) * v);
}
