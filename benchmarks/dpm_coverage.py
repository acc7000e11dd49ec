"""Coverage study of the DPM calibrator's credible bands against simulated truths with known maps.

Each truth is a joint distribution of (score, label) whose calibration map m(s) = P(y=1 | s)
is known exactly. Truths named in the issue and used while choosing defaults (``DESIGN``):

* ``monotone``: f0 = Beta(2, 5), f1 = Beta(5, 2), pi = 0.4;
* ``ushape``: f0 = Beta(3, 3), f1 = 0.5 Beta(2, 9) + 0.5 Beta(9, 2), pi = 0.5;
* ``rare``: as ``monotone`` with pi = 0.03 (3 % positives);
* ``piles``: scores piled near 0 and 1, as boosted trees and naive Bayes give:
  f0 = Beta(0.4, 4), f1 = Beta(4, 0.4), pi = 0.3;
* ``plateau``: a map with a flat stretch and kinks: s ~ Beta(2, 2), m(s) piecewise linear
  0.1 (s < 0.3), up to 0.5 at 0.4, flat 0.5 on [0.4, 0.6], up to 0.9 at 0.7, 0.9 above
  (so the class densities are equal on [0.4, 0.6]);
* ``heavy``: heavy-tailed decision values (``score_kind="decision"``): f0 = t_3(-1, 1),
  f1 = t_3(1, 1), pi = 0.5;
* ``overconfident``: a tempered sigmoid: latent z ~ N(0, 1.5^2), y ~ Bernoulli(expit(z)),
  reported score s = expit(3 z), so m(s) = expit(logit(s) / 3);
* ``far_tails`` (added 2026-12-03, the case on which the prediction grid's asinh spacing was
  built): decision values without a finite variance, f0 = t_2(-1, 1), f1 = t_2(1, 1),
  pi = 0.5; at 10^5 scores they reach about +-1000, far beyond the data region of about +-5.

Truths kept aside for the final check (``HELD_OUT``; never used to choose settings):

* ``skewed``: decision values, f0 = Gamma(2, 1), f1 = 1.5 + Gamma(3, 1.2), pi = 0.35;
* ``bimodal``: f0 = 0.6 Beta(2, 12) + 0.4 Beta(6, 4), f1 = Beta(7, 3), pi = 0.25;
* ``boosted``: most scores piled near 0 and 1, some in between, as a boosted classifier
  gives: f0 = 0.7 Beta(0.6, 6) + 0.3 Beta(3, 3), f1 = 0.8 Beta(5, 0.8) + 0.2 Beta(2, 2),
  pi = 0.2 (added after the default component families were chosen, and not used since);
* added 2026-11-25, after every default in the calibrator was set, to check its claims on
  shapes it was never fitted to: ``calibrated``, an already calibrated classifier: s ~ U(0, 1),
  y ~ Bernoulli(s), so m(s) = s; ``weak``, a classifier with almost no signal (AUC about
  0.56): f0 = Beta(4, 4), f1 = Beta(4.5, 3.5), pi = 0.5; ``separable``, a strong classifier
  whose scores crowd both ends with finite densities there: f0 = Beta(1, 6), f1 = Beta(6, 1),
  pi = 0.5; ``unequal_var``, decision values of classes with unequal spreads, so the map
  rises and then falls again (a logistic of a quadratic): f0 = N(0, 1), f1 = N(1.5, 0.5^2),
  pi = 0.3.
* added 2026-11-25 (second batch), after the Beta components' shape prior stopped shrinking
  with N (:data:`bayescal.bayesian.priors.BETA_PRIOR_MAX_UNITS`), a change judged on the truths
  above, so these check it on shapes no setting has seen: ``asym_piles``, negatives piled at 0
  and positives spread towards 1 with a pile there: f0 = Beta(0.5, 8), f1 = Beta(2, 0.7),
  pi = 0.25; ``mid_confident``, scores crowded mid-range: f0 = Beta(6, 9), f1 = Beta(9, 7),
  pi = 0.3; ``mixed_piles``, each class half piled at its end and half spread:
  f0 = 0.5 Beta(0.5, 5) + 0.5 Beta(3, 6), f1 = 0.5 Beta(6, 3) + 0.5 Beta(5, 0.5), pi = 0.5.
* added 2026-12-02 (third batch), before the default number of bins for compressed scores was
  halved (``n_bins`` 1,024 to 512), a change judged on every truth above, so these check it on
  shapes no setting has seen: ``subgroup``, decision values of a classifier that misses a
  subgroup of the positives, which score like negatives: f0 = Logistic(-1, 0.8),
  f1 = 0.7 Logistic(1.2, 0.6) + 0.3 Logistic(-0.4, 0.9), pi = 0.4; ``label_noise``, a
  calibrated classifier whose labels are flipped at random, so the map never reaches 0 or 1:
  s ~ Beta(0.7, 0.7), m(s) = 0.05 + 0.9 s.
* added 2026-12-03 (fourth batch), before any fit of it, to check the prediction grid's
  asinh spacing (built on ``far_tails``) on another shape with outlying scores:
  ``contaminated``, decision values of a classifier whose inputs are sometimes corrupted, so
  3 % of each class score from a wide distribution unrelated to the label and the map returns
  to pi far out: f_c = 0.97 N(2c - 1, 1) + 0.03 Cauchy(0, 10), pi = 0.3.
* added 2026-12-03 (fifth batch), before any fit of it, after the compression's bins were made
  to double when far outlying scores leave the middle half of the data in fewer than 32 of them
  (a rule chosen on ``far_tails`` and on ``contaminated`` at 10^6 scores, which was therefore
  seen while choosing it): ``corrupt_rows``, decision values of classes with unequal spreads of
  which 1 % of the rows are gross corruptions far wider than the data:
  f0 = 0.99 N(-0.8, 1.2^2) + 0.01 Cauchy(0, 100), f1 = 0.99 N(1, 0.9^2) + 0.01 Cauchy(0, 100),
  pi = 0.35.
* added 2026-12-03 (sixth batch), before any fit of it, before the compression's asinh scale was
  made to adapt to far outlying scores (a rule chosen on ``far_tails``, ``contaminated`` and
  ``corrupt_rows``, which were therefore seen while choosing it): ``glitches``, decision values
  of skewed classes of which half a percent of the rows are glitches of the scoring pipeline,
  spread far and wide whatever the label: f0 = 0.995 Logistic(-1.2, 0.7) + 0.005 N(0, 300^2),
  f1 = 0.995 Gumbel(0.8, 0.8) + 0.005 N(0, 300^2), pi = 0.45.

For each (truth, N, seed) the script fits the DPM calibrator and reports, on 200 grid points
between the 2.5 % and 97.5 % quantiles of the scores (the data region): the share of points
where the 50 %, 80 % and 95 % equal-tailed bands contain the true map (pointwise coverage);
the 95 % coverage at up to 500 of the observed scores in that region (data-weighted
coverage); the 95 % coverage over the grid points where the true map is strictly between 0
and 1 (``cov95_open``), and where it is exactly 0 or 1 the largest distance from it to the
band's near end (``edge_gap``; the ``skewed`` truth's map is 0 below 1.5, where f1 has no
mass: the map draws of a mixture with positive densities are positive everywhere, so an
equal-tailed band never contains 0 there, and ``edge_gap`` says how close to it the band
comes); the mean absolute error of the posterior-mean map; the mean 95 % band width; the
map's worst R-hat and lowest bulk / tail ESS over the data region (``diagnostics_["map"]``);
the fit time; and the MAE of every other registered 1-D calibrator on the same data.

Usage::

    python benchmarks/dpm_coverage.py --truths monotone piles --n 300 1000 --seeds 10 \\
        --out benchmarks/results/dpm_coverage.csv
    python benchmarks/dpm_coverage.py --summarise --out benchmarks/results/dpm_coverage.csv
    python benchmarks/make_evidence.py      # writes docs/evidence/coverage.md from that file

``--option NAME=JSON`` sets any other calibrator parameter (e.g. ``--option chains=4``);
``--others`` chooses the calibrators compared on MAE (default: every registered 1-D one).
Rows are appended to ``--out`` as they finish (a rerun seed replaces the earlier row, which is
dropped from the file when the run ends, and ``--resume`` skips the seeds already there, so a
long study runs in parts:
``--cells-from docs/evidence/coverage.md --resume`` completes every cell of the page; the
other calibrators' MAEs already in ``--out``, or ``--others-from``, for the same truth, N and
seed are reused, since the data and so those fits do not depend on the DPM's settings); the
summary (means over seeds, with the standard error of the 95 % coverage) is printed at the end.

``--refresh-others NAME ...`` refits those other calibrators on the data of every row of ``--out``
(of ``--truths`` and ``--n`` when given) and replaces their MAEs in place, the DPM's columns
untouched: for when one of them changes (the KDE calibrator's bandwidth rule on decision values,
2026-12-03). With ``--extremes-only``, only the data holding probability scores within
``PROB_EPS`` of 0 or 1 (exact 0 and 1 read next to the observed scores, BBQ's merged ties,
2026-12-05).

``--verify K`` refits the first K seeds of every cell in ``--out`` (of the ``--truths`` and
``--n`` given, all when not given) and reports whether each refit gives the stored row's DPM
columns (to 1e-9 relative: :data:`REPRODUCED_RTOL`); the exit status is 1 when one does not.
A row stops reproducing when the calibrator's fit changes, and on a processor whose vector
width differs from the one that wrote it: most rows from the classes on which the Hamiltonian
moves run, a few others (:mod:`bayescal.bayesian.gibbs`, "Chains and randomness").
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from scipy import stats
from scipy.special import expit, logit

DESIGN = ["monotone", "ushape", "rare", "piles", "plateau", "heavy", "overconfident", "far_tails"]
HELD_OUT = [
    "skewed",
    "bimodal",
    "boosted",
    "calibrated",
    "weak",
    "separable",
    "unequal_var",
    "asym_piles",
    "mid_confident",
    "mixed_piles",
    "subgroup",
    "label_noise",
    "contaminated",
    "corrupt_rows",
    "glitches",
]
LEVELS = (0.5, 0.8, 0.95)
COVERAGE_BAR = (0.92, 0.98)
"""The range the issue asks of the 95 % band's pointwise coverage in every cell."""
BAND_TOLERANCE = 0.07
"""How far from its level the issue lets the 50 % and 80 % bands' coverage be."""
PRIOR_SPREADS = ("robust", "sd", "robust_for_gaussian")
"""Values of the study option ``prior_spread`` (:func:`fit_dpm`)."""
FORMER_SPREAD = {"prior_spread": "sd"}
"""The study option of the rows fitted before 2026-12-03 (the priors' bandwidth from each class's
standard deviation)."""
LEARNT_CONCENTRATION = {"alpha_shape": 1.0, "alpha_rate": 1.0}
"""The concentration prior of the default calibrator until 2026-12-02, Gamma(1, 1), under which the
concentration is learnt; rows written before then carry it in their ``route`` label."""

