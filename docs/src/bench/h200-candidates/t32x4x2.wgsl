// Candidate (NVIDIA H200, 2026-11-26): one cell per invocation, the workgroups remapped to
// 32x4x2 tiles of cells (the dispatch is that of the prelude's 8x8x4 workgroups: as many).
struct Params { feed: f32, kill: f32, du: f32, dv: f32, dt: f32, noise: f32, }
@group(0) @binding(1) var<uniform> params: Params;
const TX: u32 = 32u;
const TY: u32 = 4u;
const TZ: u32 = 2u;
@compute @workgroup_size(32, 4, 2)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let e = extent();
    let tiles_x = (e.x + TX - 1u) / TX;
    let tiles_y = (e.y + TY - 1u) / TY;
    let f = wid.x + nwg.x * (wid.y + nwg.y * wid.z);
    let tx = f % tiles_x;
    let r = f / tiles_x;
    let id = vec3(tx * TX + lid.x, (r % tiles_y) * TY + lid.y, (r / tiles_y) * TZ + lid.z);
    if (!in_grid(id)) {
        return;
    }
    let c = cell(id);
    let u = u_in[c.i];
    let v = v_in[c.i];
    let uvv = u * v * v;
    let du = params.du * laplacian7_u(c) - uvv + params.feed * (1.0 - u) + params.noise * uniform_noise(global_index(c));
    let dv = params.dv * laplacian7_v(c) + uvv - (params.feed + params.kill) * v;
    u_out[c.i] = u + params.dt * du;
    v_out[c.i] = v + params.dt * dv;
}
