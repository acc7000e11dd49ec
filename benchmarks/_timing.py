"""Timing helper shared by the benchmark scripts (run them from the repository root)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def best_of(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """Run ``fn`` ``repeat`` times; return the best wall time in seconds and the last result."""
    best, out = float("inf"), None
    for _ in range(max(1, int(repeat))):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def best_time(fn: Callable[[], Any], repeat: int) -> float:
    """Best wall time in seconds of ``repeat`` runs of ``fn``."""
    return best_of(fn, repeat)[0]
