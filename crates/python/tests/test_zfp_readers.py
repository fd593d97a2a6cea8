"""ZFP-compressed HDF5 outputs as a user with h5py from PyPI reads them: that h5py carries its
own HDF5 (2.x), which loads no system filter plugin, and `import hdf5plugin` gives it H5Z-ZFP
(the guide's advice). Both ways wgpipe compresses with ZFP are read: fixed rate encoded on the
device, and fixed accuracy filtered on the host. What h5py decodes must equal what wgpipe's
reader decodes (HDF5 1.10 with Debian's plugin, or wgpipe's own decoder)."""

from __future__ import annotations

from pathlib import Path

import h5py
import hdf5plugin
import numpy as np
import pytest

import wgpipe
from conftest import small


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
