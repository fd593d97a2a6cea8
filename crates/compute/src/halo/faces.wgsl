// wgpipe's halo copies on the GPU, for a block held with one ghost layer on each face of every
// axis the grid has (see crates/compute/src/halo.rs):
//   pack:   the block's boundary layers (its own cells next to each face) -> the face buffer,
//   unpack: the face buffer -> the ghost layers beyond each face.
// One dispatch per field covers every face. The face buffer holds, for each axis in C order
// (z, y, x; only the grid's axes) and each side (low, high), every field's face in turn, each
// in C order of the two other axes: `Faces` on the host has the same layout, so a whole
// exchange is one copy each way.

struct Halo {
    // Buffer extents along x, y, z, ghosts included; 1 along axes the grid lacks.
    nx: u32,
    ny: u32,
    nz: u32,
    // Fields of the kernel.
    fields: u32,
    // 1 along axes the grid has (a ghost layer on both faces), 0 along the others.
    gx: u32,
    gy: u32,
    gz: u32,
    pad: u32,
}

@group(0) @binding(0) var<uniform> halo: Halo;
@group(0) @binding(1) var<storage, read_write> field: array<f32>;
@group(0) @binding(2) var<storage, read_write> faces: array<f32>;

// The field this dispatch copies (its index in the kernel's fields).
struct Which {
    field: u32,
}

var<immediate> which: Which;

const WORKGROUP: u32 = 64u;

// Where invocation `t`'s value goes: its index in the face buffer, and the buffer indices of
// the boundary-layer cell (`inner`, read by pack) and the ghost cell (`ghost`, written by
// unpack) on the same line through the face.
struct Slot {
    ok: bool,
    face: u32,
    inner: u32,
    ghost: u32,
}

fn at(x: u32, y: u32, z: u32) -> u32 {
    return (z * halo.ny + y) * halo.nx + x;
}

fn slot(t_in: u32) -> Slot {
    var s: Slot;
    // The block's own extents.
    let ix = halo.nx - 2u * halo.gx;
    let iy = halo.ny - 2u * halo.gy;
    let iz = halo.nz - 2u * halo.gz;
    // Cells of one field's face on each axis; 0 along axes the grid lacks.
    let fz = halo.gz * ix * iy;
    let fy = halo.gy * ix * iz;
    let fx = halo.gx * iy * iz;
    var t = t_in;
    var before = 0u;
    var n = fz;
    var axis = 2u;
    if (t >= 2u * fz) {
        t = t - 2u * fz;
        before = 2u * fz;
        n = fy;
        axis = 1u;
        if (t >= 2u * fy) {
            t = t - 2u * fy;
            before = before + 2u * fy;
            n = fx;
            axis = 0u;
            if (t >= 2u * fx) {
                s.ok = false;
                return s;
            }
        }
    }
    let high = t >= n;
    let j = select(t, t - n, high);
    s.ok = true;
    s.face = halo.fields * (before + select(0u, n, high)) + which.field * n + j;
    if (axis == 2u) {
        // A z face: j runs over (y, x).
        let x = j % ix + halo.gx;
        let y = j / ix + halo.gy;
        s.inner = at(x, y, select(1u, iz, high));
        s.ghost = at(x, y, select(0u, iz + 1u, high));
    } else if (axis == 1u) {
        // A y face: j runs over (z, x).
        let x = j % ix + halo.gx;
        let z = j / ix + halo.gz;
        s.inner = at(x, select(1u, iy, high), z);
        s.ghost = at(x, select(0u, iy + 1u, high), z);
    } else {
        // An x face: j runs over (z, y).
        let y = j % iy + halo.gy;
        let z = j / iy + halo.gz;
        s.inner = at(select(1u, ix, high), y, z);
        s.ghost = at(select(0u, ix + 1u, high), y, z);
    }
    return s;
}

// The invocation's index in a dispatch of (groups.x, groups.y) workgroups of WORKGROUP.
fn invocation(id: vec3<u32>, groups: vec3<u32>) -> u32 {
    return id.y * groups.x * WORKGROUP + id.x;
}

@compute @workgroup_size(WORKGROUP)
fn pack(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let s = slot(invocation(id, groups));
    if (s.ok) {
        faces[s.face] = field[s.inner];
    }
}

@compute @workgroup_size(WORKGROUP)
fn unpack(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let s = slot(invocation(id, groups));
    if (s.ok) {
        field[s.ghost] = faces[s.face];
    }
}