BAND_FIELDS = ["cov50", "cov80", "cov95", "cov95_data", "cov95_open", "edge_gap", "mae", "width"]
"""The columns :func:`band_scores` fills."""
CONVERGENCE_FIELDS = ["rhat_max", "ess_bulk_min", "ess_tail_min"]
"""The map's convergence, from ``diagnostics_["map"]``."""
FIELDS = ["truth", "n", "seed", "route", *BAND_FIELDS, *CONVERGENCE_FIELDS, "time_s", "family", "others"]


class Mixture:
    """A class density: a weighted sum of scipy frozen distributions."""

    def __init__(self, parts):
        self.parts = parts

    def pdf(self, s):
        return sum(w * d.pdf(s) for w, d in self.parts)

    def rvs(self, n, rng):
        which = rng.choice(len(self.parts), size=n, p=[w for w, _ in self.parts])
        out = np.empty(n)
        for j, (_, d) in enumerate(self.parts):
            k = which == j
            out[k] = d.rvs(size=int(k.sum()), random_state=rng)
        return out


def _class_conditional(pi, f0, f1, kind="probability"):
    def simulate(n, rng):
        y = (rng.random(n) < pi).astype(int)
        s = np.empty(n)
        s[y == 0] = f0.rvs(int((y == 0).sum()), rng)
        s[y == 1] = f1.rvs(int((y == 1).sum()), rng)
        return s, y

    def true_map(g):
        a, b = pi * f1.pdf(g), (1 - pi) * f0.pdf(g)
        return a / (a + b)

    true_map.class_densities = (pi, f0, f1)  # for studies of the class densities' bands
    return simulate, true_map, kind


