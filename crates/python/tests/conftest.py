"""Shared helpers of the Python package's tests: small, fast runs on whatever adapter wgpu
finds (lavapipe in CI), outputs in pytest's temporary directories."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from types import ModuleType
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


def example(name: str) -> ModuleType:
    """The example `examples/python/NAME.py`, imported (its `main` not run)."""
    spec = importlib.util.spec_from_file_location(name, REPO / "examples" / "python" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


#: The heat kernel of `examples/python/heat_kernel.py`, written in a Python string: one
#: explicit Euler step of u' = u + alpha * (5-point Laplacian of u) on a periodic grid.
HEAT = example("heat_kernel")
HEAT_WGSL: str = HEAT.HEAT
