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

Configurations (``--config``): ``k2`` and ``k2_repulsive`` (two components: the truth and one
spare), ``k20`` and ``k20_repulsive`` (the default truncation); ``components="beta"``, chains from
the KDE-informed start (``start="prior"``), the default's draws, warm-up and thinning, and
:math:`g` = ``--g`` (default 1) for the repulsive ones. A row's ``route`` names its
configuration; the table sets each beside the default calibrator's rows of the coverage study on
the same seeds (:func:`_study_files.paired_table`).

Usage (one configuration a run; each appends its rows and its command to the table's file)::

    python benchmarks/repulsion_study.py --truths monotone piles calibrated separable --n 10000 --config k2
    python benchmarks/repulsion_study.py --truths monotone piles calibrated separable --n 10000 --config k2_repulsive --g 10

Rows go to ``benchmarks/results/repulsion_study.csv``; the table beside it,
``repulsion_study.md``, with every run's command, date and machine.

References
----------
Petralia, F., Rao, V. & Dunson, D. B. (2012). Repulsive mixtures. NeurIPS 25.
Rousseau, J. & Mengersen, K. (2011). Asymptotic behaviour of the posterior distribution in
overfitted mixture models. JRSS B 73, 689-710.
Xie, F. & Xu, Y. (2020). Bayesian repulsive Gaussian mixture model. JASA 115, 187-203.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from scipy.special import betaln

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _study_files import CONVERGENCE_COLUMNS, command_line, finish_study, paired_table, run_replicates, study_parser
from dpm_coverage import FIELDS, run_one

from bayescal.bayesian import gibbs

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
    """One (truth, N, seed) fit in ``config`` (the coverage study's row, the KDE calibrator as the
    other), its ``route`` the configuration (with g for the repulsive ones) and ``occupied`` the
    mean number of components holding any score, per class and kept draw."""
    K, repulsive = CONFIGS[config]
    RepulsiveBeta.g = g
    gibbs._FAMILIES["beta"] = RepulsiveBeta if repulsive else gibbs._Beta
    options = {"components": "beta", "n_components": K, "route_options": {"backend": "numpy", "start": "prior"}}
    extra: dict = {}
    try:
        row = run_one(truth, n, seed, "gibbs", options, ["kde"], None, extra)
    finally:
        gibbs._FAMILIES["beta"] = gibbs._Beta
    return row | {"route": f"{config} (g = {g:g})" if repulsive else config, "occupied": extra["occupied"]}


def summarise(path: Path) -> str:
    """The study's rows beside the default calibrator's on the same seeds, with the map's
    convergence and the occupied components (:func:`_study_files.paired_table`)."""
    occupied = (("occupied", lambda c, sel: f"{c['occupied']:.1f}"),)
    return paired_table(path, CONVERGENCE_COLUMNS + occupied)


def main() -> None:
    ap = study_parser(__doc__, "repulsion_study.py", n=(10000,), seeds=8)
    ap.add_argument("--config", default="k2_repulsive", choices=list(CONFIGS))
    ap.add_argument("--g", type=float, default=1.0, help="the repulsion's squared length in prior standard deviations")
    args = ap.parse_args()
    run_replicates(args, lambda truth, n, seed: one_row(args.config, truth, n, seed, args.g), FIELDS + ["occupied"])
    command = command_line("repulsion_study.py", args, ("config", "g"))
    finish_study(args, "Repulsive Beta components against plain ones and the default", command, summarise)


if __name__ == "__main__":
    main()
