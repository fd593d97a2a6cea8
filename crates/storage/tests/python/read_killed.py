"""Reads the HDF5 file of a killed run as a user does, with h5py and with xarray (no wgpipe
code), and checks that the frames never written show as missing (for tests/crash.rs).

usage: read_killed.py FILE STREAM:WRITTEN...

For every stream, WRITTEN frames were stored before the kill. Every float field must read NaN
at every frame after them (h5py), xarray must mask them (NaN) and the `steps` coordinate too,
the `frames` attribute must count at least WRITTEN, and the frames written must read as h5py
reads them. Prints one line per stream, then "ok".
"""

import sys

import h5py
import numpy as np
import xarray


def check(path, stream, written):
    with h5py.File(path, "r") as f:
        g = f[stream]
        frames = int(g.attrs["frames"])
        assert frames >= written, f"{stream}: frames says {frames}, {written} were written"
        floats = [n for n, d in g.items() if isinstance(d, h5py.Dataset) and d.dtype.kind == "f" and d.ndim > 1]
        assert floats, f"{stream}: no float fields"
        stored = {}
        for name in floats:
            data = g[name][...]
            assert data.shape[0] >= written, (stream, name, data.shape)
            assert np.isnan(data[written:]).all(), f"{stream}/{name}: frames never written do not read as NaN"
            assert "_FillValue" in g[name].attrs, f"{stream}/{name} has no _FillValue"
            stored[name] = data[:written]
        steps = g["steps"][...]
    ds = xarray.open_dataset(path, group=stream, engine="h5netcdf")
    for name in floats:
        values = ds[name].values
        assert np.isnan(values[written:]).all(), f"xarray {stream}/{name}: frames never written are not masked"
        assert np.array_equal(values[:written], stored[name], equal_nan=True), f"xarray {stream}/{name} differs"
    xsteps = ds["steps"].values
    assert np.isnan(xsteps[written:]).all(), f"xarray {stream}: steps of frames never written: {xsteps}"
    assert np.array_equal(xsteps[:written], steps[:written]), (xsteps, steps)
    ds.close()
    print(f"{stream}: {written} frames of {len(xsteps)}, frames attribute {frames}, fields {floats}")


if __name__ == "__main__":
    for arg in sys.argv[2:]:
        stream, written = arg.rsplit(":", 1)
        check(sys.argv[1], stream, int(written))
    print("ok")