def _map_first(marginal, m, kind="probability"):
    def simulate(n, rng):
        s = marginal.rvs(size=n, random_state=rng)
        return s, (rng.random(n) < m(s)).astype(int)

    return simulate, m, kind


def _plateau_map(s):
    return np.interp(s, [0.0, 0.3, 0.4, 0.6, 0.7, 1.0], [0.1, 0.1, 0.5, 0.5, 0.9, 0.9])


def _overconfident():
    def simulate(n, rng):
        z = rng.normal(0.0, 1.5, n)
        return expit(3.0 * z), (rng.random(n) < expit(z)).astype(int)

    return simulate, lambda s: expit(logit(np.clip(s, 1e-300, 1 - 1e-16)) / 3.0), "probability"


B = stats.beta
TRUTHS = {
    "monotone": _class_conditional(0.4, Mixture([(1, B(2, 5))]), Mixture([(1, B(5, 2))])),
    "ushape": _class_conditional(0.5, Mixture([(1, B(3, 3))]), Mixture([(0.5, B(2, 9)), (0.5, B(9, 2))])),
    "rare": _class_conditional(0.03, Mixture([(1, B(2, 5))]), Mixture([(1, B(5, 2))])),
    "piles": _class_conditional(0.3, Mixture([(1, B(0.4, 4))]), Mixture([(1, B(4, 0.4))])),
    "plateau": _map_first(B(2, 2), _plateau_map),
    "heavy": _class_conditional(
        0.5, Mixture([(1, stats.t(3, -1.0, 1.0))]), Mixture([(1, stats.t(3, 1.0, 1.0))]), "decision"
    ),
    "overconfident": _overconfident(),
    "far_tails": _class_conditional(
        0.5, Mixture([(1, stats.t(2, -1.0, 1.0))]), Mixture([(1, stats.t(2, 1.0, 1.0))]), "decision"
    ),
    "skewed": _class_conditional(
        0.35, Mixture([(1, stats.gamma(2, 0.0, 1.0))]), Mixture([(1, stats.gamma(3, 1.5, 1.2))]), "decision"
    ),
    "bimodal": _class_conditional(0.25, Mixture([(0.6, B(2, 12)), (0.4, B(6, 4))]), Mixture([(1, B(7, 3))])),
    "boosted": _class_conditional(
        0.2, Mixture([(0.7, B(0.6, 6)), (0.3, B(3, 3))]), Mixture([(0.8, B(5, 0.8)), (0.2, B(2, 2))])
    ),
    "calibrated": _map_first(B(1, 1), lambda s: np.asarray(s, dtype=float)),
    "weak": _class_conditional(0.5, Mixture([(1, B(4, 4))]), Mixture([(1, B(4.5, 3.5))])),
    "separable": _class_conditional(0.5, Mixture([(1, B(1, 6))]), Mixture([(1, B(6, 1))])),
    "unequal_var": _class_conditional(
        0.3, Mixture([(1, stats.norm(0.0, 1.0))]), Mixture([(1, stats.norm(1.5, 0.5))]), "decision"
    ),
    "asym_piles": _class_conditional(0.25, Mixture([(1, B(0.5, 8))]), Mixture([(1, B(2, 0.7))])),
    "mid_confident": _class_conditional(0.3, Mixture([(1, B(6, 9))]), Mixture([(1, B(9, 7))])),
    "mixed_piles": _class_conditional(
        0.5, Mixture([(0.5, B(0.5, 5)), (0.5, B(3, 6))]), Mixture([(0.5, B(6, 3)), (0.5, B(5, 0.5))])
    ),
    "subgroup": _class_conditional(
        0.4,
        Mixture([(1, stats.logistic(-1.0, 0.8))]),
        Mixture([(0.7, stats.logistic(1.2, 0.6)), (0.3, stats.logistic(-0.4, 0.9))]),
        "decision",
    ),
    "label_noise": _map_first(B(0.7, 0.7), lambda s: 0.05 + 0.9 * np.asarray(s, dtype=float)),
    "contaminated": _class_conditional(
        0.3,
        Mixture([(0.97, stats.norm(-1.0, 1.0)), (0.03, stats.cauchy(0.0, 10.0))]),
        Mixture([(0.97, stats.norm(1.0, 1.0)), (0.03, stats.cauchy(0.0, 10.0))]),
        "decision",
    ),
    "corrupt_rows": _class_conditional(
        0.35,
        Mixture([(0.99, stats.norm(-0.8, 1.2)), (0.01, stats.cauchy(0.0, 100.0))]),
        Mixture([(0.99, stats.norm(1.0, 0.9)), (0.01, stats.cauchy(0.0, 100.0))]),
        "decision",
    ),
    "glitches": _class_conditional(
        0.45,
        Mixture([(0.995, stats.logistic(-1.2, 0.7)), (0.005, stats.norm(0.0, 300.0))]),
        Mixture([(0.995, stats.gumbel_r(0.8, 0.8)), (0.005, stats.norm(0.0, 300.0))]),
        "decision",
    ),
}


def region_grid(scores: np.ndarray) -> np.ndarray:
    """The 200 equally spaced points between the 2.5 % and 97.5 % quantiles of the scores (the
    data region) on which the studies compare bands and maps with the truth."""
    return np.linspace(*np.quantile(scores, [0.025, 0.975]), 200)


def simulate(truth: str, n: int, seed: int):
    """Scores, labels, the true map and the score kind of one replicate."""
    sim, true_map, kind = TRUTHS[truth]
    s, y = sim(n, np.random.default_rng(seed))
    if y.min() == y.max():  # a replicate with one class cannot be calibrated: make it two
        y[0] = 1 - y[0]
    return s, y, true_map, kind


def data_points(scores: np.ndarray, grid: np.ndarray, seed: int) -> np.ndarray:
    """Up to 500 of the observed ``scores`` inside the data region ``grid``, drawn with ``seed``:
    the points of the data-weighted coverage."""
    inside = scores[(scores >= grid[0]) & (scores <= grid[-1])]
    return np.random.default_rng(seed).choice(inside, size=min(500, inside.size), replace=False)


