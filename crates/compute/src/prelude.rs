//! The field-stencil prelude: WGSL generated per kernel from its rank, boundary rule and field
//! names, and compiled before the kernel's own text.
//!
//! Every field lives in its own pair of storage buffers, so a field is limited by the device's
//! buffer limits rather than the whole state. WGSL cannot index across bindings, so each field
//! gets named bindings (`NAME_in`, read-only, and `NAME_out`, read-write) and its own
//! Laplacian helper, written here from the field names. `load4_NAME`/`store4_NAME` move four
//! consecutive values in one vector access where the device has the bindings for vector views
//! of the same buffers ([`VectorViews`]).
//!
//! Neighbour indices are computed once per cell into a `Cell` shared by every field, wrapped
//! with `select` (periodic) or clamped (zero-flux): no integer `%` per neighbour, which costs
//! far more than the stencil's arithmetic on CPU drivers such as lavapipe.
//!
//! This file depends on nothing but `std` because `build.rs` includes it too, to validate the
//! shipped shaders with the very prelude they are compiled with at run time.

use std::fmt::{self, Write as _};

/// The part of the prelude every kernel shares: the grid uniform, the step clock, the noise hash.
pub const SHARED: &str = include_str!("../shaders-wgsl/shared/field_stencil.wgsl");

/// Binding of the `grid` uniform.
pub const GRID_BINDING: u32 = 0;
/// Binding where a kernel declares its `params` uniform (`struct Params`).
pub const PARAMS_BINDING: u32 = 1;
/// Binding of the first field's `NAME_in`; field k has `2 + 2k` (in) and `3 + 2k` (out).
pub const FIRST_FIELD_BINDING: u32 = 2;

/// Binding of field `k`'s vector view `NAME_in4` among `fields` fields (`NAME_out4` is the
/// next): after every field's pair, so that the pairs keep their numbers with or without views.
pub fn vector_view_binding(fields: usize, k: usize) -> u32 {
    FIRST_FIELD_BINDING + 2 * (fields + k) as u32
}
/// Bytes of the `Clock` immediate data: step (low, high) and the noise key, three u32.
pub const CLOCK_BYTES: u32 = 12;

/// Grid ranks the prelude supports.
pub const RANKS: std::ops::RangeInclusive<usize> = 1..=3;

/// How a stencil treats the cells beyond the grid's faces; one choice per kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Boundary {
    /// The grid wraps around: the neighbour past the last cell is the first (the default).
    #[default]
    Periodic,
    /// No flux through the faces: the neighbour past a face is the face cell itself, so the
    /// gradient across the face is zero (a Neumann condition) and diffusion conserves the total.
    ZeroFlux,
}

impl Boundary {
    /// Every boundary rule, in the order messages list them.
    pub const ALL: [Boundary; 2] = [Boundary::Periodic, Boundary::ZeroFlux];

    /// The name configs and messages use: `periodic`, `zero-flux`.
    pub fn name(self) -> &'static str {
        match self {
            Boundary::Periodic => "periodic",
            Boundary::ZeroFlux => "zero-flux",
        }
    }
}

impl fmt::Display for Boundary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A boundary name that is not one of [`Boundary::ALL`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownBoundary(pub String);

impl fmt::Display for UnknownBoundary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown boundary {:?}: use \"periodic\" (the default) or \"zero-flux\"", self.0)
    }
}

impl std::error::Error for UnknownBoundary {}

impl std::str::FromStr for Boundary {
    type Err = UnknownBoundary;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Boundary::ALL.into_iter().find(|b| b.name() == s).ok_or_else(|| UnknownBoundary(s.to_owned()))
    }
}

/// How invocations map to cells, and so which `in_grid`, `cell` and `global_index` the
/// prelude defines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Indexing {
    /// The buffers hold the whole grid; invocation `id` updates cell `id`, and the boundary
    /// rule finds the neighbours past the faces.
    #[default]
    Whole,
    /// The buffers hold one block of a larger grid with one ghost layer on each face of every
    /// axis the grid has (`grid.nx`, `grid.ny`, `grid.nz` count the ghosts): invocation `id`
    /// updates the block's cell `id`, at `id + 1` in the buffers, and its neighbours are plain
    /// ±1, the ghosts holding what lies beyond. `grid.offset_*` and `grid.global_n*` place the
    /// block in the whole grid for `global_index`.
    Block,
}

