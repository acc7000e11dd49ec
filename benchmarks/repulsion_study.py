r"""Study of a candidate prior for the DPM calibrator: Beta components that repel each other.

Why. From about 10^4 scores on, the sampler's chains do not converge even when the component
family holds the truth: on classes that are each one Beta density, Beta components with one
spare component (``n_components=2``) reach a worst R-hat of 1.15-1.51
(``benchmarks/start_study.py``, configuration ``beta_k2``). The slow direction is the
components' redundancy: near-duplicate components share one density's mass along the flat
ridges of an overfitted mixture (Rousseau & Mengersen 2011), which the sweeps cross by tiny
steps. A repulsive prior (Petralia, Rao & Dunson 2012; Xie & Xu 2020) removes those ridges
instead of crossing them: it multiplies the components' independent priors by

.. math::
    \prod_{j < k} h(d_{jk}), \qquad h(d) = \frac{d^2}{g + d^2}, \qquad
    d_{jk}^2 = \frac{(\log a_j - \log a_k)^2 + (\log b_j - \log b_k)^2}{\tau^2},

so two components with the same shapes have prior density 0, and pairs further apart than
about :math:`\sqrt g` prior standard deviations :math:`\tau` (``ab_logsd``) are barely affected.
The question this script answers: do the chains of such a mixture converge where the default's
do not, and what happens to the band and the error?

Sampler. The calibrator's numpy sweeps (``route_options={"backend": "numpy"}``, the reference
implementation of :mod:`bayescal.bayesian.gibbs`), with the Beta components' step replaced: the
components are updated one after the other given the others (the repulsion couples them), each
by the default's two random-walk Metropolis steps on (log a, log b) along (1, 1) and (1, -1),
with the repulsion in the target; an empty component first gets one independence proposal from
its prior, accepted with the ratio of the repulsion terms (its conditional is the prior times
the repulsion). The rest of the sweep is unchanged. Baselines are the same numpy sweeps without
the repulsion, so the comparison changes one thing. Research code: Beta components only, no
Hamiltonian moves, no compiled sweeps, not in the PyMC model.

Configurations: ``k2`` and ``k2_repulsive`` (two components: the truth and one spare), ``k20``
and ``k20_repulsive`` (the default truncation); ``components="beta"``, chains from the
KDE-informed start (``start="prior"``), the default's draws, warm-up and thinning, and
:math:`g` = ``--g`` (default 1).

Usage::

    python benchmarks/repulsion_study.py --truths monotone piles calibrated separable --n 10000 --seeds 8
    python benchmarks/repulsion_study.py --summarise

Rows go to ``benchmarks/results/repulsion_study.csv`` (``--resume`` skips those there); the
table beside it, ``repulsion_study.md``, with the date and machine.

References
----------
Petralia, F., Rao, V. & Dunson, D. B. (2012). Repulsive mixtures. NeurIPS 25.
Rousseau, J. & Mengersen, K. (2011). Asymptotic behaviour of the posterior distribution in
overfitted mixture models. JRSS B 73, 689-710.
Xie, F. & Xu, Y. (2020). Bayesian repulsive Gaussian mixture model. JASA 115, 187-203.
"""

from __future__ import annotations

import argparse
import csv
import platform
import sys
import time
from pathlib import Path

import numpy as np
from scipy.special import betaln

sys.path.insert(0, str(Path(__file__).resolve().parent))

from dpm_coverage import DESIGN, FIELDS, HELD_OUT, TRUTHS, _truth_label, cell_summary, converged_share, run_one

from bayescal.bayesian import gibbs

RESULTS = Path(__file__).parent / "results"
OUT_FIELDS = ["config", "g", *FIELDS, "occupied"]
CONFIGS = {
    "k2": (2, False),
    "k2_repulsive": (2, True),
    "k20": (20, False),
    "k20_repulsive": (20, True),
}
"""Each configuration's truncation and whether the components repel each other."""