def band_scores(
    draws: np.ndarray, mean: np.ndarray, truth: np.ndarray, data_draws: np.ndarray, data_truth: np.ndarray
) -> dict[str, float]:
    """How a posterior's map draws on the region grid (``draws``: draws x grid, posterior mean
    ``mean``) and at the data points (``data_draws``) meet the true map there (``truth``,
    ``data_truth``): the coverage of the equal-tailed bands of :data:`LEVELS` (``cov50`` ..),
    the 95 % band's width, its coverage where the truth is strictly inside (0, 1)
    (``cov95_open``) and the largest distance from a truth of 0 or 1 to it (``edge_gap``), its
    coverage at the data points (``cov95_data``) and the mean absolute error of ``mean``."""
    row: dict[str, float] = {}
    for q in LEVELS:
        lo, hi = np.quantile(draws, [(1 - q) / 2, (1 + q) / 2], axis=0)
        inside = (lo <= truth) & (truth <= hi)
        row[f"cov{round(100 * q)}"] = float(np.mean(inside))
        if q == 0.95:
            row["width"] = float(np.mean(hi - lo))
            open_ = (truth > 0) & (truth < 1)
            row["cov95_open"] = float(np.mean(inside[open_]))
            gap = np.where(truth <= 0, lo, 1 - hi)[~open_]
            row["edge_gap"] = float(gap.max()) if gap.size else float("nan")
    lo, hi = np.quantile(data_draws, [0.025, 0.975], axis=0)
    row["cov95_data"] = float(np.mean((lo <= data_truth) & (data_truth <= hi)))
    row["mae"] = float(np.mean(np.abs(mean - truth)))
    return row


def fit_dpm(s: np.ndarray, y: np.ndarray, kind: str, seed: int, **params):
    """The DPM calibrator fitted to a replicate as the coverage study fits it (``random_state=seed``,
    the replicate's score kind, ``params`` such as ``inference`` and the study options of
    :func:`study_options`), its warnings silenced."""
    from bayescal import make_calibrator

    with warnings.catch_warnings(), study_options(params) as calibrator_params:
        warnings.simplefilter("ignore")
        return make_calibrator("dpm", random_state=seed, score_kind=kind, **calibrator_params).fit(s, y)


@contextlib.contextmanager
def study_options(params: dict):
    """Within the block, the library set up as the study options among ``params`` ask (options of
    the studies, not calibrator parameters); yields the other ``params``, the calibrator's.

    ``prior_spread="sd"`` fits the former default's priors, whose bandwidth took each class's
    standard deviation rather than the robust spread
    (:func:`bayescal.bayesian.priors.kde_prior` with ``robust=False``; the default until
    2026-12-03, so every row written before then carries it in its ``route`` label);
    ``prior_spread="robust_for_gaussian"`` takes the robust spread for Gaussian components and the
    standard deviation for Beta ones (a candidate: on scores piled at 0 and 1, which Beta
    components fit, the logit scale's long tails are the class's spread, not outliers).
    ``select_by="labels"`` makes ``components="select"`` compare the families by the leave-one-out
    log scores of the labels instead of the points' (:data:`bayescal.bayesian.dpm.SELECT_SCORE`;
    a candidate: the labels' scores are what the map predicts). ``select_average_within=c``
    makes it average the two families as ``components="auto"`` does where the better family's
    lead is below c standard errors of the difference
    (:data:`bayescal.bayesian.dpm.SELECT_AVERAGE_WITHIN`; a candidate)."""
    from unittest import mock

    from bayescal.bayesian import dpm, priors

    params = dict(params)
    spread = params.pop("prior_spread", "robust")
    if spread not in PRIOR_SPREADS:
        raise ValueError(f"prior_spread={spread!r} is not one of {PRIOR_SPREADS}.")
    select_by = params.pop("select_by", dpm.SELECT_SCORE)
    if select_by not in dpm.SELECT_SCORES:
        raise ValueError(f"select_by={select_by!r} is not one of {tuple(dpm.SELECT_SCORES)}.")
    within = float(params.pop("select_average_within", dpm.SELECT_AVERAGE_WITHIN))
    if not within >= 0:
        raise ValueError(f"select_average_within={within!r} must be a number >= 0.")
    kde_prior = priors.kde_prior

    def spread_prior(x, counts, n_components, family="gaussian"):
        robust = spread == "robust_for_gaussian" and family == "gaussian"
        return kde_prior(x, counts, n_components, family, robust=robust)

    with contextlib.ExitStack() as stack:
        if spread != "robust":  # the library's own prior otherwise
            stack.enter_context(mock.patch.object(priors, "kde_prior", spread_prior))
        stack.enter_context(mock.patch.object(dpm, "SELECT_SCORE", select_by))
        stack.enter_context(mock.patch.object(dpm, "SELECT_AVERAGE_WITHIN", within))
        yield params


def map_families(model) -> str:
    """The component families whose draws make up a fitted DPM calibrator's map, joined by ``+``
    (``"beta"`` when ``components="select"`` kept Beta components, ``"beta+gaussian"`` when
    it averaged them, as ``components="auto"`` does): those its posterior holds."""
    from bayescal.bayesian.dpm import _present_families

    return "+".join(sorted(_present_families(model.idata_["posterior"])))


def _other_calibrators(requested):
    from bayescal._registry import calibrators, get_calibrator_class

    names = (
        requested
        if requested
        else [c for c in calibrators() if c != "dpm" and not get_calibrator_class(c).feature_aware]
    )
    return names


def run_one(
    truth: str,
    n: int,
    seed: int,
    route: str,
    options: dict,
    others: list[str],
    known: dict | None = None,
    extra: dict | None = None,
) -> dict:
    """One (truth, N, seed) fit of the DPM and of ``others``; ``known`` holds MAEs of other
    calibrators already measured on the same data (they depend on the data alone): the row keeps
    all of them, so every row of a cell names the same calibrators, and fits only the ``others``
    not among them.
    ``extra``, when given, receives ``occupied``: the mean number of occupied mixture components
    per class and kept draw (``mean_occupied`` of the route's diagnostics, over the fitted
    families and both classes). The row's ``family`` column names the component families whose
    draws make up the map (:func:`map_families`)."""
    s, y, true_map, kind = simulate(truth, n, seed)
    grid = region_grid(s)
    truth_vals = true_map(grid)
    data_pts = data_points(s, grid, seed)
    t0 = time.perf_counter()
    model = fit_dpm(s, y, kind, seed, inference=route, **options)
    elapsed = time.perf_counter() - t0
    if extra is not None:
        fits = [d for d in model.diagnostics_.values() if isinstance(d, dict) and "class_0" in d]
        extra["occupied"] = float(np.mean([f[f"class_{c}"].get("mean_occupied", np.nan) for f in fits for c in (0, 1)]))
    row = {
        "truth": truth,
        "n": n,
        "seed": seed,
        "route": _label(route, options),
        "time_s": elapsed,
        "family": map_families(model),
    }
    row |= band_scores(
        model.calibration_map(grid).values.reshape(-1, grid.size),
        model.predict_proba(grid)[:, 1],
        truth_vals,
        model.calibration_map(data_pts).values.reshape(-1, data_pts.size),
        true_map(data_pts),
    )
    conv = model.diagnostics_["map"]
    row.update({k: conv.get(k, float("nan")) for k in CONVERGENCE_FIELDS})
    mae_others = dict(known or {})
    mae_others |= other_maes(s, y, kind, seed, grid, truth_vals, [name for name in others if name not in mae_others])
    row["others"] = json.dumps(mae_others)
    return row


