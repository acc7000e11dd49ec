"""The KDE calibrator's bandwidth: Silverman's rule on the standard deviation against the robust spread.

For every truth of ``benchmarks/dpm_coverage.py`` at each N the script fits, on ``--seeds``
replicates, the KDE calibrator's map (Bayes' rule with one Gaussian KDE per class, on the
calibrator's own scale: the probability for probability scores, the decision value otherwise)
with each class's bandwidth :math:`h_c = 1.06\\,A_c\\,N_c^{-1/5}` from two spreads:

* ``sd``: :math:`A_c = \\hat\\sigma_c`, the standard deviation (the calibrator's rule on every
  scale before 2026-12-03);
* ``robust``: :math:`A_c = \\min(\\hat\\sigma_c, \\mathrm{IQR}_c / 1.349)` (Silverman 1986,
  section 3.4.2),

and prints the mean absolute error of each map against the true one over the data region (the
coverage study's ``region_grid``), their ratio with the standard error of the paired
difference (relative to the sd rule's mean), which rule ``KDECalibrator()`` uses there now and
its own MAE (that rule's, up to the binning of its Gaussian KDE, whose grid is coarser than
``class_density``'s when far outliers stretch the data's range: see ``class_density``). The calibrator takes the robust spread on unbounded scales only: there a few far
outlying scores inflate the standard deviation without limit, on [0, 1] they cannot.

Usage::

    python benchmarks/kde_bandwidth.py [--truths ...] [--n 300 1000 10000] [--seeds 16]
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dpm_coverage import DESIGN, HELD_OUT, region_grid, simulate


def kde_map(x: np.ndarray, y: np.ndarray, grid: np.ndarray, robust: bool) -> np.ndarray:
    """Bayes' rule with the two classes' Gaussian KDEs (bandwidths by Silverman's rule on the
    standard deviation, or on the robust spread) at ``grid``, all on the KDE scale."""
    from bayescal.baselines.kde import class_density

    rule = "robust" if robust else "silverman"
    f0, f1 = (class_density(x[y == c], grid=grid, bandwidth=rule) for c in (0, 1))
    pi = y.mean()
    return pi * f1 / np.maximum(pi * f1 + (1 - pi) * f0, 1e-300)


def main() -> None:
    from bayescal.baselines.kde import KDECalibrator
    from bayescal.data import to_working

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--truths", nargs="+", default=DESIGN + HELD_OUT)
    ap.add_argument("--n", nargs="+", type=int, default=[300, 1000, 10_000])
    ap.add_argument("--seeds", type=int, default=16)
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    print("| truth | KDE scale | N | MAE, sd rule | MAE, robust rule | ratio (se) | KDECalibrator() uses | its MAE |")
    print("|---|---|---|---|---|---|---|---|")
    for truth in args.truths:
        for n in args.n:
            err = []
            for seed in range(args.seeds):
                s, y, true_map, kind = simulate(truth, n, seed)
                grid = region_grid(s)
                truth_vals = true_map(grid)
                calibrator = KDECalibrator(score_kind=kind).fit(s, y)
                # the KDE scale: the probability itself for probability scores, else the decision value
                to_kde = calibrator._kde_scale
                x, g = to_kde(to_working(s, kind)), to_kde(to_working(grid, kind))
                maes = [np.mean(np.abs(kde_map(x, y, g, robust) - truth_vals)) for robust in (False, True)]
                used = np.mean(np.abs(calibrator.predict_proba(grid)[:, 1] - truth_vals))
                err.append(maes + [used])
            e = np.array(err)
            rule = "sd" if calibrator._bounded_scale() else "robust"
            diff = (e[:, 1] - e[:, 0]) / e[:, 0].mean()
            scale = "decision value" if kind == "decision" else "probability"
            print(
                f"| {truth} | {scale} | {n} | {e[:, 0].mean():.4f} | {e[:, 1].mean():.4f} "
                f"| {e[:, 1].mean() / e[:, 0].mean():.3f} ({diff.std(ddof=1) / np.sqrt(len(diff)):.3f}) | {rule} "
                f"| {e[:, 2].mean():.4f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