impl Indexing {
    /// Both mappings, in the order the build validates shaders with them.
    pub const ALL: [Indexing; 2] = [Indexing::Whole, Indexing::Block];
}

/// The workgroup shapes a prelude offers as `WORKGROUP_X/Y/Z`, by the kind of adapter they were
/// chosen on: the same kernel text runs with either, and gives the same bits with either.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum WorkgroupShapes {
    /// CPU drivers (lavapipe, llvmpipe), and what every size check before the devices open
    /// allows for: 256×1×1, 16×16×1 and 8×8×4. The 3-D brick was the fastest on lavapipe of
    /// 8×8×4, 4×4×4, 16×16×1, 16×4×4 and 32×8×1 for the 3-D Gray-Scott at 64³ (measured as
    /// `cargo xtask bench kernel --candidate-3d` shaders, on a noisy machine).
    #[default]
    CpuDriver,
    /// GPUs: 256×1×1, 64×4×1 and 32×2×4, rows of 32 invocations or more along x, so that a
    /// warp's loads of a row are one contiguous transaction; the CPU drivers' 8- and 16-wide
    /// rows split each warp's loads over 2 to 4 rows, and on a GPU the shipped kernels run
    /// faster with these shapes (`cargo xtask bench kernel` measures them against the other
    /// shapes as `other-shapes`; docs, "Benchmarks", "Workgroup shapes per adapter").
    Gpu,
}

impl WorkgroupShapes {
    /// Both, in the order the build validates shaders with them.
    pub const ALL: [WorkgroupShapes; 2] = [WorkgroupShapes::CpuDriver, WorkgroupShapes::Gpu];

    /// How errors and reports name them.
    pub fn name(self) -> &'static str {
        match self {
            WorkgroupShapes::CpuDriver => "CPU-driver",
            WorkgroupShapes::Gpu => "GPU",
        }
    }
}

/// Whether the prelude binds vector views of the fields, which is how `load4_NAME(q)` and
/// `store4_NAME(q, value)` (values `4q .. 4q + 3` of `NAME_in` and into `NAME_out`) reach memory.
///
/// Both give the same values; the views are faster where loads are costly per access: CPU
/// drivers (lavapipe's SSBO loads go one lane at a time, and a `vec4` lane costs far less than
/// four scalar ones; `cargo xtask bench kernel` measures the 3-D Gray-Scott's brick of `vec4`
/// rows against its scalar brick as `scalar-brick`). They take two more storage buffers per field,
/// so a device binds them only where its limit allows
/// ([`crate::GridFootprint::vector_views`]), and never in a browser: `NAME_out` and
/// `NAME_out4` are two writable bindings of one buffer, which native wgpu accepts and WebGPU
/// forbids. A kernel calls the functions, never the views themselves, and runs either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum VectorViews {
    /// `NAME_in4: array<vec4<f32>>` and `NAME_out4` bound to each field's buffers, after
    /// every field's pair (`vector_view_binding`); the functions make one vector access.
    #[default]
    Bound,
    /// No views: the functions make four scalar accesses of `NAME_in` and `NAME_out`.
    Emulated,
}

impl VectorViews {
    /// Both, in the order the build validates shaders with them.
    pub const ALL: [VectorViews; 2] = [VectorViews::Bound, VectorViews::Emulated];
}

/// The workgroup shape the prelude offers as `WORKGROUP_X/Y/Z` for a grid of `rank`, with
/// `shapes` ([`WorkgroupShapes`]).
///
/// 256 invocations, spread over the axes the grid has so that none idles on a missing axis.
/// A kernel may declare its own shape instead.
pub fn workgroup_size(rank: usize, shapes: WorkgroupShapes) -> [u32; 3] {
    match (shapes, rank) {
        (_, 1) => [256, 1, 1],
        (WorkgroupShapes::CpuDriver, 2) => [16, 16, 1],
        (WorkgroupShapes::CpuDriver, _) => [8, 8, 4],
        (WorkgroupShapes::Gpu, 2) => [64, 4, 1],
        (WorkgroupShapes::Gpu, _) => [32, 2, 4],
    }
}

