"""ZFP-compressed outputs as a user reads them from PyPI's packages. HDF5 with h5py: that h5py
carries its own HDF5 (2.x), which loads no system filter plugin, and `import hdf5plugin` gives it
H5Z-ZFP (the guide's advice). Both ways wgpipe compresses with ZFP are read: fixed rate encoded
on the device, and fixed accuracy filtered on the host. What h5py decodes must equal what
wgpipe's reader decodes (HDF5 1.10 with Debian's plugin, or wgpipe's own decoder). Zarr with
zarr-python and xarray (numcodecs' zfpy codec): the device's streams in a Zarr store decode to
the values the HDF5 file of the same run holds."""

from __future__ import annotations

from pathlib import Path

import h5py
import hdf5plugin
import numpy as np
import pytest

import wgpipe
import xarray as xr
import zarr
from conftest import REPO, small


@pytest.mark.parametrize(
    "compression,on", [("zfp:rate=8", "device"), ("zfp:rate=8", "host"), ("zfp:accuracy=1e-4", "auto")]
)
def test_h5py_with_hdf5plugin_decodes_what_wgpipe_reads(tmp_path: Path, compression: str, on: str) -> None:
    out = tmp_path / "z.h5"
    overrides = small(out, **{"output.compression": compression, "output.compress_on": on, "grid.cols": 61})
    wgpipe.run(overrides=overrides, progress=False)
    with wgpipe.open(out) as o:
        ours = o["stream0"]["v"]
    with h5py.File(out) as f:
        v = f["stream0/v"]
        plist = v.id.get_create_plist()
        filters = [plist.get_filter(i)[0] for i in range(plist.get_nfilters())]
        assert hdf5plugin.ZFP_ID in filters, filters
        theirs = v[...]
    assert theirs.shape == ours.shape == (6, 64, 61)
    assert np.array_equal(theirs, ours)
    # Compressed, not stored: the values differ from a plain run's, but not by much.
    plain = tmp_path / "plain.h5"
    wgpipe.run(overrides=small(plain, **{"grid.cols": 61}), progress=False)
    with h5py.File(plain) as f:
        error = float(np.max(np.abs(f["stream0/v"][...].astype(np.float64) - theirs)))
    assert 0 < error < 0.01, error


def test_zarr_python_and_xarray_decode_the_devices_streams_as_h5py_does(tmp_path: Path) -> None:
    # 3-D, not a multiple of 4 along any axis: partial blocks are padded as zfp pads them.
    run = {"grid.shape": [9, 14, 11], "run.frames": 6, "run.steps_per_frame": 8}
    zfp = {"output.compression": "zfp:rate=8", "output.compress_on": "device"}
    store, h5 = tmp_path / "z.zarr", tmp_path / "z.h5"
    for path, sink in ((store, "zarr"), (h5, "hdf5")):
        overrides = {**run, **zfp, "output.sink": sink, "output.path": str(path)}
        wgpipe.run(REPO / "configs" / "gray-scott-3d.toml", overrides=overrides, progress=False)
    with h5py.File(h5) as f:
        want = f["stream0/v"][...]
    array = zarr.open_group(store, mode="r")["stream0"]["v"]
    assert [c.to_dict()["name"] for c in array.metadata.codecs] == ["numcodecs.zfpy"]
    got = np.asarray(array[...])
    assert got.shape == want.shape == (6, 9, 14, 11)
    assert np.array_equal(got, want)
    with xr.open_zarr(store, group="stream0", consolidated=False) as ds:
        assert ds["v"].dims == ("time", "z", "y", "x")
        assert np.array_equal(ds["v"].values, want)
    with wgpipe.open(store) as o:
        assert np.array_equal(o["stream0"]["v"], want)
