"""A Python object as the sink: called on the writer thread, protocol checked, its exception
failing the run with its traceback and every frame it accepted kept."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import h5py
import numpy as np
import pytest

import wgpipe
from conftest import small


class NumpySink:
    """Keeps every frame it is given (without a copy: the frames themselves)."""

    def __init__(self, fail_at: Optional[int] = None) -> None:
        self.calls: list[str] = []
        self.frames: list[wgpipe.Frame] = []
        self.layout: Optional[wgpipe.Layout] = None
        self.outcome: Optional[wgpipe.SinkOutcome] = None
        self.fail_at = fail_at

    def begin(self, layout: wgpipe.Layout) -> None:
        self.calls.append("begin")
        self.layout = layout

    def write(self, frame: wgpipe.Frame) -> None:
        self.calls.append("write")
        if frame.index == self.fail_at:
            raise OSError(28, f"the sink's disk is full at frame {frame.index}")
        self.frames.append(frame)

    def finish(self, outcome: wgpipe.SinkOutcome) -> None:
        self.calls.append("finish")
        self.outcome = outcome


def builder(frames: int = 5) -> Any:
    return wgpipe.Pipeline.builder().grid(32, 32).frames(frames).steps_per_frame(4).gray_scott(seed=3)


def test_a_python_sink_gets_every_frame_the_hdf5_sink_stores(tmp_path: Path) -> None:
    sink = NumpySink()
    report = builder().sink(sink).build().run(progress=False)
    out = tmp_path / "same.h5"
    builder().sink("hdf5", path=out).build().run(progress=False)
    assert sink.calls == ["begin"] + ["write"] * 5 + ["finish"]
    assert sink.layout is not None and [f.name for f in sink.layout.fields] == ["v"]
    assert [s.name for s in sink.layout.streams] == ["stream0"] and sink.layout.streams[0].expected_frames == 5
    assert sink.outcome is not None and not sink.outcome.failed and sink.outcome.complete == [True]
    assert report.frames == 5
    with h5py.File(out) as f:
        for frame in sink.frames:
            assert not frame.released, "frames the sink keeps stay valid after write returned"
            assert np.array_equal(frame["v"], f["stream0/v"][frame.index])


def test_an_exception_fails_the_run_with_its_traceback_and_the_frames_before_kept() -> None:
    sink = NumpySink(fail_at=3)
    with pytest.raises(wgpipe.SinkError) as e:
        builder(frames=10).sink(sink).build().run(progress=False)
    cause = e.value.__cause__
    assert isinstance(cause, OSError) and "disk is full at frame 3" in str(cause), "the sink's own exception"
    assert cause.__traceback__ is not None
    assert "write() raised Traceback" in str(e.value) and "in write" in str(e.value), str(e.value)
    assert isinstance(e.value, wgpipe.Error)
    assert e.value.report is not None and e.value.report.frames == 3
    assert [f.index for f in sink.frames] == [0, 1, 2], "every frame accepted before is kept"
    assert sink.calls[-1] == "finish" and sink.outcome is not None and sink.outcome.failed
    assert sink.outcome.frames == [3] and sink.outcome.complete == [False]


def test_an_exception_in_begin_creates_nothing_and_raises() -> None:
    class Refuses(NumpySink):
        def begin(self, layout: wgpipe.Layout) -> None:
            raise ValueError("no room for this layout")

    with pytest.raises(wgpipe.SinkError) as e:
        builder().sink(Refuses()).build().run(progress=False)
    assert isinstance(e.value.__cause__, ValueError)


def test_an_object_without_the_methods_is_refused_at_once() -> None:
    class Half:
        def begin(self, layout: wgpipe.Layout) -> None:
            pass

    with pytest.raises(TypeError, match="Half is not a sink: it has no method write, finish"):
        builder().sink(Half())


def test_frames_and_a_python_sink_together(tmp_path: Path) -> None:
    sink = NumpySink()
    with builder().sink(sink).build() as p:
        taken = [f["v"].copy() for f in p.frames()]
    assert len(taken) == len(sink.frames) == 5
    for a, b in zip(taken, sink.frames):
        assert np.array_equal(a, b["v"])
