r"""Where along the scores the DPM calibrator's 95 % band misses the true map.

The coverage study (``benchmarks/dpm_coverage.py``) reports how often the band holds the true
map over the data region; this script says where it does not, and on which side. For each
(truth, N, seed) it fits the calibrator as the coverage study does (:func:`dpm_coverage.fit_dpm`),
takes the equal-tailed 95 % band on the study's 200 region points (:func:`dpm_coverage.region_grid`)
and places each point by the share of the replicate's scores below it (its empirical CDF), in
tenths of the data. Per tenth and over the seeds it reports the share of points whose true map
lies below the band and above it, and the medians of the true map and of the band's ends, so a
miss at the piles (the truth far nearer 0 or 1 than the band), at a kink, or in the middle shows
as such. On truths defined by their class densities it also reports, per class, the posterior-mean
density over the true one and the share of points whose true density lies below / above the 95 %
band of that class's density draws (``DPMCalibrator.density_map``), which says which class's
density a miss of the map comes from.

Usage::

    python benchmarks/miss_profile.py --truths mixed_piles plateau --n 300 --seeds 24
    python benchmarks/miss_profile.py --truths plateau --n 1000 --seeds 16 --option 'priors={"alpha_shape": 2.0}'

Rows (one per replicate and tenth) go to ``benchmarks/results/miss_profile.csv``; the tables to
``miss_profile.md`` beside it, with every run's command, date and machine.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _study_files import appending, command_line, stamp_runs, study_parser
from dpm_coverage import _label, _truth_label, fit_dpm, parse_options, region_grid, simulate

TENTHS = 10
"""Parts of the data the region's points are grouped into, by their empirical CDF."""
DENSITY_FIELDS = ["f0_ratio", "f1_ratio", "f0_below", "f0_above", "f1_below", "f1_above"]
FIELDS = ["truth", "n", "seed", "route", "tenth", "points", "below", "above", "truth_map", "lower", "upper"]
FIELDS += DENSITY_FIELDS
"""Columns of a row: the replicate, the configuration, the tenth of the data (0 = lowest scores),
its region points, how many of them have the true map below / above the band, and the medians
of the true map and of the band's lower and upper ends there; for truths defined by their class
densities also, per class c, the median over the points of the posterior-mean density over the
true one (``fc_ratio``) and how many points have the true density below / above the 95 % band
of that class's density draws (``fc_below``, ``fc_above``), which says which class's density
the map's misses come from."""


def profile_rows(truth: str, n: int, seed: int, options: dict) -> list[dict]:
    """One replicate's rows, one per tenth of the data that holds region points (module docstring)."""
    s, y, true_map, kind = simulate(truth, n, seed)
    grid = region_grid(s)
    model = fit_dpm(s, y, kind, seed, **options)
    draws = model.calibration_map(grid).values.reshape(-1, grid.size)
    lower, upper = np.quantile(draws, [0.025, 0.975], axis=0)
    truth_map = true_map(grid)
    tenth = np.minimum((np.searchsorted(np.sort(s), grid, side="right") / s.size * TENTHS).astype(int), TENTHS - 1)
    densities = getattr(true_map, "class_densities", None)
    if densities is not None:  # class-density draws of the continuous scores and the true ones
        dens = model.density_map(grid).values.reshape(-1, 2, grid.size)
        d_lower, d_upper = np.quantile(dens, [0.025, 0.975], axis=0)
        d_mean = dens.mean(axis=0)
        d_true = np.vstack([densities[1].pdf(grid), densities[2].pdf(grid)])
    rows = []
    for t in np.unique(tenth):
        at = tenth == t
        extra = {}
        if densities is not None:
            for c in (0, 1):
                extra[f"f{c}_ratio"] = float(np.median(d_mean[c, at] / d_true[c, at]))
                extra[f"f{c}_below"] = int(np.sum(d_true[c, at] < d_lower[c, at]))
                extra[f"f{c}_above"] = int(np.sum(d_true[c, at] > d_upper[c, at]))
        rows.append(
            extra
            | {
                "truth": truth,
                "n": n,
                "seed": seed,
                "route": _label("gibbs", options),
                "tenth": int(t),
                "points": int(at.sum()),
                "below": int(np.sum(truth_map[at] < lower[at])),
                "above": int(np.sum(truth_map[at] > upper[at])),
                "truth_map": float(np.median(truth_map[at])),
                "lower": float(np.median(lower[at])),
                "upper": float(np.median(upper[at])),
            }
        )
    return rows


