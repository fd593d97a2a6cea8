"""In-situ analysis of the ADIOS2 tutorial's 3-D Gray-Scott run: the PDF of v in every frame,
computed on the GPU (wgpipe's device analysis) and plotted live with matplotlib while the
simulation goes on. The fields are stored too (the config's HDF5 output), every frame.

    python examples/python/insitu_pdfs.py [--frames 40] [--size 64] [--png pdfs.png]

With a display, a window shows the newest frame's PDF as it arrives; without one (a server,
CI), the plot is drawn off-screen and the last frame's is saved to --png. Either way the loop
keeps pace with the GPU: a frame is handed over as soon as it is stored, and a slow loop
slows the simulation rather than filling memory.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
import numpy as np

import wgpipe

CONFIG = Path(__file__).resolve().parents[2] / "configs" / "gray-scott-3d.toml"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=40, help="frames to run (default 40)")
    parser.add_argument("--size", type=int, default=64, help="grid edge: size³ cells (default 64)")
    parser.add_argument("--bins", type=int, default=100, help="PDF bins, as the tutorial's pdf_calc (100)")
    parser.add_argument("--out", default="gray-scott-3d.h5", help="HDF5 output (default gray-scott-3d.h5)")
    parser.add_argument("--png", default="pdfs.png", help="where the last plot goes without a display")
    args = parser.parse_args()

    overrides = {
        "grid.shape": [args.size] * 3,
        "run.frames": args.frames,
        "analysis.fields": ["v"],
        "analysis.pdf_bins": args.bins,
        "output.path": args.out,
        "output.overwrite": True,
    }
    interactive = matplotlib.get_backend().lower() not in ("agg", "pdf", "svg", "ps", "cairo")
    if interactive:
        plt.ion()
    figure, axes = plt.subplots(figsize=(7, 4))
    (line,) = axes.plot([], [], drawstyle="steps-post")
    axes.set_xlabel("v")
    axes.set_ylabel("probability density")
    axes.set_yscale("log")

    with wgpipe.Pipeline(CONFIG, overrides=overrides) as pipeline:
        for frame in pipeline.frames():
            # The device's PDF per x-slice (slices, bins) and the bins' left edges: summed over
            # the slices and normalised, the PDF of the whole grid.
            counts = frame["v_pdf"].sum(axis=0, dtype=np.float64)
            edges = np.asarray(frame["v_bins"], dtype=np.float64)
            width = edges[1] - edges[0] if len(edges) > 1 else 1.0
            density = counts / max(counts.sum() * width, np.finfo(np.float64).tiny)
            # Empty bins left out (NaN) rather than drawn at a floor of the log scale.
            line.set_data(edges, np.where(density > 0, density, np.nan))
            axes.relim()
            axes.autoscale_view()
            axes.set_title(f"PDF of v, frame {frame.index} (step {frame.step}): v in "
                           f"[{float(frame['v_min']):.3f}, {float(frame['v_max']):.3f}]")
            if interactive:
                figure.canvas.draw_idle()
                plt.pause(0.001)
            frame.release()
    report = pipeline.report
    assert report is not None
    print(report)
    if not interactive:
        figure.savefig(args.png, dpi=100)
        print(f"last frame's PDF: {args.png}; the fields: {args.out}")


if __name__ == "__main__":
    main()
