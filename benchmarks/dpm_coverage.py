"""Coverage study of the DPM calibrator's credible band against known truths (issue "Bayesian core", item 1).

Truths (scores are probabilities; the true map is pi f1 / (pi f1 + (1 - pi) f0)):

* ``monotone``: f0 = Beta(2, 5), f1 = Beta(5, 2), pi = 0.4;
* ``ushape``:   f0 = Beta(3, 3), f1 = 0.5 Beta(2, 9) + 0.5 Beta(9, 2), pi = 0.5;
* ``rare``:     f0 = Beta(2, 5), f1 = Beta(5, 2), pi = 0.03 (3 % positives).

For each (truth, N, seed, route) the script fits the DPM calibrator and reports, on 200
grid points between the 2.5 % and 97.5 % quantiles of the pooled scores (the data region):
the share of grid points where the 95 % equal-tailed band contains the true map
(coverage), the mean absolute error of the posterior-mean map, the mean band width and the
fit time; and the MAE of IsotonicCalibrator and KDECalibrator on the same data.

Usage::

    python benchmarks/dpm_coverage.py --truths monotone ushape rare --n 300 1000 10000 \\
        --seeds 10 --routes gibbs --out benchmarks/results/dpm_coverage.csv

Candidate settings are compared by writing them to their own ``--out``: ``--priors`` takes a
JSON dict of hyperparameters (e.g. ``'{"sigma_logsd": 2.0}'``, see
:mod:`bayescal.bayesian.priors`) and ``--option NAME=JSON`` any other calibrator parameter
(e.g. ``--option chains=4``, ``--option 'route_options={"thin": 2}'``).

Rows are appended to ``--out`` as they finish (so a partial run keeps its results); the
summary table (means over seeds) is printed at the end, or with ``--summarise`` alone.
"""

from __future__ import annotations

import argparse
import csv
import json
import time
from pathlib import Path

import numpy as np
from scipy import stats

TRUTHS = {
    "monotone": (0.4, [(1.0, 2, 5)], [(1.0, 5, 2)]),
    "ushape": (0.5, [(1.0, 3, 3)], [(0.5, 2, 9), (0.5, 9, 2)]),
    "rare": (0.03, [(1.0, 2, 5)], [(1.0, 5, 2)]),
}
FIELDS = ["truth", "n", "seed", "route", "coverage", "mae", "width", "time_s", "mae_isotonic", "mae_kde"]


def _density(parts, s):
    return sum(w * stats.beta(a, b).pdf(s) for w, a, b in parts)


def _sample(parts, n, rng):
    which = rng.choice(len(parts), size=n, p=[w for w, _, _ in parts])
    a = np.array([p[1] for p in parts])[which]
    b = np.array([p[2] for p in parts])[which]
    return rng.beta(a, b)


def simulate(truth: str, n: int, seed: int):
    """Scores, labels and the true map of one replicate."""
    pi, f0, f1 = TRUTHS[truth]
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < pi).astype(int)
    s = np.empty(n)
    s[y == 0] = _sample(f0, int((y == 0).sum()), rng)
    s[y == 1] = _sample(f1, int((y == 1).sum()), rng)

    def true_map(g):
        a, b = pi * _density(f1, g), (1 - pi) * _density(f0, g)
        return a / (a + b)

    return s, y, true_map


