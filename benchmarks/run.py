"""Speed benchmark: fit + predict of every registered calibrator against the anchors.

Anchors, measured in the same run on the same data: scikit-learn's isotonic regression
(``IsotonicRegression(out_of_bounds="clip")``) and sigmoid calibration
(``sklearn.calibration._SigmoidCalibration``, what ``CalibratedClassifierCV(method="sigmoid")``
fits), and betacal's ``BetaCalibration`` when installed (extra ``bench``).

Each cell times fitting on N scores and predicting N new scores (best of ``--repeat`` runs)
and prints the ratio to scikit-learn isotonic. Usage::

    python benchmarks/run.py                       # N = 1e3 .. 1e6, every calibrator
    python benchmarks/run.py --sizes 1000 100000 --calibrators isotonic kde --json out.json
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from typing import Callable

import numpy as np


def simulated(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Scores from Beta(2,5) negatives and Beta(5,2) positives (pi = 0.4), and query scores."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.4).astype(int)
    s = np.where(y == 1, rng.beta(5, 2, n), rng.beta(2, 5, n))
    q = rng.random(n)
    return s, y, q


def anchors() -> dict[str, Callable]:
    from sklearn.calibration import _SigmoidCalibration
    from sklearn.isotonic import IsotonicRegression
    from scipy.special import logit

    def sk_isotonic(s, y, q):
        return IsotonicRegression(out_of_bounds="clip", y_min=0, y_max=1).fit(s, y).predict(q)

    def sk_sigmoid(s, y, q):
        eps = 1e-12
        return _SigmoidCalibration().fit(logit(np.clip(s, eps, 1 - eps)), y).predict(logit(np.clip(q, eps, 1 - eps)))

    out = {"sklearn_isotonic": sk_isotonic, "sklearn_sigmoid": sk_sigmoid}
    try:
        from betacal import BetaCalibration as _Beta

        out["betacal_abm"] = lambda s, y, q: _Beta(parameters="abm").fit(s.reshape(-1, 1), y).predict(q.reshape(-1, 1))
    except ImportError:
        pass
    return out


def ours(names: list[str] | None) -> dict[str, Callable]:
    import bayescal
    from bayescal._registry import get_calibrator_class

    out = {}
    for name in names or bayescal.calibrators():
        cls = get_calibrator_class(name)
        if cls.feature_aware:
            continue  # MBCT has its own benchmark (bench_mbct.py): it needs features
        out[name] = (lambda c: (lambda s, y, q: c().fit(s, y).predict_proba(q)[:, 1]))(cls)
    return out


def time_call(fn: Callable, s, y, q, repeat: int) -> float:
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn(s, y, q)
        best = min(best, time.perf_counter() - t0)
    return best


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000, 1_000_000])
    parser.add_argument("--calibrators", nargs="+", default=None, help="registry names (default: all)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--max-seconds", type=float, default=120.0,
                        help="skip larger N for a calibrator once one cell takes longer than this")
    parser.add_argument("--json", default=None, help="also write the results as JSON here")
    args = parser.parse_args(argv)

    fns = {**anchors(), **ours(args.calibrators)}
    results: dict[str, dict[int, float]] = {k: {} for k in fns}
    too_slow: set[str] = set()
    for n in args.sizes:
        s, y, q = simulated(n, seed=n)
        for name, fn in fns.items():
            if name in too_slow:
                continue
            fn(s[:200], y[:200], q[:200])  # warm-up (imports, compilation)
            seconds = time_call(fn, s, y, q, args.repeat if n <= 100_000 else 1)
            results[name][n] = seconds
            if seconds > args.max_seconds:
                too_slow.add(name)

    ref = results["sklearn_isotonic"]
    header = f"{'method':<18}" + "".join(f"{'N=' + format(n, '.0e'):>22}" for n in args.sizes)
    print(f"fit on N + predict N, seconds (ratio to sklearn isotonic); {platform.processor() or platform.machine()}")
    print(header)
    for name, row in results.items():
        cells = "".join(
            f"{row[n]:>12.4f} ({row[n] / ref[n]:>6.2f}x)" if n in row else f"{'skipped':>22}" for n in args.sizes
        )
        print(f"{name:<18}{cells}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"sizes": args.sizes, "seconds": {k: {str(n): v for n, v in r.items()} for k, r in results.items()}},
                      fh, indent=2)
    return results


if __name__ == "__main__":
    main()
