"""Would a short pilot choose the DPM's component family as well as the default's, at less cost?

Why. ``components="select"`` (the default for probability scores) runs both component
families' chains through the warm-up and :data:`~bayescal.bayesian.dpm.SELECT_PILOT_DRAWS`
kept draws, compares them by the leave-one-out log densities of the points, and runs on only
the kept family's chains. The other family's pilot costs about a third of a default fit (the
speed page of 2026-12-03: 0.52 s against 0.36 s with one family at 10^4 scores), and on most of the coverage
study's truths the two families fit about equally well, so the choice flips between seeds. A
cheaper comparison would make every fit faster; this study measures what it would cost in
coverage and error before any default changes.

The candidate ("short") compares the families on separate short chains: per family and class
one chain of :data:`PILOT_TUNE` warm-up sweeps and :data:`PILOT_DRAWS` kept ones (every sweep
kept, no Hamiltonian moves), seeded apart from the fit (``random_state + PILOT_SEED_OFFSET``),
by the same criterion as the default (:meth:`bayescal.bayesian.dpm.DPMCalibrator._select_family`).
The kept family is then fitted alone with the fit's ``random_state``. Since the default's kept fit
is the posterior of ``components=<that family>`` with the same ``random_state``, the two rules
give the very same map wherever they keep the same family; where they differ, the short rule's
row is the other family's fit.

For each (truth, N, seed) on probability scores the script records the coverage study's row
(:func:`dpm_coverage.run_one`) of the default fit (``rule=default``, with the family it kept)
and of the family the short pilot keeps, fitted alone (``rule=short``; ``time_s`` is that fit's
time plus the pilot's, the pilot timed as a whole fit, so an upper bound).

Usage::

    python benchmarks/select_pilot_study.py --n 300 1000 10000 --seeds 8
    python benchmarks/select_pilot_study.py --summarise   # the table of benchmarks/results/select_pilot_study.csv

Rows are appended to ``--out`` as they finish (``--resume`` skips those already there); the
summary is written beside it with the suffix ``.md``, with the date and machine.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from dpm_coverage import DESIGN, FIELDS, HELD_OUT, TRUTHS, cell_summary, run_one, simulate

PILOT_TUNE = 100
"""Warm-up sweeps of each short pilot chain."""
PILOT_DRAWS = 100
"""Kept sweeps of each short pilot chain (the fewest the leave-one-out comparison accepts)."""
PILOT_SEED_OFFSET = 1_000_003
"""Added to the fit's seed for the pilot's, so that the pilot's chains are not the fit's."""
OUT_FIELDS = ["rule", *(f for f in FIELDS if f != "family"), "family", "pilot_s"]  # the order of the stored file
RESULTS = Path(__file__).parent / "results"
PROBABILITY_TRUTHS = [t for t in DESIGN + HELD_OUT if TRUTHS[t][2] == "probability"]


def _rows(path: Path) -> list[dict]:
    if not path.exists():
        return []
    with open(path) as fh:  # a rerun replaces the earlier row
        return list({(r["rule"], r["truth"], r["n"], r["seed"]): r for r in csv.DictReader(fh)}.values())


def short_pilot_choice(truth: str, n: int, seed: int) -> tuple[str, float]:
    """The family the short pilot keeps on the replicate, and the pilot's wall time (a whole fit)."""
    from bayescal import DPMCalibrator

    s, y, _, _ = simulate(truth, n, seed)
    pilot = DPMCalibrator(
        random_state=seed + PILOT_SEED_OFFSET,
        tune=PILOT_TUNE,
        draws=PILOT_DRAWS,
        chains=1,
        null_stacking=False,
        route_options={"thin": 1, "hmc_steps": 0},
    )
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pilot.fit(s, y)
    return pilot.diagnostics_["family_selection"]["chosen"], time.perf_counter() - t0


def replicate_rows(truth: str, n: int, seed: int) -> list[dict]:
    """The default's row and the short rule's row for one replicate."""
    default = run_one(truth, n, seed, "gibbs", {}, ["kde"], None) | {"rule": "default", "pilot_s": 0.0}
    family, pilot_s = short_pilot_choice(truth, n, seed)
    known = {"kde": float(json.loads(default["others"])["kde"])}
    short = run_one(truth, n, seed, "gibbs", {"components": family}, ["kde"], known)
    short |= {"rule": "short", "pilot_s": pilot_s, "route": "gibbs"}
    short["time_s"] += pilot_s
    if family == default["family"]:  # the same posterior: the rows must agree
        assert all(np.isclose(short[k], default[k]) for k in ("cov95", "cov80", "cov50", "mae")), (short, default)
    return [default, short]


