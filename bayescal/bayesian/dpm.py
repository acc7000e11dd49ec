r"""The Dirichlet-process-mixture class-conditional calibrator (Naeini, Cooper & Hauskrecht 2014)."""

from __future__ import annotations

import json
import warnings
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import xarray as xr

from bayescal import _schema as schema
from bayescal._interp import interp_regular
from bayescal._stats import weighted_quantile
from bayescal._validation import check_integer
from bayescal._version import __version__
from bayescal.base import BayesianCalibrator
from bayescal.bayesian import mixture
from bayescal.data import ScoreData, ScoreSummary, from_working, spread_counts, spread_ties, to_working

__all__ = ["DPMCalibrator"]

_INFERENCE = ("gibbs", "advi", "nuts")
ATOM_P_VALUE = 1e-3
"""A heavy repeated score is an atom when its count is this improbable for the density of its
neighbouring values (:meth:`DPMCalibrator._spikes`)."""
NULL_WEIGHT_POINTS = 1000
"""Most rows whose leave-one-out terms set the null-model weight (a weighted draw beyond)."""
NULL_WEIGHT_DRAWS = 1000
"""Most posterior draws (thinned within chains) used for the null-model weight."""
NULL_WEIGHT_MIN_DRAWS = 100
"""Fewest posterior draws (chains x draws) for which the null-model weight is computed:
Pareto smoothing fits the largest fifth of the importance ratios, so fewer give no usable tail."""
MAP_RHAT_WARN = 1.2
"""Largest R-hat of the map draws (at the worst of 64 points of the data region) that fits silently.

With the default Gibbs settings the worst point typically has R-hat 1.05-1.3 and bulk ESS
of 1-3 % of the draws (median over points about 10 %): the component allocations mix slowly,
so 1.2 flags fits whose chains clearly disagree rather than every default fit."""


