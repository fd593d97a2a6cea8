"""Shared helpers of the Python package's tests: small, fast runs on whatever adapter wgpu
finds (lavapipe in CI), outputs in pytest's temporary directories."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

#: The repository's root (the tests run from a clone, on the package installed from it).
REPO = Path(__file__).resolve().parents[3]


def small(path: Path, **extra: Any) -> dict[str, Any]:
    """Overrides for a quick 2-D Gray-Scott run of 6 frames of 64 x 64 into `path`."""
    overrides: dict[str, Any] = {
        "grid.rows": 64,
        "grid.cols": 64,
        "run.frames": 6,
        "run.steps_per_frame": 8,
        "output.path": str(path),
    }
    overrides.update(extra)
    return overrides


def wgpipe_binary() -> Path:
    """The `wgpipe` binary the tests compare the package with: WGPIPE_BIN, else the debug
    build `cargo test --workspace` leaves in target/. Missing, the test fails (it does not
    skip): build it with `cargo build -p wgpipe`."""
    path = Path(os.environ.get("WGPIPE_BIN", REPO / "target" / "debug" / "wgpipe"))
    if not path.is_file():
        pytest.fail(f"no wgpipe binary at {path}: build it with `cargo build -p wgpipe` or set WGPIPE_BIN")
    return path


#: Heat diffusion, one explicit Euler step of u' = u + alpha * (5-point Laplacian of u) on a
#: periodic grid: the prelude gives `cell` (the invocation's cell and its neighbours' rows
#: and columns) and the bindings `u_in`, `u_out`.
HEAT_WGSL = """
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
