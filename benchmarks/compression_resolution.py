"""How many of the compression's bins the bulk of the data needs: the DPM on truths with far outlying scores.

Above ``compress_above`` scores the DPM fits per-class counts on ``n_bins`` bins equal-width on an
asinh scale of the scores (``bayescal.data.asinh_bins``). Far outlying scores stretch that scale
logarithmically, so the middle half of the data gets fewer bins; the binning error of the map
does not shrink with N while the band does. For one truth of ``benchmarks/dpm_coverage.py`` at N
scores, the script fits the default DPM with each ``--n-bins`` and each ``--bins-per-iqr`` (the
resolution the compression keeps over the data region, the scores' 2.5 % to 97.5 % quantiles:
no bin there wider than the interquartile range over this many, reached by narrowing the asinh
scale and doubling the bins, ``bayescal.data.ASINH_BINS_PER_IQR``; 0 turns
the rule off) and prints over ``--seeds`` replicates the medians of: the bins used, the asinh
scale in robust standard deviations, the widest bin of the data region in units of the
interquartile range over 32 (at most 1 meets the default rule), the bins across the middle half
of the scores; and the means of: the pointwise coverage of the 95 % band (with its standard
error), of the 80 % and 50 % bands, the posterior-mean map's mean absolute error (the coverage
study's definitions) and the fit time.

Usage::

    python benchmarks/compression_resolution.py far_tails 1000000 --n-bins 512 1024 2048 --bins-per-iqr 0
    python benchmarks/compression_resolution.py contaminated 1000000 --n-bins 512 --bins-per-iqr 0 32
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dpm_coverage import TRUTHS, simulate
from summary_resolution import continuous_working_scores, scores_of


def main() -> None:
    from bayescal import make_calibrator
    from bayescal.bayesian import preparation
    from bayescal.data import ASINH_SPREAD, _asinh_layout, asinh_edges

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("truth", choices=list(TRUTHS))
    ap.add_argument("n", type=int)
    ap.add_argument("--n-bins", nargs="+", type=int, default=[512])
    ap.add_argument("--bins-per-iqr", nargs="+", type=float, default=[preparation.ASINH_BINS_PER_IQR])
    ap.add_argument("--seeds", type=int, default=8)
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    print(
        "| truth | N | n_bins | bins per IQR | bins used | scale (robust SDs) | widest region bin (IQR/32) "
        "| middle-half bins | 95 % (se) | 80 % | 50 % | MAE | fit s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for resolution in args.bins_per_iqr:
        preparation.ASINH_BINS_PER_IQR = resolution  # the name prepare() reads at each fit
        for n_bins in args.n_bins:
            res = []
            for seed in range(args.seeds):
                s, y, true_map, kind = simulate(args.truth, args.n, seed)
                t = continuous_working_scores(s, y, kind)
                edges = asinh_edges(t, n_bins, bins_per_iqr=resolution)
                q025, q1, q3, q975 = np.quantile(t, [0.025, 0.25, 0.75, 0.975])
                middle = np.diff(np.interp([q1, q3], edges, np.arange(edges.size)))[0]
                inside = (edges[1:] > q025) & (edges[:-1] < q975)
                widest = np.diff(edges)[inside].max() / ((q3 - q1) / 32)
                scale = _asinh_layout(t, n_bins, ASINH_SPREAD, resolution)[1] / ((q3 - q1) / 1.349)
                start = time.perf_counter()
                model = make_calibrator("dpm", random_state=seed, score_kind=kind, n_bins=n_bins).fit(s, y)
                seconds = time.perf_counter() - start
                r = scores_of(model, s, true_map, seed)
                res.append(
                    (edges.size - 1, scale, widest, middle, r["cov95"], r["cov80"], r["cov50"], r["mae"], seconds)
                )
            used, scale, widest, middle, cov95, cov80, cov50, mae, seconds = np.array(res).T
            print(
                f"| {args.truth} | {args.n} | {n_bins} | {resolution:g} | {int(np.median(used))} | {np.median(scale):.2f} "
                f"| {np.median(widest):.2f} | {np.median(middle):.1f} "
                f"| {cov95.mean():.3f} ({cov95.std(ddof=1) / np.sqrt(cov95.size):.3f}) | {cov80.mean():.3f} "
                f"| {cov50.mean():.3f} | {mae.mean():.4f} | {seconds.mean():.2f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
