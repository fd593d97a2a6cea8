"""Reading outputs back: ``wgpipe.open(path)`` opens what any sink wrote (HDF5, Zarr, raw,
ADIOS2 BP5) the way wgpipe's own reader does, including a killed run's output (as many frames
as were stored completely), and gives numpy arrays per stream and field, or an xarray
Dataset."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any, Optional, Union

import numpy as np

from ._wgpipe import Field, NativeOutput, StoredStream, open_native

if TYPE_CHECKING:
    import xarray

PathLike = Union[str, "os.PathLike[str]"]


class StreamView(Mapping[str, np.ndarray]):
    """One stream of an output: a mapping of field name to an array of every stored frame,
    shaped ``(frames, *field_shape)``, read when asked for."""

    def __init__(self, output: Output, stream: StoredStream) -> None:
        self._output = output
        self._stream = stream

    @property
    def name(self) -> str:
        return self._stream.name

    @property
    def frames(self) -> int:
        """Frames stored completely."""
        return self._stream.frames

    @property
    def complete(self) -> bool:
        """Whether the run finished the stream with every expected frame."""
        return self._stream.complete

    @property
    def steps(self) -> np.ndarray:
        """The simulation step of every stored frame."""
        return np.asarray(self._output._native.steps(self.name), dtype=np.uint64)

    @property
    def attributes(self) -> dict[str, Any]:
        """The stream's metadata (kernel parameters, seed, ...)."""
        return self._output._native.stream_attributes(self.name)

    def read(self, field: str, frames: Optional[slice] = None) -> np.ndarray:
        """Frames ``frames`` (all by default) of ``field``, shaped ``(frames, *field_shape)``."""
        return self._output._native.read(self.name, field, frames)

    def __getitem__(self, field: str) -> np.ndarray:
        return self.read(field)

    def __iter__(self) -> Iterator[str]:
        return iter(f.name for f in self._output.fields)

    def __len__(self) -> int:
        return len(self._output.fields)

    def __repr__(self) -> str:
        return f"<wgpipe stream {self.name!r}: {self.frames} frames, complete={self.complete}>"


class Output(Mapping[str, StreamView]):
    """An output opened for reading: a mapping of stream name to StreamView. ``fields`` says
    what every frame holds; ``to_xarray(stream)`` gives a Dataset with named dimensions, the
    steps as a coordinate and the attributes."""

    def __init__(self, path: PathLike) -> None:
        self._native: NativeOutput = open_native(os.fspath(path))

    @property
    def path(self) -> str:
        return os.fspath(self._native.path)

    @property
    def format(self) -> str:
        """Which sink wrote it: "hdf5", "zarr", "raw" or "adios2"."""
        return self._native.format

    @property
    def fields(self) -> list[Field]:
        return self._native.fields

    @property
    def streams(self) -> list[StoredStream]:
        return self._native.streams

    @property
    def complete(self) -> bool:
        """Whether the run finished with every stream complete."""
        return self._native.complete

    @property
    def attributes(self) -> dict[str, Any]:
        """Run-level metadata (the config, adapters, wgpipe's version, ...)."""
        return self._native.attributes

    def __getitem__(self, stream: str) -> StreamView:
        for s in self._native.streams:
            if s.name == stream:
                return StreamView(self, s)
        names = ", ".join(s.name for s in self._native.streams)
        raise KeyError(f"no stream {stream!r}: the output holds {names}")

    def __iter__(self) -> Iterator[str]:
        return iter(s.name for s in self._native.streams)

    def __len__(self) -> int:
        return len(self._native.streams)

    def to_xarray(self, stream: Optional[str] = None) -> xarray.Dataset:
        """One stream as an xarray Dataset: a variable per field over ``(frame, *dims)``,
        ``step`` as a coordinate along ``frame``, the stream's and the run's attributes.
        ``stream`` may be left out when the output holds one."""
        import xarray

        view = self[self._only_stream(stream)]
        variables = {}
        for field in self.fields:
            attrs = {k: v for k, v in (("units", field.units), ("long_name", field.long_name)) if v is not None}
            variables[field.name] = (("frame", *field.dims), view.read(field.name), attrs)
        attrs = {**self.attributes, **view.attributes}
        return xarray.Dataset(variables, coords={"step": ("frame", view.steps)}, attrs=attrs)

    def _only_stream(self, stream: Optional[str]) -> str:
        if stream is not None:
            return stream
        names = [s.name for s in self._native.streams]
        if len(names) != 1:
            raise ValueError(f"the output holds {len(names)} streams ({', '.join(names)}): name one")
        return names[0]

    def close(self) -> None:
        """Closes the output's files."""
        self._native.close()

    def __enter__(self) -> Output:
        return self

    def __exit__(
        self,
        kind: Optional[type[BaseException]],
        value: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<wgpipe output {self.path!r} ({self.format}): streams {list(self)}, complete={self.complete}>"


def open(path: PathLike) -> Output:
    """Opens the output at ``path`` (an HDF5 file, a Zarr store, a raw or ADIOS2 BP5
    directory) for reading."""
    return Output(path)
