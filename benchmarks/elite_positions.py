"""ELiTE's trend filter at rank positions (its choice) against positions at the working-scale scores.

ELiTE fits a piecewise-linear trend filter to the labels sorted by score; the positions it gives
the points are an implementation choice (``bayescal.baselines.elite``, step 2). The script fits
``ELiTE()`` (ranks) and the same estimator with the scores' own working-scale positions on

* the authors' quadratic-SVM scores of Naeini et al.'s disc-and-ring data
  (``naeini_quadratic_svm_scores.csv`` in the reference data folder, ``../shared/reference``
  beside the checkout): test ECE (``bayescal.metrics.ece``, the papers' binning);
* the coverage study's plateau truth (a piecewise-linear map; ``benchmarks/dpm_coverage.py``),
  1,000 scores, seeds 0-7: mean absolute error of the map over the data region's grid;

and prints each one's error and its ADMM iterations over the 50 penalties (``n_iter_`` summed).

Usage::

    python benchmarks/elite_positions.py > benchmarks/results/elite_positions.md
"""

from __future__ import annotations

import argparse
import datetime as dt
from pathlib import Path

import numpy as np
import pandas as pd
from dpm_coverage import region_grid, simulate
from make_evidence import REFERENCE, machine

from bayescal.baselines.elite import ELiTE
from bayescal.metrics import ece


class ELiTEAtScores(ELiTE):
    _positions = "scores"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reference", type=Path, default=REFERENCE)
    ap.add_argument("--seeds", type=int, default=8)
    args = ap.parse_args()
    stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M")
    print("# ELiTE: trend-filter positions at ranks (the default) against the scores\n")
    print(f"{stamp} UTC ({machine()}): `python benchmarks/elite_positions.py --seeds {args.seeds}`\n")
    print("| data | positions | error | ADMM iterations |")
    print("|---|---|---|---|")
    path = args.reference / "naeini_quadratic_svm_scores.csv"
    if path.is_file():
        q = pd.read_csv(path)
        tr, te = q[q.split == "train"], q[q.split == "test"]
        for label, cls in (("ranks", ELiTE), ("scores", ELiTEAtScores)):
            cal = cls().fit(tr.score, tr.label)
            err = ece(te.label, cal.predict_proba(te.score)[:, 1], strategy="papers")
            print(f"| Naeini quadratic SVM (test ECE) | {label} | {err:.4f} | {int(cal.n_iter_.sum())} |")
    else:
        print(f"| Naeini quadratic SVM | - | {path} absent | - |")
    for label, cls in (("ranks", ELiTE), ("scores", ELiTEAtScores)):
        errs, iters = [], []
        for seed in range(args.seeds):
            s, y, true_map, _ = simulate("plateau", 1000, seed)
            grid = region_grid(s)
            cal = cls().fit(s, y)
            errs.append(np.mean(np.abs(cal.predict_proba(grid)[:, 1] - true_map(grid))))
            iters.append(int(cal.n_iter_.sum()))
        print(
            f"| plateau truth, 1,000 scores, {args.seeds} seeds (mean MAE) | {label} | {np.mean(errs):.4f} "
            f"| {np.mean(iters):.0f} |"
        )


if __name__ == "__main__":
    main()
