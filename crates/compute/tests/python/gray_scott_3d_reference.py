#!/usr/bin/env python3
"""Independent float64 check of wgpipe's 3-D Gray-Scott (the ADIOS2 tutorial's model).

Usage: gray_scott_3d_reference.py RUN_DIR
       gray_scott_3d_reference.py --h5 FILE STREAM

The second form checks every frame of a stream that `wgpipe run` wrote (datasets u and v of
shape [frames, nz, ny, nx], the `steps` dataset, the parameters and seed as attributes), read
with h5py as a user would. RUN_DIR holds what the test computed on the GPU, in f32: u.f32 and v.f32 (little-endian,
C order, shape [nz, ny, nx]) after `steps` steps, and run.json with the shape, steps, seed
and parameters (feed, kill, du, dv, dt, noise). This script recomputes the run in float64
with numpy, written from the model's definition (not from wgpipe's Rust or WGSL), and
compares. Exits non-zero with a message when they disagree by more than TOLERANCE.

The model: periodic grid, 7-point Laplacian L(f) = (sum of the 6 face neighbours - 6 f) / 6,
explicit Euler
    u += dt * (Du L(u) - u v^2 + F (1 - u) + noise * r)
    v += dt * (Dv L(v) + u v^2 - (F + k) v)
from u = 1, v = 0 except the centred cube n/2 - 6 <= i < n/2 + 6 on every axis, where
u = 0.25, v = 0.33. r is uniform in [-1, 1): wgpipe's documented counter-based hash of
(seed, global cell index, step), implemented here again from that definition.

TOLERANCE (1e-4, absolute; u and v lie in [0, 1]): wgpipe computes in f32, this script in
float64. Each f32 step commits about k = 10 roundings per cell (Laplacian sums, products, the
update), each at most 2^-24 (6e-8) relative. Diffusion is stable here (dt * D * 2 <= 0.8 < 2)
and does not amplify them; the reaction terms amplify them only slowly over a few hundred
steps. So the error grows at most about linearly, n * k * 6e-8: 6e-5 after n = 100 steps,
under the 1e-4 bound (rounding errors of both signs partly cancel: the measured maximum,
printed on success, is about 5e-7 at L = 64 after 100 steps). An error in the model itself
(a wrong neighbour, sign, coefficient, or noise on the wrong field) shows as 1e-3 or more
within a few steps.
"""
import json
import os
import sys

import numpy as np

TOLERANCE = 1e-4
MASK = 0xFFFFFFFF


def pcg_hash(x):
    """PCG output permutation of u32 values (numpy uint64 arrays or Python ints)."""
    s = (x * 747796405 + 2891336453) & MASK
    w = (((s >> ((s >> 28) + 4)) ^ s) * 277803737) & MASK
    return (w >> 22) ^ w


def noise_key(seed, step):
    h = 0
    for word in (seed & MASK, seed >> 32, step & MASK, step >> 32):
        h = pcg_hash(h ^ word)
    return h


def uniform_noise(seed, step, cells):
    """r for every cell index 0..cells at `step` (steps done before this one)."""
    index = np.arange(cells, dtype=np.uint64)
    h = pcg_hash(pcg_hash(index) ^ np.uint64(noise_key(seed, step)))
    return (h >> np.uint64(8)).astype(np.float64) * 2.0**-23 - 1.0


def laplacian(f):
    s = np.roll(f, 1, axis=2) + np.roll(f, -1, axis=2)
    s += np.roll(f, 1, axis=1) + np.roll(f, -1, axis=1)
    s += np.roll(f, 1, axis=0) + np.roll(f, -1, axis=0)
    return (s - 6.0 * f) / 6.0


def initial_state(shape):
    u = np.ones(shape)
    v = np.zeros(shape)
    cube = tuple(slice(max(n // 2 - 6, 0), min(n // 2 + 6, n)) for n in shape)
    u[cube] = 0.25
    v[cube] = 0.33
    return u, v


def step(u, v, p, seed, n):
    """One explicit Euler step; `n` steps were done before it."""
    uvv = u * v * v
    du = p["du"] * laplacian(u) - uvv + p["feed"] * (1.0 - u)
    if p["noise"] != 0.0:
        du += p["noise"] * uniform_noise(seed, n, u.size).reshape(u.shape)
    dv = p["dv"] * laplacian(v) + uvv - (p["feed"] + p["kill"]) * v
    return u + p["dt"] * du, v + p["dt"] * dv


def compare(name, gpu, reference, steps):
    if gpu.shape != reference.shape:
        sys.exit(f"{name}: shape {gpu.shape}, expected {reference.shape}")
    diff = float(np.max(np.abs(gpu.astype(np.float64) - reference)))
    if not diff <= TOLERANCE:
        sys.exit(f"{name} differs from the float64 reference by {diff} > {TOLERANCE} after {steps} steps")
    return diff


def check_evolved(shape, v):
    if float(np.max(np.abs(v - initial_state(shape)[1]))) < 0.01:
        sys.exit("the reference did not evolve: the check would prove nothing")


def check_run_dir(run_dir):
    run = json.load(open(os.path.join(run_dir, "run.json")))
    shape = tuple(run["shape"])
    p = {k: float(v) for k, v in run["params"].items()}
    seed, steps = int(run["seed"]), int(run["steps"])
    u, v = initial_state(shape)
    for n in range(steps):
        u, v = step(u, v, p, seed, n)
    worst = 0.0
    for name, reference in (("u", u), ("v", v)):
        gpu = np.fromfile(os.path.join(run_dir, f"{name}.f32"), dtype="<f4")
        if gpu.size != reference.size:
            sys.exit(f"{name}: {gpu.size} values, expected {reference.size} for shape {shape}")
        worst = max(worst, compare(name, gpu.reshape(shape), reference, steps))
    check_evolved(shape, v)
    print(f"ok: u and v match the float64 reference within {worst:.3g} (tolerance {TOLERANCE}) after {steps} steps")


def check_h5(path, stream):
    import h5py

    with h5py.File(path, "r") as f:
        g = f[stream]
        p = {k: float(g.attrs[k]) for k in ("feed", "kill", "du", "dv", "dt", "noise")}
        seed = int(g.attrs["seed"])
        steps = [int(s) for s in g["steps"][...]]
        if not steps:
            sys.exit(f"{stream}: no frames")
        shape = g["u"].shape[1:]
        u, v = initial_state(shape)
        done, worst = 0, 0.0
        for i, target in enumerate(steps):
            while done < target:
                u, v = step(u, v, p, seed, done)
                done += 1
            worst = max(worst, compare(f"u, frame {i}", g["u"][i], u, done))
            worst = max(worst, compare(f"v, frame {i}", g["v"][i], v, done))
    check_evolved(shape, v)
    print(
        f"ok: {len(steps)} frames of u and v match the float64 reference within {worst:.3g} "
        f"(tolerance {TOLERANCE}), up to step {done}"
    )


def main():
    if sys.argv[1] == "--h5":
        check_h5(sys.argv[2], sys.argv[3])
    else:
        check_run_dir(sys.argv[1])


if __name__ == "__main__":
    main()
