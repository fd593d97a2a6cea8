"""Checks a wgpipe HDF5 output's analysis arrays against a float64 recomputation from its stored
fields, written from the definition (the ADIOS2 Gray-Scott tutorial's PDF):

  N bins between the frame's min and max, per slice along the slowest axis; bin width
  w = (max - min) / N; left edges min + i*w; a value x counted in bin floor((x - min) / w), the
  maximum in the last bin; a constant frame with every value of a slice in bin N / 2.

A value lying on a bin edge (within the rounding of the device's f32 arithmetic) may fall on
either side; every other value must be in the bin the definition gives. Also checks min, max
(exactly), sum and mean (to f32 rounding), the downsampled field (block means, partial blocks at
the far edges) and that xarray names the axes.

usage: analysis_check.py OUTPUT.h5 FIELD[,FIELD...] BINS DOWNSAMPLE
"""
import sys

import h5py
import numpy as np
import xarray as xr

path, fields, bins, k = sys.argv[1], sys.argv[2].split(","), int(sys.argv[3]), int(sys.argv[4])


def check_pdf(where, x, lo, hi, counts):
    n0 = x.shape[0]
    assert counts.shape == (n0, bins), f"{where}: PDF shape {counts.shape}, want {(n0, bins)}"
    w = (hi - lo) / bins
    for s in range(n0):
        v = x[s].ravel()
        got = counts[s].astype(np.int64)
        assert got.sum() == v.size, f"{where} slice {s}: {got.sum()} counts for {v.size} values"
        if w == 0:
            want = np.zeros(bins, dtype=np.int64)
            want[bins // 2] = v.size
            assert (got == want).all(), f"{where} slice {s}: a constant frame belongs in bin {bins // 2}: {got}"
            continue
        r = (v - lo) / w
        exact = np.clip(np.floor(r), 0, bins - 1).astype(np.int64)
        # Within the f32 rounding of (x - min) / w of an edge: either neighbouring bin.
        tol = 1e-4
        a = np.clip(np.floor(r - tol), 0, bins - 1).astype(np.int64)
        b = np.clip(np.floor(r + tol), 0, bins - 1).astype(np.int64)
        sure = a == b
        lower = np.bincount(exact[sure], minlength=bins)
        upper = lower + np.bincount(a[~sure], minlength=bins) + np.bincount(b[~sure], minlength=bins)
        bad = np.nonzero((got < lower) | (got > upper))[0]
        assert bad.size == 0, (
            f"{where} slice {s}: bins {bad.tolist()} hold {got[bad].tolist()}, the definition gives "
            f"{lower[bad].tolist()}..{upper[bad].tolist()}"
        )
    return int(np.count_nonzero(counts))


def block_means(x, k):
    sums, ones = x, np.ones_like(x)
    for axis in range(x.ndim):
        starts = np.arange(0, x.shape[axis], k)
        sums = np.add.reduceat(sums, starts, axis=axis)
        ones = np.add.reduceat(ones, starts, axis=axis)
    return sums / ones


frames = values = 0
with h5py.File(path, "r") as f:
    streams = [name for name, g in f.items() if isinstance(g, h5py.Group)]
    assert streams, "no streams"
    for name in streams:
        g = f[name]
        for F in fields:
            data = g[F][...].astype(np.float64)
            mins, maxs = g[F + "_min"][...], g[F + "_max"][...]
            sums, means = g[F + "_sum"][...], g[F + "_mean"][...]
            assert mins.shape == (data.shape[0],), f"{name}/{F}_min has shape {mins.shape}"
            for t in range(data.shape[0]):
                x = data[t]
                where = f"{name}/{F} frame {t}"
                assert float(mins[t]) == x.min(), f"{where}: min {mins[t]} against {x.min()}"
                assert float(maxs[t]) == x.max(), f"{where}: max {maxs[t]} against {x.max()}"
                scale = np.abs(x).sum()
                assert abs(float(sums[t]) - x.sum()) <= 1e-5 * scale, f"{where}: sum {sums[t]} against {x.sum()}"
                assert abs(float(means[t]) - x.mean()) <= 1e-5 * scale / x.size, f"{where}: mean {means[t]}"
                if bins:
                    lo, hi = float(mins[t]), float(maxs[t])
                    edges = lo + np.arange(bins) * ((hi - lo) / bins)
                    got = g[F + "_bins"][t].astype(np.float64)
                    assert np.abs(got - edges).max() <= 1e-6 * max(abs(lo), abs(hi), hi - lo), f"{where}: edges"
                    values += check_pdf(where, x, lo, hi, g[F + "_pdf"][t])
                if k > 1:
                    want = block_means(x, k)
                    got = g[F + "_ds"][t].astype(np.float64)
                    assert got.shape == want.shape, f"{where}: downsampled shape {got.shape}, want {want.shape}"
                    err = np.abs(got - want).max()
                    assert err <= 1e-5 * max(np.abs(want).max(), 1e-6), f"{where}: downsampled differs by {err}"
        frames += g[fields[0]].shape[0]
        ds = xr.open_dataset(path, group=name, engine="h5netcdf", phony_dims="sort")
        F = fields[0]
        print(f"{name}: {F}_min dims {ds[F + '_min'].dims}", end="")
        if bins:
            print(f", {F}_pdf dims {ds[F + '_pdf'].dims}", end="")
        print()
        ds.close()
print(f"{frames} frames of {len(fields)} fields checked, {values} non-empty bins")
print("ok")
