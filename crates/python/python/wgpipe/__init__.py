"""wgpipe: WGSL compute kernels on any GPU, every frame streamed to storage while the GPU
keeps computing.

Run a TOML config as the ``wgpipe`` command line does::

    report = wgpipe.run("configs/gray-scott.toml", overrides={"run.frames": 50})

Take frames as numpy arrays while the pipeline computes the next ones::

    with wgpipe.Pipeline("configs/gray-scott.toml") as p:
        for frame in p.frames():
            print(frame.index, frame["v"].mean())

Build a pipeline of your own kernel and sink with ``wgpipe.Pipeline.builder()``, and read any
output back with ``wgpipe.open(path)``. The guide's Python page has the rest.
"""

from __future__ import annotations

import os as _os
from collections.abc import Mapping as _Mapping

from . import _wgpipe

# On a headless machine Mesa's Vulkan layer asks Wayland for a display and prints
# "XDG_RUNTIME_DIR is invalid" while wgpu lists adapters; turned off before any is listed,
# as the wgpipe binary does first in main.
if _wgpipe.display_probe_unwanted():
    _os.environ["NODEVICE_SELECT"] = "1"

from ._output import Output, open
from ._pipeline import Builder, Pipeline, SinkProtocol, devices, run
from ._wgpipe import (
    AutoChoice,
    ConfigError,
    DeviceError,
    DeviceShare,
    DiskFullError,
    Error,
    Field,
    Frame,
    Interrupted,
    KernelError,
    Layout,
    ReleasedFrameError,
    Report,
    RunError,
    SinkError,
    SinkOutcome,
    StorageError,
    StoredStream,
    Stream,
    __version__,
)

# A frame is a read-only mapping of field name to array: dict(frame), frame.items() and
# isinstance(frame, Mapping) work as for any mapping.
_Mapping.register(Frame)

__all__ = [
    "AutoChoice",
    "Builder",
    "ConfigError",
    "DeviceError",
    "DeviceShare",
    "DiskFullError",
    "Error",
    "Field",
    "Frame",
    "Interrupted",
    "KernelError",
    "Layout",
    "Output",
    "Pipeline",
    "ReleasedFrameError",
    "Report",
    "RunError",
    "SinkError",
    "SinkOutcome",
    "SinkProtocol",
    "StorageError",
    "StoredStream",
    "Stream",
    "__version__",
    "devices",
    "open",
    "run",
]
