"""Checks, with h5py and numpy, the HDF5 files of one run compressed with ZFP fixed rate on the
device and on the host (the H5Z-ZFP filter plugin), and stored uncompressed:

- both compressed files carry the ZFP filter (32013) on every field dataset;
- every chunk holds the same bytes in both (read raw, without the filter);
- the values h5py decodes are the same in both, and close to the uncompressed run's.

Usage: zfp_device_check.py DEVICE.h5 HOST.h5 PLAIN.h5 MAX_ERROR FIELD...
Prints one line per field, then "ok".
"""
import sys

import h5py
import numpy as np

try:
    import hdf5plugin  # noqa: F401  (registers H5Z-ZFP for h5py from PyPI, which bundles its HDF5)
except ImportError:
    pass  # a system h5py: its HDF5 finds the system's plugin (Debian: hdf5-filter-plugin-zfp-serial)

ZFP = 32013


def main(device_path, host_path, plain_path, max_error, field_names):
    with h5py.File(device_path, "r") as dev, h5py.File(host_path, "r") as host, h5py.File(plain_path, "r") as plain:
        streams = [s for s, g in dev.items() if isinstance(g, h5py.Group)]
        names = [(s, f) for s in streams for f in field_names]
        assert names, "no streams in the device file"
        for sname, name in names:
            d, h, p = dev[sname][name], host[sname][name], plain[sname][name]
            for ds in (d, h):
                filters = ds.id.get_create_plist().get_nfilters()
                ids = [ds.id.get_create_plist().get_filter(i)[0] for i in range(filters)]
                assert ZFP in ids, f"{ds.file.filename}:{ds.name} has filters {ids}, not ZFP"
            assert d.shape == h.shape == p.shape, (d.shape, h.shape, p.shape)
            assert d.chunks == (1,) + d.shape[1:], f"device chunks {d.chunks}"
            frames = d.shape[0]
            for i in range(frames):
                origin = (i,) + (0,) * (d.ndim - 1)
                _, dbytes = d.id.read_direct_chunk(origin)
                _, hbytes = h.id.read_direct_chunk(origin)
                assert dbytes == hbytes, (
                    f"{sname}/{name} frame {i}: the device's chunk ({len(dbytes)} bytes) differs from "
                    f"H5Z-ZFP's ({len(hbytes)} bytes)"
                )
            dv, hv, pv = d[...], h[...], p[...]
            assert np.array_equal(dv, hv), f"{sname}/{name}: decoded values differ"
            error = float(np.max(np.abs(dv.astype(np.float64) - pv)))
            assert 0 < error <= max_error, f"{sname}/{name}: error {error} against the uncompressed run"
            print(f"{sname}/{name}: {frames} frames, chunks identical, error {error:.3g}, "
                  f"{len(dbytes)} bytes per chunk")
    print("ok")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), sys.argv[5:])
