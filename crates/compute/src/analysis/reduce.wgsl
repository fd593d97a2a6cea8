// Per-frame reductions of one f32 field, in the frame's command buffer before readback.
// The host prepends the constants (CELLS, QUADS = ceil(CELLS / 4), SLICES, SLICE, BINS,
// LOCAL_BINS = max(BINS, 1), LAST_BIN, GROUPS, ITEMS, the grid and the coarse grid, the offsets
// into `result`), so every loop bound is known to the compiler, and the field's binding with
// its readers (see `reducer.rs`):
//   cell(i): the value of cell i;
//   quad(j): cells j .. j + 3 as one vec4 (with the vec4 binding j is a multiple of 4;
//            with the scalar one, whenever a field's or a slice's cells are not a multiple
//            of 4 (PARTIAL_QUADS), components may lie past the slice or the field: the passes
//            leave them out).
// The passes read the field four cells at a time: on a CPU adapter (lavapipe) every load costs
// alike whatever its width, so one vec4 load in four scalar ones' place cuts the analysis's
// time (cargo xtask bench analysis-cost measures it).
//
// `result` holds, in 32-bit words: [min, max, mean, sum], then BINS left bin edges (f32), then
// PDF_SLICES × BINS counts (u32), then the coarse grid's means (f32): the frame's layout of the
// field's reductions, copied as is after the fields. A whole grid's slices are the PDF's
// (PDF_SLICE0 = 0, PDF_SLICES = SLICES); a block of a split grid counts its SLICES slices into
// the whole grid's PDF_SLICES from slice PDF_SLICE0.

@group(0) @binding(1) var<storage, read_write> partials: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> result: array<f32>;
@group(0) @binding(3) var<storage, read_write> counts: array<atomic<u32>>;

const WG: u32 = 256u;

var<workgroup> lo: array<f32, WG>;
var<workgroup> hi: array<f32, WG>;
var<workgroup> total: array<f32, WG>;

// Tree reduction of the workgroup's (lo, hi, total); thread 0 ends with the result.
fn reduce_workgroup(t: u32) {
    for (var stride = WG / 2u; stride > 0u; stride = stride / 2u) {
        workgroupBarrier();
        if (t < stride) {
            lo[t] = min(lo[t], lo[t + stride]);
            hi[t] = max(hi[t], hi[t + stride]);
            total[t] = total[t] + total[t + stride];
        }
    }
    workgroupBarrier();
}

// Pass 1: GROUPS workgroups, each invocation a strided share of the quads (64 cells or more)
// into its own partials entry: no barrier, which a CPU adapter (lavapipe) pays dearly
// for, and few entries for pass 2.
@compute @workgroup_size(256)
fn partial(@builtin(global_invocation_id) id: vec3<u32>) {
    var a = cell(0u);
    var b = a;
    var s = 0.0;
    for (var q = id.x; q < QUADS; q = q + GROUPS * WG) {
        var x = quad(4u * q);
        var y = x;
        if (PARTIAL_QUADS && 4u * q + 3u >= CELLS) {
            // The last quad of a field whose cells are not a multiple of 4: its own first
            // cell in min and max for the missing ones, nothing in the sum.
            let valid = vec4<u32>(0u, 1u, 2u, 3u) + vec4<u32>(4u * q) < vec4<u32>(CELLS);
            x = select(vec4<f32>(x.x), x, valid);
            y = select(vec4<f32>(0.0), x, valid);
        }
        a = min(a, min(min(x.x, x.y), min(x.z, x.w)));
        b = max(b, max(max(x.x, x.y), max(x.z, x.w)));
        s = s + ((y.x + y.y) + (y.z + y.w));
    }
    partials[id.x] = vec4<f32>(a, b, s, 0.0);
}

// Pass 2: one workgroup folds the GROUPS × WG partials into [min, max, mean, sum] and the left bin edges.
@compute @workgroup_size(256)
fn finish(@builtin(local_invocation_index) t: u32) {
    var a = partials[0].x;
    var b = partials[0].y;
    var s = 0.0;
    for (var j = t; j < GROUPS * WG; j = j + WG) {
        let p = partials[j];
        a = min(a, p.x);
        b = max(b, p.y);
        s = s + p.z;
    }
    lo[t] = a;
    hi[t] = b;
    total[t] = s;
    reduce_workgroup(t);
    let mn = lo[0];
    let mx = hi[0];
    if (t == 0u) {
        result[0] = mn;
        result[1] = mx;
        result[2] = total[0] / f32(CELLS);
        result[3] = total[0];
    }
    write_edges(t, mn, mx);
}

