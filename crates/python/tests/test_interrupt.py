"""Ctrl-C (SIGINT) stops a run cleanly, then raises KeyboardInterrupt: every frame written is
kept and the output closed. Each case runs a Python process and interrupts it from outside,
as a terminal does, once it has reported frames written."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import h5py

from conftest import small

RUN = """
import sys, wgpipe
overrides = {overrides!r}
try:
    wgpipe.run(overrides=overrides, progress=False)
    print("FINISHED", flush=True)
except wgpipe.Interrupted as e:
    print("INTERRUPTED", e.report.frames, isinstance(e, KeyboardInterrupt), flush=True)
"""

FRAMES = """
import sys, wgpipe
overrides = {overrides!r}
p = wgpipe.Pipeline(overrides=overrides)
try:
    with p:
        for frame in p.frames():
            print("FRAME", frame.index, flush=True)
    print("FINISHED", flush=True)
except KeyboardInterrupt:
    print("INTERRUPTED", p.report.frames, flush=True)
"""


def interrupted(script: str, out: Path, wait_for: str) -> list[str]:
    """Runs `script`, sends SIGINT once a line of its output starts with `wait_for`, and
    returns its output's lines."""
    overrides = small(out, **{"run.frames": 100000, "grid.rows": 128, "grid.cols": 128})
    code = textwrap.dedent(script.format(overrides=overrides))
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    lines = []
    for line in proc.stdout:
        lines.append(line.strip())
        if line.startswith(wait_for):
            proc.send_signal(signal.SIGINT)
            break
    rest, _ = proc.communicate(timeout=120)
    lines += rest.splitlines()
    assert proc.returncode == 0, lines
    return lines


def frames_in(out: Path) -> int:
    with h5py.File(out) as f:
        return int(f["stream0"].attrs["frames"])


def test_ctrl_c_during_run_raises_interrupted_after_a_clean_stop(tmp_path: Path) -> None:
    out = tmp_path / "run.h5"
    # The file exists once the run began: wait for it from a watcher line of our own.
    script = RUN.replace("try:", "import threading, time, pathlib\n"
                         "def watch():\n"
                         "    while not pathlib.Path(overrides['output.path']).exists(): time.sleep(0.05)\n"
                         "    time.sleep(1.0)\n"
                         "    print('STARTED', flush=True)\n"
                         "threading.Thread(target=watch, daemon=True).start()\n"
                         "try:")
    lines = interrupted(script, out, "STARTED")
    verdict = [line for line in lines if line.startswith("INTERRUPTED")]
    assert verdict, lines
    _, frames, is_keyboard_interrupt = verdict[0].split()
    assert is_keyboard_interrupt == "True"
    assert 0 < int(frames) < 100000, "interrupted after frames were written"
    assert frames_in(out) == int(frames), "every frame reported written is in the file, which was closed"


def test_ctrl_c_in_a_frames_loop_stops_cleanly(tmp_path: Path) -> None:
    out = tmp_path / "frames.h5"
    lines = interrupted(FRAMES, out, "FRAME 5")
    assert "FINISHED" not in lines
    verdict = [line for line in lines if line.startswith("INTERRUPTED")]
    assert verdict, lines
    frames = int(verdict[0].split()[1])
    assert frames >= 6, "the frames seen were written before"
    assert frames_in(out) == frames
