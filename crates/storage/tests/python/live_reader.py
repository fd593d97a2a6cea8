"""Follows a wgpipe output while the run writes it, as a live reader would, and reports for
every frame when it became visible and whether it was whole.

Each frame of field `u` (float64) of stream `s0` holds, as the harness writes it, the time it
was computed (ns since the epoch) in element 0, its index in element 1, and index + k / 1000
in element k >= 2: a frame missing some of its data shows other values there.

usage: live_reader.py BACKEND PATH FRAMES [OPENED_MARKER]
  BACKEND  hdf5 (SWMR, h5py), zarr (zarr-python) or sst (the adios2 Python API)
  OPENED_MARKER  a file created once the reader has the output open, so that the harness can
                 wait for it before it writes frames (the reader's start, Python and its
                 imports, may take longer than a short run)
Prints one JSON object: frames seen, partial frames, when the reader had the output open
(`opened_ns`), and per frame [computed, visible] in ns since the epoch.
"""

import json
import sys
import time

import numpy


def check(data, index):
    """Whether `data` is frame `index`, whole."""
    k = numpy.arange(2, data.shape[0], dtype=numpy.float64)
    return data[1] == index and bool(numpy.all(data[2:] == index + k / 1000.0))


OPENED = []
MARKER = []


def opened():
    """Records when the output was opened and tells the harness (see OPENED_MARKER)."""
    OPENED.append(time.time_ns())
    if MARKER:
        open(MARKER[0], "w").close()


def follow_hdf5(path, frames, seen):
    import h5py

    deadline = time.time() + 60
    while True:
        try:
            f = h5py.File(path, "r", libver="latest", swmr=True)
            ds = f["s0/u"]
            opened()
            break
        except (OSError, KeyError):
            if time.time() > deadline:
                raise
            time.sleep(0.001)
    with f:
        while len(seen) < frames and time.time() < deadline:
            ds.refresh()
            for i in range(len(seen), ds.shape[0]):
                seen.append((time.time_ns(), ds[i]))
            time.sleep(0.0005)


def follow_zarr(path, frames, seen):
    import zarr

    deadline = time.time() + 60
    while len(seen) < frames and time.time() < deadline:
        try:
            a = zarr.open_array(f"{path}/s0/u", mode="r")
        except Exception:
            time.sleep(0.001)
            continue
        if not OPENED:
            opened()
        for i in range(len(seen), a.shape[0]):
            seen.append((time.time_ns(), a[i]))
        time.sleep(0.0005)


def follow_sst(path, frames, seen):
    import adios2

    adios = adios2.Adios()
    io = adios.declare_io("live_reader")
    io.set_engine("SST")
    io.set_parameters({"OpenTimeoutSecs": "60", "DataTransport": "WAN"})
    with adios2.Stream(io, path, "r") as s:
        opened()
        for _ in s.steps():
            if "s0/u" in s.available_variables():
                seen.append((time.time_ns(), numpy.asarray(s.read("s0/u"))))


def main(backend, path, frames):
    seen = []
    {"hdf5": follow_hdf5, "zarr": follow_zarr, "sst": follow_sst}[backend](path, frames, seen)
    partial = [i for i, (_, d) in enumerate(seen) if not check(d, i)]
    times = [[int(d[0]), t] for t, d in seen]
    opened = OPENED[0] if OPENED else None
    json.dump({"frames_seen": len(seen), "partial": partial, "opened_ns": opened, "frames": times}, sys.stdout)


if __name__ == "__main__":
    MARKER.extend(sys.argv[4:5])
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
