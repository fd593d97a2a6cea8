"""A full disk fails the run with wgpipe.DiskFullError, naming the output and the frames kept,
every one of which reads back. Needs root, to mount a small tmpfs (CI runs as root)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

import wgpipe
from conftest import small


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 2 MiB tmpfs, unmounted afterwards."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(disk)], capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.fail(f"cannot mount a tmpfs ({mounted.stderr.strip()}): this test needs root, as CI runs it")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


@pytest.mark.parametrize("sink,name,extra", [("raw", "out", {}), ("hdf5", "out.h5", {"output.compression": "deflate:1"})])
def test_a_full_disk_raises_disk_full_error_with_every_frame_before_kept(
    small_disk: Path, sink: str, name: str, extra: dict[str, str]
) -> None:
    out = small_disk / name
    # 256 x 256 float32 frames of noise-free Gray-Scott compress little: 200 of them pass 2 MiB.
    overrides = small(out, **{"output.sink": sink, "grid.rows": 256, "grid.cols": 256, "run.frames": 200,
                              "run.noise": 0.5, **extra})
    with pytest.raises(wgpipe.DiskFullError) as e:
        wgpipe.run(overrides=overrides, progress=False)
    err = e.value
    assert isinstance(err, wgpipe.StorageError) and isinstance(err, wgpipe.Error)
    assert Path(err.path).is_relative_to(small_disk), err.path
    assert err.frames_kept > 0 and err.report is not None and err.report.frames == err.frames_kept
    assert "disk full" in str(err) and "every frame written so far is kept" in str(err)
    stored = wgpipe.open(out)["stream0"]
    assert stored.frames == err.frames_kept and not stored.complete
    assert stored["v"].shape == (err.frames_kept, 256, 256)
