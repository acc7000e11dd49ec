"""Time :func:`bayescal.metrics.ece_sweep` beside the sweep as its definition reads.

The sweep's error uses the largest number of equal-mass bins :math:`b^*` whose fractions of
positives do not decrease. Read literally, that bins all n samples again for every b up to
:math:`b^* + 1` (O(n b*)), which the reference column does (the package's own binning, one call
per b). The package reads each binning off running sums of the sorted samples instead
(O(b*^2) up to a logarithm). Two kinds of data: a calibrated classifier (s ~ U(0, 1),
y ~ Bernoulli(s), where b* stays in the tens to hundreds) and a nearly separable one (logits
N(+-4, 1) by class, AUC about 0.9999, where b* reaches thousands). Both columns give the same b*
(checked here; the tests check it against the definition on tied, weighted and edge-sitting
data). The reference is run only where it takes under about a minute.

Usage::

    python benchmarks/ece_sweep_speed.py            # writes benchmarks/results/ece_sweep_speed.md

Writes the table with the date, the machine and the command above it.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _timing import best_of
from make_evidence import machine

from bayescal import metrics
from bayescal.metrics import _sort, _sorted_bin_stats

OUT = Path(__file__).parent / "results" / "ece_sweep_speed.md"
REFERENCE_UP_TO = {"calibrated": 10**6, "nearly separable": 10**5}


def data(kind: str, n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    if kind == "calibrated":
        p = rng.uniform(size=n)
        return (rng.uniform(size=n) < p).astype(int), p
    y = rng.integers(0, 2, n)
    return y, 1.0 / (1.0 + np.exp(-rng.normal(4.0 * (2 * y - 1), 1.0)))


def sweep_by_definition(y: np.ndarray, p: np.ndarray) -> int:
    """b*: every b binned from the n samples until the fractions of positives decrease."""
    s = _sort(p, y.astype(np.float64), np.ones(p.size))
    best = 1
    for b in range(2, p.size + 1):
        if np.any(np.diff(_sorted_bin_stats(s, b, "quantile").fraction_positive) < 0):
            break
        best = b
    return best


def main() -> None:
    metrics.ece_sweep(*data("calibrated", 1000))  # compile the kernel before timing
    rows = []
    for kind in ("calibrated", "nearly separable"):
        for n in (10**4, 10**5, 10**6):
            y, p = data(kind, n)
            fast, value = best_of(lambda: metrics.ece_sweep(y, p), 3 if n < 10**6 else 1)
            if n <= REFERENCE_UP_TO[kind]:
                slow, b_star = best_of(lambda: sweep_by_definition(y, p), 1)
                same = np.isclose(value, metrics.ece(y, p, n_bins=b_star), rtol=1e-12, atol=0)
                reference = f"{slow:.2f}" + ("" if same else " (a different b*!)")
            else:
                reference, b_star = "not run", "-"
            rows.append(f"| {kind} | {n:.0e} | {b_star} | {fast:.3f} | {reference} |")
            print(rows[-1], flush=True)
    table = "\n".join(
        [
            "| data | n | b* | ece_sweep s | by definition s (rebinning per b) |",
            "|---|---|---|---|---|",
            *rows,
        ]
    )
    command = "python benchmarks/ece_sweep_speed.py"
    OUT.write_text(
        "# ece_sweep: running sums against rebinning per b\n\n"
        f"- {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} ({machine()}): `{command}`\n\n"
        f"{table}\n"
    )
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