def other_maes(s, y, kind: str, seed: int, grid, truth_vals, names: list[str]) -> dict[str, float]:
    """MAE over ``grid`` of each calibrator in ``names`` fitted with its defaults to ``(s, y)``
    (seeded with ``seed`` when it draws); one that refuses the data is reported and left out."""
    from bayescal import make_calibrator
    from bayescal._registry import get_calibrator_class

    out = {}
    for name in names:
        try:
            params = {"score_kind": kind}
            if "random_state" in get_calibrator_class(name)().get_params():  # a calibrator that draws: seeded too
                params["random_state"] = seed
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                p = make_calibrator(name, **params).fit(s, y).predict_proba(grid)[:, 1]
            out[name] = float(np.mean(np.abs(p - truth_vals)))
        except (ImportError, ValueError, TypeError) as exc:
            print(f"  {name}: {exc}")
    return out


def refresh_others(
    path: Path, names: list[str], truths: list[str] | None, ns: list[int] | None, extremes_only: bool = False
) -> int:
    """Refit the calibrators ``names`` on the data of every (truth, N, seed) in ``path`` (of
    ``truths`` and ``ns`` when given) and write their MAEs into the ``others`` column of all of
    that data's rows, every other column untouched: for when one of the other calibrators
    changes. ``path`` is this study's results or any study's with the columns ``truth``, ``n``,
    ``seed`` and ``others`` on the same replicates; a row gets new MAEs only of the calibrators it
    already names. With ``extremes_only``, only the data holding a probability score within
    ``PROB_EPS`` of 0 or 1 (the only data on which a change to how the calibrators read exact 0
    and 1 moves their fits) are refitted. Returns the rows changed."""
    from bayescal.data import PROB_EPS

    with open(path) as fh:
        reader = csv.DictReader(fh)
        fields, rows = reader.fieldnames, list(reader)
    keys = sorted(
        {
            (r["truth"], int(r["n"]), int(r["seed"]))
            for r in rows
            if (not truths or r["truth"] in truths) and (not ns or int(r["n"]) in ns)
        }
    )
    fresh = {}
    for i, (truth, n, seed) in enumerate(keys):
        s, y, true_map, kind = simulate(truth, n, seed)
        if extremes_only and (kind != "probability" or not np.any((s <= PROB_EPS) | (s >= 1.0 - PROB_EPS))):
            continue
        grid = region_grid(s)
        fresh[truth, n, seed] = other_maes(s, y, kind, seed, grid, true_map(grid), names)
        if (i + 1) % 100 == 0:
            print(f"  {i + 1} of {len(keys)} data sets", flush=True)
    changed = 0
    for r in rows:
        key = (r["truth"], int(r["n"]), int(r["seed"]))
        if key in fresh:
            old = json.loads(r["others"])
            new = old | {k: v for k, v in fresh[key].items() if k in old}  # only the MAEs the row holds
            changed += new != old
            r["others"] = json.dumps(new)
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    return changed


REPRODUCED = ("cov50", "cov80", "cov95", "cov95_data", "mae", "width", "rhat_max", "ess_bulk_min")
"""The DPM columns :func:`verify` compares between a stored row and its refit."""
REPRODUCED_RTOL = 1e-9
"""Relative difference up to which :func:`verify` counts a column as reproduced: the same draws
can give means that differ in the last bit (``components="auto"`` averages two maps with
weights whose sums may run in another order), while other draws differ by far more."""


def verify(path: Path, seeds: int, truths=None, ns=None) -> list[dict]:
    """Refit the first ``seeds`` seeds of every (route, truth, N) cell of ``path`` (only the
    ``truths`` and ``ns`` given, when given) and compare each refit with its stored row.

    Returns one dict per refitted row: ``route``, ``truth``, ``n``, ``seed``, ``same`` (every
    column of :data:`REPRODUCED` equal to :data:`REPRODUCED_RTOL`, NaN equal to NaN) and the
    stored and refitted ``mae`` and ``rhat_max``."""
    checks = []
    for (route_label, truth, n), sel in cells(_rows(path)):
        if (truths and truth not in truths) or (ns and n not in ns):
            continue
        route, options = _route_of(route_label)
        for row in sorted(sel, key=lambda r: int(r["seed"]))[:seeds]:
            refit = run_one(truth, n, int(row["seed"]), route, options, [], known=None)
            same = all(
                np.isclose(float(row[k]), refit[k], rtol=REPRODUCED_RTOL, atol=0.0, equal_nan=True) for k in REPRODUCED
            )
            checks.append(
                {"route": route_label, "truth": truth, "n": n, "seed": int(row["seed"]), "same": same}
                | {f"{k}_stored": float(row[k]) for k in ("mae", "rhat_max")}
                | {f"{k}_refit": refit[k] for k in ("mae", "rhat_max")}
            )
            print(
                f"{route_label} {truth} N={n} seed={row['seed']}: {'reproduces' if same else 'DIFFERS'} "
                f"(MAE {float(row['mae']):.6g} stored, {refit['mae']:.6g} refitted)",
                flush=True,
            )
    return checks


