"""A kernel of your own, written in a Python string: heat diffusion on a periodic grid,
started from a numpy array, checked against numpy as it runs, stored in HDF5.

    python examples/python/heat_kernel.py [--size 128] [--frames 20] [--out heat.h5]

wgpipe's prelude gives the kernel its bindings (`u_in`, `u_out`: one buffer per field named
in `fields`), the grid and `cell(id)`, the invocation's cell with its neighbours' rows and
columns; the kernel declares its `struct Params`, filled by name from `params`.
"""

from __future__ import annotations

import argparse

import numpy as np

import wgpipe

HEAT = """
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
    let around = u_in[c.ym + c.x] + u_in[c.yp + c.x] + u_in[c.y0 + c.xm] + u_in[c.y0 + c.xp];
    u_out[c.i] = u_in[c.i] + params.alpha * (around - 4.0 * u_in[c.i]);
}
"""


def step(u: np.ndarray, alpha: float) -> np.ndarray:
    """One step of the same scheme in numpy (float64)."""
    around = np.roll(u, 1, 0) + np.roll(u, -1, 0) + np.roll(u, 1, 1) + np.roll(u, -1, 1)
    result: np.ndarray = u + alpha * (around - 4.0 * u)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=128)
    parser.add_argument("--frames", type=int, default=20)
    parser.add_argument("--steps", type=int, default=50, help="steps per frame")
    parser.add_argument("--alpha", type=float, default=0.2, help="diffusion number (stable below 0.25)")
    parser.add_argument("--out", default="heat.h5")
    args = parser.parse_args()

    n = args.size
    u0 = np.zeros((n, n), dtype=np.float32)
    u0[n // 4 : n // 2, n // 4 : n // 2] = 100.0  # a hot square

    pipeline = (
        wgpipe.Pipeline.builder()
        .grid(n, n)
        .frames(args.frames)
        .steps_per_frame(args.steps)
        .kernel(HEAT, fields=["u"], params={"alpha": args.alpha}, init={"u": u0}, name="heat")
        .sink("hdf5", path=args.out, overwrite=True)
        .build()
    )
    model = u0.astype(np.float64)
    with pipeline:
        for frame in pipeline.frames():
            for _ in range(args.steps):
                model = step(model, args.alpha)
            u = frame["u"]
            error = float(np.abs(u - model).max())
            print(f"frame {frame.index:3} step {frame.step:5}: max {float(u.max()):8.4f}, "
                  f"total {float(u.sum(dtype=np.float64)):10.2f}, |gpu - numpy| <= {error:.2e}")
    report = pipeline.report
    assert report is not None
    print(report)
    print(f"read it back: wgpipe.open({args.out!r}).to_xarray()")


if __name__ == "__main__":
    main()
