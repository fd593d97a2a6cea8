"""A sink of your own in Python: every field of every stream into a .npy file (numpy's
format, memory-mapped), sized when the run begins. wgpipe calls it on its writer thread with
the GIL held, in the sink protocol's order, with frames that view the pipeline's buffers.

    python examples/python/numpy_sink.py [--out npy-out] [--frames 30]

Then `numpy.load("npy-out/stream0.v.npy", mmap_mode="r")` reads a stream's field.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

import wgpipe


class NpySink:
    """Stores each field of each stream as one `.npy` array shaped (frames, *field_shape)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.arrays: dict[tuple[int, str], np.memmap] = {}

    def begin(self, layout: wgpipe.Layout) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        for s, stream in enumerate(layout.streams):
            frames = stream.expected_frames or 0
            for field in layout.fields:
                path = self.directory / f"{stream.name}.{field.name}.npy"
                shape = (frames, *field.shape)
                self.arrays[(s, field.name)] = np.lib.format.open_memmap(
                    path, mode="w+", dtype=np.dtype(field.dtype), shape=shape
                )

    def write(self, frame: wgpipe.Frame) -> None:
        for name, values in frame.items():
            self.arrays[(frame.stream_index, name)][frame.index] = values

    def finish(self, outcome: wgpipe.SinkOutcome) -> None:
        for array in self.arrays.values():
            array.flush()
        state = "failed" if outcome.failed else "complete" if all(outcome.complete) else "incomplete"
        print(f"{self.directory}: {sum(outcome.frames)} frames stored, {state}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="npy-out")
    parser.add_argument("--frames", type=int, default=30)
    parser.add_argument("--size", type=int, default=256)
    args = parser.parse_args()

    sink = NpySink(Path(args.out))
    report = (
        wgpipe.Pipeline.builder()
        .grid(args.size, args.size)
        .frames(args.frames)
        .gray_scott(seed=1, noise=0.01)
        .fields(["u", "v"])
        .sink(sink)
        .build()
        .run()
    )
    print(report)
    v = np.load(Path(args.out) / "stream0.v.npy", mmap_mode="r")
    print(f"stream0.v.npy: {v.shape} {v.dtype}, last frame's mean v = {float(v[-1].mean()):.4f}")


if __name__ == "__main__":
    main()
