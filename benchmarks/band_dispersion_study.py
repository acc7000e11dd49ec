"""Are the DPM's class-density bands as wide as the errors of its estimates? The posterior spread
of each class density, and of their ratio, against the replicate-to-replicate error of the
posterior mean, on truths whose class densities are known.

Why. At 10^4 scores chains run twenty times longer than the default cover the overconfident
truth's map at 1.00 with the 95 % band and the plateau's at 0.89 (``benchmarks/start_study.py``),
outside the 0.92-0.98 bar on both sides. The map is a ratio of the two class densities; this
script measures whether the bands are as wide as the estimates' errors. For each replicate it records, at the 10 %, 20 %, ..., 90 % quantiles of the scores, the
posterior mean and standard deviation of :math:`\\log f_0`, :math:`\\log f_1` and
:math:`\\log f_1 - \\log f_0` (the map's log-odds less the constant :math:`\\log \\pi/(1-\\pi)`),
and the pointwise coverage of the 95 % and 50 % bands of each density and of the map with the
true class prior. Over replicates, an honest band has a posterior standard deviation about
equal to the standard deviation of the posterior mean's error (``ratio`` about 1): above 1 the
band is wider than the estimate's error (conservative), below 1 narrower.

Only truths defined by their class densities (:func:`dpm_coverage._class_conditional`) apply.

Usage::

    python benchmarks/band_dispersion_study.py --truths monotone ushape weak --n 10000 --seeds 16 \\
        --option 'route_options={"thin": 40}'

The table is printed and written to ``benchmarks/results/band_dispersion.md`` with the command,
date and machine.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from dpm_coverage import TRUTHS, parse_options, simulate

QUANTILES = np.linspace(0.1, 0.9, 9)
"""Score quantiles at which the densities are compared."""


def replicate(truth: str, n: int, seed: int, options: dict) -> dict:
    """One fit's posterior means, standard deviations and band coverage at the score quantiles."""
    from bayescal import make_calibrator

    s, y, true_map, kind = simulate(truth, n, seed)
    _, f0, f1 = true_map.class_densities
    g = np.quantile(s, QUANTILES)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cal = make_calibrator("dpm", random_state=seed, score_kind=kind, **options).fit(s, y)
    logf = np.log(cal.density_map(g).values.reshape(-1, 2, g.size))
    truth_log = np.log([f0.pdf(g), f1.pdf(g)])
    odds = logf[:, 1] - logf[:, 0]
    out: dict = {}
    for name, draws, true in (
        ("f0", logf[:, 0], truth_log[0]),
        ("f1", logf[:, 1], truth_log[1]),
        ("ratio", odds, truth_log[1] - truth_log[0]),
    ):
        out[f"{name}_err"] = draws.mean(axis=0) - true
        out[f"{name}_sd"] = draws.std(axis=0)
        for q in (0.95, 0.5):
            lo, hi = np.quantile(draws, [(1 - q) / 2, (1 + q) / 2], axis=0)
            out[f"{name}_cov{round(100 * q)}"] = float(np.mean((lo <= true) & (true <= hi)))
    return out


def summarise(truth: str, n: int, rows: list[dict]) -> str:
    """One table row per quantity: mean posterior sd / sd of the error over replicates, and coverage."""
    lines = []
    for name, label in (("f0", "log f0"), ("f1", "log f1"), ("ratio", "log f1 - log f0 (map, true pi)")):
        err = np.array([r[f"{name}_err"] for r in rows])  # (seeds, points)
        sd = np.array([r[f"{name}_sd"] for r in rows])
        ratio = sd.mean(axis=0) / err.std(axis=0, ddof=1)
        bias = np.abs(err.mean(axis=0)) / err.std(axis=0, ddof=1)
        cov95 = np.mean([r[f"{name}_cov95"] for r in rows])
        cov50 = np.mean([r[f"{name}_cov50"] for r in rows])
        lines.append(
            f"| {truth} | {n} | {len(rows)} | {label} | {np.median(ratio):.2f} ({ratio.min():.2f}-{ratio.max():.2f}) "
            f"| {np.median(bias):.2f} | {cov95:.3f} | {cov50:.3f} |"
        )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    class_conditional = [t for t, (_, m, _) in TRUTHS.items() if hasattr(m, "class_densities")]
    ap.add_argument("--truths", nargs="+", default=["monotone", "ushape", "weak"], choices=class_conditional)
    ap.add_argument("--n", nargs="+", type=int, default=[10000])
    ap.add_argument("--seeds", type=int, default=16)
    ap.add_argument("--option", action="append", default=[], metavar="NAME=JSON", help="a calibrator parameter")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "band_dispersion.md")
    args = ap.parse_args()
    options = parse_options(args.option, ap.error)
    head = (
        "| truth | N | seeds | quantity | posterior sd / error sd, median over the score quantiles (range) "
        "| median abs(bias) / error sd | 95 % cov | 50 % cov |"
    )
    lines = [head, "|---" * (head.count("|") - 1) + "|"]
    for truth in args.truths:
        for n in args.n:
            rows = [replicate(truth, n, seed, options) for seed in range(args.seeds)]
            lines.append(summarise(truth, n, rows))
            print(lines[-1], flush=True)
    command = "python benchmarks/band_dispersion_study.py " + " ".join(
        [f"--truths {' '.join(args.truths)}", f"--n {' '.join(map(str, args.n))}", f"--seeds {args.seeds}"]
        + [f"--option '{o}'" for o in args.option]
    )
    stamp = (
        f"*Written {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} ({platform.system()} {platform.machine()}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}): `{command}`*"
    )
    args.out.write_text(f"# Band dispersion study\n\n{stamp}\n\n" + "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
