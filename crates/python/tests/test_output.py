"""wgpipe.open: any backend's output read back as numpy arrays and xarray Datasets. ADIOS2
needs its C library: WGPIPE_ADIOS2_LIB (the adios2 wheel's libadios2_c.so), as `.ci/run` sets."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pytest
import xarray

import wgpipe
from conftest import small


@pytest.mark.parametrize("sink,name", [("hdf5", "o.h5"), ("zarr", "o.zarr"), ("raw", "o"), ("adios2", "o.bp")])
def test_every_backend_reads_back_what_was_written(tmp_path: Path, sink: str, name: str) -> None:
    out = tmp_path / name
    written = []
    overrides = small(out, **{"output.sink": sink, "output.fields": ["u", "v"]})
    with wgpipe.Pipeline(overrides=overrides) as p:
        for frame in p.frames():
            written.append({k: a.copy() for k, a in frame.items()} | {"step": frame.step})
    with wgpipe.open(out) as o:
        assert o.format == sink and o.complete and list(o) == ["stream0"]
        assert [(f.name, f.dtype, f.shape, f.dims) for f in o.fields] == [
            ("u", "<f4", [64, 64], ["y", "x"]),
            ("v", "<f4", [64, 64], ["y", "x"]),
        ]
        s = o["stream0"]
        assert s.frames == 6 and s.complete
        assert list(s.steps) == [w["step"] for w in written]
        for field in ("u", "v"):
            assert np.array_equal(s[field], np.stack([w[field] for w in written]))
        assert np.array_equal(s.read("v", slice(1, 6, 2)), np.stack([written[i]["v"] for i in (1, 3, 5)]))


def test_to_xarray_names_dimensions_and_steps(tmp_path: Path) -> None:
    out = tmp_path / "x.h5"
    wgpipe.run(overrides=small(out), progress=False)
    ds = wgpipe.open(out).to_xarray()
    assert isinstance(ds, xarray.Dataset)
    assert ds["v"].dims == ("frame", "y", "x") and ds["v"].shape == (6, 64, 64)
    assert list(ds["step"].values) == [8, 16, 24, 32, 40, 48]
    assert ds.attrs["kernel"] == "gray-scott" and np.isclose(ds.attrs["feed"], 0.037)
    with h5py.File(out) as f:
        assert np.array_equal(ds["v"].values, f["stream0/v"][:])


def test_a_missing_output_and_unknown_names_say_what_there_is(tmp_path: Path) -> None:
    with pytest.raises(wgpipe.StorageError, match="cannot open output"):
        wgpipe.open(tmp_path / "nothing.h5")
    out = tmp_path / "n.h5"
    wgpipe.run(overrides=small(out), progress=False)
    o = wgpipe.open(out)
    with pytest.raises(KeyError, match="no stream 'stream9': the output holds stream0"):
        o["stream9"]
    with pytest.raises(KeyError, match="no field \"w\": the output holds v"):
        o["stream0"]["w"]
    o.close()
    with pytest.raises(ValueError, match="the output was closed"):
        o.fields
