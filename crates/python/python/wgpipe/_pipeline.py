"""Pipelines from Python: from a TOML config or a builder, run to the end with a progress
bar, or iterated frame by frame. The run itself happens on a thread of the native module,
the GIL released; this module waits for it in short steps, so that Ctrl-C reaches Python,
and then stops the run cleanly before raising."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Mapping
from types import TracebackType
from typing import Any, Optional, Protocol, Union

from . import _progress
from ._wgpipe import Builder as _NativeBuilder
from ._wgpipe import Frame, Interrupted, Layout, Prepared, Report, Run, SinkOutcome, adapters, launch_config

#: A config file's path.
PathLike = Union[str, "os.PathLike[str]"]

#: Seconds between two looks at a running run (progress, Ctrl-C).
POLL = 0.1


class SinkProtocol(Protocol):
    """What a Python sink has: wgpipe calls ``begin`` once, ``write`` for every frame (each
    stream's in order), then ``finish``, on its writer thread with the GIL held. A frame
    views the pipeline's buffer: keep it (or its arrays) as long as you need, or
    ``frame.copy()`` it. An exception fails the run (``wgpipe.SinkError``, your exception as
    its ``__cause__``), every frame accepted before kept."""

    def begin(self, layout: Layout) -> None: ...

    def write(self, frame: Frame) -> None: ...

    def finish(self, outcome: SinkOutcome) -> None: ...


class Pipeline:
    """A pipeline ready to run: from a config, as ``wgpipe run`` runs it, or from
    ``Pipeline.builder()``. Every check has passed and the devices are open.

    Use it in a ``with`` block and either take its frames (``for frame in p.frames()``) or
    run it to the end (``p.run()``). Leaving the block waits for the run to end; leaving it
    with an exception (Ctrl-C included) stops the run cleanly first. Either way every frame
    written is kept and the output is closed.
    """

    def __init__(
        self,
        config: Optional[PathLike] = None,
        *,
        overrides: Optional[Mapping[str, Any]] = None,
        resume: bool = False,
    ) -> None:
        prepared = launch_config(
            os.fspath(config) if config is not None else None, dict(overrides or {}), resume
        )
        self._adopt(prepared)

    @classmethod
    def builder(cls) -> Builder:
        """A builder for a pipeline of your own kernel, sink and settings."""
        return Builder()

    @classmethod
    def _from_prepared(cls, prepared: Prepared) -> Pipeline:
        pipeline = cls.__new__(cls)
        pipeline._adopt(prepared)
        return pipeline

    def _adopt(self, prepared: Prepared) -> None:
        self._prepared = prepared
        self._run: Optional[Run] = None
        self._report: Optional[Report] = None
        self._stopped = False
        for note in prepared.notes:
            print(note, file=sys.stderr)

    @property
    def layout(self) -> Optional[Layout]:
        """What every frame holds (None when a resume found nothing to run)."""
        return self._prepared.layout

    @property
    def devices(self) -> list[str]:
        """The devices' labels."""
        return self._prepared.devices

    @property
    def outputs(self) -> str:
        """Where the frames go."""
        return self._prepared.outputs

    @property
    def report(self) -> Optional[Report]:
        """What the run did, once it ended."""
        return self._report

    def _start(self, frames: bool) -> Run:
        if self._run is not None:
            raise RuntimeError("this pipeline runs already: call frames() or run() once")
        self._run = self._prepared.start(frames)
        return self._run

    def frames(self) -> Iterator[Frame]:
        """Starts the run and yields every frame as soon as the sink stored it, a mapping of
        field name to read-only numpy array viewing the pipeline's buffer (no copy). A slow
        loop slows the GPU (backpressure). Leaving the loop early stops handing frames over
        but not the run (``stop()`` stops it). If the run fails, the loop raises its error
        after the last frame stored."""
        run = self._start(frames=True)

        def generate() -> Iterator[Frame]:
            try:
                while True:
                    frame = run.next_frame()
                    if frame is None:
                        return
                    yield frame
            finally:
                run.close_frames()

        return generate()

    def run(self, progress: _progress.ProgressOption = True) -> Report:
        """Starts the run and waits for its end, showing progress (a tqdm bar if installed,
        else lines on stderr; ``False`` for none). Ctrl-C stops it cleanly and raises
        ``wgpipe.Interrupted`` (a KeyboardInterrupt) with the report."""
        run = self._start(frames=False)
        shown = _progress.show(progress, "wgpipe", int(run.progress()["total"]))
        try:
            while not run.wait(POLL):
                shown.update(run.progress())
        except KeyboardInterrupt:
            self._stop_and_wait(run)
            shown.close(run.progress())
            report = run.report(stopped_ok=True)
            self._report = report
            stopped = Interrupted(
                f"run interrupted: {report.frames} frames written to {run.outputs}, which was closed cleanly"
            )
            stopped.report = report
            raise stopped from None
        shown.close(run.progress())
        self._report = run.report(stopped_ok=self._stopped)
        return self._report

    def stop(self) -> None:
        """Asks the run to stop: the frames in hand are written, the output closed."""
        self._stopped = True
        if self._run is not None:
            self._run.stop()

    def wait(self) -> Report:
        """Waits for the run to end (the GIL released) and returns its report, raising its
        error if it failed."""
        if self._run is None:
            raise RuntimeError("the pipeline was not started: call frames() or run()")
        while not self._run.wait(POLL):
            pass
        self._report = self._run.report(stopped_ok=self._stopped)
        return self._report

    def progress(self) -> dict[str, Any]:
        """Counts so far: frames computed and written, bytes, per device and stream."""
        if self._run is None:
            return {"computed": 0, "written": 0, "bytes": 0, "total": 0}
        return self._run.progress()

    def _stop_and_wait(self, run: Run) -> None:
        self._stopped = True
        run.stop()
        run.close_frames()
        # Not interruptible: the output must be closed before Python goes on.
        run.wait(None)

    def __enter__(self) -> Pipeline:
        return self

    def __exit__(
        self,
        kind: Optional[type[BaseException]],
        value: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> None:
        run = self._run
        if run is None:
            return
        if kind is not None:
            self._stop_and_wait(run)
            self._report = run.report_if_any()
            return
        run.close_frames()
        self._report = self.wait()

    def __repr__(self) -> str:
        state = "not started" if self._run is None else ("ended" if self._run.done else "running")
        return f"Pipeline(devices={self.devices!r}, outputs={self.outputs!r}, {state})"


class Builder(_NativeBuilder):
    """Configures a pipeline as ``wgpipe::Pipeline::builder()`` does in Rust: grid, frames,
    steps per frame, the kernel (Gray-Scott or your WGSL), fields, devices, I/O, analysis and
    the sink; ``build()`` checks everything, opens the devices and returns a Pipeline."""

    def build(self) -> Pipeline:  # type: ignore[override]
        return Pipeline._from_prepared(super().build())


def run(
    config: Optional[PathLike] = None,
    *,
    overrides: Optional[Mapping[str, Any]] = None,
    progress: _progress.ProgressOption = True,
    resume: bool = False,
) -> Report:
    """Runs a TOML config (None: the built-in default, configs/gray-scott.toml) exactly as
    ``wgpipe run`` does, ``overrides`` applied as ``--set`` would (``{"run.frames": 50}``),
    and returns its report. Ctrl-C stops it cleanly and raises ``wgpipe.Interrupted``."""
    with Pipeline(config, overrides=overrides, resume=resume) as pipeline:
        return pipeline.run(progress=progress)


def devices() -> list[dict[str, Any]]:
    """The adapters wgpu sees (index, name, backend, type, driver, and whether the default
    selection opens it), as ``wgpipe devices`` lists them."""
    return adapters()