def summarise(path: Path) -> str:
    """One table per (configuration, truth, N): per tenth of the data, the seeds, the share of
    region points whose true map is below / above the band, and the medians over seeds of the
    true map and of the band's ends there."""
    rows = _rows_of(path)
    out = []
    for key in sorted({(r["route"], r["truth"], int(r["n"])) for r in rows}):
        sel = [r for r in rows if (r["route"], r["truth"], int(r["n"])) == key]
        seeds = len({r["seed"] for r in sel})
        route, truth, n = key
        out.append(f"**{route}, {_truth_label(truth)}, N = {n}, {seeds} seeds**\n")
        with_densities = all(r.get("f0_ratio") for r in sel)
        head = (
            "| tenth of the data | points | truth below the band | truth above the band | true map | band (medians) |"
        )
        rule = "|---|---|---|---|---|---|"
        if with_densities:
            head += (
                " f0 mean / true | f0 truth below / above its band | f1 mean / true | f1 truth below / above its band |"
            )
            rule += "---|---|---|---|"
        out += [head, rule]
        for t in range(TENTHS):
            part = [r for r in sel if int(r["tenth"]) == t]
            if not part:
                continue
            points = sum(int(r["points"]) for r in part)

            def med(name, part=part):
                return np.median([float(r[name]) for r in part])

            def share(name, part=part, points=points):
                return sum(int(r[name]) for r in part) / points

            line = (
                f"| {t + 1} | {points} | {share('below'):.2f} | {share('above'):.2f} | {med('truth_map'):.3g} "
                f"| [{med('lower'):.3g}, {med('upper'):.3g}] |"
            )
            if with_densities:
                for c in (0, 1):
                    line += f" {med(f'f{c}_ratio'):.3g} | {share(f'f{c}_below'):.2f} / {share(f'f{c}_above'):.2f} |"
            out.append(line)
        out.append("")
    return "\n".join(out)


def _rows_of(path: Path) -> list[dict]:
    """The rows of ``path``, a rerun replicate's replacing its earlier ones."""
    with open(path) as fh:
        return list({(r["route"], r["truth"], r["n"], r["seed"], r["tenth"]): r for r in csv.DictReader(fh)}.values())


def main(argv: list[str] | None = None) -> None:
    ap = study_parser(__doc__, "miss_profile.py", n=(300,), seeds=16)
    ap.add_argument("--option", action="append", default=[], metavar="NAME=JSON", help="a calibrator parameter")
    args = ap.parse_args(argv)
    options = parse_options(args.option, ap.error)
    with appending(args.out, FIELDS) as write:
        for truth in args.truths:
            for n in args.n:
                for seed in range(args.first_seed, args.first_seed + args.seeds):
                    for row in profile_rows(truth, n, seed, options):
                        write(row)
                    print(f"{truth} {n} {seed} done", flush=True)
    command = command_line("miss_profile.py", args) + "".join(f" --option '{o}'" for o in args.option)
    stamp_runs(
        args.out,
        "Where the 95 % band misses the true map",
        "Rows of `miss_profile.csv`, written by these runs (each appends its rows):",
        command if args.seeds > 0 else None,
        summarise(args.out),
    )
    print(summarise(args.out))


if __name__ == "__main__":
    main()
