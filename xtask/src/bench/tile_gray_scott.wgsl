// The 2-D Gray-Scott step with a shared-memory (workgroup) tile for the Laplacian: each
// 16x16 workgroup loads an 18x18 tile of u and v once, then every invocation reads its
// stencil from the tile. Not shipped: kept to measure it against the shipped shader with
//   cargo xtask bench kernel --rows 1024 --cols 1024 --candidate xtask/src/bench/tile_gray_scott.wgsl
// On lavapipe it gives the same bits but runs well behind the shipped shader, below even
// the baseline: lavapipe reads workgroup memory lane by lane like storage
// buffers (so the tile saves no loads) and pays for the barrier. On a GPU with caches
// the tile mostly saves L1 traffic; measure there before adopting it.
struct Params { feed: f32, kill: f32, du: f32, dv: f32, dt: f32, }
@group(0) @binding(1) var<uniform> params: Params;

const TX: u32 = 16u;
const TY: u32 = 16u;
const SX: u32 = 18u;
const SY: u32 = 18u;
var<workgroup> tu: array<f32, 324>;
var<workgroup> tv: array<f32, 324>;

fn wrap(p: i32, n: u32) -> u32 {
    if (p < 0) { return prev_index(0u, n); }
    if (u32(p) >= n) { return next_index(n - 1u, n); }
    return u32(p);
}

fn lap9(c: f32, up: f32, down: f32, left: f32, right: f32, ul: f32, ur: f32, dl: f32, dr: f32) -> f32 {
    var s = 0.5 * (up - c);
    s = s + 0.5 * (down - c);
    s = s + 0.5 * (left - c);
    s = s + 0.5 * (right - c);
    s = s + 0.25 * (ul - c);
    s = s + 0.25 * (ur - c);
    s = s + 0.25 * (dl - c);
    s = s + 0.25 * (dr - c);
    return s;
}

@compute @workgroup_size(16, 16, 1)
fn main(@builtin(global_invocation_id) id: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(workgroup_id) wg: vec3<u32>) {
    let flat = lid.y * TX + lid.x;
    let gx0 = i32(wg.x * TX) - 1;
    let gy0 = i32(wg.y * TY) - 1;
    for (var k = flat; k < SX * SY; k += TX * TY) {
        let r = wrap(gy0 + i32(k / SX), grid.ny);
        let c = wrap(gx0 + i32(k % SX), grid.nx);
        let g = r * grid.nx + c;
        tu[k] = u_in[g];
        tv[k] = v_in[g];
    }
    workgroupBarrier();
    if (id.x >= grid.nx || id.y >= grid.ny) {
        return;
    }
    let t = (lid.y + 1u) * SX + lid.x + 1u;
    let u = tu[t];
    let v = tv[t];
    let lu = lap9(u, tu[t - SX], tu[t + SX], tu[t - 1u], tu[t + 1u], tu[t - SX - 1u], tu[t - SX + 1u], tu[t + SX - 1u], tu[t + SX + 1u]);
    let lv = lap9(v, tv[t - SX], tv[t + SX], tv[t - 1u], tv[t + 1u], tv[t - SX - 1u], tv[t - SX + 1u], tv[t + SX - 1u], tv[t + SX + 1u]);
    let uvv = u * v * v;
    let i = id.y * grid.nx + id.x;
    u_out[i] = u + params.dt * (params.du * lu - uvv + params.feed * (1.0 - u));
    v_out[i] = v + params.dt * (params.dv * lv + uvv - (params.feed + params.kill) * v);
}
