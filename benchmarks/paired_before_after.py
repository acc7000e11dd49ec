"""Stored coverage-study rows before a change of the calibrator against their refits after it.

When a change alters some fits, their rows in ``benchmarks/results/dpm_coverage.csv`` are refitted
in place and the earlier versions kept in a before-file (``dpm_coverage_*_before.csv``). This script
pairs each kept row with the current row of the same route, truth, N and seed and prints, per cell,
the mean 95 / 80 / 50 % pointwise coverage, MAE and fit time before and after, with the standard
error of the paired difference of the 95 % coverage.

Usage::

    python benchmarks/paired_before_after.py benchmarks/results/dpm_coverage_layout_before.csv
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dpm_coverage import _rows

NUMERIC = ["cov95", "cov80", "cov50", "mae", "time_s"]


def paired_table(before: Path, after: Path) -> str:
    """The markdown table of the cells of ``before`` paired with their rows in ``after``."""
    old = pd.read_csv(before)
    new = pd.DataFrame(_rows(after))
    for frame in (old, new):
        frame[NUMERIC] = frame[NUMERIC].astype(float)
        frame[["n", "seed"]] = frame[["n", "seed"]].astype(int)
    pairs = old.merge(new, on=["route", "truth", "n", "seed"], suffixes=("_before", "_after"))
    lines = [
        "| route | truth | N | seeds | 95 % before -> after (se of the difference) | 80 % | 50 % | MAE | fit s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for (route, truth, n), g in pairs.groupby(["route", "truth", "n"]):
        diff = g.cov95_after - g.cov95_before
        se = f"{diff.std(ddof=1) / np.sqrt(len(diff)):.3f}" if len(diff) > 1 else "-"
        cells = [
            f"{g[c + '_before'].mean():{f}} -> {g[c + '_after'].mean():{f}}"
            for c, f in (("cov80", ".3f"), ("cov50", ".3f"), ("mae", ".4f"), ("time_s", ".2f"))
        ]
        lines.append(
            f"| {route} | {truth} | {n} | {len(g)} | {g.cov95_before.mean():.3f} -> {g.cov95_after.mean():.3f} ({se}) "
            f"| {' | '.join(cells)} |"
        )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("before", type=Path)
    ap.add_argument("--after", type=Path, default=Path(__file__).parent / "results" / "dpm_coverage.csv")
    args = ap.parse_args()
    print(paired_table(args.before, args.after))


if __name__ == "__main__":
    main()
