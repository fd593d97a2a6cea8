"""Reads a wgpipe HDF5 output with h5py alone (for tests/disk_full.rs).

usage: read_hdf5.py FILE OUTDIR

Prints a JSON summary (root and stream `complete`, `frames` attribute, dataset shapes) and
writes every stored field of every stream as little-endian float32 bytes to
OUTDIR/<stream_index>.<field>.bin, and its steps as little-endian uint64 to
OUTDIR/<stream_index>.steps.bin, so the caller can compare them bit for bit.
"""

import json
import sys

import h5py
import numpy as np


def main(path, outdir):
    summary = {"streams": {}}
    with h5py.File(path, "r") as f:
        summary["complete"] = bool(f.attrs["complete"])
        fields = [x.decode() if isinstance(x, bytes) else str(x) for x in f.attrs["fields"]]
        for name, group in f.items():
            index = int(group.attrs["stream_index"])
            stream = {
                "complete": bool(group.attrs["complete"]),
                "frames": int(group.attrs["frames"]) if "frames" in group.attrs else None,
                "shapes": {},
            }
            for field in fields:
                data = group[field][...]
                stream["shapes"][field] = list(data.shape)
                np.ascontiguousarray(data, dtype="<f4").tofile(f"{outdir}/{index}.{field}.bin")
            np.ascontiguousarray(group["steps"][...], dtype="<u8").tofile(f"{outdir}/{index}.steps.bin")
            summary["streams"][name] = stream
    print(json.dumps(summary))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