def summarise(path: Path) -> str:
    """Per (truth, N): the share of seeds where the rules keep the same family, and both rules'
    coverage, error and time, as a markdown table."""
    rows = _rows(path)
    order = DESIGN + HELD_OUT
    cells = sorted({(r["truth"], int(r["n"])) for r in rows}, key=lambda k: (order.index(k[0]), k[1]))
    head = (
        "| truth | N | seeds | same family | Beta kept (default / short) | 95 % cov default / short (se) "
        "| 80 % | 50 % | MAE default / short (KDE) | time s default / short |"
    )
    lines = [head, "|---" * (head.count("|") - 1) + "|"]
    for truth, n in cells:
        by_rule = {
            rule: {int(r["seed"]): r for r in rows if (r["truth"], int(r["n"]), r["rule"]) == (truth, n, rule)}
            for rule in ("default", "short")
        }
        seeds = sorted(set(by_rule["default"]) & set(by_rule["short"]))
        if not seeds:
            continue
        pick = {rule: [by_rule[rule][s] for s in seeds] for rule in by_rule}
        summ = {
            rule: cell_summary([{k: v for k, v in r.items() if k not in ("rule", "family", "pilot_s")} for r in sel])
            for rule, sel in pick.items()
        }
        same = np.mean([by_rule["default"][s]["family"] == by_rule["short"][s]["family"] for s in seeds])
        beta = [np.mean([r["family"] == "beta" for r in pick[rule]]) for rule in ("default", "short")]
        d, s = summ["default"], summ["short"]
        lines.append(
            f"| {truth}{' (held out)' if truth in HELD_OUT else ''} | {n} | {len(seeds)} | {same:.2f} "
            f"| {beta[0]:.2f} / {beta[1]:.2f} | {d['cov95']:.3f} / {s['cov95']:.3f} ({d['cov95_se']:.3f}) "
            f"| {d['cov80']:.3f} / {s['cov80']:.3f} | {d['cov50']:.3f} / {s['cov50']:.3f} "
            f"| {d['mae']:.4f} / {s['mae']:.4f} ({d['others'].get('kde', float('nan')):.4f}) "
            f"| {d['time_s']:.2f} / {s['time_s']:.2f} |"
        )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--truths", nargs="+", default=PROBABILITY_TRUTHS, choices=PROBABILITY_TRUTHS)
    ap.add_argument("--n", nargs="+", type=int, default=[300, 1000, 10000])
    ap.add_argument("--seeds", type=int, default=8)
    ap.add_argument("--out", type=Path, default=RESULTS / "select_pilot_study.csv")
    ap.add_argument("--resume", action="store_true", help="skip the replicates already in --out")
    ap.add_argument("--summarise", action="store_true", help="only write the table of --out")
    args = ap.parse_args()
    if not args.summarise:
        done = {(r["truth"], int(r["n"]), int(r["seed"])) for r in _rows(args.out)} if args.resume else set()
        new = not args.out.exists()
        with open(args.out, "a", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=OUT_FIELDS)
            if new:
                writer.writeheader()
            for truth in args.truths:
                for n in args.n:
                    for seed in range(args.seeds):
                        if (truth, n, seed) in done:
                            continue
                        default, short = replicate_rows(truth, n, seed)
                        writer.writerows([default, short])
                        fh.flush()
                        print(
                            f"{truth} N={n} seed={seed} kept {default['family']} / {short['family']} "
                            f"cov95 {default['cov95']:.3f} / {short['cov95']:.3f} "
                            f"time {default['time_s']:.2f} / {short['time_s']:.2f} s",
                            flush=True,
                        )
    table = summarise(args.out)
    stamp = (
        f"*Written {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {platform.system()} "
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
        f"`python benchmarks/select_pilot_study.py {' '.join(sys.argv[1:])}`.*"
    )
    args.out.with_suffix(".md").write_text(
        "# Family choice by a short pilot against the default's\n\n" + stamp + "\n\n" + table + "\n"
    )
    print(table)


if __name__ == "__main__":
    main()
