"""wgpipe.run: a TOML config run exactly as the `wgpipe` binary runs it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import h5py
import numpy as np
import pytest

import wgpipe
from conftest import REPO, small, wgpipe_binary


def test_a_config_run_writes_what_the_binary_writes(tmp_path: Path) -> None:
    ours, theirs = tmp_path / "python.h5", tmp_path / "binary.h5"
    report = wgpipe.run(REPO / "configs" / "gray-scott.toml", overrides=small(ours), progress=False)
    sets = [f"--set={k}={v}" for k, v in small(theirs).items()]
    subprocess.run(
        [wgpipe_binary(), "run", REPO / "configs" / "gray-scott.toml", *sets, "--progress", "none"],
        check=True,
        capture_output=True,
    )
    with h5py.File(ours) as a, h5py.File(theirs) as b:
        assert list(a) == list(b) == ["stream0"]
        assert np.array_equal(a["stream0/v"][:], b["stream0/v"][:]), "the same frames, bit for bit"
        assert np.array_equal(a["stream0/steps"][:], b["stream0/steps"][:])
        skip = {"created", "wgpipe_version", "config"}
        assert {k: v for k, v in a.attrs.items() if k not in skip}.keys() == {
            k: v for k, v in b.attrs.items() if k not in skip
        }.keys()
        assert dict(a["stream0"].attrs) == dict(b["stream0"].attrs), "parameters, seed, complete"
    assert report.frames == 6


def test_the_report_says_what_ran(tmp_path: Path) -> None:
    report = wgpipe.run(overrides=small(tmp_path / "r.h5"), progress=False)
    assert report.frames == 6
    assert report.bytes == 6 * 64 * 64 * 4
    assert report.wall_seconds > 0 and report.compute_seconds > 0
    assert 0 < report.efficiency <= 1.0 + 1e-9
    assert report.mode == "auto" and report.auto is not None and report.auto.reason
    assert [d.frames for d in report.devices] == [6]
    text = repr(report)
    assert text.startswith("Report(frames=6, bytes=98304, ") and "efficiency=" in text, text
    assert "overlap: wall / (compute + write)" in str(report), "str() is the binary's summary"
    assert report.to_dict()["frames"] == 6


def test_the_binarys_checks_run_first(tmp_path: Path) -> None:
    existing = tmp_path / "exists.h5"
    existing.write_bytes(b"")
    with pytest.raises(wgpipe.ConfigError) as e:
        wgpipe.run(overrides=small(existing), progress=False)
    assert e.value.key == "output.path" and "already exists" in str(e.value)
    assert existing.read_bytes() == b"", "nothing was touched"


def test_progress_is_a_tqdm_bar_or_lines_or_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wgpipe.run(overrides=small(tmp_path / "a.h5"), progress=True)
    bar = capsys.readouterr().err
    assert "wgpipe: 100%" in bar and "6/6" in bar and "frame" in bar, bar
    wgpipe.run(overrides=small(tmp_path / "b.h5"), progress="lines")
    assert "6/6 frames written" in capsys.readouterr().err
    wgpipe.run(overrides=small(tmp_path / "c.h5"), progress=False)
    assert capsys.readouterr().err == ""


def test_a_resume_of_a_complete_output_has_nothing_to_do(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "done.h5"
    wgpipe.run(overrides=small(out), progress=False)
    report = wgpipe.run(overrides=small(out), progress=False, resume=True)
    assert report.frames == 0
    assert "nothing to do: every run is already complete" in capsys.readouterr().err
