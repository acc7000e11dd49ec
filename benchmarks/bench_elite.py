"""Fit + predict time of ELiTE against scikit-learn's IsotonicRegression, with the growth in N.

Run: ``.venv/bin/python benchmarks/bench_elite.py [--sizes 1e4 1e5 1e6] [--repeat 2] [--exact 1e4]``.

Data: scores from Beta(2, 5) (negatives) and Beta(5, 2) (positives), 40% positives,
continuous (no ties), so the tie collapse does not shrink the problem. Each timing is the
best of ``--repeat`` runs of fit on N rows then ``predict_proba`` on the same N rows. The
growth exponent is the least-squares slope of log time on log N. ``--exact`` sizes are also
timed with ``max_points=None`` (the trend filter on every distinct score). The machine is
shared by about eight engineers, so the load average is printed and the best-of numbers
are the ones to read. The first ELiTE call also loads (or compiles) the numba kernels; a
warm-up fit on 1000 rows runs before timing.

Measured 2026-11-22 on the shared 2-core machine (load average 10.6 -> 10.8), best of 2:

    N        isotonic s  ELiTE s  ELiTE/iso  ADMM iters (50 penalties)
    1e4      0.0024      0.84     346        6997
    1e5      0.080       0.97     12         5631
    1e6      1.16        4.84     4.2        -
    growth exponent 1e4..1e6: isotonic 1.34 (noisy at 1e4), ELiTE 0.38
    exact (max_points=None) N=1e4: 4.7 s; N=1e5: 563 s (before over-relaxation, which
    halved the iterations, at load 10)

With the default ``max_points=2000`` the trend filter sees at most 2000 points whatever N,
so the ADMM path (about 6000 iterations of O(2000) work) costs a fixed ~0.8 s and the rest
(sort, tie collapse, 50 likelihood evaluations by interpolation, prediction) grows like
N log N: the targets (1e5 under 10 s, 1e6 under 100 s) hold with a wide margin. On every
distinct score (``max_points=None``) the path costs about iterations x N.
"""

from __future__ import annotations

import argparse
import os

import numpy as np
from _timing import best_time
from sklearn.isotonic import IsotonicRegression

from bayescal.baselines.elite import ELiTE


def data(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.4).astype(int)
    s = np.where(y == 1, rng.beta(5, 2, n), rng.beta(2, 5, n))
    return s, y


def growth(sizes: list[int], times: list[float]) -> float:
    """Least-squares slope of log(time) on log(N)."""
    return float(np.polyfit(np.log(sizes), np.log(times), 1)[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=float, nargs="+", default=[1e4, 1e5, 1e6])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--exact", type=float, nargs="*", default=[1e4])
    args = parser.parse_args()

    def isotonic(s, y):
        IsotonicRegression(out_of_bounds="clip", y_min=0, y_max=1).fit(s, y).predict(s)

    def elite(s, y, **params):
        model = ELiTE(**params).fit(s, y)
        model.predict_proba(s)
        return model

    elite(*data(1000))  # load the compiled kernels
    print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"{'N':>9} {'isotonic s':>11} {'ELiTE s':>9} {'ELiTE/iso':>10} {'ADMM iters':>11}")
    sizes, t_isos, t_elites = [], [], []
    for n in (int(x) for x in args.sizes):
        s, y = data(n)
        t_iso = best_time(lambda s=s, y=y: isotonic(s, y), args.repeat)
        t_el = best_time(lambda s=s, y=y: elite(s, y), args.repeat)
        iters = int(elite(s, y).n_iter_.sum()) if n <= 10**5 else -1
        sizes.append(n), t_isos.append(t_iso), t_elites.append(t_el)
        print(f"{n:>9} {t_iso:>11.4f} {t_el:>9.3f} {t_el / t_iso:>10.1f} {iters:>11}", flush=True)
    if len(sizes) > 1:
        print(
            f"growth exponent (time ~ N^a): isotonic a = {growth(sizes, t_isos):.2f}, "
            f"ELiTE a = {growth(sizes, t_elites):.2f}"
        )
    for n in (int(x) for x in args.exact):
        s, y = data(n)
        t_ex = best_time(lambda s=s, y=y: elite(s, y, max_points=None), 1)
        print(f"exact (max_points=None) N={n}: {t_ex:.2f} s")
    print(f"load average at end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
