"""Fit + predict time of BBQ and ENIR against scikit-learn's IsotonicRegression.

Run: ``.venv/bin/python benchmarks/bench_bbq_enir.py [--sizes 1e3 1e4 1e5 1e6] [--repeat 3]``.

Data: scores from Beta(2, 5) (negatives) and Beta(5, 2) (positives), 40% positives,
rounded to 6 decimals (so large N has ties, as real classifier outputs do). Each timing is
the best of ``--repeat`` runs of fit on N rows then predict_proba on the same N rows; the
ratio is calibrator time / isotonic time. The machine is shared, so read the best-of
numbers, not single runs.

Measured 2026-11-22 on the shared 2-core machine (load average about 8), best of 3:

    N        isotonic s  BBQ s   BBQ/iso  ENIR s  ENIR/iso
    1e3      0.0006      0.0020  3.6      0.0024  4.2
    1e4      0.0028      0.032   11       0.047   17
    1e5      0.081       0.31    3.9      0.49    6.1
    1e6      0.84        1.78    2.1      6.7     8.0

BBQ scores all ~1000 binnings in one vectorised pass (its time is the stable sort, the
bin look-ups and the prediction). ENIR's cost at large N is the event loop of the exact
near-isotonic path (a heap in pure Python, one event per merge of two groups).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from sklearn.isotonic import IsotonicRegression

from bayescal.baselines.bbq import BBQ
from bayescal.baselines.enir import ENIR


def data(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.4).astype(int)
    s = np.round(np.where(y == 1, rng.beta(5, 2, n), rng.beta(2, 5, n)), 6)
    return s, y


def best_time(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=float, nargs="+", default=[1e3, 1e4, 1e5, 1e6])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    def isotonic(s, y):
        IsotonicRegression(out_of_bounds="clip", y_min=0, y_max=1).fit(s, y).predict(s)

    def bbq(s, y):
        BBQ().fit(s, y).predict_proba(s)

    def enir(s, y):
        ENIR().fit(s, y).predict_proba(s)

    print(f"{'N':>9} {'isotonic s':>11} {'BBQ s':>9} {'BBQ/iso':>8} {'ENIR s':>9} {'ENIR/iso':>9}")
    for n in (int(x) for x in args.sizes):
        s, y = data(n)
        t_iso = best_time(lambda: isotonic(s, y), args.repeat)
        t_bbq = best_time(lambda: bbq(s, y), args.repeat)
        t_enir = best_time(lambda: enir(s, y), args.repeat)
        print(f"{n:>9} {t_iso:>11.4f} {t_bbq:>9.4f} {t_bbq / t_iso:>8.2f} {t_enir:>9.4f} {t_enir / t_iso:>9.2f}",
              flush=True)


if __name__ == "__main__":
    main()
