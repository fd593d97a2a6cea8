"""Reads a wgpipe HDF5 file and a raw directory with h5py and numpy only, as a user would, and
prints what it found as JSON: per dataset or data file its numpy dtype string, shape, chunk
shape and axis names, and for every frame whether its bytes equal the file the test wrote
into EXPECTED_DIR/<stream>.<field>.<frame>.bin.

usage: read_outputs.py OUT.h5 RAW_DIR EXPECTED_DIR
"""

import json
import os
import sys

import h5py
import numpy


def expected(directory, stream, field, frame):
    with open(os.path.join(directory, f"{stream}.{field}.{frame}.bin"), "rb") as f:
        return f.read()


def read_hdf5(path, expected_dir):
    report = {"datasets": {}}
    with h5py.File(path, "r") as f:
        report["axis_order"] = str(f.attrs["axis_order"])
        report["fields"] = [str(x) for x in f.attrs["fields"]]
        for stream in f:
            for field in report["fields"]:
                ds = f[stream][field]
                report["datasets"][f"{stream}/{field}"] = {
                    "dtype": ds.dtype.str,
                    "shape": list(ds.shape),
                    "chunks": list(ds.chunks),
                    "dims": [str(d) for d in ds.attrs["dims"]],
                    "frames_equal": [
                        ds[i].tobytes() == expected(expected_dir, stream, field, i) for i in range(ds.shape[0])
                    ],
                }
    return report


def read_raw(directory, expected_dir):
    with open(os.path.join(directory, "run.json")) as f:
        run = json.load(f)
    report = {"axis_order": run["axis_order"], "files": {}}
    for s in run["streams"]:
        for field, data_file in zip(run["fields"], s["data_files"]):
            with open(os.path.join(directory, data_file[: -len(".bin")] + ".json")) as f:
                meta = json.load(f)
            a = numpy.fromfile(os.path.join(directory, data_file), dtype=meta["numpy_dtype"])
            a = a.reshape(-1, *meta["shape"])
            report["files"][data_file] = {
                "dtype": a.dtype.str,
                "shape": list(a.shape),
                "dims": meta["dims"],
                "run_json_agrees": all(meta[k] == field[k] for k in ("numpy_dtype", "shape", "dims")),
                "frames_equal": [
                    a[i].tobytes() == expected(expected_dir, s["name"], field["name"], i) for i in range(a.shape[0])
                ],
            }
    return report


if __name__ == "__main__":
    h5, raw, expected_dir = sys.argv[1:4]
    print(json.dumps({"hdf5": read_hdf5(h5, expected_dir), "raw": read_raw(raw, expected_dir)}))
