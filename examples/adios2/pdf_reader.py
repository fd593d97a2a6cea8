"""Reads a wgpipe run streamed over ADIOS2's SST engine while it runs, and computes, for every
frame of the chosen fields, the PDF of its values per slice along the slowest axis: the
analysis of the ADIOS2 Gray-Scott tutorial (its pdf_calc), for wgpipe's variables.

A PDF has BINS bins between the frame's min and max: bin width w = (max - min) / BINS, a value
x counts in bin floor((x - min) / w), the maximum in the last bin; a constant frame puts every
value of a slice in bin BINS / 2.

Prints one JSON line per frame received: stream, step, and per field its min, max and the
PDF counts ([slices][BINS]); at the end one line with the frames received and each stream's
last step (a writer whose full queue discards skips steps: compare with the frames written).

usage: pdf_reader.py STREAM [--fields u,v] [--bins 100] [--delay SECONDS] [--timeout SECONDS]
  STREAM    the name the writer streams to (output.path; the contact file is STREAM.sst)
  --delay   sleep this long after each frame (to play a slow reader)
"""

import argparse
import json
import sys
import time

import adios2
import numpy


def pdf(values, bins):
    """Counts per slice along the first axis, as the module doc defines them."""
    lo, hi = float(values.min()), float(values.max())
    slices = values.reshape(values.shape[0], -1) if values.ndim > 1 else values.reshape(1, -1)
    counts = numpy.zeros((slices.shape[0], bins), dtype=numpy.int64)
    if hi == lo:
        counts[:, bins // 2] = slices.shape[1]
        return lo, hi, counts
    width = (hi - lo) / bins
    index = numpy.floor((slices.astype(numpy.float64) - lo) / width).astype(numpy.int64)
    index = numpy.clip(index, 0, bins - 1)
    for s in range(slices.shape[0]):
        counts[s] = numpy.bincount(index[s], minlength=bins)
    return lo, hi, counts


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("stream")
    p.add_argument("--fields", default="u,v")
    p.add_argument("--bins", type=int, default=100)
    p.add_argument("--delay", type=float, default=0.0)
    p.add_argument("--timeout", type=float, default=60.0)
    a = p.parse_args()
    fields = [f for f in a.fields.split(",") if f]

    adios = adios2.Adios()
    io = adios.declare_io("pdf_reader")
    io.set_engine("SST")
    io.set_parameters({"OpenTimeoutSecs": str(int(a.timeout)), "DataTransport": "WAN"})
    received = 0
    last_step = {}
    with adios2.Stream(io, a.stream, "r") as s:
        for _ in s.steps():
            names = s.available_variables()
            streams = sorted({n.split("/", 1)[0] for n in names})
            for stream in streams:
                if f"{stream}/step" not in names:
                    continue
                step = int(s.read(f"{stream}/step"))
                line = {"stream": stream, "step": step, "fields": {}}
                for field in fields:
                    name = f"{stream}/{field}"
                    if name not in names:
                        continue
                    lo, hi, counts = pdf(numpy.asarray(s.read(name)), a.bins)
                    line["fields"][field] = {"min": lo, "max": hi, "pdf": counts.tolist()}
                print(json.dumps(line), flush=True)
                received += 1
                last_step[stream] = step
            if a.delay:
                time.sleep(a.delay)
    print(json.dumps({"received": received, "last_step": last_step}), flush=True)


if __name__ == "__main__":
    sys.exit(main())
