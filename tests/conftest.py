"""Shared fixtures: seeded generators and the seed authors' reference data.

Test modules sit in folders mirroring the package (``tests/baselines/``, ``tests/bayesian/``,
top-level modules' tests in ``tests/``). The shared helper modules (``_calibrators``,
``_strategies``, ``_paths``) stay in ``tests/``; this folder is put on ``sys.path`` here so
that every test module, at any depth, imports them by their plain names.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import settings

# The default suite draws the same Hypothesis examples on every run ("ci": a run is red only for
# a change, not for a newly drawn example); HYPOTHESIS_PROFILE=explore draws new ones each run.
settings.register_profile("ci", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

_TESTS = str(Path(__file__).resolve().parent)
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)

from _paths import REFERENCE_DIR  # noqa: E402


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20261122)


@pytest.fixture(scope="session")
def reference_dir() -> Path:
    """``../shared/reference`` beside the checkout; tests that need it skip when it is absent."""
    if not REFERENCE_DIR.is_dir():
        pytest.skip(
            f"reference data folder {REFERENCE_DIR} is absent (it sits beside the checkout as ../shared/reference)"
        )
    return REFERENCE_DIR
