"""Shared fixtures: seeded generators and the seed authors' reference data."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

REFERENCE_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "reference"


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