/// Checks that `name` can name a field: a WGSL identifier of ASCII letters, digits and `_`,
/// starting with a letter, so that `NAME_in`, `NAME_out` and `laplacian9_NAME` are valid too.
pub fn check_field_name(name: &str) -> Result<(), String> {
    let mut chars = name.chars();
    let starts_with_letter = chars.next().is_some_and(|c| c.is_ascii_alphabetic());
    if starts_with_letter && chars.all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Ok(());
    }
    let suggestion: String = name.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect::<String>();
    let suggestion =
        if suggestion.starts_with(|c: char| c.is_ascii_alphabetic()) { suggestion } else { format!("f{suggestion}") };
    Err(format!(
        "field name {name:?} is not a valid WGSL identifier: the prelude names its bindings \
         {name}_in and {name}_out; use ASCII letters, digits and _, starting with a letter \
         (e.g. {suggestion:?})"
    ))
}

/// The prelude for a kernel on a whole grid of `rank` with `boundary` and `fields` (in binding
/// order), with the CPU drivers' workgroup shapes: the tests' shorthand for [`generate_for`].
#[cfg(test)]
pub fn generate<S: AsRef<str>>(rank: usize, boundary: Boundary, fields: &[S]) -> Result<String, String> {
    generate_for(rank, boundary, fields, Indexing::Whole, WorkgroupShapes::CpuDriver, VectorViews::Bound)
}

/// The prelude for a kernel on a grid of `rank` held as `indexing` says (a whole grid, or a
/// block with ghosts), with `boundary`, `fields` (in binding order), `shapes` as
/// `WORKGROUP_X/Y/Z` and `views` behind `load4_NAME`/`store4_NAME`.
///
/// Errors name the problem: a rank outside 1–3, no field, a repeated field, a field name
/// that is not a WGSL identifier.
pub fn generate_for<S: AsRef<str>>(
    rank: usize,
    boundary: Boundary,
    fields: &[S],
    indexing: Indexing,
    shapes: WorkgroupShapes,
    views: VectorViews,
) -> Result<String, String> {
    if !RANKS.contains(&rank) {
        return Err(format!("grids have rank 1, 2 or 3 ([nx], [ny, nx] or [nz, ny, nx]), got rank {rank}"));
    }
    if fields.is_empty() {
        return Err("it declares no fields: list at least one".to_owned());
    }
    for (k, f) in fields.iter().enumerate() {
        let f = f.as_ref();
        check_field_name(f)?;
        if fields[..k].iter().any(|g| g.as_ref() == f) {
            return Err(format!("field {f:?} is listed twice: field names must be unique"));
        }
    }
    let mut out = String::with_capacity(SHARED.len() + 4096);
    out.push_str(SHARED);
    let names: Vec<&str> = fields.iter().map(AsRef::as_ref).collect();
    // Writing into a String cannot fail.
    let _ = write_generated(&mut out, rank, boundary, &names, indexing, shapes, views);
    Ok(out)
}

fn write_generated(
    out: &mut String,
    rank: usize,
    boundary: Boundary,
    fields: &[&str],
    indexing: Indexing,
    shapes: WorkgroupShapes,
    views: VectorViews,
) -> fmt::Result {
    let [wx, wy, wz] = workgroup_size(rank, shapes);
    writeln!(out)?;
    writeln!(out, "// ---- generated for a {rank}-D grid, {boundary} boundary, fields {}", fields.join(", "))?;
    writeln!(out)?;
    writeln!(
        out,
        "// Workgroup shape wgpipe chose for {rank}-D grids on {} adapters: @workgroup_size(WORKGROUP_X, WORKGROUP_Y, WORKGROUP_Z).",
        shapes.name()
    )?;
    writeln!(out, "const WORKGROUP_X: u32 = {wx}u;")?;
    writeln!(out, "const WORKGROUP_Y: u32 = {wy}u;")?;
    writeln!(out, "const WORKGROUP_Z: u32 = {wz}u;")?;
    writeln!(out)?;
    write_cell(out, rank)?;
    write_boundary(out, boundary)?;
    write_cell_fn(out, rank, indexing)?;
    write_global_index(out, rank, indexing)?;
    write_neighbour(out, rank)?;
    for (k, name) in fields.iter().enumerate() {
        let binding = FIRST_FIELD_BINDING + 2 * k as u32;
        writeln!(out)?;
        writeln!(out, "// Field {name}: this step's values (read-only) and the next step's (write).")?;
        writeln!(out, "@group(0) @binding({binding}) var<storage, read> {name}_in: array<f32>;")?;
        writeln!(out, "@group(0) @binding({}) var<storage, read_write> {name}_out: array<f32>;", binding + 1)?;
        write_laplacian(out, rank, name)?;
    }
    for (k, name) in fields.iter().enumerate() {
        write_vector_access(out, name, vector_view_binding(fields.len(), k), views)?;
    }
    Ok(())
}

