"""Checks wgpipe's f16 output against its f32 output of the same run, from outside Rust.

usage: f16_check.py F32.h5 F16.h5 [RAW_DIR]

Every field of every frame of stream0: the f16 file stores numpy float16 (h5py reads it as
such), and each value is bit for bit numpy's float16 rounding of the f32 value (IEEE round to
nearest, ties to even), which is what the GPU's pack2x16float gives on lavapipe and llvmpipe.
RAW_DIR, if given, is the raw sink's output of the f16 run: its metadata says "<f2" and its
data file holds the same halves. Prints the largest absolute error of f16 against f32 per
field: the precision cost of f16 output.
"""

import json
import os
import sys

import h5py
import numpy as np


def main():
    f32_path, f16_path = sys.argv[1], sys.argv[2]
    raw_dir = sys.argv[3] if len(sys.argv) > 3 else None
    with h5py.File(f32_path, "r") as a, h5py.File(f16_path, "r") as b:
        # The fields are the datasets with a frame axis and a grid (the steps are 1-D).
        fields = sorted(k for k, d in a["stream0"].items() if isinstance(d, h5py.Dataset) and d.ndim > 1)
        assert fields, "no fields in stream0"
        for name in fields:
            full = a["stream0"][name][...]
            half = b["stream0"][name]
            assert full.dtype == np.float32, f"{name}: f32 output holds {full.dtype}"
            assert half.dtype == np.float16, f"{name}: f16 output holds {half.dtype}, not float16"
            half = half[...]
            assert half.shape == full.shape, f"{name}: shapes {half.shape} vs {full.shape}"
            rounded = full.astype(np.float16)
            differ = np.count_nonzero(rounded.view(np.uint16) != half.view(np.uint16))
            assert differ == 0, f"{name}: {differ} of {half.size} halves are not numpy's rounding of the f32 value"
            error = float(np.max(np.abs(half.astype(np.float64) - full.astype(np.float64))))
            top = float(np.max(np.abs(full)))
            print(f"{name}: {half.shape[0]} frames, {half.size} values equal numpy's float16 rounding; "
                  f"max abs error {error:.3e} (max |value| {top:.3f})")
            if raw_dir is not None:
                with open(os.path.join(raw_dir, f"stream0.{name}.json")) as meta:
                    numpy_dtype = json.load(meta)["numpy_dtype"]
                assert numpy_dtype == "<f2", f"{name}: raw metadata says {numpy_dtype!r}, not '<f2'"
                raw = np.fromfile(os.path.join(raw_dir, f"stream0.{name}.bin"), dtype=numpy_dtype)
                assert np.array_equal(raw.view(np.uint16), half.reshape(-1).view(np.uint16)), \
                    f"{name}: the raw file's halves differ from the HDF5 file's"
                print(f"{name}: raw metadata '<f2', data equal to the HDF5 halves")
    print("ok")


if __name__ == "__main__":
    main()
