"""The type stubs describe the native module as it is, and the examples type-check against
them with mypy --strict, as an editor's checker would."""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys
from pathlib import Path

import wgpipe
from wgpipe import _wgpipe
from conftest import REPO

STUB = Path(_wgpipe.__file__).with_name("_wgpipe.pyi")


def stubbed() -> dict[str, set[str]]:
    """Per top-level name of the stub: the public members it declares (empty for functions)."""
    tree = ast.parse(STUB.read_text())
    names: dict[str, set[str]] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            members = set()
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    members.add(item.name)
                elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    members.add(item.target.id)
            names[node.name] = {m for m in members if not m.startswith("_")}
        elif isinstance(node, ast.FunctionDef):
            names[node.name] = set()
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names[node.target.id] = set()
    return names


def test_the_stub_declares_every_public_name_and_member_of_the_native_module() -> None:
    stubs = stubbed()
    public = {n for n in dir(_wgpipe) if not n.startswith("_")} | {"__version__"}
    assert set(stubs) == public, f"only in the module: {public - set(stubs)}; only in the stub: {set(stubs) - public}"
    for name, members in stubs.items():
        obj = getattr(_wgpipe, name)
        if not inspect.isclass(obj) or issubclass(obj, BaseException):
            continue
        actual = {m for m in vars(obj) if not m.startswith("_")}
        assert members == actual, f"{name}: only in the module {actual - members}, only in the stub {members - actual}"


def test_the_package_ships_its_stubs() -> None:
    assert STUB.is_file() and STUB.with_name("py.typed").is_file()
    assert set(wgpipe.__all__) <= set(dir(wgpipe))


def test_the_examples_and_the_package_pass_mypy_strict() -> None:
    for target in (["-p", "wgpipe"], [str(REPO / "examples" / "python")]):
        checked = subprocess.run(
            [sys.executable, "-m", "mypy", "--strict", "--no-incremental", *target], capture_output=True, text=True
        )
        assert checked.returncode == 0, checked.stdout + checked.stderr