/// `load4_NAME(q)` and `store4_NAME(q, value)`: values `4q .. 4q + 3` of `NAME_in`, and into
/// `NAME_out`, through the vector views at `binding` and `binding + 1` or four scalar accesses.
fn write_vector_access(out: &mut String, name: &str, binding: u32, views: VectorViews) -> fmt::Result {
    writeln!(out)?;
    writeln!(out, "// Field {name}, four values at a time: {name}_in[4q .. 4q + 3], and into {name}_out.")?;
    match views {
        VectorViews::Bound => {
            writeln!(out, "@group(0) @binding({binding}) var<storage, read> {name}_in4: array<vec4<f32>>;")?;
            writeln!(
                out,
                "@group(0) @binding({}) var<storage, read_write> {name}_out4: array<vec4<f32>>;",
                binding + 1
            )?;
            writeln!(out, "fn load4_{name}(q: u32) -> vec4<f32> {{ return {name}_in4[q]; }}")?;
            writeln!(out, "fn store4_{name}(q: u32, value: vec4<f32>) {{ {name}_out4[q] = value; }}")?;
        }
        VectorViews::Emulated => {
            writeln!(out, "fn load4_{name}(q: u32) -> vec4<f32> {{")?;
            writeln!(out, "    let i = 4u * q;")?;
            writeln!(out, "    return vec4({name}_in[i], {name}_in[i + 1u], {name}_in[i + 2u], {name}_in[i + 3u]);")?;
            writeln!(out, "}}")?;
            writeln!(out, "fn store4_{name}(q: u32, value: vec4<f32>) {{")?;
            writeln!(out, "    let i = 4u * q;")?;
            writeln!(out, "    {name}_out[i] = value.x;")?;
            writeln!(out, "    {name}_out[i + 1u] = value.y;")?;
            writeln!(out, "    {name}_out[i + 2u] = value.z;")?;
            writeln!(out, "    {name}_out[i + 3u] = value.w;")?;
            writeln!(out, "}}")?;
        }
    }
    Ok(())
}

/// The `Cell` struct: coordinates, linear index, and the neighbours' index offsets per axis.
fn write_cell(out: &mut String, rank: usize) -> fmt::Result {
    writeln!(out, "// The cell an invocation updates, with its neighbours' positions worked out once (boundary")?;
    writeln!(out, "// rule applied) and shared by every field. The neighbour at (z + dz, y + dy, x + dx) has index")?;
    writeln!(out, "// (plane offset) + (row offset) + (column), e.g. y - 1 at c.ym + c.x, x + 1 at c.y0 + c.xp.")?;
    writeln!(out, "struct Cell {{")?;
    writeln!(out, "    // Index of the cell in every field: (z * ny + y) * nx + x.")?;
    writeln!(out, "    i: u32,")?;
    writeln!(out, "    // Coordinates; x is also the offset of the cell's own column.")?;
    writeln!(out, "    x: u32,")?;
    if rank >= 2 {
        writeln!(out, "    y: u32,")?;
    }
    if rank >= 3 {
        writeln!(out, "    z: u32,")?;
    }
    writeln!(out, "    // Columns x - 1 and x + 1.")?;
    writeln!(out, "    xm: u32,")?;
    writeln!(out, "    xp: u32,")?;
    if rank >= 2 {
        writeln!(out, "    // Row offsets (multiples of nx) of rows y - 1, y and y + 1.")?;
        writeln!(out, "    ym: u32,")?;
        writeln!(out, "    y0: u32,")?;
        writeln!(out, "    yp: u32,")?;
    }
    if rank >= 3 {
        writeln!(out, "    // Plane offsets (multiples of nx * ny) of planes z - 1, z and z + 1.")?;
        writeln!(out, "    zm: u32,")?;
        writeln!(out, "    z0: u32,")?;
        writeln!(out, "    zp: u32,")?;
    }
    writeln!(out, "}}")
}

