"""Folders of the checkout that tests read, found from this file's place (``tests/``) once.

Test modules sit in subfolders mirroring the package (``tests/baselines/``,
``tests/bayesian/``), so each computing its own ``parents[k]`` would break when moved;
they import these constants instead.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
MODELS = ROOT / "models"
NOTEBOOKS = ROOT / "notebooks"
BENCHMARKS = ROOT / "benchmarks"
REFERENCE_DIR = ROOT.parent / "shared" / "reference"


def benchmark_module(name: str):
    """The script ``benchmarks/<name>.py`` imported as a module (its ``main`` not run).

    The module is registered in :data:`sys.modules` before it runs, as ``import`` would:
    a dataclass defined in the script looks its module up there, so a test that imports
    the script first (run alone, ``pytest -k ...``) would otherwise fail.
    """
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module
