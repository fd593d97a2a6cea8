// Heat diffusion, one explicit Euler step of u' = u + alpha * L(u). Field u.
// The example of a user kernel: it uses the prelude's `cell` and `laplacian9_u` (the 9-point
// Laplacian of field u) and one parameter.

struct Params {
    alpha: f32,
}

@group(0) @binding(1) var<uniform> params: Params;

@compute @workgroup_size(WORKGROUP_X, WORKGROUP_Y, WORKGROUP_Z)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    if (!in_grid(id)) {
        return;
    }
    let c = cell(id);
    u_out[c.i] = u_in[c.i] + params.alpha * laplacian9_u(c);
}