/// `prev_index`/`next_index`: the coordinate before and after `p` on an axis of `n` cells.
fn write_boundary(out: &mut String, boundary: Boundary) -> fmt::Result {
    writeln!(out)?;
    match boundary {
        Boundary::Periodic => {
            writeln!(out, "// Periodic boundary: coordinates wrap around (a select, no integer modulo).")?;
            writeln!(out, "fn prev_index(p: u32, n: u32) -> u32 {{ return select(p - 1u, n - 1u, p == 0u); }}")?;
            writeln!(out, "fn next_index(p: u32, n: u32) -> u32 {{ return select(p + 1u, 0u, p + 1u == n); }}")?;
        }
        Boundary::ZeroFlux => {
            writeln!(out, "// Zero-flux boundary: the neighbour past a face is the face cell itself.")?;
            writeln!(out, "fn prev_index(p: u32, n: u32) -> u32 {{ return select(p - 1u, p, p == 0u); }}")?;
            writeln!(out, "fn next_index(p: u32, n: u32) -> u32 {{ return select(p + 1u, p, p + 1u == n); }}")?;
        }
    }
    Ok(())
}

/// `extent()`, `in_grid(id)` and `cell(id)` for `indexing`: the same neighbour offsets
/// (`c.xm`, `c.y0`, `c.zp`, ...) either way, found by the boundary rule over the whole grid,
/// or at plain ±1 around the block's cell `id`, which sits at `id + 1` in buffers with a
/// ghost layer on both faces of every axis the grid has.
fn write_cell_fn(out: &mut String, rank: usize, indexing: Indexing) -> fmt::Result {
    let block = indexing == Indexing::Block;
    // Axes the grid lacks have extent 1 and no ghosts.
    let ghosts = |axis_rank: usize| if block && rank >= axis_rank { " - 2u" } else { "" };
    writeln!(out)?;
    if block {
        writeln!(out, "// Cells the kernel updates along x, y and z (the block's, without its ghost layers).")?;
    } else {
        writeln!(out, "// Cells the kernel updates along x, y and z: the grid's.")?;
    }
    writeln!(out, "fn extent() -> vec3<u32> {{")?;
    writeln!(out, "    return vec3(grid.nx{}, grid.ny{}, grid.nz{});", ghosts(1), ghosts(2), ghosts(3))?;
    writeln!(out, "}}")?;
    writeln!(out)?;
    writeln!(out, "// Whether invocation `id` has a cell (the dispatch rounds the cells up to whole workgroups).")?;
    writeln!(out, "fn in_grid(id: vec3<u32>) -> bool {{")?;
    writeln!(out, "    let e = extent();")?;
    writeln!(out, "    return id.x < e.x && id.y < e.y && id.z < e.z;")?;
    writeln!(out, "}}")?;
    writeln!(out)?;
    if block {
        writeln!(out, "// The block's cell of invocation `id`, at id + 1 in the buffers: the ghost layers hold the")?;
        writeln!(out, "// neighbours past the block's faces, so neighbours are plain -1 / +1 (no boundary rule).")?;
    } else {
        writeln!(out, "// The cell of invocation `id` (x = id.x, y = id.y, z = id.z), with its neighbours.")?;
    }
    // Per axis: the cell's coordinate in the buffers, and its neighbours' before and after.
    let axis = |a: &str, n: &str| -> [String; 3] {
        if block {
            [format!("id.{a} + 1u"), format!("id.{a}"), format!("id.{a} + 2u")]
        } else {
            [format!("id.{a}"), format!("prev_index(id.{a}, grid.{n})"), format!("next_index(id.{a}, grid.{n})")]
        }
    };
    // `e * stride`, bracketed where `e` is a sum.
    let times =
        |e: &str, stride: &str| if e.contains(" + ") { format!("({e}) * {stride}") } else { format!("{e} * {stride}") };
    writeln!(out, "fn cell(id: vec3<u32>) -> Cell {{")?;
    writeln!(out, "    var c: Cell;")?;
    let [x, xm, xp] = axis("x", "nx");
    writeln!(out, "    c.x = {x};")?;
    writeln!(out, "    c.xm = {xm};")?;
    writeln!(out, "    c.xp = {xp};")?;
    if rank >= 2 {
        let [y, ym, yp] = axis("y", "ny");
        writeln!(out, "    c.y = {y};")?;
        writeln!(out, "    c.ym = {};", times(&ym, "grid.nx"))?;
        writeln!(out, "    c.y0 = c.y * grid.nx;")?;
        writeln!(out, "    c.yp = {};", times(&yp, "grid.nx"))?;
    }
    if rank >= 3 {
        let [z, zm, zp] = axis("z", "nz");
        writeln!(out, "    let plane = grid.nx * grid.ny;")?;
        writeln!(out, "    c.z = {z};")?;
        writeln!(out, "    c.zm = {};", times(&zm, "plane"))?;
        writeln!(out, "    c.z0 = c.z * plane;")?;
        writeln!(out, "    c.zp = {};", times(&zp, "plane"))?;
    }
    let index = match rank {
        1 => "c.x",
        2 => "c.y0 + c.x",
        _ => "c.z0 + c.y0 + c.x",
    };
    writeln!(out, "    c.i = {index};")?;
    writeln!(out, "    return c;")?;
    writeln!(out, "}}")
}