def _page_cells(page: Path, options: dict) -> list[tuple[str, dict, str, int, range]]:
    """The cells of an evidence page's table as (route, options, truth, N, seeds): a row
    ``| gibbs (select) | piles | 300 | 24 | ...`` is route gibbs with ``components="select"``
    (on top of ``options``; :func:`_route_of`), truth piles, N = 300, seeds 0-23. Only the page's
    own table is read, not those of later sections (``## ...``) that other studies add."""
    cells = []
    for line in page.read_text().split("\n## ")[0].splitlines():
        c = [x.strip() for x in line.split("|")[1:-1]]
        if len(c) < 4 or not c[2].isdigit():
            continue
        route, own = _route_of(c[0])
        cells.append((route, options | own, c[1].split(" (")[0], int(c[2]), range(int(c[3]))))
    return cells


def parse_options(items: list[str], error) -> dict:
    """``--option NAME=JSON`` items as a dict of calibrator parameters; ``error`` (the parser's
    ``error`` method) reports an item without ``=``."""
    options = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep:
            error(f"--option {item!r}: write NAME=JSON, e.g. chains=4")
        options[name] = json.loads(value)
    return options


def _label(route: str, options: dict) -> str:
    """The row's ``route`` column: the inference route, with the component family and any other
    calibrator parameter set (``gibbs (gaussian)``, ``gibbs (n_bins=4096)``)."""
    parts = [str(options["components"])] if "components" in options else []
    parts += [f"{k}={json.dumps(v)}" for k, v in sorted(options.items()) if k != "components"]
    return route if not parts else f"{route} ({', '.join(parts)})"


FORMER_DEFAULT = _label("gibbs", FORMER_SPREAD)
"""The ``route`` label of the default calibrator's rows fitted before 2026-12-03, which the candidate
studies of that time are paired with."""


def _route_of(label: str) -> tuple[str, dict]:
    """The route and calibrator parameters of a ``route`` column (the inverse of :func:`_label`)."""
    route, _, inner = label.partition(" (")
    inner = inner[:-1] if inner.endswith(")") else inner
    options: dict = {}
    decode, pos = json.JSONDecoder().raw_decode, 0
    while pos < len(inner):  # "family, name=JSON, ...": a JSON value may itself hold ", "
        comma, equals = inner.find(", ", pos), inner.find("=", pos)
        if equals < 0 or 0 <= comma < equals:  # a part without "=": the component family
            end = len(inner) if comma < 0 else comma
            options["components"] = inner[pos:end]
        else:
            value, end = decode(inner, equals + 1)
            options[inner[pos:equals]] = value
        pos = end + 2
    return route, options


def _known_others(path: Path) -> dict[tuple[str, int, int], dict]:
    """MAEs of the other calibrators already in ``path``, by (truth, N, seed): the data of a
    (truth, N, seed) are the same in every run, so a rerun of the DPM does not refit them."""
    if not path.exists():
        return {}
    known: dict[tuple[str, int, int], dict] = {}
    for r in _rows(path):
        known.setdefault((r["truth"], int(r["n"]), int(r["seed"])), {}).update(json.loads(r["others"]))
    return known


def _rows(path: Path) -> list[dict]:
    with open(path) as fh:  # a rerun seed replaces the earlier row
        return list({(r["route"], r["truth"], r["n"], r["seed"]): r for r in csv.DictReader(fh)}.values())


def _compact(path: Path) -> None:
    """Rewrite ``path`` with the rows :func:`_rows` reads (one per route, truth, N and seed, the
    last written) under the header :data:`FIELDS`: rows are appended as they finish, so a rerun
    seed's earlier row is dropped once the run ends rather than kept in the file; a column added
    since a row was written is left empty there (``family`` before 2026-11-29)."""
    rows = _rows(path)
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=FIELDS)
        writer.writeheader()
        writer.writerows(rows)


def cell_summary(sel: list[dict]) -> dict:
    """One cell's rows (seeds) summarised: the mean of every numeric column, ``seeds``, the
    standard error of the 95 % coverage over seeds (``cov95_se``) and the mean MAE of each
    other calibrator (``others``)."""
    out: dict = {"seeds": len(sel)}
    for field in sel[0]:
        try:
            values = np.array([float(r[field]) for r in sel])
        except ValueError:  # a text column
            continue
        out[field] = float(np.nanmean(values)) if np.isfinite(values).any() else float("nan")
    cov = np.array([float(r["cov95"]) for r in sel])
    out["cov95_se"] = cov.std(ddof=1) / np.sqrt(cov.size) if cov.size > 1 else float("nan")
    others: dict[str, list[float]] = {}
    for r in sel:
        for k, v in json.loads(r["others"]).items():
            others.setdefault(k, []).append(v)
    out["others"] = {k: float(np.mean(v)) for k, v in others.items()}
    return out


def cells(rows: list[dict], route_rank=lambda route: route) -> list[tuple[tuple[str, str, int], list[dict]]]:
    """The rows grouped by cell (route, truth, N), ordered by ``route_rank(route)``, then the
    truths' order (design, then held out), then N."""
    order = DESIGN + HELD_OUT
    keys = sorted(
        {(r["route"], r["truth"], int(r["n"])) for r in rows},
        key=lambda k: (route_rank(k[0]), order.index(k[1]) if k[1] in order else 99, k[2]),
    )
    return [(key, [r for r in rows if (r["route"], r["truth"], int(r["n"])) == key]) for key in keys]


def converged_share(sel: list[dict]) -> float:
    """Share of the cell's fits whose map meets R-hat <= 1.01 and bulk and tail ESS >= 400."""
    from bayescal.bayesian.convergence import meets_target

    return float(np.mean([meets_target(r) for r in sel]))


def _open_cell(sel: list[dict], c: dict) -> str:
    """The 95 % coverage where the true map is strictly inside (0, 1) (from the cell's summary
    ``c``), with the largest distance from a 0 or 1 truth to the band when the cell has such points."""
    gaps = np.array([float(r["edge_gap"]) for r in sel])
    if not np.isfinite(gaps).any():
        return f"{c['cov95_open']:.3f}"
    return f"{c['cov95_open']:.3f} ({np.nanmax(gaps):.1g})"


def _beta_kept(sel: list[dict]) -> str:
    """The share of the cell's fits whose map is made of Beta components alone (``family``), over
    the rows that record it ("of k" when only k of the cell's rows do; "-" when none does; "both"
    when every fit averaged the two families)."""
    known = [r["family"] for r in sel if r.get("family")]
    if not known:
        return "-"
    if all("+" in f for f in known):
        return "both"
    share = f"{np.mean([f == 'beta' for f in known]):.2f}"
    return share if len(known) == len(sel) else f"{share} of {len(known)}"


