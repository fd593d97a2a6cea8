"""Pipeline.builder(): the Rust builder's calls from Python, with a kernel written in Python."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import wgpipe
from conftest import HEAT, HEAT_WGSL


def heat_model(u: np.ndarray, alpha: float, steps: int) -> np.ndarray:
    """The heat kernel in numpy, in float64: the example's step, `steps` times."""
    u = u.astype(np.float64)
    for _ in range(steps):
        u = HEAT.step(u, alpha)
    return u


def hot_spot(rows: int, cols: int) -> np.ndarray:
    u = np.zeros((rows, cols), dtype=np.float32)
    u[rows // 3, cols // 2] = 1000.0
    u[rows // 2 :, : cols // 4] = 5.0
    return u


def test_a_kernel_in_a_python_string_matches_a_numpy_model_of_it() -> None:
    alpha, steps, u0 = 0.2, 5, hot_spot(48, 40)
    pipeline = (
        wgpipe.Pipeline.builder()
        .grid(48, 40)
        .frames(4)
        .steps_per_frame(steps)
        .kernel(HEAT_WGSL, fields=["u"], params={"alpha": alpha}, init={"u": u0})
        .build()
    )
    with pipeline as p:
        frames = [(f.index, f.step, f["u"].copy()) for f in p.frames()]
    assert [(i, s) for i, s, _ in frames] == [(0, 5), (1, 10), (2, 15), (3, 20)]
    for i, step, u in frames:
        want = heat_model(u0, alpha, step)
        assert np.allclose(u, want, rtol=1e-5, atol=1e-3), f"frame {i}: max error {np.abs(u - want).max()}"
    assert np.isclose(frames[-1][2].sum(dtype=np.float64), u0.sum(dtype=np.float64), rtol=1e-5), "heat is conserved"


def test_a_kernel_file_and_one_state_per_stream(tmp_path: Path) -> None:
    wgsl = tmp_path / "heat.wgsl"
    wgsl.write_text(HEAT_WGSL)
    states = [{"u": np.full((16, 16), 1.0)}, {"u": np.full((16, 16), 2.0)}]
    pipeline = (
        wgpipe.Pipeline.builder()
        .grid(16, 16)
        .frames(2)
        .devices("all", 2)
        .kernel(wgsl, fields=["u"], params={"alpha": 0.1}, init=states)
        .sink("raw", path=tmp_path / "raw")
        .build()
    )
    report = pipeline.run(progress=False)
    assert report.frames == 4
    out = wgpipe.open(tmp_path / "raw")
    assert out.format == "raw" and sorted(out) == ["stream0", "stream1"]
    assert np.all(out["stream0"]["u"] == 1.0) and np.all(out["stream1"]["u"] == 2.0), "uniform stays uniform"
    assert out["stream0"].attributes["kernel"] == "heat", "named after its file"


def test_bad_wgsl_names_file_line_and_column() -> None:
    broken = HEAT_WGSL.replace("params.alpha *", "params.beta *")
    with pytest.raises(wgpipe.KernelError) as e:
        wgpipe.Pipeline.builder().grid(8, 8).kernel(broken, fields=["u"], params={"alpha": 0.1}).build()
    assert isinstance(e.value, wgpipe.Error)
    assert e.value.file == "<kernel text>" and e.value.line is not None and e.value.column is not None
    line = broken.splitlines()[e.value.line - 1]
    assert line[e.value.column - 1 :].startswith(("params.beta", "beta")), (e.value.line, e.value.column, line)
    assert f"<kernel text>:{e.value.line}:{e.value.column}" in str(e.value)


def test_parameters_and_initial_state_are_checked_against_the_kernel() -> None:
    def build(**kernel: object) -> None:
        args = {"fields": ["u"], "params": {"alpha": 0.1}, "init": {"u": np.zeros((8, 8))}}
        args.update(kernel)
        wgpipe.Pipeline.builder().grid(8, 8).kernel(HEAT_WGSL, **args).build()  # type: ignore[arg-type]

    with pytest.raises(ValueError, match="unknown parameter; valid parameters: alpha"):
        build(params={"alpha": 0.1, "beta": 1.0})
    with pytest.raises(ValueError, match="alpha of the shader's struct Params is missing"):
        build(params={})
    with pytest.raises(ValueError, match=r"shape \[8, 9\] is not the grid's \[8, 8\]"):
        build(init={"u": np.zeros((8, 9))})
    with pytest.raises(ValueError, match="no array for field \"u\""):
        build(init={})
    with pytest.raises(ValueError, match="the kernel has no such field"):
        build(init={"u": np.zeros((8, 8)), "w": np.zeros((8, 8))})


def test_bad_settings_raise_errors_that_say_what_to_do() -> None:
    with pytest.raises(ValueError, match="mode \"fast\" is unknown: use one of auto, async, sync"):
        wgpipe.Pipeline.builder().mode("fast")
    with pytest.raises(wgpipe.DeviceError, match="no GPU adapter matches"):
        wgpipe.Pipeline.builder().grid(8, 8).devices("no such adapter").gray_scott().build()
    with pytest.raises(RuntimeError, match="no work"):
        wgpipe.Pipeline.builder().build()
    with pytest.raises(wgpipe.StorageError, match="compression \"lz9\" is unknown"):
        wgpipe.Pipeline.builder().sink("hdf5", path="x.h5", compression="lz9")
    with pytest.raises(TypeError, match="needs path="):
        wgpipe.Pipeline.builder().sink("hdf5")


def test_gray_scott_parameters_by_name(tmp_path: Path) -> None:
    out = tmp_path / "gs.h5"
    report = (
        wgpipe.Pipeline.builder()
        .grid(32, 32)
        .frames(2)
        .gray_scott(seed=7, feed=0.05, kill=0.06)
        .analysis(["v"], pdf_bins=16)
        .sink("hdf5", path=out)
        .build()
        .run(progress=False)
    )
    assert report.frames == 2
    stream = wgpipe.open(out)["stream0"]
    attrs = stream.attributes
    assert attrs["seed"] == 7 and np.isclose(attrs["feed"], 0.05) and np.isclose(attrs["kill"], 0.06)
    assert stream["v_pdf"].shape[0] == 2, "the device's PDFs are stored beside the field"
    with pytest.raises(wgpipe.Error, match="valid"):
        wgpipe.Pipeline.builder().gray_scott(F=1.0)
