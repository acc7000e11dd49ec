"""Speed of KDECalibrator (fit on N scores + predict N scores) against scikit-learn's isotonic regression.

Usage::

    .venv/bin/python benchmarks/bench_kde.py [--max-log10-n 6] [--repeats 3]

For N = 10^3 .. 10^max training scores and as many query scores (probabilities from two
Gaussian classes on the logit scale), prints the best-of-``repeats`` wall time of each kernel
and of ``sklearn.isotonic.IsotonicRegression(out_of_bounds="clip")`` fit + predict on the
same data, and their ratio. The target is under 5 s at N = 10^6 on 2 cores.
"""

from __future__ import annotations

import argparse

import numpy as np
from _timing import best_time
from scipy.special import expit
from sklearn.isotonic import IsotonicRegression

from bayescal.baselines.kde import KERNELS, KDECalibrator


def simulate(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.3).astype(int)
    s = expit(np.where(y == 1, rng.normal(1.0, 1.5, n), rng.normal(-1.0, 1.0, n)))
    return s, y, expit(rng.normal(0.0, 2.0, n))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--max-log10-n", type=int, default=6)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    print(f"{'N':>9} {'kernel':>13} {'kde s':>8} {'isotonic s':>11} {'ratio':>7}")
    for k in range(3, args.max_log10_n + 1):
        n = 10**k
        s, y, q = simulate(n, seed=k)
        iso = best_time(lambda: IsotonicRegression(out_of_bounds="clip").fit(s, y).predict(q), args.repeats)
        for kernel in KERNELS:
            kde = best_time(lambda: KDECalibrator(kernel=kernel).fit(s, y).predict_proba(q), args.repeats)
            print(f"{n:>9} {kernel:>13} {kde:>8.3f} {iso:>11.3f} {kde / iso:>7.2f}", flush=True)


if __name__ == "__main__":
    main()
