"""Every public function and class on the documentation site has a full docstring.

The site's pages name what they document (``::: module`` or ``::: object`` lines);
each public function and class there needs an ``Examples:`` section with a doctest
(run by ``--doctest-modules``), ``Args:`` when it takes arguments and ``Returns:`` when
it returns something; a class needs ``Args:`` or ``Attributes:`` for its constructor,
and each of its own public methods and properties an ``Examples:`` doctest.
"""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"


def _documented() -> list[str]:
    names = []
    for page in sorted(DOCS.glob("*.md")):
        names += re.findall(r"^::: ([\w.]+)$", page.read_text(encoding="utf-8"), re.M)
    return names


def _resolve(dotted: str) -> object:
    parts = dotted.split(".")
    for split in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        for attribute in parts[split:]:
            obj = getattr(obj, attribute)
        return obj
    raise ImportError(dotted)


def _public(obj: object) -> list[tuple[str, object]]:
    """A module's functions and classes (its __all__, else what it defines), or obj."""
    if not inspect.ismodule(obj):
        return [(obj.__qualname__, obj)]
    names = getattr(obj, "__all__", None) or [
        n for n, v in vars(obj).items() if getattr(v, "__module__", None) == obj.__name__
    ]
    members = [(f"{obj.__name__}.{n}", getattr(obj, n)) for n in names if not n.startswith("_")]
    return [(n, v) for n, v in members if inspect.isfunction(v) or inspect.isclass(v)]


def _problems(name: str, obj: object) -> list[str]:
    doc = inspect.getdoc(obj) or ""
    found = []
    if "Examples:" not in doc or ">>>" not in doc:
        found.append("no Examples: section with a doctest")
    target = obj.__init__ if inspect.isclass(obj) else obj
    try:
        signature = inspect.signature(target)
    except (TypeError, ValueError):
        return found
    takes = [p for p in signature.parameters if p not in ("self", "cls", "_")]
    if inspect.isclass(obj) and takes == ["args", "kwargs"]:  # no constructor of its own
        takes = []
    if takes and not ("Args:" in doc or (inspect.isclass(obj) and "Attributes:" in doc)):
        found.append(f"no Args: for {takes}")
    returns = signature.return_annotation
    if inspect.isfunction(obj) and returns not in (None, "None", inspect.Signature.empty):
        if "Returns:" not in doc:
            found.append("no Returns:")
    return [f"{name}: {problem}" for problem in found]


# the site's pages, and what the packages export (re-exports included)
DOCUMENTED = _documented()
EXPORTED = ["tsallis", "tsallis.distributions", "torch_bridge", "torch_bridge.basis"]


def test_the_site_documents_the_api_and_the_tools():
    assert len(DOCUMENTED) >= 20
    assert {"tsallis.verify", "tsallis.groundtruth", "torch_bridge.entmax"} <= set(DOCUMENTED)


@pytest.mark.parametrize("dotted", DOCUMENTED + EXPORTED)
def test_public_docstrings_are_complete(dotted):
    if dotted.startswith(("torch_bridge", "tsallis.experiments")):  # (the torch extra)
        pytest.importorskip("torch")
    members = _public(_resolve(dotted))
    assert members, dotted
    problems = [p for name, obj in members for p in _problems(name, obj)]
    assert not problems, "\n".join(problems)


def _methods(cls: type) -> list[tuple[str, object]]:
    """A class's own public methods and properties (inherited ones are the base's)."""
    found = []
    for name, member in vars(cls).items():
        target = getattr(member, "fget", None) or getattr(member, "__func__", member)
        if not name.startswith("_") and inspect.isfunction(target):
            found.append((f"{cls.__qualname__}.{name}", target))
    return found


@pytest.mark.parametrize("dotted", DOCUMENTED + EXPORTED)
def test_public_methods_have_examples(dotted):
    """Every public method and property of those classes has an Examples: doctest."""
    if dotted.startswith(("torch_bridge", "tsallis.experiments")):
        pytest.importorskip("torch")
    classes = [obj for _, obj in _public(_resolve(dotted)) if inspect.isclass(obj)]
    bare = [
        name
        for cls in classes
        for name, method in _methods(cls)
        if "Examples:" not in (inspect.getdoc(method) or "") or ">>>" not in inspect.getdoc(method)
    ]
    assert not bare, bare


def test_the_check_can_fail():
    def bare(x: float) -> float:
        """One line."""
        return x

    assert _problems("bare", bare) == [
        "bare: no Examples: section with a doctest",
        "bare: no Args: for ['x']",
        "bare: no Returns:",
    ]