def _rule(head: str) -> str:
    """The markdown rule line under the table header ``head``."""
    return "|---" * (head.count("|") - 1) + "|"


def _truth_label(truth: str) -> str:
    """A truth's name in a table, marked when it is held out."""
    return f"{truth}{' (held out)' if truth in HELD_OUT else ''}"


def summarise(path: Path) -> str:
    """Means over seeds per (route, truth, N) as a markdown table, with the standard error of the 95 % coverage."""
    head = (
        "| route | truth | N | seeds | 95 % cov (se) | 80 % | 50 % | 95 % data-weighted | 95 % where 0 < m < 1 "
        "(largest gap at 0 / 1) | MAE DPM | MAE KDE | "
        "best other (MAE) | width | R-hat max | ESS bulk / tail min | converged | Beta kept | time s |"
    )
    lines = [head, _rule(head)]
    for key, sel in cells(_rows(path)):
        c = cell_summary(sel)
        kde = c["others"].get("kde", float("nan"))
        best = min(c["others"].items(), key=lambda kv: kv[1]) if c["others"] else ("-", float("nan"))
        lines.append(
            f"| {key[0]} | {_truth_label(key[1])} | {key[2]} | {c['seeds']} "
            f"| {c['cov95']:.3f} ({c['cov95_se']:.3f}) | {c['cov80']:.3f} | {c['cov50']:.3f} | {c['cov95_data']:.3f} "
            f"| {_open_cell(sel, c)} | {c['mae']:.4f} | {kde:.4f} | {best[0]} ({best[1]:.4f}) | {c['width']:.3f} | {c['rhat_max']:.2f} "
            f"| {c['ess_bulk_min']:.0f} / {c['ess_tail_min']:.0f} | {converged_share(sel):.2f} | {_beta_kept(sel)} | {c['time_s']:.1f} |"
        )
    return "\n".join(lines)


def _paired_base(route: str, base: str) -> str:
    """The route a row of :func:`paired` compares ``route`` with, so that a comparison changes one
    setting: the same route with only its context kept, the priors' spread (``prior_spread``, set
    on the rows fitted before 2026-12-03, :data:`FORMER_SPREAD`), the number of bins (``n_bins``,
    set on the rows of a former default's bins) and the mixtures' concentration prior (``priors``
    with ``alpha_shape`` / ``alpha_rate``, set on the rows fitted under a former default's learnt
    concentration). A route that sets nothing else is compared with the route one context
    shorter (the concentration prior dropped first, then the bins, then the spread); with no
    context left the base is ``base``."""
    name, options = _route_of(route)
    priors = options.get("priors", {})
    alpha = {k: priors[k] for k in ("alpha_shape", "alpha_rate") if k in priors}
    context = {"prior_spread": options["prior_spread"]} if "prior_spread" in options else {}
    if "n_bins" in options:
        context["n_bins"] = options["n_bins"]
    if alpha:
        context["priors"] = alpha
    if context and _label(name, context) == route:  # nothing but context: drop its last part
        context.popitem()
    return _label(name, context) if context else base


def covers_in_bar(summary: dict) -> bool:
    """Whether a cell's mean 95 % coverage (:func:`cell_summary`) lies in :data:`COVERAGE_BAR`."""
    return COVERAGE_BAR[0] <= summary["cov95"] <= COVERAGE_BAR[1]


def bands_in_bar(summary: dict) -> bool:
    """Whether a cell's 80 % and 50 % bands cover within :data:`BAND_TOLERANCE` of their levels."""
    # 1e-12: a coverage of exactly 0.73 is 0.07 from 0.8, not the 0.07000000000000006 of the floats
    return all(abs(summary[f"cov{int(100 * level)}"] - level) <= BAND_TOLERANCE + 1e-12 for level in LEVELS[:2])


def mae_in_bar(summary: dict) -> bool:
    """Whether a cell's mean MAE is no larger than the KDE calibrator's (true where that was not measured)."""
    return summary["mae"] <= summary["others"].get("kde", float("inf"))


def meets_bar(summary: dict) -> bool:
    """Whether a cell meets the whole bar: :func:`covers_in_bar`, :func:`bands_in_bar` and :func:`mae_in_bar`."""
    return covers_in_bar(summary) and bands_in_bar(summary) and mae_in_bar(summary)


