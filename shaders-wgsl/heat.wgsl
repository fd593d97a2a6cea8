// Heat diffusion, one explicit Euler step of u' = u + alpha * L(u). Field 0 = u.
// The example of a user kernel: it uses the prelude's `laplacian9` and one parameter.

struct Params {
    alpha: f32,
}

@group(0) @binding(3) var<uniform> params: Params;

@compute @workgroup_size(8, 8)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    if (id.x >= grid.cols || id.y >= grid.rows) {
        return;
    }
    let i = id.y * grid.cols + id.x;
    dst[i] = src[i] + params.alpha * laplacian9(0u, i32(id.y), i32(id.x));
}