/// `global_index(c)`: the cell's index in the whole grid, what `uniform_noise` is keyed by.
fn write_global_index(out: &mut String, rank: usize, indexing: Indexing) -> fmt::Result {
    writeln!(out)?;
    writeln!(out, "// Index of cell `c` in the whole grid, (z * global_ny + y) * global_nx + x: the key of its")?;
    writeln!(
        out,
        "// noise (`uniform_noise(global_index(c))`), so a grid split into blocks draws what it draws whole."
    )?;
    writeln!(out, "fn global_index(c: Cell) -> u32 {{")?;
    match (indexing, rank) {
        (Indexing::Whole, _) => writeln!(out, "    return c.i;")?,
        (Indexing::Block, 1) => writeln!(out, "    return grid.offset_x + c.x - 1u;")?,
        (Indexing::Block, 2) => {
            writeln!(out, "    return (grid.offset_y + c.y - 1u) * grid.global_nx + grid.offset_x + c.x - 1u;")?
        }
        (Indexing::Block, _) => {
            writeln!(out, "    let z = grid.offset_z + c.z - 1u;")?;
            writeln!(out, "    let y = grid.offset_y + c.y - 1u;")?;
            writeln!(out, "    return (z * grid.global_ny + y) * grid.global_nx + grid.offset_x + c.x - 1u;")?;
        }
    }
    writeln!(out, "}}")
}

/// `neighbour(c, [dz,] [dy,] dx)`: the index of any neighbour, offsets in {-1, 0, 1}.
fn write_neighbour(out: &mut String, rank: usize) -> fmt::Result {
    let (args, doc) = match rank {
        1 => ("dx: i32", "(x + dx)"),
        2 => ("dy: i32, dx: i32", "(y + dy, x + dx)"),
        _ => ("dz: i32, dy: i32, dx: i32", "(z + dz, y + dy, x + dx)"),
    };
    writeln!(out)?;
    writeln!(out, "// Index of the cell at {doc}, each offset -1, 0 or 1, boundary rule applied.")?;
    writeln!(out, "fn neighbour(c: Cell, {args}) -> u32 {{")?;
    writeln!(out, "    var i = select(select(c.x, c.xp, dx > 0), c.xm, dx < 0);")?;
    if rank >= 2 {
        writeln!(out, "    i = i + select(select(c.y0, c.yp, dy > 0), c.ym, dy < 0);")?;
    }
    if rank >= 3 {
        writeln!(out, "    i = i + select(select(c.z0, c.zp, dz > 0), c.zm, dz < 0);")?;
    }
    writeln!(out, "    return i;")?;
    writeln!(out, "}}")
}

