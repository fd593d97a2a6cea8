"""`cargo xtask bench python`'s measurements, run by the Python that has the wgpipe package
installed (xtask/src/bench/python.rs passes the arguments and reads the JSON this prints).

Per rotation, in an order that rotates between repetitions:
  binary  - the `wgpipe` binary, null sink: its own summary's wall time (its pipeline, from
            the first frame's submission to the closed output) and the process's
  frames  - the same config through `Pipeline.frames()` in this process, every frame's array
            touched (its first element read) and released: the report's wall time
  raw     - the builder's run into the raw sink (Rust), in --out
  numpy   - the same run into a Python sink that writes each field's array with tofile()
and once: how many copies the frames path makes, from the arrays' memory (a view of the
pooled buffer each frame is read back into, recycled through the pool).

argv: wgpipe_binary out_dir rows cols frames steps reps
"""

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

import wgpipe

binary, out_dir = sys.argv[1], Path(sys.argv[2])
rows, cols, frames, steps, reps = map(int, sys.argv[3:8])


def overrides(**extra):
    base = {
        "grid.rows": rows,
        "grid.cols": cols,
        "run.frames": frames,
        "run.steps_per_frame": steps,
        "run.noise": 0.0,
        "output.sink": "null",
        "output.fields": ["v"],
        "io.mode": "async",
    }
    base.update(extra)
    return base


def binary_run():
    sets = [f"--set={k}={json.dumps(v) if isinstance(v, list) else v}" for k, v in overrides().items()]
    start = time.perf_counter()
    done = subprocess.run([binary, "run", *sets, "--progress", "none"], capture_output=True, text=True)
    process = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"the wgpipe binary failed: {done.stderr}")
    found = re.search(r"^(\d+) frames, [\d.]+ MB in ([\d.]+) s", done.stdout, re.M)
    if not found or int(found.group(1)) != frames:
        sys.exit(f"the wgpipe binary's summary has no wall time: {done.stdout}")
    return float(found.group(2)), process


def frames_run():
    start = time.perf_counter()
    seen = 0
    with wgpipe.Pipeline(overrides=overrides()) as p:
        for frame in p.frames():
            frame["v"][0, 0]  # the array made and read, as a user's loop would
            seen += 1
            frame.release()
    process = time.perf_counter() - start
    assert seen == frames and p.report is not None
    return p.report.wall_seconds, process


class NumpySink:
    """Each field of each stream appended to a file of its own with numpy's tofile()."""

    def __init__(self, directory):
        self.directory = directory
        self.files = {}

    def begin(self, layout):
        self.directory.mkdir(parents=True, exist_ok=True)
        for s, stream in enumerate(layout.streams):
            for field in layout.fields:
                self.files[(s, field.name)] = open(self.directory / f"{stream.name}.{field.name}.bin", "wb")

    def write(self, frame):
        for name, values in frame.items():
            values.tofile(self.files[(frame.stream_index, name)])

    def finish(self, outcome):
        for f in self.files.values():
            f.close()


def sink_run(sink, path):
    builder = (
        wgpipe.Pipeline.builder()
        .grid(rows, cols)
        .frames(frames)
        .steps_per_frame(steps)
        .mode("async")
        .gray_scott(seed=0)
    )
    if sink == "raw":
        builder = builder.sink("raw", path=path, overwrite=True)
    else:
        builder = builder.sink(NumpySink(path))
    report = builder.build().run(progress=False)
    assert report.frames == frames
    for f in sorted(path.iterdir()):
        f.unlink()
    path.rmdir()
    return report.wall_seconds


def copies():
    """How the frames path hands its bytes over: each array a view (not a copy) of a pooled
    buffer, the few buffers of the pool recycled frame after frame."""
    addresses, views = set(), True
    with wgpipe.Pipeline(overrides=overrides(**{"run.frames": 32})) as p:
        for frame in p.frames():
            a = frame["v"]
            views &= not a.flags.owndata and not a.flags.writeable
            addresses.add(a.__array_interface__["data"][0])
            del a
            frame.release()
    return {"arrays_view_the_pooled_buffer": views, "distinct_buffers_over_32_frames": len(addresses)}


results = {"binary": [], "binary_process": [], "frames": [], "frames_process": [], "raw": [], "numpy": []}
for rep in range(reps):
    for k in range(4):
        which = (rep + k) % 4
        subprocess.run(["sync"], check=False)
        if which == 0:
            wall, process = binary_run()
            results["binary"].append(wall)
            results["binary_process"].append(process)
        elif which == 1:
            wall, process = frames_run()
            results["frames"].append(wall)
            results["frames_process"].append(process)
        elif which == 2:
            results["raw"].append(sink_run("raw", out_dir / "raw"))
        else:
            results["numpy"].append(sink_run("numpy", out_dir / "numpy"))
results["copies"] = copies()
results["python"] = sys.version.split()[0]
results["numpy_version"] = np.__version__
results["adapters"] = [a["name"] for a in wgpipe.devices() if a["default"]]
results["lp_num_threads"] = os.environ.get("LP_NUM_THREADS")
print(json.dumps(results))
