"""Progress of a run as Python shows it: a tqdm bar (terminals and Jupyter) when tqdm is
installed, else a plain line every few seconds on stderr, or nothing."""

from __future__ import annotations

import importlib
import sys
import time
from typing import Any, Protocol, Union

#: What ``progress=`` accepts: True (a bar if tqdm is installed, else lines), "bar", "lines",
#: or False/None for nothing.
ProgressOption = Union[bool, str, None]

#: Seconds between two plain progress lines.
LINE_INTERVAL = 2.0


class Shown(Protocol):
    """What shows progress: told the counts, then closed."""

    def update(self, progress: dict[str, Any]) -> None: ...

    def close(self, progress: dict[str, Any]) -> None: ...


class _Nothing:
    def update(self, progress: dict[str, Any]) -> None:
        pass

    def close(self, progress: dict[str, Any]) -> None:
        pass


class _Lines:
    """A line on stderr every LINE_INTERVAL seconds, and one at the end."""

    def __init__(self, label: str) -> None:
        self._label = label
        self._start = time.monotonic()
        self._last = self._start

    def _line(self, progress: dict[str, Any]) -> None:
        elapsed = max(time.monotonic() - self._start, 1e-9)
        mb = progress["bytes"] / 1e6
        print(
            f"{self._label}: {progress['written']}/{progress['total']} frames written, "
            f"{mb:.1f} MB, {mb / elapsed:.1f} MB/s",
            file=sys.stderr,
            flush=True,
        )

    def update(self, progress: dict[str, Any]) -> None:
        now = time.monotonic()
        if now - self._last >= LINE_INTERVAL:
            self._last = now
            self._line(progress)

    def close(self, progress: dict[str, Any]) -> None:
        self._line(progress)


class _Bar:
    """A tqdm bar of frames written (tqdm.auto: a widget in Jupyter, text in a terminal)."""

    def __init__(self, label: str, total: int, tqdm: Any) -> None:
        self._bar = tqdm(total=total, unit="frame", desc=label, dynamic_ncols=True)
        self._shown = 0

    def update(self, progress: dict[str, Any]) -> None:
        written = int(progress["written"])
        if written > self._shown:
            self._bar.update(written - self._shown)
            self._shown = written
        self._bar.set_postfix_str(f"{progress['bytes'] / 1e6:.1f} MB", refresh=False)

    def close(self, progress: dict[str, Any]) -> None:
        self.update(progress)
        self._bar.close()


def _tqdm() -> Any:
    """tqdm's bar class (tqdm.auto: a widget in Jupyter), or None without tqdm."""
    try:
        return importlib.import_module("tqdm.auto").tqdm
    except ImportError:
        return None


def show(option: ProgressOption, label: str, total: int) -> Shown:
    """What shows a run's progress for ``progress=option``."""
    if option is None or option is False:
        return _Nothing()
    if option is True or option == "bar":
        tqdm = _tqdm()
        if tqdm is not None:
            return _Bar(label, total, tqdm)
        if option == "bar":
            raise ValueError("progress='bar' needs tqdm: pip install tqdm (or progress=True for plain lines)")
        return _Lines(label)
    if option == "lines":
        return _Lines(label)
    raise ValueError(f"progress={option!r}: use True, False, 'bar' or 'lines'")