def paired(path: Path, base: str = "gibbs") -> str:
    """Every other route beside its base (:func:`_paired_base`: ``base`` unless the route changes
    the concentration prior as well as other settings) on the replicates both fitted (same truth, N
    and seed), as two markdown tables.

    Per (route, truth, N): the seeds both fitted; the mean 95 % coverage of each
    (:func:`cell_summary` of each side's rows), with the standard error of the mean paired
    difference; the mean MAE and worst R-hat of each; how many fits' worst R-hat exceeds the
    convergence warning's threshold (:data:`bayescal.bayesian.convergence.MAP_RHAT_WARN`) with
    each; in how many fits the route's worst R-hat is above the base's; and how many fits meet
    R-hat <= 1.01 and ESS >= 400 with each. Per (route, N), the
    same summed over the truths: on how many truths the route's MAE is lower, how many truths'
    95 % coverage lies in 0.92-0.98 with each, the fits above the warning's threshold, those
    where the route's R-hat is higher and the converged fits of each. Rows are labelled "<base> vs <route>", so the page's row
    keys stay distinct from the main table's.
    """
    from bayescal.bayesian.convergence import MAP_RHAT_WARN, meets_target

    rows = _rows(path)
    by_key = {(r["route"], r["truth"], int(r["n"]), int(r["seed"])): r for r in rows}
    cell_lines, totals = [], {}
    for (route, truth, n), sel in cells(rows):
        own = _paired_base(route, base)
        pairs = [(by_key.get((own, truth, n, int(r["seed"]))), r) for r in sel]
        pairs = [p for p in pairs if p[0] is not None]
        if route == base or len(pairs) < 2:
            continue
        sides = [[p[i] for p in pairs] for i in (0, 1)]
        a, b = (cell_summary(side) for side in sides)
        rhat = [np.array([float(r["rhat_max"]) for r in side]) for side in sides]
        diff = np.array([float(r["cov95"]) - float(q["cov95"]) for q, r in pairs])
        above = [int(np.sum(x > MAP_RHAT_WARN)) for x in rhat]
        higher = int(np.sum(rhat[1] > rhat[0]))
        done = [sum(meets_target(r) for r in side) for side in sides]
        cell_lines.append(
            f"| {own} vs {route} | {_truth_label(truth)} | {n} | {len(pairs)} "
            f"| {a['cov95']:.3f} / {b['cov95']:.3f} ({diff.std(ddof=1) / np.sqrt(diff.size):.3f}) "
            f"| {a['mae']:.4f} / {b['mae']:.4f} | {a['rhat_max']:.2f} / {b['rhat_max']:.2f} "
            f"| {above[0]} / {above[1]} | {higher} | {done[0]} / {done[1]} |"
        )
        t = totals.setdefault((own, route, n), np.zeros(10, dtype=int))
        in_bar = [int(covers_in_bar(c)) for c in (a, b)]
        t += [1, len(pairs), b["mae"] < a["mae"], *in_bar, *above, higher, *done]
    head = (
        "| comparison (base vs route) | truth | N | seeds paired | 95 % cov: base / route (se of the difference) "
        f"| MAE: base / route | R-hat max: base / route | fits with R-hat > {MAP_RHAT_WARN}: base / route "
        "| fits where the route's R-hat is higher | fits converged: base / route |"
    )
    total_head = (
        "| comparison (base vs route) | N | truths | fits paired | truths where the route's MAE is lower "
        f"| truths with 95 % cov in 0.92-0.98: base / route | fits with R-hat > {MAP_RHAT_WARN}: base / route "
        "| fits where the route's R-hat is higher | fits converged: base / route |"
    )
    total_lines = [
        f"| {own} vs {route} | {n} | {k} | {fits} | {lower} of {k} | {bar_a} / {bar_b} | {up_a} / {up_b} | {higher} "
        f"| {done_a} / {done_b} |"
        for (own, route, n), (k, fits, lower, bar_a, bar_b, up_a, up_b, higher, done_a, done_b) in sorted(
            totals.items(), key=lambda item: (item[0][1], item[0][2])
        )
    ]
    return "\n".join([total_head, _rule(total_head), *total_lines, "", head, _rule(head), *cell_lines])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--truths", nargs="+", default=None, choices=list(TRUTHS), help="default: the design truths")
    ap.add_argument("--n", nargs="+", type=int, default=None, help="default: 300 1000 10000")
    ap.add_argument("--seeds", type=int, default=10, help="number of seeds (first-seed .. first-seed+seeds-1)")
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--routes", nargs="+", default=["gibbs"])
    ap.add_argument("--others", nargs="*", default=None, help="calibrators compared on MAE (default: all 1-D)")
    ap.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="NAME=JSON",
        help="another calibrator parameter, e.g. chains=4 (repeatable)",
    )
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "dpm_coverage.csv")
    ap.add_argument(
        "--others-from",
        type=Path,
        default=None,
        help="a results file whose other calibrators' MAEs are reused (default: --out)",
    )
    ap.add_argument(
        "--resume",
        action="store_true",
        help="skip the (route, truth, N, seed) rows already in --out (a long study run in parts)",
    )
    ap.add_argument(
        "--cells-from",
        type=Path,
        default=None,
        metavar="PAGE",
        help="run the cells of an evidence page (route, truth, N, seeds 0 .. its count - 1) instead of "
        "--routes/--truths/--n/--seeds, e.g. docs/evidence/coverage.md with --resume",
    )
    ap.add_argument("--summarise", action="store_true", help="only print the table of --out")
    ap.add_argument(
        "--refresh-others",
        nargs="+",
        default=None,
        metavar="NAME",
        help="refit these other calibrators on the data of every row of --out (of --truths / --n when "
        "given) and replace their MAEs there, when one of them has changed",
    )
    ap.add_argument(
        "--extremes-only",
        action="store_true",
        help="with --refresh-others: only the data holding probability scores within PROB_EPS of 0 or 1",
    )
    ap.add_argument(
        "--verify",
        type=int,
        default=None,
        metavar="K",
        help="refit the first K seeds of every cell of --out (of --truths / --n when given) and "
        "report whether each reproduces its stored row; exit status 1 when one does not",
    )
    args = ap.parse_args()
    if args.refresh_others:
        changed = refresh_others(args.out, args.refresh_others, args.truths, args.n, args.extremes_only)
        print(f"{changed} rows of {args.out} have new MAEs of {', '.join(args.refresh_others)}")
        return
    if args.verify is not None:
        checks = verify(args.out, args.verify, args.truths, args.n)
        differ = [c for c in checks if not c["same"]]
        print(f"{len(checks) - len(differ)} of {len(checks)} refits reproduce their rows")
        sys.exit(1 if differ else 0)
    args.truths = args.truths or DESIGN
    args.n = args.n or [300, 1000, 10000]
    if not args.summarise:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        new = not args.out.exists()
        options = parse_options(args.option, ap.error)
        others = _other_calibrators(args.others)
        known = _known_others(args.others_from or args.out)
        done = (
            {(r["route"], r["truth"], int(r["n"]), int(r["seed"])) for r in _rows(args.out)}
            if args.resume and not new
            else set()
        )
        if not new:  # under the header FIELDS, also a file written before a column was added
            _compact(args.out)
        with open(args.out, "a", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=FIELDS)
            if new:
                writer.writeheader()
            cells = (
                _page_cells(args.cells_from, options)
                if args.cells_from
                else [
                    (route, options, truth, n, range(args.first_seed, args.first_seed + args.seeds))
                    for route in args.routes
                    for truth in args.truths
                    for n in args.n
                ]
            )
            for route, cell_options, truth, n, seeds in cells:
                for seed in seeds:
                    if (_label(route, cell_options), truth, n, seed) in done:
                        continue
                    try:
                        row = run_one(truth, n, seed, route, cell_options, others, known.get((truth, n, seed)))
                    except ValueError as exc:  # e.g. Beta components on decision values
                        print(f"{truth} N={n} seed={seed}: not run ({exc})", flush=True)
                        break
                    writer.writerow(row)
                    fh.flush()
                    print(
                        " ".join(
                            f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                            for k, v in row.items()
                            if k != "others"
                        ),
                        flush=True,
                    )
        _compact(args.out)
    print(summarise(args.out))
    print()
    print(paired(args.out))


if __name__ == "__main__":
    main()