class RepulsiveBeta(gibbs._Beta):
    """Beta components of the numpy sweeps under the repulsive prior (module docstring)."""

    g = 1.0

    def log_repulsion(self, la_k: np.ndarray, lb_k: np.ndarray, k: int) -> np.ndarray:
        """:math:`\\sum_{j \\ne k} \\log h(d_{jk})` per chain for component k at (la_k, lb_k)."""
        others = np.arange(self.la.shape[1]) != k
        d2 = ((self.la[:, others] - la_k[:, None]) ** 2 + (self.lb[:, others] - lb_k[:, None]) ** 2) / self.tau**2
        with np.errstate(divide="ignore"):  # two equal components: log 0, the prior's zero
            return np.log(d2 / (self.g + d2)).sum(axis=1)

    def update(self, suff, rng):
        nk, s1, s2 = suff[..., 0], suff[..., 1], suff[..., 2]
        C, K = nk.shape
        tau = self.tau
        accepted = 0

        def log_target(la_k, lb_k, k):
            a, b = np.exp(la_k), np.exp(lb_k)
            return (
                a * s1[:, k]
                + b * s2[:, k]
                - nk[:, k] * betaln(a, b)
                - 0.5 * ((la_k - self.la0[k]) / tau) ** 2
                - 0.5 * ((lb_k - self.lb0[k]) / tau) ** 2
                + self.log_repulsion(la_k, lb_k, k)
            )

        for k in range(K):
            occupied = nk[:, k] > 0
            # an empty component: an independence proposal from its prior
            pa = self.la0[k] + tau * rng.standard_normal(C)
            pb = self.lb0[k] + tau * rng.standard_normal(C)
            ratio = self.log_repulsion(pa, pb, k) - self.log_repulsion(self.la[:, k], self.lb[:, k], k)
            acc = ~occupied & (np.log(rng.random(C)) < ratio) & ~self.below_floor(pa, pb)
            self.la[:, k] = np.where(acc, pa, self.la[:, k])
            self.lb[:, k] = np.where(acc, pb, self.lb[:, k])
            current = log_target(self.la[:, k], self.lb[:, k], k)
            step = 1.7 / np.sqrt(1.0 / tau**2 + nk[:, k])
            for _ in range(self.n_mh):
                for sign in (1.0, -1.0):  # concentration, then location
                    e = step * rng.standard_normal(C)
                    pla, plb = self.la[:, k] + e, self.lb[:, k] + sign * e
                    proposal = log_target(pla, plb, k)
                    acc = (np.log(rng.random(C)) < proposal - current) & ~self.below_floor(pla, plb)
                    self.la[:, k] = np.where(acc, pla, self.la[:, k])
                    self.lb[:, k] = np.where(acc, plb, self.lb[:, k])
                    current = np.where(acc, proposal, current)
                    accepted += int((acc & occupied).sum())
        return accepted, 2 * self.n_mh * int((nk > 0).sum())


def one_row(config: str, truth: str, n: int, seed: int, g: float) -> dict:
    """One (truth, N, seed) fit in ``config`` (the coverage study's row, the KDE calibrator as the other)."""
    K, repulsive = CONFIGS[config]
    RepulsiveBeta.g = g
    gibbs._FAMILIES["beta"] = RepulsiveBeta if repulsive else gibbs._Beta
    options = {"components": "beta", "n_components": K, "route_options": {"backend": "numpy", "start": "prior"}}
    extra: dict = {}
    try:
        row = run_one(truth, n, seed, "gibbs", options, ["kde"], None, extra)
    finally:
        gibbs._FAMILIES["beta"] = gibbs._Beta
    return row | {"config": config, "g": g if repulsive else "", "occupied": extra["occupied"]}


def _rows(path: Path) -> list[dict]:
    if not path.exists():
        return []
    with open(path) as fh:
        return list({(r["config"], r["g"], r["truth"], r["n"], r["seed"]): r for r in csv.DictReader(fh)}.values())


