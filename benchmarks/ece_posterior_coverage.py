"""How often the intervals of :func:`bayescal.diagnostics.calibration_error_posterior` contain the
population calibration error of the classifier's raw scores.

For each truth of :data:`bayescal.datasets.TRUTHS` given (the probability ones; ``rare`` was not
used when the function's defaults were chosen; ``confident``, scores piled near 0 and 1, was added
with the logit-scale integration of ``"model"``, after a probability-scale grid had failed there)
and each repetition ``r``, the script draws ``n``
scores and labels (``simulate_scores(truth, n, random_state=r)``), fits the default
``DPMCalibrator`` (``random_state=r``; ``--draws`` sets its draws, the default's when not given) and asks for the 95 % intervals of the
ECE and of Murphy's reliability term REL with ``score_distribution="model"`` and
``"empirical"``. The population values it compares them with are

.. math::

    \\mathrm{ECE} = \\int_0^1 |q(s) - s|\\, f(s)\\, ds, \\qquad
    \\mathrm{REL} = \\int_0^1 (q(s) - s)^2 f(s)\\, ds,

with :math:`q` the true map and :math:`f = \\pi f_1 + (1 - \\pi) f_0` the scores' density
(adaptive quadrature). The table gives, per truth and score distribution, the repetitions whose
interval holds the population value, the coverage's binomial standard error, and the mean interval
width.

Usage::

    python benchmarks/ece_posterior_coverage.py [--truths beta_skewed beta_bimodal rare] [--reps 100] [--n 500] [--draws K]

Writes ``benchmarks/results/ece_posterior_coverage.md`` (date, machine and command above the table).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from scipy import integrate

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_evidence import machine

from bayescal import DPMCalibrator
from bayescal.datasets import TRUTHS, simulate_scores
from bayescal.diagnostics import calibration_error_posterior

OUT = Path(__file__).parent / "results" / "ece_posterior_coverage.md"
MEASURES = {"ECE": ("ece", lambda d: np.abs(d)), "REL": ("reliability", lambda d: d**2)}


def population(truth_name: str) -> dict[str, float]:
    """The truth's population ECE and REL of its raw scores."""
    truth = TRUTHS[truth_name]

    def density(s: float) -> float:
        return float(truth.pi * np.exp(truth.f1.logpdf(s)) + (1 - truth.pi) * np.exp(truth.f0.logpdf(s)))

    out = {}
    for label, (_, gap) in MEASURES.items():
        value, _ = integrate.quad(
            lambda s, gap=gap: float(gap(truth.calibration_map(s) - s)) * density(s), 0.0, 1.0, limit=200
        )
        out[label] = value
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--truths", nargs="+", default=["beta_skewed", "beta_bimodal", "rare", "confident"])
    ap.add_argument("--reps", type=int, default=100)
    ap.add_argument("--n", type=int, default=500)
    ap.add_argument("--draws", type=int, default=None, help="the calibrator's draws (its default when not given)")
    args = ap.parse_args()
    rows = []
    for name in args.truths:
        truth_values = population(name)
        hits = {(sd, m): [] for sd in ("model", "empirical") for m in MEASURES}
        widths = {key: [] for key in hits}
        for rep in range(args.reps):
            data = simulate_scores(name, args.n, random_state=rep)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # unconverged short chains say so; measured here anyway
                cal = DPMCalibrator(random_state=rep, draws=args.draws).fit(data.scores, data.y)
                for sd in ("model", "empirical"):
                    res = calibration_error_posterior(cal, data.scores, score_distribution=sd, ci_prob=0.95)
                    for label, (var, _) in MEASURES.items():
                        lo, hi = (float(res[f"{var}_ci"].sel(ci_bound=b)) for b in ("lower", "upper"))
                        hits[(sd, label)].append(lo <= truth_values[label] <= hi)
                        widths[(sd, label)].append(hi - lo)
        for (sd, label), h in hits.items():
            cov = float(np.mean(h))
            rows.append(
                f"| {name} | {label} | {truth_values[label]:.4g} | {sd} | {sum(h)}/{len(h)} | "
                f"{np.sqrt(cov * (1 - cov) / len(h)):.3f} | {np.mean(widths[(sd, label)]):.4g} |"
            )
    command = "python benchmarks/ece_posterior_coverage.py " + " ".join(
        [f"--truths {' '.join(args.truths)}", f"--reps {args.reps}", f"--n {args.n}"]
        + ([] if args.draws is None else [f"--draws {args.draws}"])
    )
    header = (
        "| truth | measure | population value | score_distribution | intervals holding it | se | mean width |\n"
        "|---|---|---|---|---|---|---|"
    )
    OUT.write_text(
        "# Coverage of the calibration-error posterior\n\n"
        "The 95 % intervals of `calibration_error_posterior` against the population ECE and REL of the raw "
        "scores (the script's docstring says how they are computed).\n\n"
        f"- {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} ({machine()}): `{command}`\n\n"
        + header
        + "\n"
        + "\n".join(rows)
        + "\n"
    )
    print(OUT.read_text())


if __name__ == "__main__":
    main()
