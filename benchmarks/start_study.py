"""How much of a default DPM fit is its start: the sampler's chains from the KDE-informed start,
from one component, and run twenty times longer.

Why. The blocked Gibbs sampler starts every chain from the KDE-informed values: all
``n_components`` components occupied, at the class's quantiles and as wide as its KDE
bandwidth. Given the parameters the allocations are nearly fixed and given the allocations
the parameters are, so from thousands of scores on the sweeps empty the components that the
posterior does not hold far more slowly than the warm-up lasts, and the kept draws carry
more occupied components than the posterior does. Starting from one component
(``route_options={"start": "single"}``, :func:`bayescal.bayesian.mode_start.single_start`;
the customary start of Neal 2000) the sweeps add components as the data ask instead.
Running twenty times the sweeps per kept draw (``route_options={"thin": 20 * default}``)
brings the chains from the KDE-informed start closer to the posterior itself. Comparing the
three on the coverage study's truths (:mod:`dpm_coverage`) separates what the model's
posterior does from what the start does. With Gaussian components alone the script also
measures merge-split moves (``route_options={"merge_split": 20}``, :mod:`bayescal.bayesian.gibbs`),
which jump between numbers of occupied components, with and without eight times the sweeps.

For each (truth, N, seed) and configuration the script fits the default calibrator with that
configuration and records the columns of :mod:`dpm_coverage` plus ``occupied``, the mean
number of occupied components per class and kept draw. The long runs are made only where the
scores are compressed (N above ``compress_above``), where a sweep costs the same at every N.

Usage::

    python benchmarks/start_study.py --truths monotone plateau --n 1000 10000 --seeds 16
    python benchmarks/start_study.py --summarise      # the table of benchmarks/results/start_study.csv

Rows are appended to ``--out`` as they finish (``--resume`` skips those already there); the
summary is written beside it, with the suffix ``.md`` (by default
``benchmarks/results/start_study.md``), with the date and machine.
"""

from __future__ import annotations

import argparse
import csv
import os
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _study_files import appending
from dpm_coverage import DESIGN, FIELDS, HELD_OUT, TRUTHS, cell_summary, converged_share, run_one

_FITTED = {
    "prior": {},
    "single": {"route_options": {"start": "single"}},
    "long": {"route_options": {"thin": 40}},
    "gaussian": {"components": "gaussian"},
    "gaussian_merge": {"components": "gaussian", "route_options": {"merge_split": 20}},
    "gaussian_long": {"components": "gaussian", "route_options": {"thin": 16}},
    "gaussian_merge_long": {"components": "gaussian", "route_options": {"merge_split": 20, "thin": 16}},
    "tune_long": {"tune": 2000},
    "chains8": {"chains": 8, "draws": 125},
    "chains8_tune_long": {"chains": 8, "draws": 125, "tune": 2000},
    "dispersed": {"route_options": {"start": "dispersed"}},
    "dispersed_chains8": {"chains": 8, "draws": 125, "route_options": {"start": "dispersed"}},
    "beta": {"components": "beta"},
    "beta_k2": {"components": "beta", "n_components": 2},
    "beta_hmc": {"components": "beta", "route_options": {"hmc_steps": 20}},
    "beta_k2_hmc": {"components": "beta", "n_components": 2, "route_options": {"hmc_steps": 20}},
    "gaussian_k2": {"components": "gaussian", "n_components": 2},
    "gaussian_k2_hmc": {"components": "gaussian", "n_components": 2, "route_options": {"hmc_steps": 20}},
}
CONFIGS = {"default": {}} | {
    name: config | {"route_options": {"start": "prior"} | config.get("route_options", {})}
    for name, config in _FITTED.items()
}
"""The configurations: the calibrator's defaults as they are when the row is fitted (rows from
2026-11-28 on), chains from the KDE-informed values (``start="prior"``, every component
occupied; the default up to 2,048 scores a class, and up to 2026-11-28 up to 100,000), chains
from one component, and twenty times
the sweeps per kept draw (the default thinning from 3,600 scores a class is 2); and, with
Gaussian components alone (the merge-split moves are written for them), the plain sweeps, 20
merge-split proposals a sweep (:func:`bayescal.bayesian._gibbs_kernels.merge_split_move`), and
both with eight times the sweeps per kept draw. Then many chains, the regime for which split
R-hat's successors were designed (Margossian et al. 2024): four times the warm-up (2,000 sweeps
a chain, two chains), eight chains of 125 kept draws (the default's 1,000 kept draws in all,
each chain with the default's 500 warm-up sweeps), and eight such chains with 2,000 warm-up
sweeps each. Last, over-dispersed starts (Gelman & Rubin 1992; Vehtari et al. 2021): every chain
starts from its own draw from the prior (``route_options={"start": "dispersed"}``), with two
chains and with eight (the default from 2,048 to 20,000 scores a class since 2026-11-28). Then,
on truths whose classes are each one Beta density (monotone, piles, rare; calibrated, weak,
separable, mid_confident), Beta components alone with the default truncation (``beta``) and with
two components (``beta_k2``: the true density and one spare), each with and without the
Hamiltonian moves (``_hmc``), and likewise Gaussian components on classes that are each one
Gaussian density (unequal_var: ``gaussian_k2``, ``gaussian_k2_hmc``): if the chains of the exact
family with a single spare component do
not converge either, the slow direction is the redundancy of the components (an overfitted
mixture's flat ridges: Rousseau & Mengersen 2011, JRSS B 73, 689-710), not a wrong family or too few components. Every
configuration but ``default`` names its start (``prior`` unless it sets another), so that a row
means what it meant when it was fitted."""
LONG_MIN_N = 10_000
"""Smallest N of the long runs (compressed scores: every class above the thinning's floor)."""
OUT_FIELDS = ["config", *FIELDS, "occupied"]
RESULTS = Path(__file__).parent / "results"


