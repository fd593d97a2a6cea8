"""Reads a wgpipe ADIOS2 BP5 output with the adios2 Python API only, as a user would, and
prints what it found as JSON: attributes, per variable its type, shape and steps, the step
values, and for every frame whether its bytes equal the file the test wrote into
EXPECTED_DIR/<stream>.<field>.<frame>.bin.

usage: read_bp.py OUT.bp EXPECTED_DIR
"""

import json
import os
import sys

import adios2
import numpy


def expected(directory, stream, field, frame):
    with open(os.path.join(directory, f"{stream}.{field}.{frame}.bin"), "rb") as f:
        return f.read()


def main(path, expected_dir):
    report = {"attributes": {}, "variables": {}, "steps": {}, "frames_equal": {}}
    with adios2.FileReader(path) as f:
        for name, info in f.available_attributes().items():
            report["attributes"][name] = {"type": info["Type"], "value": info["Value"]}
        variables = f.available_variables()
        for name, info in variables.items():
            report["variables"][name] = {
                "type": info["Type"],
                "shape": info["Shape"],
                "steps": int(info["AvailableStepsCount"]),
            }
        for name, info in variables.items():
            stream, field = name.split("/", 1)
            steps = int(info["AvailableStepsCount"])
            if field == "step":
                values = f.read(name, step_selection=[0, steps])
                report["steps"][stream] = [int(x) for x in numpy.atleast_1d(values)]
            else:
                report["frames_equal"][name] = [
                    numpy.ascontiguousarray(f.read(name, step_selection=[i, 1])).tobytes()
                    == expected(expected_dir, stream, field, i)
                    for i in range(steps)
                ]
    # Step by step, as the ADIOS2 tutorial's pdf-calc reads gs.bp: every step must hold its
    # stream's fields (a step without variables would fail such a reader).
    report["walked_steps"] = []
    with adios2.Stream(path, "r") as s:
        for _ in s:
            names = sorted(s.available_variables().keys())
            report["walked_steps"].append(names)
    json.dump(report, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
