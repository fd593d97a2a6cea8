"""The examples run as the Python page says, small: the in-situ PDF plot (drawn off-screen and
saved), the heat kernel checked against numpy, the numpy sink."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from conftest import REPO


def run_example(name: str, *args: str) -> str:
    env = {**os.environ, "MPLBACKEND": "Agg"}
    script = REPO / "examples" / "python" / f"{name}.py"
    done = subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_insitu_pdfs_plots_every_frames_pdf(tmp_path: Path) -> None:
    png, out = tmp_path / "pdfs.png", tmp_path / "gs3d.h5"
    printed = run_example("insitu_pdfs", "--frames", "3", "--size", "16", "--out", str(out), "--png", str(png))
    assert png.stat().st_size > 10_000 and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "3 frames" in printed and out.is_file()


def test_heat_kernel_matches_numpy(tmp_path: Path) -> None:
    printed = run_example("heat_kernel", "--frames", "3", "--size", "32", "--out", str(tmp_path / "heat.h5"))
    errors = [float(line.rsplit("<=", 1)[1]) for line in printed.splitlines() if "|gpu - numpy|" in line]
    assert len(errors) == 3 and max(errors) < 1e-3, printed


def test_numpy_sink_writes_npy_files(tmp_path: Path) -> None:
    out = tmp_path / "npy"
    run_example("numpy_sink", "--out", str(out), "--frames", "3", "--size", "32")
    v = np.load(out / "stream0.v.npy")
    assert v.shape == (3, 32, 32) and v.dtype == np.float32 and np.load(out / "stream0.u.npy").shape == (3, 32, 32)
