"""Fit + predict time of BBQ and ENIR against scikit-learn's IsotonicRegression.

Run: ``.venv/bin/python benchmarks/bench_bbq_enir.py [--sizes 1e3 1e4 1e5 1e6] [--repeat 3]``.

Data: scores from Beta(2, 5) (negatives) and Beta(5, 2) (positives), 40% positives,
rounded to 6 decimals (so large N has ties, as real classifier outputs do). Each timing is
the best of ``--repeat`` runs of fit on N rows then predict_proba on the same N rows; the
ratio is calibrator time / isotonic time. The machine is shared, so read the best-of
numbers, not single runs.

Measured 2026-11-22 on the shared 2-core machine (load average about 12), best of 3:

    N        isotonic s  BBQ s   BBQ/iso  ENIR s  ENIR/iso
    1e3      0.0006      0.0020  3.5      0.012   20
    1e4      0.0019      0.041   21       0.033   17     (BBQ best of 10: 0.012 s)
    1e5      0.087       0.34    3.9      0.14    1.6
    1e6      1.00        1.73    1.7      1.70    1.7

BBQ scores all ~1000 binnings in one vectorised pass; its time goes to the sort, the bin
look-ups and the prediction. ENIR's path runs as a numba-compiled event loop (one heap
event per merge of two groups; compiled once and cached on disk, about 3 s of CPU the
first time); its time goes to the unique/sort of the scores and the scoring of the 100
models. Small N is dominated by fixed per-call costs (milliseconds).
"""

from __future__ import annotations

import argparse

import numpy as np
from _timing import best_time
from sklearn.isotonic import IsotonicRegression

from bayescal.baselines.bbq import BBQ
from bayescal.baselines.enir import ENIR


def data(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.4).astype(int)
    s = np.round(np.where(y == 1, rng.beta(5, 2, n), rng.beta(2, 5, n)), 6)
    return s, y


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
        print(
            f"{n:>9} {t_iso:>11.4f} {t_bbq:>9.4f} {t_bbq / t_iso:>8.2f} {t_enir:>9.4f} {t_enir / t_iso:>9.2f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
