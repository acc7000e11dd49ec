"""Every public docstring the API reference shows documents its parameters.

The documentation build (``make docs``) validates the docstrings it renders with numpydoc, warnings
as errors; this test runs the same checks, with the same exclusions read from ``docs/conf.py``, on
the same objects (each module page's ``__all__``, the registered calibrators with their public
methods, the top-level functions), so a missing ``Parameters`` entry fails ``make test`` in
seconds rather than the documentation build minutes later.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from pathlib import Path

import pytest

validate = pytest.importorskip("numpydoc.validate", reason="numpydoc (the test extra) is not installed")

CONF = Path(__file__).resolve().parents[1] / "docs" / "conf.py"


def _conf_values() -> dict[str, object]:
    """The literal assignments of docs/conf.py this test needs, read without running it."""
    wanted = {"numpydoc_validation_checks", "numpydoc_validation_exclude", "API_PAGES"}
    values: dict[str, object] = {}
    for node in ast.parse(CONF.read_text()).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if name in wanted:
                values[name] = ast.literal_eval(node.value)
    missing = wanted - values.keys()
    assert not missing, f"docs/conf.py no longer assigns {sorted(missing)} as literals"
    return values


def _documented_names(api_pages: dict[str, tuple[str, str]]) -> list[str]:
    """Import paths of the objects the API pages render, with the public members of classes."""
    import bayescal
    from bayescal._registry import REGISTRY

    names = [f"{modname}.{n}" for _, modname in api_pages.values()
             for n in getattr(importlib.import_module(modname), "__all__", []) if not n.startswith("_")]
    names += [target.replace(":", ".") for target in REGISTRY.values()]
    names += [f"bayescal.{n}" for n in ("calibrators", "make_calibrator", "load", "save", "CalibratedClassifier")
              if n in bayescal.__all__]
    from sklearn.base import BaseEstimator, ClassifierMixin

    skipped_bases = (BaseEstimator, ClassifierMixin, object)
    out: list[str] = []
    for name in dict.fromkeys(names):
        out.append(name)
        modname, _, attr = name.rpartition(".")
        obj = getattr(importlib.import_module(modname), attr)
        if not inspect.isclass(obj):
            continue
        for member, _ in inspect.getmembers(obj):
            if member.startswith("_"):
                continue
            owner = next((k for k in obj.__mro__ if member in vars(k)), None)
            if owner is None or owner in skipped_bases or issubclass(BaseEstimator, owner):
                continue
            value = vars(owner)[member]
            if callable(value) or isinstance(value, (property, classmethod, staticmethod)):
                out.append(f"{name}.{member}")
    return out


_CONF = _conf_values()
_NAMES = _documented_names(_CONF["API_PAGES"])  # type: ignore[arg-type]
_EXCLUDE = [re.compile(p) for p in _CONF["numpydoc_validation_exclude"]]  # type: ignore[union-attr]
_CHECKS = set(_CONF["numpydoc_validation_checks"])  # type: ignore[arg-type]


@pytest.mark.parametrize("name", [n for n in _NAMES if not any(p.search(n) for p in _EXCLUDE)])
def test_public_docstring_passes_the_documentation_checks(name: str) -> None:
    errors = [f"{code}: {message}" for code, message in validate.validate(name)["errors"] if code in _CHECKS]
    assert not errors, f"{name}: " + "; ".join(errors)
