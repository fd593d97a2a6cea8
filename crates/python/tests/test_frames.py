"""Pipeline.frames(): every frame as numpy arrays while the pipeline computes the next ones,
viewing the pipeline's buffer without a copy, with backpressure."""

from __future__ import annotations

import time
from pathlib import Path

import h5py
import numpy as np
import pytest

import wgpipe
from conftest import small


def test_frames_equal_the_hdf5_file_bit_for_bit(tmp_path: Path) -> None:
    out = tmp_path / "f.h5"
    seen = []
    with wgpipe.Pipeline(overrides=small(out, **{"output.fields": ["u", "v"]})) as p:
        for frame in p.frames():
            assert set(frame) == {"u", "v"} and frame.stream == "stream0"
            seen.append((frame.index, frame.step, frame["u"].copy(), frame["v"].copy()))
    assert p.report is not None and p.report.frames == 6
    with h5py.File(out) as f:
        assert [i for i, *_ in seen] == list(range(6))
        assert [s for _, s, *_ in seen] == list(f["stream0/steps"][:])
        for i, _, u, v in seen:
            assert u.dtype == np.float32 and u.shape == (64, 64)
            assert np.array_equal(u, f["stream0/u"][i]) and np.array_equal(v, f["stream0/v"][i])


def test_arrays_view_the_pooled_buffer_read_only_and_outlive_a_released_frame(tmp_path: Path) -> None:
    out = tmp_path / "v.h5"
    with wgpipe.Pipeline(overrides=small(out, **{"run.frames": 8})) as p:
        frames = p.frames()
        first = next(frames)
        kept = first["v"]
        assert not kept.flags.owndata and not kept.flags.writeable, "a view, not a copy"
        assert np.shares_memory(kept, first["v"]), "every array of a frame views the same buffer"
        with pytest.raises(ValueError):
            kept[0, 0] = 1.0
        copy = first.copy()
        first.release()
        assert first.released and not copy.released
        with pytest.raises(wgpipe.ReleasedFrameError, match="frame 0 of stream stream0 was released"):
            first["v"]
        with pytest.raises(wgpipe.ReleasedFrameError):
            first.copy()
        rest = [f.index for f in frames]
    assert rest == list(range(1, 8))
    with h5py.File(out) as f:
        # The array taken before the release kept its buffer out of the pool: the later
        # frames did not overwrite it.
        assert np.array_equal(kept, f["stream0/v"][0])
        assert np.array_equal(copy["v"], f["stream0/v"][0])


def test_a_frame_is_a_mapping(tmp_path: Path) -> None:
    from collections.abc import Mapping

    with wgpipe.Pipeline(overrides=small(tmp_path / "m.h5", **{"run.frames": 1})) as p:
        for frame in p.frames():
            assert isinstance(frame, Mapping)
            assert list(frame.keys()) == ["v"] and len(frame) == 1 and "v" in frame and "u" not in frame
            assert dict(frame)["v"].shape == (64, 64)
            assert frame.get("u") is None
            with pytest.raises(KeyError, match="the frame has fields v"):
                frame["u"]
            assert repr(frame) == "Frame(stream='stream0', index=0, step=8, fields=['v'])"
            with frame:
                pass
            assert frame.released, "leaving `with frame:` releases it"


def test_a_slow_loop_slows_the_gpu_instead_of_filling_memory(tmp_path: Path) -> None:
    # 40 frames of 64 x 64 take lavapipe milliseconds each; the loop takes 30 ms a frame. Without
    # backpressure the devices would run ahead by every frame; with it, by what the channels
    # and the frames in hand hold: io_buffer (2), the tap's 2, one per device being handed
    # on and one being filled.
    overrides = small(tmp_path / "slow.h5", **{"run.frames": 40, "io.mode": "async", "io.io_buffer": 2})
    ahead = []
    with wgpipe.Pipeline(overrides=overrides) as p:
        for taken, frame in enumerate(p.frames(), start=1):
            time.sleep(0.03)
            ahead.append(p.progress()["computed"] - taken)
            frame.release()
    assert max(ahead) <= 2 + 2 + 2 + 1, ahead
    assert p.report is not None and p.report.frames == 40


def test_leaving_the_loop_early_lets_the_run_finish(tmp_path: Path) -> None:
    out = tmp_path / "early.h5"
    with wgpipe.Pipeline(overrides=small(out, **{"run.frames": 12})) as p:
        for frame in p.frames():
            if frame.index == 2:
                break
    assert p.report is not None and p.report.frames == 12, "every frame is still stored"
    with h5py.File(out) as f:
        assert f["stream0/v"].shape[0] == 12


def test_stop_ends_the_run_cleanly(tmp_path: Path) -> None:
    out = tmp_path / "stopped.h5"
    with wgpipe.Pipeline(overrides=small(out, **{"run.frames": 500})) as p:
        for frame in p.frames():
            if frame.index == 3:
                p.stop()
    report = p.report
    assert report is not None and 4 <= report.frames < 500
    assert wgpipe.open(out)["stream0"].frames == report.frames


def test_fields_encoded_on_the_device_arrive_as_their_zfp_streams(tmp_path: Path) -> None:
    # 64 x 64 cells at 8 bits per value: 16 x 16 blocks of 16 values, 128 bits each.
    out = tmp_path / "z.h5"
    overrides = small(out, **{"output.compression": "zfp:rate=8", "output.compress_on": "device"})
    with wgpipe.Pipeline(overrides=overrides) as p:
        assert [f.encoding for f in p.layout.fields] == ["zfp:rate=8"]
        streams = [frame["v"].copy() for frame in p.frames()]
    assert len(streams) == 6
    assert all(s.dtype == np.uint8 and s.shape == (16 * 16 * 128 // 8,) for s in streams)
    with h5py.File(out) as f:
        for i, stream in enumerate(streams):
            # What H5Z-ZFP stores in the chunk is the stream (here a whole number of words).
            _, chunk = f["stream0/v"].id.read_direct_chunk((i, 0, 0))
            assert chunk == stream.tobytes()
