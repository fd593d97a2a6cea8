// Candidate (NVIDIA H200, 2026-11-26): each invocation marches 4 cells along z, keeping the
// planes z-1, z, z+1 of u and v in registers (5 loads per cell and field instead of 7);
// workgroups of 32x2 invocations remapped to 32x2x4 tiles (256 cells each, as many
// tiles as the prelude's dispatch has workgroups).
struct Params { feed: f32, kill: f32, du: f32, dv: f32, dt: f32, noise: f32, }
@group(0) @binding(1) var<uniform> params: Params;
const TX: u32 = 32u;
const TY: u32 = 2u;
const ZC: u32 = 4u;
@compute @workgroup_size(32, 2, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let e = extent();
    let tiles_x = (e.x + TX - 1u) / TX;
    let tiles_y = (e.y + TY - 1u) / TY;
    let f = wid.x + nwg.x * (wid.y + nwg.y * wid.z);
    let r = f / tiles_x;
    let x = (f % tiles_x) * TX + lid.x;
    let y = (r % tiles_y) * TY + lid.y;
    let z0 = (r / tiles_y) * ZC;
    if (!in_grid(vec3(x, y, z0))) {
        return;
    }
    var c = cell(vec3(x, y, z0));
    var u_below = u_in[c.zm + c.y0 + c.x];
    var v_below = v_in[c.zm + c.y0 + c.x];
    var u = u_in[c.i];
    var v = v_in[c.i];
    for (var k = 0u; k < ZC; k++) {
        let z = z0 + k;
        if (z >= e.z) {
            break;
        }
        c = cell(vec3(x, y, z));
        let u_above = u_in[c.zp + c.y0 + c.x];
        let v_above = v_in[c.zp + c.y0 + c.x];
        var su = u_in[c.z0 + c.y0 + c.xm];
        su = su + u_in[c.z0 + c.y0 + c.xp];
        su = su + u_in[c.z0 + c.ym + c.x];
        su = su + u_in[c.z0 + c.yp + c.x];
        su = su + u_below;
        su = su + u_above;
        var sv = v_in[c.z0 + c.y0 + c.xm];
        sv = sv + v_in[c.z0 + c.y0 + c.xp];
        sv = sv + v_in[c.z0 + c.ym + c.x];
        sv = sv + v_in[c.z0 + c.yp + c.x];
        sv = sv + v_below;
        sv = sv + v_above;
        let lu = (su - 6.0 * u) * (1.0 / 6.0);
        let lv = (sv - 6.0 * v) * (1.0 / 6.0);
        let uvv = u * v * v;
        let du = params.du * lu - uvv + params.feed * (1.0 - u) + params.noise * uniform_noise(global_index(c));
        let dv = params.dv * lv + uvv - (params.feed + params.kill) * v;
        u_out[c.i] = u + params.dt * du;
        v_out[c.i] = v + params.dt * dv;
        u_below = u;
        v_below = v;
        u = u_above;
        v = v_above;
    }
}