def _rows(path: Path) -> list[dict]:
    if not path.exists():
        return []
    with open(path) as fh:  # a rerun replaces the earlier row
        return list({(r["config"], r["truth"], r["n"], r["seed"]): r for r in csv.DictReader(fh)}.values())


def one_row(config: str, truth: str, n: int, seed: int) -> dict:
    """One (truth, N, seed) fit in configuration ``config``: the coverage study's row
    (:func:`dpm_coverage.run_one`, the KDE calibrator as the other) with ``config`` and ``occupied``."""
    extra: dict = {}
    row = run_one(truth, n, seed, "gibbs", CONFIGS[config], ["kde"], None, extra)
    return row | {"config": config, "occupied": extra["occupied"]}


def summarise(path: Path) -> str:
    """Means over seeds per (truth, N, configuration) as a markdown table."""
    rows = _rows(path)
    order = DESIGN + HELD_OUT
    keys = sorted(
        {(r["truth"], int(r["n"]), r["config"]) for r in rows},
        key=lambda k: (order.index(k[0]), k[1], list(CONFIGS).index(k[2])),
    )
    head = (
        "| truth | N | start | seeds | 95 % cov (se) | 80 % | 50 % | MAE DPM | MAE KDE | occupied components "
        "| R-hat max | ESS bulk / tail min | time s |"
    )
    lines = [head, "|---" * (head.count("|") - 1) + "|"]
    for truth, n, config in keys:
        sel = [r for r in rows if (r["truth"], int(r["n"]), r["config"]) == (truth, n, config)]
        c = cell_summary([{k: v for k, v in r.items() if k != "config"} for r in sel])
        lines.append(
            f"| {truth}{' (held out)' if truth in HELD_OUT else ''} | {n} | {config} | {c['seeds']} "
            f"| {c['cov95']:.3f} ({c['cov95_se']:.3f}) | {c['cov80']:.3f} | {c['cov50']:.3f} | {c['mae']:.4f} "
            f"| {c['others'].get('kde', float('nan')):.4f} | {c['occupied']:.1f} | {c['rhat_max']:.2f} "
            f"| {c['ess_bulk_min']:.0f} / {c['ess_tail_min']:.0f} | {c['time_s']:.1f} |"
        )
    return "\n".join(lines)


MANY_CHAINS = ("default", "prior", "tune_long", "chains8", "chains8_tune_long", "dispersed", "dispersed_chains8")
"""The configurations of the many-chains and dispersed-starts table (:func:`paired_summary`)."""