class DPMCalibrator(BayesianCalibrator):
    r"""Calibration by Bayes' rule on Dirichlet-process mixtures of the class score densities.

    **Model.** On the working scale :math:`t` (logit of a probability score, or the raw
    decision value), for each class :math:`c \in \{0, 1\}` independently, a truncated
    stick-breaking Dirichlet-process mixture of :math:`K` Gaussians:

    .. math::
        \alpha_c &\sim \mathrm{Gamma}(a_c, b_c) \\
        v_{ck} &\sim \mathrm{Beta}(1, \alpha_c),\ k < K, \qquad v_{cK} = 1 \\
        w_{ck} &= v_{ck} \textstyle\prod_{j<k} (1 - v_{cj}) \\
        \mu_{ck} &\sim \mathcal N(m_{ck}, s_c^2) \\
        \sigma_{ck} &\sim \mathrm{LogNormal}(\log h_c, \tau_c^2) \\
        f_c(t) &= \textstyle\sum_k w_{ck}\, \mathcal N(t \mid \mu_{ck}, \sigma_{ck}^2),
        \qquad t_i \mid y_i = c \sim f_c

    with KDE-informed hyperparameters (:mod:`bayescal.bayesian.priors`): :math:`m_{ck}` the
    class's score quantiles at :math:`(k - 1/2)/K`, :math:`s_c` its score standard deviation,
    :math:`h_c` its Silverman bandwidth, :math:`\tau_c = 1`, :math:`a_c = b_c = 1`; the same
    values start the inference. Precedence is user (``priors=``) > KDE-informed > default.
    The class prior has its exact posterior :math:`\pi \sim \mathrm{Beta}(1 + n_1, 1 + n_0)`
    (:math:`n_c` the class's total weight). The posterior factorises over
    :math:`(\pi, \theta_0, \theta_1)`, so each class's mixture is fitted on its own (in two
    threads with ``n_jobs=2``). Each posterior draw gives one calibration map

    .. math:: P(y = 1 \mid t) = \frac{\pi (1 - Q_1) f_1(t)}{\pi (1 - Q_1) f_1(t) + (1 - \pi)(1 - Q_0) f_0(t)}

    (the Jacobian of the logit cancels), evaluated in log space.

    **Averaging with the constant map** (``null_stacking=True``, :mod:`bayescal.bayesian.null_model`).
    Two independently fitted densities cannot learn that the classes' scores look alike, so
    where a classifier carries no signal the map follows chance differences between them.
    The calibrator therefore averages its map with the null model's constant map
    :math:`\pi` (:math:`f_1 = f_0`) by pseudo-BMA+ weights (Yao et al. 2018): Akaike-type
    weights of the two models' leave-one-out log scores of the labels (PSIS-LOO for the
    mixtures, exact for the null), stabilised by the Bayesian bootstrap. A share
    :math:`1 - \hat w` of the draws, at random positions, becomes constant-map draws
    (``informative`` = 0 in the posterior). Every map, mean and band is of this mixture;
    :meth:`density_map` and the mixture parameters stay those of the DPM. On the simulated
    truths of the coverage study the DPM wins by 10-450 nats and :math:`\hat w` is 1
    (0.9989-1 in the five fits checked, where stacking weights were 0.96-1); on scores
    drawn independently of the labels (six sets of 300, short chains) it is 0.03-0.8,
    below 0.25 in four of them; on ISLP ``Weekly`` (test AUC about 0.52) the test Brier score
    is 0.2474 against 0.2511 for the mixtures alone (beta calibration 0.2468). Stacking
    weights, used before, kept 2-4 % of constant draws even where the DPM won by 200 nats,
    and those stretched the 95 % band towards :math:`\pi` (U-shaped truth, N = 10^4: band
    width 0.055 -> 0.089, coverage 0.977 -> 0.983, above the 0.98 bar). The weight,
    leave-one-out scores and Pareto-k summary are in :attr:`diagnostics_`
    (``null_stacking``); it costs about 0.6 s per fit.

    **Atoms and ties.** A working-scale value is an atom when it is an end of the clipped
    logit scale (probabilities 0 or 1, or within ``PROB_EPS`` = 1e-12 of them, as naive
    Bayes and trees give), or when it occurs in at least ``atom_min_count`` rows of one
    class holding at least ``atom_threshold`` of that class's weight *and* stands out from
    its neighbours: its count is improbable (Poisson tail below :data:`ATOM_P_VALUE`) for
    the mean count of that class at the two nearest distinct values on each side
    (:meth:`_spikes`). So a lone repeated score among continuous ones is an atom, while the
    values of a lattice (random-forest vote shares ``k / n_trees``, rounded or tree-boosted
    scores), which repeat about as often as their neighbours, are not. Atoms are removed
    from the continuous mixture; within class c the masses of the :math:`A` atoms and of
    the continuous part have the posterior :math:`(q_{c1}, \dots, q_{cA}, 1 - Q_c) \sim
    \mathrm{Dirichlet}(1 + m_{c1}, \dots, 1 + m_{cA}, 1 + n_c^{\mathrm{cont}})` (uniform
    prior; each :math:`q_{ca}` is marginally Beta), :math:`m_{ca}` the class's weight at
    atom a. At an atom, :math:`P(y=1 \mid a) = \pi q_{1a} / (\pi q_{1a} + (1 - \pi) q_{0a})`.
    The remaining ties are a rounded continuous score: each tied value's rows are spread
    evenly over its rounding cell (:func:`~bayescal.data.spread_ties`; for binned data
    :func:`~bayescal.data.spread_counts`), which approximates the likelihood of a rounded
    value, the density's integral over its cell. Without it the mixtures put a spike on
    each tied value and the map jumped at and between them (a 1/40 lattice of the
    monotone truth below, N = 1500, four seeds: MAE against the rounded truth 0.008-0.012
    with spreading, 0.009-0.022 without; before the neighbour rule every lattice value was
    an atom and the fit refused the data).

    **Large data.** With more than ``compress_above`` continuous scores, the scores are
    compressed into per-class counts on ``n_bins`` equal-width bins of the working scale
    (:class:`~bayescal.data.ScoreSummary`) and the likelihood is weighted by the counts,
    so the cost no longer grows with N. A fit on a ``ScoreSummary`` uses its bins as they
    are. Occupied bins separated by empty ones have their counts spread over the cell
    between them, as tied scores are (:func:`~bayescal.data.spread_counts`).

    **Inference** (``inference=``): ``"gibbs"`` (default), the blocked Gibbs sampler of
    Ishwaran & James (2001) for this exact model (:mod:`bayescal.bayesian.gibbs`), pure numpy,
    no compilation; ``"nuts"`` and ``"advi"`` run the same model written in PyMC
    (:mod:`bayescal.bayesian.pymc_model`). Measured with ``benchmarks/dpm_coverage.py``
    (95 % bands; coverage of the true map over the data region, mean over seeds, with its
    standard error; MAE of the posterior-mean map there; all rows measured with the code as
    it is, null-model averaging and tie spreading included):

    ============  =====  =====  =============  =========  =========  ==============
    truth         N      seeds  coverage       MAE (DPM)  MAE (KDE)  MAE (isotonic)
    ============  =====  =====  =============  =========  =========  ==============
    monotone      300    50     0.965 (0.010)  0.0219     0.0244     0.0401
    monotone      1000   50     0.971 (0.009)  0.0136     0.0165     0.0275
    monotone      10000  30     0.965 (0.009)  0.00589    0.00623    0.0128
    U-shaped      300    50     0.943 (0.012)  0.0427     0.0805     0.201
    U-shaped      1000   50     0.943 (0.011)  0.0253     0.0550     0.196
    U-shaped      10000  30     0.977 (0.006)  0.0097     0.0224     0.190
    3 % positive  300    200    0.933 (0.012)  0.01589    0.01600    0.0271
    3 % positive  1000   50     0.956 (0.017)  0.0092     0.0094     0.0171
    3 % positive  10000  30     0.944 (0.021)  0.00360    0.00371    0.0076
    ============  =====  =====  =============  =========  =========  ==============

    Band widths 0.127 / 0.074 / 0.033 (monotone, N = 300 / 1000 / 10000), 0.209 / 0.124 /
    0.055 (U-shaped), 0.083 / 0.052 / 0.020 (3 %); 1.5-4.8 s per fit. The 3 % / 300 cell
    is a statistical tie with the KDE calibrator (paired MAE difference -0.00011 +- 0.00032
    over 200 seeds; seeds 0-99 alone gave +0.0004 +- 0.0005, seeds 100-199 -0.0006 +-
    0.0004), so it was run on 200 seeds. A tighter component-scale prior (:math:`\tau` =
    0.5-0.8 instead of 1) lowered that cell's MAE by about 0.0004 on seeds 0-99 but by only
    0.00007 +- 0.0002 on seeds 100-199, and cost 0.004-0.014 of coverage, so
    :math:`\tau` stays 1. Doubling ``tune``
    and ``draws`` left the coverage unchanged
    (U-shaped N = 1000: 0.905 against 0.907 on the same 10 seeds), so misses are the
    model's, not Monte Carlo error.

    The sparse class (about 9 positives at 3 % of 300) is where the prior shows. Its
    posterior-mean map in the left part of the data region, where the truth is 1e-6 to
    1e-3, is a few 1e-3: draws that give the 9 positives a wide or displaced component
    dominate the mean there, and each stick the class leaves empty keeps a weight of about
    1/(n + 2) (bias in that region +0.0023, against +0.0005 for the KDE calibrator). Before
    the component anchors were ordered centre-out (:mod:`bayescal.bayesian.priors`), the
    first, heaviest sticks were anchored at the class's lowest quantiles, which doubled that
    bias (the same 100 seeds, 500 draws: coverage 0.906, MAE 0.0169 ascending against 0.924,
    0.0162 centre-out). Other prior changes, measured on
    the same seeds (coverage, MAE; the KDE calibrator's MAE is 0.0158 on 100 seeds, 0.0159
    on the first 60): centre-out plus ``alpha_rate = 2`` 0.933, 0.0162 (60 seeds); component
    means' spread :math:`s_c / 2` 0.884, 0.0166 (60); exchangeable anchors (every
    :math:`m_k` at the class median) 0.919, 0.0165 (60); and, with the earlier ascending
    anchors, :math:`\pi \sim` Beta(1/2, 1/2) instead of the uniform prior 0.908, 0.0166
    (100), :math:`\alpha \sim \mathrm{Gamma}(1, 4)` and Escobar & West's Gamma(2, 4) (all nine
    cells, 30 seeds: 3 % / 300 0.907 and 0.894, U-shaped / 300 0.905 and 0.915), scale prior
    :math:`\tau = 1/2` 0.892, 0.0159 (60), :math:`\tau = 1.5` or 2, component-mean spread
    :math:`2 s_c` or :math:`s_c \sqrt{1 + 20/n_c}`, a class spread shrunk towards the pooled
    one, a base measure holding pseudo-points of the other class, the scale prior centred on
    :math:`\hat s_c`, four chains: none met both bars in every cell. Metropolis label swaps
    of two components (allocations and parameters together, sticks integrated out; about
    35 % accepted) raised the map's worst-point ESS in 6 of 16 fits and lowered it in 9
    (truths as above, N = 300 and 1000) for about 1 s more per fit, so the sampler has none.

    **Real data** (``benchmarks/dpm_realdata.py --seeds 3 --calibrators dpm beta isotonic``:
    7 datasets x 5 classifiers x 3 splits, ranks among the three): average rank on Brier /
    log loss DPM 1.70 / 1.64, beta calibration 1.87 / 1.72, isotonic 2.43 / 2.64 (mean
    Brier 0.1061, 0.1062, 0.1078; mean log loss 0.3309, 0.3348, 0.4884; with stacking
    weights instead of pseudo-BMA+ 1.72 / 1.65). Two changes got
    it there from 1.88 / 1.77 (beta 1.81 / 1.65). The null model: on the near-random ISLP
    Weekly data (test AUC about 0.52) two independently fitted class densities made a map
    that wandered around the constant a 3-parameter map finds (the positives' logit scores
    are more spread out, sd 0.29 against 0.23, and the map rose to 0.8-0.9 at both ends);
    with it (1.82 / 1.76) both maps are nearly constant there. Ties: every value repeating
    in 1 % of a class used to be an atom, so random-forest vote shares became dozens of
    Laplace-smoothed frequencies of a handful of rows, and a tied value just under the
    threshold grew a spike of the mixture (Default / random forest: map 0.6-0.8 at scores
    0.02-0.03, where about 5 % are positive); spreading the ties and the neighbour rule
    for atoms took the random-forest log-loss rank from 1.90 to 1.52 (beta 1.86). Smoother
    priors narrowed the Weekly gap without closing it, each breaking a simulated cell:
    component scales centred on :math:`\hat s_c` 1.94 / 1.73 (beta 1.77 / 1.70), mean
    spread :math:`2 s_c` 1.93 / 1.74 (beta 1.75 / 1.69); :math:`\alpha \sim
    \mathrm{Gamma}(1, 4)`, :math:`\tau = 2` and a pooled base measure left Weekly unchanged.

    Gibbs is the default: mean-field ADVI with PSIS (seeds 0-4 of the same study, the code
    as it is) covered 0.80 / 0.89 / 0.91 (monotone, N = 300 / 1000 / 10000), 0.82 / 0.82 /
    0.88 (U-shaped) and 0.88 / 0.93 / 1.00 (3 %) in 2.9-6.0 s per fit with a warm compile
    cache, and NUTS (3 seeds) 0.915 (monotone, 300) and 0.985 (3 %, 300) in 66-81 s per
    fit, while a full Gibbs fit (both classes, 2 chains of
    500 warm-up + 1000 kept sweeps, map on the grid, null-model weight) took 2.7 s
    (N = 10^3), 4.2 s (10^4), 4.9 s (10^5), 5.3 s (10^6) and 6.3 s (10^7) on the 2-core
    machine, 5.9 s in a fresh process, no compilation (``benchmarks/dpm_speed.py``, two
    repeats; isotonic regression 2.7 s at 10^7). Its chains mix
    slowly over the allocations: the map's bulk ESS is typically about 10 % of the draws
    (worst point 1-3 %), which :attr:`diagnostics_` records (``map``) and a warning reports
    when the worst R-hat exceeds :data:`MAP_RHAT_WARN`. That is why ``draws`` is 1000: the
    posterior-mean map is a Monte Carlo average, and at N = 10^4 (monotone truth, 30 seeds)
    doubling the draws from 500 lowered its MAE from 0.00625 to 0.00584 (paired difference
    -0.00040 +- 0.00005), below the KDE calibrator's 0.00623; the table above is with 1000.

    **Prediction.** At fit time every map draw is evaluated on ``grid_size`` points of the
    working scale over the observed continuous range plus 10 % on each side;
    ``predict_proba`` and ``predict_posterior`` interpolate linearly there (10^7 scores in
    0.5 s; interpolation error below 2e-3, under the Monte Carlo error of the mean) and
    evaluate the mixtures directly outside it and at atoms.

    Parameters
    ----------
    n_components : int, default 20
        Truncation level K of each class's mixture.
    inference : {"gibbs", "advi", "nuts"}, default "gibbs"
    priors : dict, list of two dicts, or None
        Hyperparameter overrides (keys of :data:`bayescal.bayesian.priors.PRIOR_KEYS`), for
        both classes or per class (``{0: {...}, 1: {...}}``).
    draws : int, default 1000
        Posterior draws per chain.
    chains : int, default 2
        Chains of the sampling routes (ADVI gives one chain of draws).
    tune : int, default 500
        Warm-up iterations per chain (Gibbs sweeps or NUTS tuning steps; ignored by ADVI).
    random_seed : int or None
        Seed: the same seed gives the same posterior and map.
    score_kind : {"probability", "decision"}, default "probability"
    compress_above : int, default 5000
        Compress the continuous scores into bins when there are more than this many.
    n_bins : int, default 1024
    atom_threshold : float, default 0.01
    atom_min_count : int, default 5
    grid_size : int, default 1024
        Points of the working-scale grid on which map draws are cached for prediction.
    n_jobs : int, default 1
        Threads fitting the two classes. With the Gibbs route two threads gave no speed-up
        on a loaded 2-core machine (the sweeps are many small numpy operations that hold
        the GIL), so the default fits them one after the other.
    route_options : dict or None
        Extra keyword arguments for the inference route (e.g. ``{"thin": 2}`` for Gibbs).
    null_stacking : bool, default True
        Average the map with the constant map of the no-signal model by pseudo-BMA+ weights
        (see above; the name is kept from the stacking weights used before); needs at
        least :data:`NULL_WEIGHT_MIN_DRAWS` draws, otherwise it is skipped with a warning.

    Attributes
    ----------
    idata_ : xarray.DataTree
        ``posterior`` (``pi`` (chain, draw); ``weight``, ``mu``, ``sigma`` (chain, draw, class,
        component); ``alpha`` (chain, draw, class); ``atom_prob`` (chain, draw, class, atom),
        coordinate ``atom`` = atom values on the input scale; ``informative`` (chain, draw),
        0 for the constant-map draws of the null-model average), ``observed_data`` (raw
        ``scores``, ``t``, ``y``, ``weight`` by ``obs_id``, or ``counts`` (class, bin) with
        ``bin`` = bin centres on the working scale, plus ``atom_counts`` (class, atom)),
        ``sample_stats`` when the route gives them (with a ``class`` dim), configuration and
        per-class diagnostics in the root attrs.
    atoms_ : ndarray
        Atom values on the input scale.
    grid_ : ndarray of shape (grid_size,)
        Working-scale grid of the cached map draws.
    diagnostics_ : dict
        Per-class diagnostics of the route (runtime, iterations, ...), ``divergences``, and
        ``map``: bulk ESS (min, median) and R-hat of the map draws at up to 64 points of the
        data region, with, at the worst R-hat, its score, the spread of the chains' means and
        the 95 % band's width there (how large the disagreement is in probability), and
        ``null_stacking``: the pseudo-BMA+ weight of the mixtures' map and what set it
        (:func:`bayescal.bayesian.null_model.null_model_weight`).

    References
    ----------
    Yao, Y., Vehtari, A., Simpson, D. & Gelman, A. (2018). Using stacking to average
    Bayesian predictive distributions. Bayesian Analysis 13, 917-1007 (pseudo-BMA+).
    Naeini, M. P., Cooper, G. F. & Hauskrecht, M. (2014). Binary classifier calibration: a
    Bayesian non-parametric approach. arXiv:1401.3390 (SDM 2015).
    Ishwaran, H. & James, L. F. (2001). Gibbs sampling methods for stick-breaking priors.
    JASA 96, 161-173.
    """

    _min_samples = 4
    _min_per_class = 2
    _fitted_schema = {
        "atoms_": schema.array("f", ("a",), order="increasing"),
        "grid_": schema.array("f", ("g",), order="increasing", max_size=schema.int_param("grid_size")),
        "diagnostics_": schema.mapping(),
    }

    def __init__(self, *, n_components: int = 20, inference: str = "gibbs", priors: Any = None,
                 draws: int = 1000, chains: int = 2, tune: int = 500, random_seed: int | None = None,
                 score_kind: str = "probability", compress_above: int = 5000, n_bins: int = 1024,
                 atom_threshold: float = 0.01, atom_min_count: int = 5, grid_size: int = 1024,
                 n_jobs: int = 1, route_options: dict | None = None, null_stacking: bool = True):
        self.n_components = n_components
        self.inference = inference
        self.priors = priors
        self.draws = draws
        self.chains = chains
        self.tune = tune
        self.random_seed = random_seed
        self.score_kind = score_kind
        self.compress_above = compress_above
        self.n_bins = n_bins
        self.atom_threshold = atom_threshold
        self.atom_min_count = atom_min_count
        self.grid_size = grid_size
        self.n_jobs = n_jobs
        self.route_options = route_options
        self.null_stacking = null_stacking

    # ---- fitting ------------------------------------------------------------------
    def _check_params(self) -> None:
        for name, low in (("n_components", 2), ("draws", 1), ("chains", 1), ("tune", 0), ("compress_above", 2),
                          ("n_bins", 2), ("atom_min_count", 1), ("grid_size", 16), ("n_jobs", 1)):
            check_integer(getattr(self, name), name, low)
        if self.inference not in _INFERENCE:
            raise ValueError(f"inference={self.inference!r} is not one of {_INFERENCE}.")
        if not 0.0 < float(self.atom_threshold) <= 1.0:
            raise ValueError(f"atom_threshold={self.atom_threshold} must lie in (0, 1].")
        if not isinstance(self.null_stacking, (bool, np.bool_)):
            raise ValueError(f"null_stacking={self.null_stacking!r} must be True or False.")  # noqa: TRY004
        if self.route_options is not None and not isinstance(self.route_options, dict):
            raise ValueError("route_options must be a dict of keyword arguments for the inference route, or None.")

    def _find_atoms(self, data: ScoreData) -> np.ndarray:
        """Atom values on the working scale, sorted (ties are judged after clipping to the working scale)."""
        atoms = set()
        if data.score_kind == "probability":  # where exact (or underflowed) 0 and 1 pile up
            ends = to_working(np.array([0.0, 1.0]), "probability")
            atoms.update(float(a) for a in ends if np.any(data.t == a))
        # an atom's bin on a 1024-bin grid holds at least its rows: only such bins need np.unique
        lo, hi = float(data.t.min()), float(data.t.max())
        scale = 1024 / (hi - lo) if hi > lo else 0.0
        cell = np.minimum(((data.t - lo) * scale).astype(np.int64), 1023) + 1024 * data.y.astype(np.int64)
        totals = np.array([data.w[data.y == c].sum() for c in (0, 1)])
        heavy = (np.bincount(cell, minlength=2048) >= self.atom_min_count) & (
            np.bincount(cell, weights=data.w, minlength=2048) >= self.atom_threshold * np.repeat(totals, 1024))
        cand = np.flatnonzero(heavy[cell])
        heavy_values = []
        for c in (0, 1):
            sub = cand[data.y[cand] == c]
            vals, inv, cnt = np.unique(data.t[sub], return_inverse=True, return_counts=True)
            share = np.bincount(inv, weights=data.w[sub], minlength=vals.size) / totals[c]
            ok = (cnt >= self.atom_min_count) & (share >= self.atom_threshold)
            heavy_values += [(c, v, n) for v, n in zip(vals[ok], cnt[ok]) if v not in atoms]
        if heavy_values:
            atoms.update(self._spikes(data, heavy_values, sorted(atoms)))
        return np.array(sorted(atoms), dtype=np.float64)

    @staticmethod
    def _spikes(data: ScoreData, heavy_values: list, ends: list) -> list[float]:
        r"""The heavy values that stand out from their neighbours: point masses, not a lattice.

        A score that takes few distinct values (vote shares, rounded scores) repeats every
        value; those are a rounded continuous score (:func:`~bayescal.data.spread_ties`), not
        atoms. Value :math:`a` with :math:`m` rows of class c is an atom when
        :math:`P(N \ge m) <` :data:`ATOM_P_VALUE` for :math:`N \sim \mathrm{Poisson}(\lambda)`,
        :math:`\lambda` the mean number of class-c rows at the (up to) two nearest distinct
        values on each side: a lone repeated value among distinct scores has
        :math:`\lambda \le 1`, a lattice value has neighbours about as heavy as itself.
        """
        from scipy.special import pdtrc

        inner = ~np.isin(data.t, ends) if ends else np.ones(data.n, dtype=bool)
        pooled = np.sort(data.t[inner])  # sorted, not unique: np.unique is 10x slower at 10^7 rows
        per_class = [np.sort(data.t[inner & (data.y == c)]) for c in (0, 1)]
        out = []
        for c, a, m in heavy_values:
            near, lo, hi = [], a, a
            for _ in range(2):  # the two nearest distinct values on each side
                i, j = int(np.searchsorted(pooled, lo)), int(np.searchsorted(pooled, hi, side="right"))
                if i > 0:
                    lo = pooled[i - 1]
                    near.append(lo)
                if j < pooled.size:
                    hi = pooled[j]
                    near.append(hi)
            near = np.asarray(near)
            rows = np.searchsorted(per_class[c], near, side="right") - np.searchsorted(per_class[c], near)
            lam = float(rows.mean()) if rows.size else 0.0
            if pdtrc(m - 1, lam) < ATOM_P_VALUE:
                out.append(float(a))
        return out

    def _fit(self, data: ScoreData, X=None) -> None:
        from bayescal.bayesian.priors import resolve_priors
        from bayescal.bayesian.routes import ROUTES

        self._check_params()
        K = int(self.n_components)
        atoms_t = self._find_atoms(data)
        atoms = from_working(atoms_t, data.score_kind)
        if data.score_kind == "probability":  # the clipped ends stand for exact 0 and 1
            atoms[atoms_t == to_working(np.array([0.0]), "probability")[0]] = 0.0
            atoms[atoms_t == to_working(np.array([1.0]), "probability")[0]] = 1.0
        is_atom = np.isin(data.t, atoms_t)
        atom_counts = np.array([[data.w[(data.t == a) & (data.y == c)].sum() for a in atoms_t] for c in (0, 1)])
        atom_counts = atom_counts.reshape(2, atoms.size)
        cont = ~is_atom
        for c in (0, 1):
            t_c = data.t[cont & (data.y == c)]
            if t_c.size == 0 or t_c.min() == t_c.max():  # fewer than 2 distinct values
                raise ValueError(
                    f"class {data.classes[c]!r} has fewer than 2 distinct scores outside the atoms "
                    f"{atoms.tolist()}: its continuous density cannot be fitted; raise atom_min_count or "
                    "atom_threshold, or use a calibrator for discrete scores such as 'histogram'.")
        sub = ScoreData(scores=data.scores[cont], t=data.t[cont], y=data.y[cont], w=data.w[cont],
                        score_kind=data.score_kind, classes=data.classes)
        compressed = data.bin_edges is not None or sub.n > int(self.compress_above)
        if compressed:
            edges = data.bin_edges  # a ScoreSummary's rows keep its bins
            bins = {"n_bins": int(self.n_bins)} if edges is None else {
                "n_bins": edges.size - 1, "lo": edges[0], "hi": edges[-1]}
            summary = ScoreSummary.from_data(sub, **bins)
            centers = summary.centers
            spread = spread_counts(summary.counts)
            xs = [centers[spread[c] > 0] for c in (0, 1)]
            cs = [spread[c][spread[c] > 0] for c in (0, 1)]
            observed = xr.Dataset({"counts": (("class", "bin"), summary.counts),
                                   "atom_counts": (("class", "atom"), atom_counts)},
                                  coords={"class": [0, 1], "bin": centers, "atom": atoms})
        else:
            t_spread = spread_ties(sub.t, sub.y, sub.w)
            xs = [t_spread[sub.y == c] for c in (0, 1)]
            cs = [sub.w[sub.y == c] for c in (0, 1)]
            observed = xr.Dataset({"scores": ("obs_id", data.scores), "t": ("obs_id", data.t),
                                   "y": ("obs_id", data.y), "weight": ("obs_id", data.w)},
                                  coords={"obs_id": np.arange(data.n)})
        priors = resolve_priors(self.priors, xs, cs, K)

        seeds = [int(s.generate_state(1)[0]) for s in np.random.SeedSequence(self.random_seed).spawn(4)]
        route = ROUTES[self.inference]
        options = dict(self.route_options or {})
        if self.inference in ("gibbs", "nuts"):  # ADVI has one chain of draws and no warm-up
            options = {"tune": int(self.tune), "chains": int(self.chains)} | options

        def run(c: int):
            try:
                return route(xs[c], cs[c], priors[c], n_components=K, draws=int(self.draws),
                             random_seed=seeds[c], **options)
            except TypeError as exc:
                if "unexpected keyword" not in str(exc):
                    raise
                raise ValueError(f"route_options {sorted(options)} do not fit inference={self.inference!r} "
                                 f"({exc}): see the route's docstring in bayescal.bayesian for its options.") from None

        if int(self.n_jobs) > 1:
            with ThreadPoolExecutor(max_workers=2) as pool:
                fits = list(pool.map(run, (0, 1)))
        else:
            fits = [run(0), run(1)]

        post = xr.concat([f.posterior[["weight", "mu", "sigma", "alpha"]] for f in fits], dim="class",
                         coords="minimal", compat="override", join="exact")
        post = post.assign_coords({"class": [0, 1]}).transpose("chain", "draw", "class", ...)
        n_chain, n_draw = post.sizes["chain"], post.sizes["draw"]
        rng = np.random.default_rng(seeds[2])
        n_tot = [float(data.w[data.y == c].sum()) for c in (0, 1)]
        pi = rng.beta(1.0 + n_tot[1], 1.0 + n_tot[0], size=(n_chain, n_draw))
        atom_prob = np.empty((n_chain, n_draw, 2, atoms.size))
        for c in (0, 1):
            conc = 1.0 + np.append(atom_counts[c], n_tot[c] - atom_counts[c].sum())
            atom_prob[:, :, c, :] = rng.dirichlet(conc, size=(n_chain, n_draw))[..., :atoms.size]
        post["pi"] = (("chain", "draw"), pi)
        post["atom_prob"] = (("chain", "draw", "class", "atom"), atom_prob)
        post = post.assign_coords(atom=atoms)

        groups = {"posterior": post, "observed_data": observed}
        if all(f.sample_stats is not None for f in fits):
            stats = xr.concat([f.sample_stats for f in fits], dim="class", coords="minimal", compat="override",
                              join="outer")
            groups["sample_stats"] = stats.assign_coords({"class": [0, 1]})
        tree = xr.DataTree.from_dict(groups)
        self.diagnostics_ = {f"class_{c}": {k: v for k, v in fits[c].diagnostics.items()
                                             if isinstance(v, (bool, int, float, str))} for c in (0, 1)}
        tree.attrs.update({
            "created_by": f"bayescal {__version__}",
            "calibrator": "DPMCalibrator",
            "inference": self.inference,
            "n_components": K,
            "score_kind": data.score_kind,
            "compressed": int(compressed),
            "n_bins": summary.n_bins if compressed else 0,
            "random_seed": "None" if self.random_seed is None else int(self.random_seed),
            "priors": json.dumps([{k: np.asarray(v).tolist() for k, v in p.items()} for p in priors]),
            "diagnostics": json.dumps(self.diagnostics_),
        })
        self.idata_ = tree
        self.atoms_ = atoms
        pooled_x, pooled_c = np.concatenate(xs), np.concatenate(cs)
        lo, hi = min(sub.t.min(), pooled_x.min()), max(sub.t.max(), pooled_x.max())  # spread ties reach past the data
        pad = 0.1 * max(hi - lo, 1e-6)
        self.grid_ = np.linspace(lo - pad, hi + pad, int(self.grid_size))
        self._restore()
        self.diagnostics_["map"] = self._map_convergence(weighted_quantile(pooled_x, [0.025, 0.975], pooled_c))
        self.diagnostics_["divergences"] = int(sum(int(f.diagnostics.get("divergences", 0)) for f in fits))
        if self.null_stacking:
            units = [(xs[c], np.full(xs[c].size, c), cs[c]) for c in (0, 1)]
            units += [(atoms_t, np.full(atoms_t.size, c), atom_counts[c]) for c in (0, 1)]
            self._average_null(*(np.concatenate(a) for a in zip(*units)), np.random.default_rng(seeds[3]))
        tree.attrs["diagnostics"] = json.dumps(self.diagnostics_)
        self._warn_convergence()

    def _average_null(self, t: np.ndarray, y: np.ndarray, w: np.ndarray, rng: np.random.Generator) -> None:
        r"""Average the map with the constant map (:mod:`bayescal.bayesian.null_model`).

        ``t``, ``y``, ``w`` are the fitted units: the scores (or, compressed, the bin centres)
        and atoms of each class with their weights. The leave-one-out terms use every unit
        when there are at most :data:`NULL_WEIGHT_POINTS` of unit weight, otherwise that many
        drawn with probability proportional to weight, and at most :data:`NULL_WEIGHT_DRAWS` draws
        (every j-th of each chain). A share :math:`1 - \hat w` of all the draws (rounded, at
        random positions) then becomes constant-map draws: ``informative`` = 0 in the posterior.
        """
        from bayescal.bayesian.null_model import null_model_weight

        n_chain, n_draw = self._shape
        if n_chain * n_draw < NULL_WEIGHT_MIN_DRAWS:
            warnings.warn(
                f"null_stacking needs at least {NULL_WEIGHT_MIN_DRAWS} posterior draws (chains x draws), got "
                f"{n_chain * n_draw}: the map is the mixtures' alone. Raise draws, or set null_stacking=False.",
                UserWarning, stacklevel=4)
            return
        if t.size <= NULL_WEIGHT_POINTS and np.all(w == 1.0):
            rows = np.arange(t.size)
        else:
            rows = rng.choice(t.size, size=NULL_WEIGHT_POINTS, p=w / w.sum())
        step = -(-n_chain * n_draw // NULL_WEIGHT_DRAWS)
        keep = (np.arange(n_chain)[:, None] * n_draw + np.arange(0, n_draw, step)[None, :]).ravel()
        draws = [a[keep] for a in self._draws]
        lj = mixture.log_joint(t[rows], self._atoms_t, *draws)
        reff = float(np.clip(self.diagnostics_["map"]["ess_bulk_median"] / (n_chain * n_draw), 0.01, 1.0))
        result = null_model_weight(lj, y[rows], (n_chain, keep.size // n_chain), reff)
        self.diagnostics_["null_stacking"] = result
        S = n_chain * n_draw
        informative = np.ones(S, dtype=np.int8)
        informative[rng.choice(S, size=round((1.0 - result["weight"]) * S), replace=False)] = 0
        self.idata_["posterior"]["informative"] = xr.DataArray(informative.reshape(self._shape),
                                                                dims=("chain", "draw"))
        self._set_informative(informative.astype(bool))

    def _map_convergence(self, region: np.ndarray) -> dict[str, float]:
        """R-hat and bulk ESS of the map draws at up to 64 grid points of the data region.

        The map is invariant to label switching, unlike the component parameters, so these
        are the numbers that say whether the band can be trusted.
        """
        from arviz_stats.base import array_stats

        inside = np.flatnonzero((self.grid_ >= region[0]) & (self.grid_ <= region[1]))
        if inside.size == 0:
            inside = np.arange(self.grid_.size)
        pick = inside[np.unique(np.linspace(0, inside.size - 1, min(64, inside.size)).round().astype(int))]
        draws = np.moveaxis(self._grid_draws[:, pick].reshape(*self._shape, pick.size), -1, 0)
        ess = array_stats.ess(draws, chain_axis=1, draw_axis=2, method="bulk")
        out = {"ess_bulk_min": float(np.nanmin(ess)), "ess_bulk_median": float(np.nanmedian(ess)),
               "rhat_max": float("nan"), "rhat_max_score": float("nan"),
               "chain_gap_at_rhat_max": float("nan"), "band_width_at_rhat_max": float("nan")}
        if self._shape[0] > 1:
            rhat = array_stats.rhat(draws, chain_axis=1, draw_axis=2)
            worst = int(np.nanargmax(rhat))
            chain_means = draws[worst].mean(axis=1)
            out["rhat_max"] = float(rhat[worst])
            out["rhat_max_score"] = float(from_working(self.grid_[pick[worst]], self.score_kind))
            out["chain_gap_at_rhat_max"] = float(chain_means.max() - chain_means.min())
            lo, hi = np.quantile(draws[worst], [0.025, 0.975])
            out["band_width_at_rhat_max"] = float(hi - lo)
        return out

    def _warn_convergence(self) -> None:
        conv, n_div = self.diagnostics_["map"], self.diagnostics_["divergences"]
        if conv["rhat_max"] > MAP_RHAT_WARN:
            warnings.warn(
                f"The chains disagree on the calibration map: R-hat {conv['rhat_max']:.2f} at score "
                f"{conv['rhat_max_score']:.4g}, where their means differ by {conv['chain_gap_at_rhat_max']:.3g} "
                f"against a 95% band {conv['band_width_at_rhat_max']:.3g} wide (bulk ESS down to "
                f"{conv['ess_bulk_min']:.0f}); the credible band is not reliable there. Raise draws and tune "
                "(or chains), or set another random_seed to compare.",
                UserWarning, stacklevel=4)
        if n_div > 0:
            per_class = ", ".join(f"class {c}: {self.diagnostics_[f'class_{c}'].get('divergences', 0)}" for c in (0, 1))
            warnings.warn(
                f"{n_div} divergent transitions in the {self.inference} sampler ({per_class}) after tuning: the "
                "posterior may be biased; raise target_accept through route_options, or use inference='gibbs'.",
                UserWarning, stacklevel=4)

    # ---- evaluation -----------------------------------------------------------------
    def _check_fitted(self) -> None:
        """``grid_`` is the equally spaced prediction grid of ``grid_size`` points that ``_on_grid`` assumes."""
        super()._check_fitted()
        g = self.grid_
        if g.size != self.grid_size or not np.allclose(np.diff(g), (g[-1] - g[0]) / (g.size - 1), rtol=1e-9, atol=0):
            raise ValueError(f"grid_ is not an equally spaced grid of grid_size={self.grid_size} points.")

    def _check_posterior(self, tree: xr.DataTree) -> None:
        """The generic checks, then the layout :meth:`_draw_arrays` reads: ``pi`` (chain, draw);
        ``weight``, ``mu``, ``sigma`` (chain, draw, class, component); ``atom_prob`` (chain,
        draw, class, atom) with one atom per value of ``atoms_``."""
        super()._check_posterior(tree)
        post = tree["posterior"]
        want = {"pi": ("chain", "draw"), "weight": ("chain", "draw", "class", "component"),
                "mu": ("chain", "draw", "class", "component"), "sigma": ("chain", "draw", "class", "component"),
                "atom_prob": ("chain", "draw", "class", "atom")}
        for name, dims in want.items():
            if name not in post or post[name].dims != dims or post[name].dtype.kind != "f":
                raise ValueError(f"idata_.posterior.{name} is missing, or not floats with dims {dims}.")
        if post.sizes["class"] != 2 or post.sizes["atom"] != self.atoms_.size:
            raise ValueError("idata_.posterior has the wrong number of classes or atoms.")

    def _draw_arrays(self) -> tuple[np.ndarray, ...]:
        """Posterior arrays flattened over (chain, draw): pi (S,), weight/mu/sigma (S, 2, K), atom_prob (S, 2, A)."""
        post = self.idata_["posterior"]

        def flat(name: str) -> np.ndarray:
            v = post[name].values
            return v.reshape(v.shape[0] * v.shape[1], *v.shape[2:])

        return flat("pi"), flat("weight"), flat("mu"), flat("sigma"), flat("atom_prob")

    def _with_constant_draws(self, draws: np.ndarray) -> np.ndarray:
        """Map draws (S, n) with the constant-map draws (``informative`` = 0) set to pi."""
        if self._informative.all():
            return draws
        return np.where(self._informative[:, None], draws, self._draws[0][:, None])

    def _set_informative(self, informative: np.ndarray) -> None:
        """Mark the mixtures' draws (True) and the constant-map draws; the cached grid draws,
        which hold the mixtures' maps, take the constant where marked."""
        self._informative = informative
        self._grid_draws = self._with_constant_draws(self._grid_draws)
        self._grid_mean = self._grid_draws.mean(axis=0)

    def _restore(self) -> None:
        """Cache the flattened draws and the map draws on ``grid_`` (rebuilt after loading)."""
        self._draws = self._draw_arrays()
        pi, weight, mu, sigma, atom_prob = self._draws
        post = self.idata_["posterior"]
        self._shape = (post.sizes["chain"], post.sizes["draw"])
        self._atoms_t = to_working(self.atoms_, self.score_kind) if self.atoms_.size else np.empty(0)
        informative = (post["informative"].values.reshape(-1).astype(bool) if "informative" in post
                       else np.ones(pi.shape[0], dtype=bool))
        self._grid_draws = mixture.map_draws(self.grid_, np.empty(0), pi, weight, mu, sigma, atom_prob)
        self._set_informative(informative)

    def _split(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Masks of points at atoms, inside the cached grid, and elsewhere."""
        at_atom = np.isin(t, self._atoms_t) if self._atoms_t.size else np.zeros(t.shape, dtype=bool)
        inside = ~at_atom & (t >= self.grid_[0]) & (t <= self.grid_[-1])
        return at_atom, inside, ~at_atom & ~inside

    def _on_grid(self, t: np.ndarray, table: np.ndarray) -> np.ndarray:
        """Linear interpolation of ``table`` (rows tabulated on the equally spaced ``grid_``) at ``t``."""
        g = self.grid_
        return interp_regular(t, g[0], (g[-1] - g[0]) / (g.size - 1), table)

    def _map_draws(self, t: np.ndarray, X=None) -> np.ndarray:
        t = np.asarray(t, dtype=np.float64)
        at_atom, inside, other = self._split(t)
        out = np.empty((self._grid_draws.shape[0], t.size))
        if inside.any():
            out[:, inside] = self._on_grid(t[inside], self._grid_draws)
        rest = at_atom | other
        if rest.any():
            out[:, rest] = self._with_constant_draws(mixture.map_draws(t[rest], self._atoms_t, *self._draws))
        return out.reshape(*self._shape, t.size)

    def _calibrate(self, t: np.ndarray, X=None) -> np.ndarray:
        t = np.asarray(t, dtype=np.float64)
        out = self._on_grid(t, self._grid_mean)  # everywhere (one pass), then replaced off the grid and at atoms
        at_atom, _, other = self._split(t)
        rest = at_atom | other
        if rest.any():
            uniq, inv = np.unique(t[rest], return_inverse=True)
            out[rest] = self._with_constant_draws(mixture.map_draws(uniq, self._atoms_t, *self._draws)).mean(axis=0)[inv]
        return out

    def density_map(self, grid: Any = None) -> xr.DataArray:
        r"""Posterior draws of the continuous class densities on ``grid``, dims ``(chain, draw, class, score)``.

        The density is of the input-scale score: :math:`(1 - Q_c) f_c(t(s))\,|dt/ds|`, with
        :math:`dt/ds = 1/(s(1-s))` for probabilities and 1 for decision values, so with the
        atom masses ``idata_.posterior.atom_prob`` it makes up the whole class distribution.
        ``grid`` is as in :meth:`calibration_map`; atom values on it get the continuous part only.
        """
        g = self._grid(grid)
        t = to_working(g, self.score_kind)
        _, weight, mu, sigma, atom_prob = self._draws
        logf = mixture.log_density(t, weight, mu, sigma)  # (S, 2, n)
        logf += np.log1p(-np.clip(atom_prob.sum(axis=-1), 0.0, 1.0 - 1e-300))[..., None]
        if self.score_kind == "probability":  # the density vanishes at exact 0 and 1
            edge = (g <= 0.0) | (g >= 1.0)
            gi = np.where(edge, 0.5, g)
            logf = np.where(edge, -np.inf, logf - np.log(gi) - np.log1p(-gi))
        dens = np.exp(logf).reshape(*self._shape, 2, g.size)
        lo, hi = self.score_range_
        return xr.DataArray(
            dens, dims=("chain", "draw", "class", "score"),
            coords={"chain": np.arange(self._shape[0]), "draw": np.arange(self._shape[1]), "class": [0, 1],
                    "score": g},
            name="density",
            attrs={"score_scale": self.score_kind, "calibrator": self._name,
                   "observed_range": [float(lo), float(hi)],
                   "extrapolated": int(bool(np.any((g < lo) | (g > hi))))},
        )