/// The rank's Laplacian of one field, in the summation order the CPU twins follow.
fn write_laplacian(out: &mut String, rank: usize, f: &str) -> fmt::Result {
    let a = |index: &str| format!("{f}_in[{index}]");
    match rank {
        1 => {
            writeln!(out, "// 3-point Laplacian of {f}: (left - centre) + (right - centre).")?;
            writeln!(out, "fn laplacian3_{f}(c: Cell) -> f32 {{")?;
            writeln!(out, "    let x = {};", a("c.i"))?;
            writeln!(out, "    return ({} - x) + ({} - x);", a("c.xm"), a("c.xp"))?;
        }
        2 => {
            writeln!(out, "// 9-point Laplacian of {f}: sum over the 8 neighbours of w * (neighbour - centre),")?;
            writeln!(out, "// w = 0.5 on the edge neighbours and 0.25 on the diagonals.")?;
            writeln!(out, "fn laplacian9_{f}(c: Cell) -> f32 {{")?;
            writeln!(out, "    let x = {};", a("c.i"))?;
            let terms = [
                ("0.5", "c.ym + c.x"),
                ("0.5", "c.yp + c.x"),
                ("0.5", "c.y0 + c.xm"),
                ("0.5", "c.y0 + c.xp"),
                ("0.25", "c.ym + c.xm"),
                ("0.25", "c.ym + c.xp"),
                ("0.25", "c.yp + c.xm"),
                ("0.25", "c.yp + c.xp"),
            ];
            for (k, (w, index)) in terms.iter().enumerate() {
                let value = a(index);
                if k == 0 {
                    writeln!(out, "    var s = {w} * ({value} - x);")?;
                } else {
                    writeln!(out, "    s = s + {w} * ({value} - x);")?;
                }
            }
            writeln!(out, "    return s;")?;
        }
        _ => {
            writeln!(out, "// 7-point Laplacian of {f}: (sum of the 6 face neighbours - 6 * centre) / 6,")?;
            writeln!(out, "// summed x - 1, x + 1, y - 1, y + 1, z - 1, z + 1.")?;
            writeln!(out, "fn laplacian7_{f}(c: Cell) -> f32 {{")?;
            writeln!(out, "    var s = {};", a("c.z0 + c.y0 + c.xm"))?;
            writeln!(out, "    s = s + {};", a("c.z0 + c.y0 + c.xp"))?;
            writeln!(out, "    s = s + {};", a("c.z0 + c.ym + c.x"))?;
            writeln!(out, "    s = s + {};", a("c.z0 + c.yp + c.x"))?;
            writeln!(out, "    s = s + {};", a("c.zm + c.y0 + c.x"))?;
            writeln!(out, "    s = s + {};", a("c.zp + c.y0 + c.x"))?;
            writeln!(out, "    return (s - 6.0 * {}) * (1.0 / 6.0);", a("c.i"))?;
        }
    }
    writeln!(out, "}}")
}

#[cfg(test)]
#[expect(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]
mod tests {
    use super::*;

    #[test]
    fn field_names_must_be_wgsl_identifiers() {
        for good in ["u", "v2", "temperature_K", "A_b_1"] {
            assert_eq!(check_field_name(good), Ok(()), "{good}");
        }
        for bad in ["", "2u", "_u", "my-field", "u v", "ü"] {
            let e = check_field_name(bad).expect_err(bad);
            assert!(e.contains("not a valid WGSL identifier") && e.contains(&format!("{bad:?}")), "{e}");
        }
        assert!(check_field_name("my-field").unwrap_err().contains("\"my_field\""));
    }

    #[test]
    fn vector_views_follow_every_fields_pair_or_are_emulated() {
        let bound = generate(3, Boundary::Periodic, &["u", "v"]).unwrap();
        assert!(bound.contains("@group(0) @binding(6) var<storage, read> u_in4: array<vec4<f32>>;"));
        assert!(bound.contains("@group(0) @binding(9) var<storage, read_write> v_out4: array<vec4<f32>>;"));
        assert!(bound.contains("fn load4_v(q: u32) -> vec4<f32> { return v_in4[q]; }"));
        assert_eq!(vector_view_binding(2, 1), 8);
        let emulated = generate_for(
            3,
            Boundary::Periodic,
            &["u", "v"],
            Indexing::Whole,
            WorkgroupShapes::CpuDriver,
            VectorViews::Emulated,
        )
        .unwrap();
        assert!(!emulated.contains("_in4") && !emulated.contains("_out4"), "no views declared");
        assert!(emulated.contains("fn load4_u(q: u32) -> vec4<f32> {") && emulated.contains("fn store4_v(q: u32"));
    }

    #[test]
    fn generation_refuses_bad_rank_and_fields() {
        assert!(generate::<&str>(2, Boundary::Periodic, &[]).unwrap_err().contains("no fields"));
        assert!(generate(4, Boundary::Periodic, &["u"]).unwrap_err().contains("rank 1, 2 or 3"));
        assert!(generate(0, Boundary::Periodic, &["u"]).unwrap_err().contains("rank 0"));
        assert!(generate(2, Boundary::Periodic, &["u", "u"]).unwrap_err().contains("listed twice"));
        assert!(generate(2, Boundary::Periodic, &["u", "a.b"]).unwrap_err().contains("\"a.b\""));
    }

