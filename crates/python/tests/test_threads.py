"""The GIL is released while the devices compute and the writer writes: another Python thread
keeps running during a run."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import wgpipe
from conftest import small


def test_a_second_thread_keeps_running_during_a_run(tmp_path: Path) -> None:
    counts: list[int] = []
    stop = threading.Event()

    def count() -> None:
        n = 0
        while not stop.is_set():
            n += 1
            if n % 1000 == 0:
                counts.append(n)

    worker = threading.Thread(target=count)
    worker.start()
    try:
        # A run of a few seconds on lavapipe: while it runs, the main thread is inside wgpipe.
        start = time.monotonic()
        before = len(counts)
        report = wgpipe.run(overrides=small(tmp_path / "t.h5", **{"grid.rows": 256, "grid.cols": 256,
                                                                   "run.frames": 8, "run.steps_per_frame": 64}),
                            progress=False)
        during = len(counts) - before
        elapsed = time.monotonic() - start
    finally:
        stop.set()
        worker.join()
    assert report.frames == 8
    # A thread that runs Python only between the run's GIL-held moments would count a few
    # hundred thousand at most; released, it counts through most of the run.
    assert elapsed > 0.5, f"the run took {elapsed:.2f} s: too short to tell"
    assert during * 1000 > 200_000 * elapsed, f"{during * 1000} counted in {elapsed:.2f} s"


def test_frames_release_the_gil_while_waiting(tmp_path: Path) -> None:
    ticks: list[float] = []
    stop = threading.Event()

    def tick() -> None:
        while not stop.is_set():
            ticks.append(time.monotonic())
            time.sleep(0.005)

    worker = threading.Thread(target=tick)
    worker.start()
    try:
        overrides = small(tmp_path / "f.h5", **{"grid.rows": 256, "grid.cols": 256, "run.frames": 6,
                                                "run.steps_per_frame": 64})
        with wgpipe.Pipeline(overrides=overrides) as p:
            start = time.monotonic()
            for _ in p.frames():
                pass
            end = time.monotonic()
    finally:
        stop.set()
        worker.join()
    during = [t for t in ticks if start <= t <= end]
    # Ticking every 5 ms: with the GIL held while waiting for frames it could not tick at all.
    assert len(during) >= 0.3 * (end - start) / 0.005, (len(during), end - start)
