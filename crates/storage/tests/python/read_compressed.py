"""Reads the compressed datasets of a wgpipe HDF5 file with h5py, as any HDF5 reader would
(the library's own shuffle and deflate filters), and prints per dataset as JSON: its
filters, whether every frame equals EXPECTED_DIR/<stream>.<field>.<frame>.bin byte for byte,
every stored chunk's filter mask (0: compressed by the whole pipeline) and a SHA-256 of the
stored chunk bytes (to compare files written by different thread counts).

usage: read_compressed.py OUT.h5 EXPECTED_DIR
"""

import hashlib
import json
import os
import sys

import h5py


def expected(directory, stream, field, frame):
    with open(os.path.join(directory, f"{stream}.{field}.{frame}.bin"), "rb") as f:
        return f.read()


def main(path, expected_dir):
    report = {}
    with h5py.File(path, "r") as f:
        for stream in f:
            for field in f.attrs["fields"]:
                ds = f[stream][str(field)]
                masks, digest = [], hashlib.sha256()
                for i in range(ds.id.get_num_chunks()):
                    info = ds.id.get_chunk_info(i)
                    masks.append(info.filter_mask)
                    digest.update(ds.id.read_direct_chunk(info.chunk_offset)[1])
                report[f"{stream}/{field}"] = {
                    "compression": ds.compression,
                    "compression_opts": ds.compression_opts,
                    "shuffle": ds.shuffle,
                    "frames_equal": [
                        ds[i].tobytes() == expected(expected_dir, stream, str(field), i) for i in range(ds.shape[0])
                    ],
                    "filter_masks": masks,
                    "chunk_sha256": digest.hexdigest(),
                }
    print(json.dumps(report))


if __name__ == "__main__":
    main(*sys.argv[1:3])