def paired_summary(path: Path, configs=MANY_CHAINS) -> str:
    """``configs`` side by side on the same replicates: per (truth, N), those fitted there, on only
    the seeds fitted in every one of them, as a markdown table; *R-hat above prior* counts the seeds whose worst
    R-hat exceeds the ``prior`` fit's (chains from the shared KDE-informed start) on the same replicate."""
    rows = [r for r in _rows(path) if r["config"] in configs]
    order = DESIGN + HELD_OUT
    lines = [
        "| truth | N | configuration | seeds | 95 % cov (se) | 80 % | 50 % | MAE DPM | R-hat max "
        "| R-hat above prior | ESS bulk / tail min | converged | time s |",
        "|---" * 13 + "|",
    ]
    for truth, n in sorted({(r["truth"], int(r["n"])) for r in rows}, key=lambda k: (order.index(k[0]), k[1])):
        cell = [r for r in rows if (r["truth"], int(r["n"])) == (truth, n)]
        by = {c: {int(r["seed"]): r for r in cell if r["config"] == c} for c in configs}
        by = {c: v for c, v in by.items() if v}  # the configurations fitted in this cell
        seeds = sorted(set.intersection(*(set(v) for v in by.values())))
        if "prior" not in by or len(by) < 2 or len(seeds) < 2:
            continue
        for config in by:
            sel = [by[config][k] for k in seeds]
            c = cell_summary([{k: v for k, v in r.items() if k != "config"} for r in sel])
            above = sum(float(by[config][k]["rhat_max"]) > float(by["prior"][k]["rhat_max"]) for k in seeds)
            lines.append(
                f"| {truth}{' (held out)' if truth in HELD_OUT else ''} | {n} | {config} | {len(seeds)} "
                f"| {c['cov95']:.3f} ({c['cov95_se']:.3f}) | {c['cov80']:.3f} | {c['cov50']:.3f} | {c['mae']:.4f} "
                f"| {c['rhat_max']:.2f} | {'-' if config == 'prior' else f'{above} of {len(seeds)}'} "
                f"| {c['ess_bulk_min']:.0f} / {c['ess_tail_min']:.0f} | {converged_share(sel):.2f} | {c['time_s']:.1f} |"
            )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--truths",
        nargs="+",
        default=["monotone", "ushape", "piles", "plateau", "heavy", "overconfident"],
        choices=list(TRUTHS),
    )
    ap.add_argument("--n", nargs="+", type=int, default=[1000, 10000])
    ap.add_argument("--seeds", type=int, default=16)
    ap.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    ap.add_argument("--out", type=Path, default=RESULTS / "start_study.csv")
    ap.add_argument("--resume", action="store_true", help="skip the rows already in --out")
    ap.add_argument("--summarise", action="store_true", help="only write the table of --out")
    args = ap.parse_args()
    if not args.summarise:
        done = (
            {(r["config"], r["truth"], int(r["n"]), int(r["seed"])) for r in _rows(args.out)} if args.resume else set()
        )
        with appending(args.out, OUT_FIELDS) as write:
            for truth in args.truths:
                for n in args.n:
                    for config in args.configs:
                        if "thin" in CONFIGS[config].get("route_options", {}) and n < LONG_MIN_N:
                            continue
                        for seed in range(args.seeds):
                            if (config, truth, n, seed) in done:
                                continue
                            row = one_row(config, truth, n, seed)
                            write(row)
                            print(
                                f"{config} {truth} N={n} seed={seed} cov95={row['cov95']:.3f} mae={row['mae']:.4f} "
                                f"occupied={row['occupied']:.1f} rhat={row['rhat_max']:.3f} {row['time_s']:.1f}s",
                                flush=True,
                            )
    table = summarise(args.out)
    stamp = (
        f"*Written {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} by `benchmarks/start_study.py` from "
        f"`{args.out.name}` ({platform.system()} {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}).*"
    )
    legend = (
        "Rows: `prior`, chains from the KDE-informed start, every component occupied "
        '(`route_options={"start": "prior"}`; up to 2026-11-28 the default at every N of this study, and these '
        "rows were fitted as `default` then; from 2,048 to 20,000 scores a class the default now starts the "
        'chains apart, as `dispersed` does); `single`, `route_options={"start": "single"}` (chains from one component per class); '
        '`long`, `route_options={"thin": 40}` (twenty times the default\'s sweeps per kept draw, from 10^4 '
        "scores). Columns as on the coverage page (`docs/evidence/coverage.md`), means over seeds; *occupied "
        "components* is the mean number of components holding any score, per class and kept draw. Command: "
        "`python benchmarks/start_study.py --truths monotone ushape piles plateau heavy overconfident weak "
        "calibrated --n 1000 10000 --seeds 16`, then `python benchmarks/start_study.py --truths monotone --n 10000 "
        "--seeds 48 --resume` (the monotone cells at 10^4 to 48 seeds). With Gaussian components alone: "
        '`gaussian`, `gaussian_merge` (`route_options={"merge_split": 20}`: 20 merge-split proposals a sweep), '
        "`gaussian_long` and `gaussian_merge_long` (the same with `thin=16`, eight times the sweeps per kept "
        "draw at 10^4); command: `python benchmarks/start_study.py --configs gaussian gaussian_merge "
        "gaussian_long gaussian_merge_long --truths monotone ushape plateau heavy overconfident weak calibrated "
        "bimodal --n 10000 --seeds 6`, then `--configs gaussian --truths monotone --n 10000 --seeds 1` (seed 0 "
        "again: its first run's time included compiling the changed sweeps). Many chains: `tune_long` "
        "(`tune=2000`, four times the warm-up), `chains8` (`chains=8, draws=125`: eight chains, the default's "
        "1,000 kept draws in all) and `chains8_tune_long` (both); command: `python benchmarks/start_study.py "
        "--configs prior tune_long chains8 chains8_tune_long --truths monotone piles plateau overconfident "
        "weak calibrated --n 1000 10000 --seeds 8 --resume`. Over-dispersed starts: `dispersed` and "
        "`dispersed_chains8` (two and eight chains, each started from its own draw from the prior); command: "
        "the same with `--configs dispersed dispersed_chains8`, then `--configs prior chains8 dispersed "
        "dispersed_chains8 --n 300`, and `--configs prior dispersed --truths ushape rare heavy skewed bimodal "
        "boosted separable unequal_var asym_piles mid_confident mixed_piles --n 10000` (every truth of the "
        "coverage study at 10^4). At the edges of the default start rule (2026-11-28; dispersed starts from "
        "2,049 to 20,000 scores a class): `--configs default prior --truths monotone piles plateau "
        "overconfident weak calibrated --n 5000 40000 --seeds 16 --resume`, then `--truths piles --n 5000 "
        "--seeds 48` and `--truths asym_piles mixed_piles --n 5000 --seeds 24`. The last section sets them "
        "beside `prior` on the same seeds. The exact family on truths whose classes are each one Beta density: "
        '`beta` (`components="beta"`), `beta_k2` (`components="beta", n_components=2`: the true density and one '
        'spare), and both with the Hamiltonian moves (`beta_hmc`, `beta_k2_hmc`: `route_options={"hmc_steps": 20}`); '
        "command: `python benchmarks/start_study.py --truths monotone piles calibrated separable --n 10000 "
        "--seeds 8 --configs prior beta beta_k2 beta_hmc beta_k2_hmc --resume`, and with Gaussian components on "
        "classes that are each one Gaussian: `--truths unequal_var --n 10000 --seeds 8 --configs prior gaussian "
        "gaussian_k2 gaussian_k2_hmc --resume`."
    )
    paired = (
        "## Many chains and dispersed starts, on the same replicates\n\nThose configurations beside "
        "`prior` on the seeds fitted in all of them (its rows above average over more seeds; at "
        "N = 300 only `prior`, `chains8` and the dispersed starts were run). *R-hat above prior* "
        "counts the replicates whose worst R-hat over the data region exceeds the `prior` fit's on the same "
        "data; *converged*, the share of fits with R-hat <= 1.01 and bulk and tail ESS >= 400.\n\n"
        + paired_summary(args.out)
    )
    args.out.with_suffix(".md").write_text(f"# Start study\n\n{stamp}\n\n{legend}\n\n{table}\n\n{paired}\n")
    print(table)
    print(paired)


if __name__ == "__main__":
    main()