    #[test]
    fn one_binding_pair_and_laplacian_per_field_without_modulo() {
        let p = generate(3, Boundary::Periodic, &["u", "v"]).unwrap();
        assert!(p.contains("@group(0) @binding(2) var<storage, read> u_in: array<f32>;"));
        assert!(p.contains("@group(0) @binding(3) var<storage, read_write> u_out: array<f32>;"));
        assert!(p.contains("@group(0) @binding(4) var<storage, read> v_in: array<f32>;"));
        assert!(p.contains("@group(0) @binding(5) var<storage, read_write> v_out: array<f32>;"));
        assert!(p.contains("fn laplacian7_u(c: Cell)") && p.contains("fn laplacian7_v(c: Cell)"));
        assert!(!p.contains("laplacian9_"), "only the rank's Laplacian");
        assert!(!p.contains('%'), "no integer modulo anywhere in the prelude");
        assert!(generate(2, Boundary::ZeroFlux, &["h"]).unwrap().contains("fn laplacian9_h(c: Cell)"));
        assert!(generate(1, Boundary::ZeroFlux, &["h"]).unwrap().contains("fn laplacian3_h(c: Cell)"));
    }

    #[test]
    fn block_indexing_skips_the_ghosts_and_keys_noise_by_the_global_index() {
        let whole = generate(3, Boundary::Periodic, &["u"]).unwrap();
        assert!(whole.contains("fn global_index(c: Cell) -> u32 {\n    return c.i;\n}"), "{whole}");
        let block = generate_for(
            3,
            Boundary::Periodic,
            &["u"],
            Indexing::Block,
            WorkgroupShapes::CpuDriver,
            VectorViews::Bound,
        )
        .unwrap();
        assert!(block.contains("return vec3(grid.nx - 2u, grid.ny - 2u, grid.nz - 2u);"), "{block}");
        assert!(whole.contains("return vec3(grid.nx, grid.ny, grid.nz);"), "{whole}");
        assert!(block.contains("c.xm = id.x;") && block.contains("c.zp = (id.z + 2u) * plane;"), "{block}");
        assert!(block.contains("let z = grid.offset_z + c.z - 1u;"), "{block}");
        let line =
            generate_for(1, Boundary::Periodic, &["u"], Indexing::Block, WorkgroupShapes::Gpu, VectorViews::Bound)
                .unwrap();
        assert!(line.contains("return vec3(grid.nx - 2u, grid.ny, grid.nz);"), "{line}");
        assert!(line.contains("return grid.offset_x + c.x - 1u;"), "{line}");
    }

    #[test]
    fn both_shapes_have_256_invocations_on_the_axes_a_grid_has_and_gpu_rows_fill_a_warp() {
        for shapes in WorkgroupShapes::ALL {
            for rank in RANKS {
                let size = workgroup_size(rank, shapes);
                assert_eq!(size.iter().product::<u32>(), 256, "{shapes:?} {rank}-D");
                assert!(size[rank..].iter().all(|n| *n == 1), "{shapes:?} {rank}-D spans a missing axis");
            }
        }
        assert!(RANKS.clone().all(|rank| workgroup_size(rank, WorkgroupShapes::Gpu)[0].is_multiple_of(32)));
        let gpu =
            generate_for(3, Boundary::Periodic, &["u"], Indexing::Whole, WorkgroupShapes::Gpu, VectorViews::Bound)
                .unwrap();
        assert!(
            gpu.contains("const WORKGROUP_X: u32 = 32u;\nconst WORKGROUP_Y: u32 = 2u;\nconst WORKGROUP_Z: u32 = 4u;")
        );
        let cpu = generate(3, Boundary::Periodic, &["u"]).unwrap();
        assert!(
            cpu.contains("const WORKGROUP_X: u32 = 8u;\nconst WORKGROUP_Y: u32 = 8u;\nconst WORKGROUP_Z: u32 = 4u;")
        );
        assert_eq!(
            gpu.replace("GPU adapters", "CPU-driver adapters")
                .replace("32u;\nconst WORKGROUP_Y: u32 = 2u", "8u;\nconst WORKGROUP_Y: u32 = 8u"),
            cpu,
            "only the shapes differ"
        );
    }

    #[test]
    fn boundaries_parse_by_name() {
        for b in Boundary::ALL {
            assert_eq!(b.name().parse::<Boundary>(), Ok(b));
        }
        let e = "reflecting".parse::<Boundary>().unwrap_err().to_string();
        assert!(e.contains("\"reflecting\"") && e.contains("periodic") && e.contains("zero-flux"), "{e}");
        assert_eq!(Boundary::default(), Boundary::Periodic);
    }
}
