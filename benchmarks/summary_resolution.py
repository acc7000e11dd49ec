"""The DPM fitted on a ScoreSummary: asinh-scale bins against equal-width ones, on the coverage study's truths.

For one truth of ``benchmarks/dpm_coverage.py`` at N scores, the script fits the default DPM on
each of ``--seeds`` replicates summarised three ways and prints, over the replicates, the
median number of bins the middle half of the scores spans
(``ScoreSummary.bins_across_middle_half``), how many summaries put their bins on the asinh
scale, the mean 95 % band's pointwise coverage (with its standard error over the replicates) of the true map over the data region and the
posterior-mean map's mean absolute error there (the coverage study's definitions,
``dpm_coverage.band_scores``):

* ``rows``: the fit on the rows themselves (with ``--rows``);
* ``summary``: ``ScoreSummary.from_arrays`` with the range left to the data, on each
  ``--n-bins`` (equal-width bins, or asinh-scale ones when far outlying scores would leave the
  middle half of the scores in fewer than ``bayescal.data.SUMMARY_MIN_MIDDLE_BINS`` equal-width
  bins, their scale chosen to resolve the data region as the DPM's compression of rows does);
* ``equal-width summary``: the same with ``lo``/``hi`` given as the data's range, which keeps
  the bins equal-width (what every summary was before the asinh layout; with ``--equal``).

Usage::

    python benchmarks/summary_resolution.py contaminated 10000 --n-bins 1024 --rows --equal
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dpm_coverage import TRUTHS, band_scores, data_points, region_grid, simulate


def scores_of(model, s: np.ndarray, true_map, seed: int) -> dict[str, float]:
    """The coverage study's band scores of ``model`` over the data region of ``s``."""
    grid = region_grid(s)
    pts = data_points(s, grid, seed)
    return band_scores(
        model.calibration_map(grid).values.reshape(-1, grid.size),
        model.predict_proba(grid)[:, 1],
        true_map(grid),
        model.calibration_map(pts).values.reshape(-1, pts.size),
        true_map(pts),
    )


def continuous_working_scores(s: np.ndarray, y: np.ndarray, kind: str) -> np.ndarray:
    """The working-scale scores of a replicate, exact probabilities 0 and 1 (atoms) aside."""
    from bayescal.data import prepare_data

    t = prepare_data(s, y, score_kind=kind).t
    return t[~np.isin(s, [0.0, 1.0])] if kind == "probability" else t


def main() -> None:
    from bayescal import make_calibrator
    from bayescal.data import ScoreSummary

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("truth", choices=list(TRUTHS))
    ap.add_argument("n", type=int)
    ap.add_argument("--n-bins", nargs="+", type=int, default=[1024])
    ap.add_argument("--seeds", type=int, default=8)
    ap.add_argument("--rows", action="store_true", help="also fit the rows")
    ap.add_argument("--equal", action="store_true", help="also fit equal-width summaries (lo/hi given)")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    print("| truth | N | data | bins | middle-half bins (median) | asinh-scale summaries | 95 % coverage (se) | MAE |")
    print("|---|---|---|---|---|---|---|---|")
    configs = [("rows", None)] * args.rows + [("summary", b) for b in args.n_bins]
    configs += [("equal-width summary", b) for b in args.n_bins] * args.equal
    for how, n_bins in configs:
        res = []
        for seed in range(args.seeds):
            s, y, true_map, kind = simulate(args.truth, args.n, seed)
            model = make_calibrator("dpm", random_state=seed, score_kind=kind)
            if n_bins is None:
                model.fit(s, y)
                span, asinh = np.nan, False
            else:
                bounds = {}
                if how == "equal-width summary":
                    t = continuous_working_scores(s, y, kind)
                    bounds = {"lo": float(t.min()), "hi": float(t.max())}
                summary = ScoreSummary.from_arrays(s, y, score_kind=kind, n_bins=n_bins, **bounds)
                model.fit(summary)
                span = summary.bins_across_middle_half()
                asinh = not np.allclose(np.diff(summary.edges), np.diff(summary.edges).mean())
            r = scores_of(model, s, true_map, seed)
            res.append((span, asinh, r["cov95"], r["mae"]))
        span, asinh, cov, mae = (np.array(col) for col in zip(*res))
        cells = ("-", "-") if n_bins is None else (f"{np.median(span):.1f}", f"{asinh.sum()} of {asinh.size}")
        print(
            f"| {args.truth} | {args.n} | {how} | {n_bins or '-'} | {cells[0]} | {cells[1]} "
            f"| {cov.mean():.3f} ({cov.std(ddof=1) / np.sqrt(cov.size):.3f}) | {mae.mean():.4f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