// The left bin edges of the range [mn, mx], shared out over the workgroup's invocations.
fn write_edges(t: u32, mn: f32, mx: f32) {
    let w = (mx - mn) / f32(max(BINS, 1u));
    for (var i = t; i < BINS; i = i + WG) {
        result[BINS_AT + i] = mn + f32(i) * w;
    }
}

// The bin edges of the min and max the host wrote into `result` (a block of a split grid:
// the whole grid's, combined over the ranks after `finish`), computed as `finish` does.
@compute @workgroup_size(256)
fn edges(@builtin(local_invocation_index) t: u32) {
    write_edges(t, result[0], result[1]);
}

var<workgroup> local_counts: array<atomic<u32>, LOCAL_BINS>;

// Extends the run of `bin` or, at another bin, adds the run so far to its bin and starts one.
fn count_run(bin: u32, run_bin: ptr<function, u32>, run: ptr<function, u32>) {
    if (bin != *run_bin && *run > 0u) {
        atomicAdd(&local_counts[*run_bin], *run);
        *run = 0u;
    }
    *run_bin = bin;
    *run = *run + 1u;
}

// Pass 3: the PDF of each slice along the slowest axis. Workgroup (x, slice) counts WG × ITEMS
// cells of its slice into its own histogram, then adds it to the slice's counts (zeroed by the
// host before the pass). A value x lands in bin floor((x − min) / w), the maximum in the last
// bin; a constant frame (w = 0) has every value in bin BINS / 2.
@compute @workgroup_size(256)
fn histogram(@builtin(local_invocation_index) t: u32, @builtin(workgroup_id) g: vec3<u32>) {
    for (var b = t; b < BINS; b = b + WG) {
        atomicStore(&local_counts[b], 0u);
    }
    workgroupBarrier();
    let mn = bitcast<f32>(atomicLoad(&counts[0]));
    let mx = bitcast<f32>(atomicLoad(&counts[1]));
    let w = (mx - mn) / f32(BINS);
    let slice = g.y;
    // ITEMS neighbouring cells per invocation (a multiple of 4: whole quads), counted as runs
    // of one bin: a smooth field's neighbours mostly share a bin, and one atomic add per run is
    // cheaper than one per cell.
    let first = (g.x * WG + t) * ITEMS;
    var run_bin = 0u;
    var run = 0u;
    for (var k = 0u; k < ITEMS; k = k + 4u) {
        let i = first + k;
        if (i < SLICE) {
            let x = quad(slice * SLICE + i);
            var bins = vec4<u32>(BINS / 2u);
            if (w > 0.0) {
                bins = vec4<u32>(clamp(floor((x - vec4<f32>(mn)) / w), vec4<f32>(0.0), vec4<f32>(f32(LAST_BIN))));
            }
            count_run(bins.x, &run_bin, &run);
            if (!PARTIAL_QUADS || i + 3u < SLICE) {
                count_run(bins.y, &run_bin, &run);
                count_run(bins.z, &run_bin, &run);
                count_run(bins.w, &run_bin, &run);
            } else {
                // The slice's last cells, fewer than 4.
                if (i + 1u < SLICE) {
                    count_run(bins.y, &run_bin, &run);
                }
                if (i + 2u < SLICE) {
                    count_run(bins.z, &run_bin, &run);
                }
            }
        }
    }
    if (run > 0u) {
        atomicAdd(&local_counts[run_bin], run);
    }
    workgroupBarrier();
    for (var b = t; b < BINS; b = b + WG) {
        let c = atomicLoad(&local_counts[b]);
        if (c > 0u) {
            atomicAdd(&counts[PDF_AT + (PDF_SLICE0 + slice) * BINS + b], c);
        }
    }
}

// Pass 4: the field downsampled by K along each axis of the grid: each coarse cell the mean of
// the (up to) KZ × KY × KX cells of its block (fewer at the far edges).
@compute @workgroup_size(64)
fn downsample(@builtin(global_invocation_id) id: vec3<u32>) {
    let c = id.y * DS_ROW + id.x;
    if (c >= CNX * CNY * CNZ) {
        return;
    }
    let cx = c % CNX;
    let cy = (c / CNX) % CNY;
    let cz = c / (CNX * CNY);
    var s = 0.0;
    var n = 0u;
    for (var dz = 0u; dz < KZ; dz = dz + 1u) {
        let z = cz * KZ + dz;
        for (var dy = 0u; dy < KY; dy = dy + 1u) {
            let y = cy * KY + dy;
            for (var dx = 0u; dx < KX; dx = dx + 1u) {
                let x = cx * KX + dx;
                if (x < NX && y < NY && z < NZ) {
                    s = s + cell((z * NY + y) * NX + x);
                    n = n + 1u;
                }
            }
        }
    }
    result[DS_AT + c] = s / f32(n);
}
