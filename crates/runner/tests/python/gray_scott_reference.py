#!/usr/bin/env python3
"""Independent check of wgpipe's Gray-Scott output, written from the model's definition alone.

Usage: gray_scott_reference.py OUTPUT.h5 [RAW_DIR]

Opens the HDF5 file with h5py (so the file must be valid HDF5 that other tools read), and for
every stream recomputes the model with numpy from the stream's attributes (feed, kill, du,
dv, dt, seed, noise) and compares every stored frame of v with the recomputed state after the
stored step. With RAW_DIR, also checks that the raw output of the same run holds the same bytes
(read with numpy.fromfile, as the README says). Exits non-zero with a message on any mismatch.

This script deliberately repeats the model's facts (initial square, seeded noise, Laplacian
weights, update formula) from its definition instead of sharing wgpipe's code: it is the
independent check of the Rust side, where each of those facts lives once
(wgpipe_compute::gray_scott).
"""
import json
import os
import sys

import h5py
import numpy as np

TOLERANCE = 1e-4
MASK64 = (1 << 64) - 1


def splitmix64(seed):
    """The seeded generator wgpipe documents for the initial noise."""
    state = seed & MASK64
    while True:
        state = (state + 0x9E3779B97F4A7C15) & MASK64
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        yield z ^ (z >> 31)


def initial_state(rows, cols, seed, noise):
    u = np.ones((rows, cols), np.float32)
    v = np.zeros((rows, cols), np.float32)
    u[2 * rows // 5:3 * rows // 5, 2 * cols // 5:3 * cols // 5] = 0.0
    v[2 * rows // 5:3 * rows // 5, 2 * cols // 5:3 * cols // 5] = 1.0
    if noise > 0:
        rng = splitmix64(seed)
        flat = np.concatenate([u.ravel(), v.ravel()])
        for i in range(flat.size):
            r = np.float32((next(rng) >> 40) / float(1 << 24)) * np.float32(2.0) - np.float32(1.0)
            flat[i] = np.clip(flat[i] + np.float32(noise) * r, 0.0, 1.0)
        u, v = flat[:rows * cols].reshape(rows, cols), flat[rows * cols:].reshape(rows, cols)
    return u, v


def laplacian(x):
    """Sum over the 8 neighbours of w * (neighbour - x); w = 0.5 on edges, 0.25 on diagonals."""
    s = np.zeros_like(x)
    for dr, dc, w in [(-1, 0, 0.5), (1, 0, 0.5), (0, -1, 0.5), (0, 1, 0.5),
                      (-1, -1, 0.25), (-1, 1, 0.25), (1, -1, 0.25), (1, 1, 0.25)]:
        neighbour = np.roll(np.roll(x, -dr, axis=0), -dc, axis=1)
        s += np.float32(w) * (neighbour - x)
    return s


def step(u, v, p):
    uvv = u * v * v
    u2 = u + p["dt"] * (p["du"] * laplacian(u) - uvv + p["feed"] * (np.float32(1.0) - u))
    v2 = v + p["dt"] * (p["dv"] * laplacian(v) + uvv - (p["feed"] + p["kill"]) * v)
    return u2, v2


def check_stream(name, group):
    attrs = group.attrs
    p = {k: np.float32(attrs[k]) for k in ["feed", "kill", "du", "dv", "dt"]}
    frames = group["v"][...]
    steps = group["steps"][...]
    if frames.ndim != 3 or frames.dtype != np.float32 or len(steps) != frames.shape[0]:
        sys.exit(f"{name}: v has shape {frames.shape} {frames.dtype}, steps {len(steps)}")
    if frames.shape[0] == 0:
        sys.exit(f"{name}: no frames")
    rows, cols = frames.shape[1:]
    u, v = initial_state(rows, cols, int(attrs["seed"]), float(attrs["noise"]))
    done = 0
    for i, target in enumerate(steps):
        while done < target:
            u, v = step(u, v, p)
            done += 1
        diff = float(np.max(np.abs(frames[i] - v)))
        if not diff <= TOLERANCE:
            sys.exit(f"{name}: frame {i} (step {target}) differs from the reference by {diff}")
    evolved = float(np.max(np.abs(frames[-1] - initial_state(rows, cols, 0, 0.0)[1])))
    if evolved < 0.01:
        sys.exit(f"{name}: the pattern did not evolve")
    return len(steps)


def check_raw(raw_dir, h5):
    run = json.load(open(os.path.join(raw_dir, "run.json")))
    field = next(f for f in run["fields"] if f["name"] == "v")
    for stream in run["streams"]:
        name = stream["name"]
        path = os.path.join(raw_dir, f"{name}.v.bin")
        raw = np.fromfile(path, dtype=field["numpy_dtype"]).reshape(-1, *field["shape"])
        if not np.array_equal(raw, h5[name]["v"][...]):
            sys.exit(f"{name}: the raw output differs from the HDF5 output")


def main():
    with h5py.File(sys.argv[1], "r") as f:
        total = sum(check_stream(name, g) for name, g in f.items())
        if len(sys.argv) > 2:
            check_raw(sys.argv[2], f)
    print(f"ok: {total} frames match the independent numpy reference")


if __name__ == "__main__":
    main()