def run_one(truth: str, n: int, seed: int, route: str, options: dict) -> dict:
    from bayescal import make_calibrator

    s, y, true_map = simulate(truth, n, seed)
    grid = np.linspace(*np.quantile(s, [0.025, 0.975]), 200)
    truth_vals = true_map(grid)
    t0 = time.perf_counter()
    model = make_calibrator("dpm", inference=route, random_seed=seed, **options).fit(s, y)
    band = model.credible_band(grid, ci_prob=0.95, ci_kind="eti")
    mean = model.predict_proba(grid)[:, 1]
    elapsed = time.perf_counter() - t0
    lo, hi = band.sel(ci_bound="lower").values, band.sel(ci_bound="upper").values
    row = {"truth": truth, "n": n, "seed": seed, "route": route,
           "coverage": float(np.mean((lo <= truth_vals) & (truth_vals <= hi))),
           "mae": float(np.mean(np.abs(mean - truth_vals))), "width": float(np.mean(hi - lo)),
           "time_s": elapsed}
    for name in ("isotonic", "kde"):
        try:
            p = make_calibrator(name).fit(s, y).predict_proba(grid)[:, 1]
            row[f"mae_{name}"] = float(np.mean(np.abs(p - truth_vals)))
        except (ImportError, ValueError) as exc:  # a colleague's calibrator may not exist yet
            print(f"  {name}: {exc}")
            row[f"mae_{name}"] = float("nan")
    return row


def summarise(path: Path) -> str:
    """Means over seeds per (route, truth, N), as a markdown table."""
    with open(path) as fh:  # a rerun seed replaces the earlier row
        rows = list({(r["route"], r["truth"], r["n"], r["seed"]): r for r in csv.DictReader(fh)}.values())
    keys = sorted({(r["route"], r["truth"], int(r["n"])) for r in rows},
                  key=lambda k: (k[0], list(TRUTHS).index(k[1]), k[2]))
    lines = ["| route | truth | N | seeds | coverage (min-max) | MAE DPM | MAE isotonic | MAE KDE | band width | time s |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for key in keys:
        sel = [r for r in rows if (r["route"], r["truth"], int(r["n"])) == key]

        def m(f, sel=sel):
            return float(np.nanmean([float(r[f]) for r in sel]))

        cov = [float(r["coverage"]) for r in sel]
        lines.append(f"| {key[0]} | {key[1]} | {key[2]} | {len(sel)} | {np.mean(cov):.3f} ({min(cov):.2f}-{max(cov):.2f}) "
                     f"| {m('mae'):.4f} | {m('mae_isotonic'):.4f} | {m('mae_kde'):.4f} | {m('width'):.3f} | {m('time_s'):.1f} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--truths", nargs="+", default=list(TRUTHS), choices=list(TRUTHS))
    ap.add_argument("--n", nargs="+", type=int, default=[300, 1000, 10000])
    ap.add_argument("--seeds", type=int, default=10, help="number of seeds (0 .. seeds-1)")
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--routes", nargs="+", default=["gibbs"])
    ap.add_argument("--draws", type=int, default=None, help="override the calibrator's draws")
    ap.add_argument("--tune", type=int, default=None, help="override the calibrator's tune")
    ap.add_argument("--priors", type=json.loads, default=None, help="JSON dict of prior hyperparameters")
    ap.add_argument("--option", action="append", default=[], metavar="NAME=JSON",
                    help="another calibrator parameter, e.g. chains=4 (repeatable)")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "dpm_coverage.csv")
    ap.add_argument("--summarise", action="store_true", help="only print the table of --out")
    args = ap.parse_args()
    if not args.summarise:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        new = not args.out.exists()
        options = {k: v for k, v in (("draws", args.draws), ("tune", args.tune), ("priors", args.priors))
                   if v is not None}
        for item in args.option:
            name, sep, value = item.partition("=")
            if not sep:
                ap.error(f"--option {item!r}: write NAME=JSON, e.g. chains=4")
            options[name] = json.loads(value)
        with open(args.out, "a", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=FIELDS)
            if new:
                writer.writeheader()
            for route in args.routes:
                for truth in args.truths:
                    for n in args.n:
                        for seed in range(args.first_seed, args.first_seed + args.seeds):
                            row = run_one(truth, n, seed, route, options)
                            writer.writerow(row)
                            fh.flush()
                            print(" ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                                           for k, v in row.items()), flush=True)
    print(summarise(args.out))


if __name__ == "__main__":
    main()
