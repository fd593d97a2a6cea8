"""Reads a wgpipe Zarr store with zarr-python 3 and xarray only, as a user would, and prints
what it found as JSON: per stream and array its dtype, shape, chunk and shard shapes,
dimension names and attributes, the steps, and for every frame whether its bytes equal the
file the test wrote into EXPECTED_DIR/<stream>.<field>.<frame>.bin, once as zarr-python
reads it and once as xarray does (xr.open_zarr(STORE, group=STREAM)).

usage: read_zarr.py STORE EXPECTED_DIR
"""

import json
import os
import sys

import numpy
import xarray
import zarr


def expected(directory, stream, field, frame):
    with open(os.path.join(directory, f"{stream}.{field}.{frame}.bin"), "rb") as f:
        return f.read()


def plain(value):
    """JSON-able attribute values (numpy scalars to Python ones)."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if hasattr(value, "item"):
        return value.item()
    return value


def main(store, expected_dir):
    root = zarr.open_group(store, mode="r")
    report = {
        "zarr_format": root.metadata.zarr_format,
        "attributes": plain(dict(root.attrs)),
        "streams": {},
    }
    fields = [f["name"] for f in root.attrs["fields"]]
    for stream in root.attrs["streams"]:
        group = root[stream]
        ds = xarray.open_zarr(store, group=stream, consolidated=False)
        s = {"attributes": plain(dict(group.attrs)), "arrays": {}, "steps": [int(x) for x in group["steps"][:]]}
        s["xarray_steps"] = [int(x) for x in ds["steps"].values]
        s["xarray_dims"] = {name: list(ds[name].dims) for name in fields}
        for field in fields:
            a = group[field]
            x = ds[field].values
            s["arrays"][field] = {
                "dtype": a.dtype.str,
                "shape": list(a.shape),
                "chunks": list(a.chunks),
                "shards": list(a.shards) if a.shards is not None else None,
                "dimension_names": list(a.metadata.dimension_names),
                "attributes": plain(dict(a.attrs)),
                "compressors": [type(c).__name__ for c in a.compressors],
                "xarray_dtype": x.dtype.str,
                "frames_equal": [
                    numpy.ascontiguousarray(a[i]).tobytes() == expected(expected_dir, stream, field, i)
                    for i in range(a.shape[0])
                ],
                "xarray_frames_equal": [
                    numpy.ascontiguousarray(x[i]).tobytes() == expected(expected_dir, stream, field, i)
                    for i in range(x.shape[0])
                ],
            }
        report["streams"][stream] = s
    json.dump(report, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