def summarise(path: Path) -> str:
    """Means over seeds per (truth, N, configuration, g) as a markdown table."""
    rows = _rows(path)
    order = DESIGN + HELD_OUT
    keys = sorted(
        {(r["truth"], int(r["n"]), r["config"], r["g"]) for r in rows},
        key=lambda k: (order.index(k[0]), k[1], list(CONFIGS).index(k[2]), k[3]),
    )
    head = (
        "| truth | N | configuration | g | seeds | 95 % cov (se) | 80 % | 50 % | MAE | MAE KDE | occupied "
        "| R-hat max | ESS bulk / tail min | converged | time s |"
    )
    lines = [head, "|---" * (head.count("|") - 1) + "|"]
    for truth, n, config, g in keys:
        sel = [r for r in rows if (r["truth"], int(r["n"]), r["config"], r["g"]) == (truth, n, config, g)]
        c = cell_summary([{k: v for k, v in r.items() if k not in ("config", "g")} for r in sel])
        lines.append(
            f"| {_truth_label(truth)} | {n} | {config} | {g or '-'} | {c['seeds']} "
            f"| {c['cov95']:.3f} ({c['cov95_se']:.3f}) | {c['cov80']:.3f} | {c['cov50']:.3f} | {c['mae']:.4f} "
            f"| {c['others'].get('kde', float('nan')):.4f} | {c['occupied']:.1f} | {c['rhat_max']:.2f} "
            f"| {c['ess_bulk_min']:.0f} / {c['ess_tail_min']:.0f} | {converged_share(sel):.2f} | {c['time_s']:.1f} |"
        )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--truths", nargs="+", default=["monotone", "piles", "calibrated", "separable"], choices=list(TRUTHS)
    )
    ap.add_argument("--n", nargs="+", type=int, default=[10000])
    ap.add_argument("--seeds", type=int, default=8)
    ap.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    ap.add_argument("--g", type=float, default=1.0, help="the repulsion's squared length in prior standard deviations")
    ap.add_argument("--out", type=Path, default=RESULTS / "repulsion_study.csv")
    ap.add_argument("--resume", action="store_true", help="skip the rows already in --out")
    ap.add_argument("--summarise", action="store_true", help="only write the table of --out")
    args = ap.parse_args()
    if not args.summarise:
        done = {(r["config"], r["g"], r["truth"], int(r["n"]), int(r["seed"])) for r in _rows(args.out)}
        new = not args.out.exists()
        with open(args.out, "a", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=OUT_FIELDS)
            if new:
                writer.writeheader()
            for truth in args.truths:
                for n in args.n:
                    for config in args.configs:
                        g = args.g if CONFIGS[config][1] else ""
                        for seed in range(args.seeds):
                            if args.resume and (config, str(g), truth, n, seed) in done:
                                continue
                            row = one_row(config, truth, n, seed, args.g)
                            writer.writerow(row)
                            fh.flush()
                            print(
                                f"{config} g={g} {truth} N={n} seed={seed} cov95={row['cov95']:.3f} "
                                f"mae={row['mae']:.4f} occupied={row['occupied']:.1f} rhat={row['rhat_max']:.3f} "
                                f"ess={row['ess_bulk_min']:.0f} {row['time_s']:.1f}s",
                                flush=True,
                            )
    stamp = (
        f"*Written {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} by `benchmarks/repulsion_study.py` from "
        f"`{args.out.name}` ({platform.system()} {platform.machine()}, Python {platform.python_version()}).*"
    )
    legend = (
        "Columns as on the coverage page (`docs/evidence/coverage.md`), means over seeds; *occupied* is the "
        "mean number of components holding any score, per class and kept draw; *converged*, the share of fits "
        "with R-hat <= 1.01 and bulk and tail ESS >= 400. Configurations and the sampler: the module docstring. "
        "Commands: `python benchmarks/repulsion_study.py --truths monotone piles calibrated separable --n 10000 "
        "--seeds 8 --configs k2 k2_repulsive --g 10`, then `python benchmarks/repulsion_study.py --truths "
        "monotone piles --n 10000 --seeds 4 --configs k20 k20_repulsive --g 10`."
    )
    args.out.with_suffix(".md").write_text(
        f"# Repulsive Beta components\n\n{stamp}\n\n{legend}\n\n{summarise(args.out)}\n"
    )


if __name__ == "__main__":
    main()
