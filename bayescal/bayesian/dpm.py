r"""The Dirichlet-process-mixture class-conditional calibrator (Naeini, Cooper & Hauskrecht 2014).

The fit is a short pipeline, one module a step:

1. :mod:`~bayescal.bayesian.preparation`: atoms, ties and compression;
2. :mod:`~bayescal.bayesian.priors`: KDE-informed hyperparameters;
3. :mod:`~bayescal.bayesian.routes`: an inference route fits each class's mixture and returns
   one posterior layout (:class:`~bayescal.bayesian.class_fit.ClassFit`);
4. :mod:`~bayescal.bayesian.assembly`: the class prior, the atom masses and the
   ``xarray.DataTree``;
5. :mod:`~bayescal.bayesian.convergence`: R-hat and ESS of each fit's map draws;
6. :mod:`~bayescal.bayesian.averaging`: averaging the component families' maps and the
   no-signal model's constant map (steps 2-5 run once per component family).
"""

from __future__ import annotations

import copy
import json
from typing import Any

import numpy as np
import xarray as xr

from bayescal import _schema as schema
from bayescal._interp import interp_regular, interp_sorted
from bayescal._stats import weighted_quantile
from bayescal._typing import ArrayLike
from bayescal._validation import check_bool, check_integer, check_number, resolve_random_state
from bayescal._version import __version__
from bayescal._warnings import held, warn
from bayescal.base import BayesianCalibrator, PosteriorClassConditional
from bayescal.bayesian import mixture
from bayescal.bayesian.assembly import flat_draws, slot_models
from bayescal.bayesian.averaging import CONSTANT
from bayescal.bayesian.convergence import check_points, map_convergence, meets_target, warn_convergence
from bayescal.bayesian.preparation import PreparedData, prepare
from bayescal.data import ASINH_SPREAD, ScoreData, from_working, to_working

__all__ = ["DPMCalibrator"]

AVERAGING_POINTS = 1000
"""Most rows whose leave-one-out terms set the averaging weights (a weighted draw beyond)."""
AVERAGING_DRAWS = 500
"""Most posterior draws of each family (thinned within chains) used for the averaging weights.
The default fit keeps 1000 draws whose effective sample size is well below their number, so
every second one carries nearly all their information, and the leave-one-out terms cost half
(measured history: ``docs/evidence/sampler_history.md``)."""
AVERAGING_MIN_DRAWS = 100
"""Fewest posterior draws (chains x draws) for which the averaging weights are computed:
Pareto smoothing fits the largest fifth of the importance ratios, so fewer give no usable tail."""
COMPONENTS = ("auto", "select", *mixture.FAMILIES)
"""The values of ``components``: both families averaged, one chosen per fit, or one family."""
GRID_PAD = 0.1
"""Share of the continuous points' range by which the prediction grid extends beyond it on each side."""
GRID_POINTS_PER_SD = 16
"""Fewest points per robust standard deviation of the continuous points that an equally spaced
prediction grid must give; with fewer the grid is spaced on the asinh scale (:meth:`DPMCalibrator._prediction_grid`)."""
SELECT_PILOT_DRAWS = 100
"""Kept draws per chain on which ``components="select"`` with the sampler compares the families;
the kept family's chains then run on to ``draws`` and the other's stop (:meth:`DPMCalibrator._select_in_stretches`)."""
SELECT_SCORES = {"points": (1, "joint"), "labels": (0, "label")}
r"""The leave-one-out scores by which ``components="select"`` can compare the families, each with its
place in :func:`bayescal.bayesian.averaging.loo_log_scores`' result and its name in
``diagnostics_["family_selection"]`` (``elpd_<name>_...``): of the points,
:math:`\log p(t_i, y_i \mid D_{-i})`, or of the labels, :math:`\log p(y_i \mid t_i, D_{-i})`."""
SELECT_SCORE = "points"
"""The leave-one-out score ``components="select"`` compares the families by (:data:`SELECT_SCORES`;
the class docstring, "Components", says why the points'). The labels' is kept as a measured
alternative for the benchmarks' studies (``docs/evidence/random_truths.md``)."""
AVERAGED = "averaged"
"""``diagnostics_["family_selection"]["chosen"]`` where ``components="select"`` kept both families
and averaged them as ``components="auto"`` does."""
SELECT_AVERAGE_WITHIN = 0.0
"""``components="select"`` averages the two families as ``components="auto"`` does, instead of
keeping one, where the better family's lead in the compared score is below this many standard
errors of the difference (0: never, the default; a measured alternative for the benchmarks'
studies, ``docs/evidence/random_truths.md``)."""
SELECT_AVERAGE_UNITS = 100_000
"""Above this many scores (total weight) in a class, ``components="select"`` averages the two
families' maps as ``components="auto"`` does instead of keeping one (class docstring, "Components")."""
MAP_CHECK_MIN_WEIGHT = 0.05
"""Smallest averaging weight of a component family whose map convergence enters ``diagnostics_["map"]``
(a family holding fewer of the draws barely moves the band)."""


_MAX_BINS = 2**16
"""Most bins (``n_bins``) and grid points (``grid_size``) a fit takes."""
_MAX_MAP_VALUES = 2**28
"""Most map draw values (chains x draws x grid_size) a fit keeps on its grid."""
_DEFAULT_DRAWS_BOUND = 1000
"""The most draws per chain a route takes when ``draws`` is None (the size check's stand-in)."""


class DPMCalibrator(PosteriorClassConditional, BayesianCalibrator):
    r"""Calibration by Bayes' rule on Dirichlet-process mixtures of the class score densities.

    **Model.** On the working scale :math:`t` (logit of a probability score, or the raw
    decision value), for each class :math:`c \in \{0, 1\}` independently, a truncated
    stick-breaking Dirichlet-process mixture of :math:`K` components, here Gaussian (for
    probability scores the default chooses per fit between these and Beta components; see
    **Components** below):

    .. math::
        \alpha_c &\sim \mathrm{Gamma}(a_c, b_c) \\
        v_{ck} &\sim \mathrm{Beta}(1, \alpha_c),\ k < K, \qquad v_{cK} = 1 \\
        w_{ck} &= v_{ck} \textstyle\prod_{j<k} (1 - v_{cj}) \\
        \mu_{ck} &\sim \mathcal N(m_{ck}, s_c^2) \\
        \sigma_{ck} &\sim \mathrm{LogNormal}(\log h_c, \tau_c^2) \\
        f_c(t) &= \textstyle\sum_k w_{ck}\, \mathcal N(t \mid \mu_{ck}, \sigma_{ck}^2),
        \qquad t_i \mid y_i = c \sim f_c

    with KDE-informed hyperparameters (:mod:`bayescal.bayesian.priors`): :math:`m_{ck}` the
    class's score quantiles (centre-out), :math:`s_c` its score standard deviation,
    :math:`h_c` its Silverman bandwidth from the robust spread :math:`\min(s_c, \mathrm{IQR}_c / 1.349)`
    (so a few far scores do not widen the components' scale prior), :math:`\tau_c = 1`, :math:`a_c = b_c = 1000` (the
    concentration held near 1: a concentration learnt under Gamma(1, 1) slows the chains'
    mixing; :mod:`bayescal.bayesian.priors`).
    Precedence is user (``priors=``) > KDE-informed > default. The class prior is
    :math:`\pi \sim \mathrm{Beta}(1 + n_1, 1 + n_0)`. Atoms (exact 0 and 1, isolated
    heavy repeats) have class-conditional masses :math:`q_{ca}` whose prior is tied to the
    continuous map (:mod:`bayescal.bayesian.assembly`); lattice ties are spread over their
    rounding cells and large data is binned (:mod:`bayescal.bayesian.preparation`), in which
    case every component's prior is truncated below the narrowest bin width :math:`h`
    (:math:`\sigma_{ck} \ge h`; binned counts carry nothing finer, and the likelihood of counts
    at bin centres is bounded only above it). Each posterior draw gives one calibration map

    .. math:: P(y = 1 \mid t) = \frac{\pi (1 - Q_1) f_1(t)}{\pi (1 - Q_1) f_1(t) + (1 - \pi)(1 - Q_0) f_0(t)}

    (:math:`Q_c = \sum_a q_{ca}`; the Jacobian of the logit cancels), and at an atom
    :math:`a`, :math:`\pi q_{1a} / (\pi q_{1a} + (1 - \pi) q_{0a})`. With
    ``null_stacking=True`` the map is averaged with the no-signal model's constant map
    :math:`\pi` by pseudo-BMA+ weights (:mod:`bayescal.bayesian.averaging`), so where the
    scores carry no signal the map goes flat.

    **Components** (``components=``). Above, the components are Gaussian. For probability
    scores ``components="beta"`` uses instead a Beta(:math:`a_{ck}, b_{ck}`) density of the
    probability itself, written on the logit scale,
    :math:`\log \phi_{ck}(t) = a_{ck} \log \operatorname{expit}(t) + b_{ck} \log
    \operatorname{expit}(-t) - \log B(a_{ck}, b_{ck})`, with log-normal priors on the shapes
    centred where the component's logit mean and variance match the KDE quantities above,
    the bandwidth taken at no more than 1,000 scores a class (:mod:`bayescal.bayesian.priors`;
    on binned scores truncated to :math:`1/a_{ck} + 1/b_{ck} \ge h^2`, about the variance of
    the component's logit). Its tails are exponential on the logit scale, as the
    scores of boosted trees, naive Bayes and most classifiers are near 0 and 1, so the map
    there follows the data instead of the tail of the widest Gaussian. Neither family fits
    every classifier: Beta components cover scores piled near 0 and 1, Gaussian ones scores
    close to logit-normal (logistic models). So the default, ``components="select"``, fits
    both families and keeps the one whose class densities predict the fitted points better:
    the larger sum of PSIS leave-one-out log densities :math:`\log p(t_i, y_i \mid D_{-i})`
    (:func:`bayescal.bayesian.averaging.loo_log_scores`) over all N scores (a bin centre
    counted as many times as it has scores), which weighs the densities' whole shape. With
    the sampler the families are compared on the first :data:`SELECT_PILOT_DRAWS` kept draws
    of each chain, and only the kept family's chains run on; either way the kept
    fit is the posterior of ``components=<that family>`` with the same ``random_state``.
    For decision values, or a route that fits Gaussian components only, it is the Gaussian
    model alone. On the designed truths with piled scores it keeps Beta components, where
    Gaussian ones alone leave the band short of the true map; on random Beta mixtures that pile
    scores it keeps Gaussian ones on about a third of the truths or more, and the band falls
    short where the truth nears 0 or 1 (``docs/evidence/random_truths.md``); on real data it
    mostly keeps Gaussian components (measurements: ``docs/evidence/coverage.md``,
    ``docs/evidence/realdata.md``; their history: ``docs/evidence/sampler_history.md``). The choice, the comparison
    and the pilot's size are in ``diagnostics_["family_selection"]``.
    ``components="auto"`` instead averages the two families' maps (and the constant map) by
    the pseudo-BMA+ weights of their leave-one-out log scores of the labels
    (:mod:`bayescal.bayesian.averaging`): predictive weights of the three models (not posterior
    model probabilities), whose map draws are the families' draws in proportion to their
    weights (``diagnostics_["model_averaging"]``).
    Its bands are wider (conservative on smooth truths), it costs both families' full fits,
    and its mean map ranks below ``"select"``'s on the real datasets, where the labels'
    scores tell the families apart poorly. With many scores averaging is the more honest
    choice, and ``"select"`` makes it: above :data:`SELECT_AVERAGE_UNITS` scores in a class it
    fits both families in full and averages them as ``"auto"`` does (the same draws). There the
    bands are so narrow that the two families' maps can differ by more than either band where
    one class piles up, and the leave-one-out densities of the points, which weigh the bulk of
    the classes rather than those piles, can keep the family whose band misses the map there;
    averaging puts the difference into the band, at a modest extra cost (measurements:
    ``docs/evidence/coverage.md``; their history: ``docs/evidence/sampler_history.md``).

    **Inference** (``inference=``): ``"gibbs"``, the blocked Gibbs sampler of Ishwaran &
    James (2001) for this model (:mod:`bayescal.bayesian.gibbs`); ``"nuts"`` and ``"advi"``
    run the same model (either component family) written in PyMC (:mod:`bayescal.bayesian.pymc_model`);
    ``"vi"`` fits variational approximations of the same model (mean-field DADVI
    by default; Pathfinder, DADVI with a linear-response covariance or full-rank ADVI through
    ``route_options``; :mod:`bayescal.bayesian.vi`), reports their Pareto k-hat per class and
    is opt-in: its band misses the coverage bar on ten of the eleven cells the evidence page
    measures, at several times the sampler's time (the default ``components="select"`` fits both
    families with it, at twice that; ``docs/evidence/vi.md``). The map's
    R-hat and ESS are in :attr:`diagnostics_`; measured coverage, accuracy and speed are on
    the documentation's evidence pages (``docs/evidence/coverage.md``, regenerated by
    ``benchmarks/dpm_coverage.py`` and ``benchmarks/make_evidence.py``).

    **Prediction.** At fit time every map draw is evaluated on ``grid_size`` points of the
    working scale over the observed continuous range plus 10 % on each side, equally spaced
    unless a few outlying scores stretch that range so far that the bulk of the data would get
    fewer than 16 points per robust standard deviation; then they are equally spaced on an
    asinh scale centred at the median, as the compressed scores' bins are
    (:meth:`_prediction_grid`). ``predict_proba`` and ``predict_posterior`` interpolate
    linearly there and evaluate the mixtures directly at atoms. Beyond the observed continuous scores the map is held at its
    value at the most extreme one: there no data inform it, and the mixtures' ratio is set by
    their widest components' tails (with one class's scores all at an atom, its borrowed
    continuous density could make the map rise towards 0.9 below every other score).

    Parameters
    ----------
    n_components : int, default 20
        Truncation level K of each class's mixture.
    inference : {"gibbs", "advi", "nuts", "vi"}, default "gibbs"
        The inference route (:data:`bayescal.bayesian.routes.ROUTES`).
    components : {"select", "gaussian", "beta", "auto"}, default "select"
        Component family of the mixtures (see above): ``"select"`` fits both families for
        probability scores and keeps the one whose class densities predict the points better
        (above :data:`SELECT_AVERAGE_UNITS` scores in a class it averages them instead),
        ``"auto"`` averages both families' fits; ``"gaussian"`` or ``"beta"`` fits one
        (``"beta"`` needs probability scores and an inference route of
        :data:`bayescal.bayesian.routes.BETA_ROUTES`).
    priors : dict, list of two dicts, or None, default None
        Hyperparameter overrides (keys of :func:`bayescal.bayesian.priors.prior_keys` for the
        component family; with both families fitted, each takes the keys of its own), for
        both classes or per class (``{0: {...}, 1: {...}}``).
    draws : int or None, default None
        Posterior draws kept per chain (at least 4); None takes the route's default: 500 for Gibbs, which
        keeps one sweep in ``thin`` (:func:`bayescal.bayesian.gibbs.default_thin`: 40 up to
        180 rows per class, 12 at 600, 2 from 3,600), and 1000 for the other routes.
    chains : int, default 2
        Chains of the sampling routes (ADVI gives one chain of draws).
    tune : int, default 500
        Warm-up iterations per chain (Gibbs sweeps or NUTS tuning steps; ignored by ADVI).
    random_state : int, numpy.random.Generator or None, default None
        Seed of every random step: the same value gives the same posterior and map on one
        machine (across processors the draws may differ within Monte Carlo error, mostly where
        the Hamiltonian moves run: :mod:`bayescal.bayesian.gibbs`, "Chains and randomness").
    score_kind : {"probability", "decision"}, default "probability"
        Whether scores are probabilities in [0, 1] (worked on as logits) or raw decision
        values.
    compress_above : int, default 2048
        Compress the continuous scores into ``n_bins`` bins when there are more than this many,
        a row of sample weight :math:`w \ge 2` counting :math:`\lfloor w \rfloor` times (up to
        it, such a row is fitted as that many tied rows; :mod:`~bayescal.bayesian.preparation`).
        The sampler's cost then no longer grows with N, and the fit time does not jump up at
        the switch: just above it the compressed fit is quicker than the raw one just below.
    n_bins : int, default 512
        Bins of that compression (equal-width on an asinh scale of the scores; where far outlying
        scores would leave a bin in the data region wider than the interquartile range over
        :data:`~bayescal.data.ASINH_BINS_PER_IQR`, the scale narrows and
        the bins are doubled up to four times; a :class:`~bayescal.data.ScoreSummary` keeps its
        own bins). Above ``compress_above`` the sampler's cost is proportional to the bins
        from each class's lowest occupied one to its highest (the counts of a bin are spread
        over the empty bins next to it, :func:`~bayescal.data.spread_counts`), so many more
        bins than scores cost more than the scores themselves. On the coverage study's truths
        512 bins give the bands and errors of 1,024 in little more than half the time, while
        256 lose coverage where scores pile at 0 and 1 (``docs/evidence/candidates.md``). At
        most 65,536.
    atom_threshold : float, default 0.01
        Share of a class's weight a repeated score must hold to be an atom.
    atom_min_count : int, default 5
        Fewest rows of one class at a repeated score for it to be an atom (at least 2).
    grid_size : int, default 1024
        Points of the working-scale grid on which map draws are cached for prediction (at most
        65,536, and chains x draws x grid_size at most 2**28, the draws taken as 1,000 when
        ``draws`` is None).
    n_jobs : int, default 1
        Threads fitting the two classes: 1, or 2 and more (two classes, so two threads at most).
    route_options : dict or None, default None
        Extra keyword arguments for the inference route (e.g. ``{"thin": 2}`` for Gibbs,
        ``{"hmc_steps": 20}`` for its Hamiltonian moves, which raise the share of converged fits on
        raw scores at about three times the time (``docs/evidence/speed.md``); they run by default for a class of more than
        :data:`~bayescal.bayesian.gibbs.HMC_AUTO_UNITS` scores; or ``{"start": "single"}``, chains
        that start from one component per class instead of every component occupied, or
        ``{"start": "dispersed"}``, each chain from its own prior draw, a check that the chains
        meet from apart (R-hat in ``diagnostics_["map"]``; the default for a class of more than
        :data:`~bayescal.bayesian.gibbs.DISPERSED_START_UNITS` scores without Hamiltonian
        moves), or ``{"start": "prior"}``, every chain from the KDE-informed values; or
        ``{"merge_split": 20}``, merge-split proposals with Gaussian components, which empty
        surplus components faster but did not make the chains converge; or
        ``{"alpha_update": "collapsed"}``, the concentration drawn with the sticks integrated
        out, which did not either: :mod:`bayescal.bayesian.gibbs`).
    null_stacking : bool, default True
        Average the map with the constant map of the no-signal model by pseudo-BMA+ weights;
        averaging needs at least :data:`AVERAGING_MIN_DRAWS` draws, otherwise it is skipped
        with a warning (and both families, if fitted, take equal parts).
    random_seed : int or None, default None
        Deprecated alias of ``random_state``.

    Attributes
    ----------
    idata_ : xarray.DataTree
        ``posterior`` (``pi`` (chain, draw); ``weight`` and each fitted family's parameters,
        ``mu``, ``sigma`` and/or ``beta_a``, ``beta_b`` (chain, draw, class, component; NaN at
        the other family's draws); ``alpha`` (chain, draw, class); ``atom_prob`` (chain, draw,
        class, atom), coordinate ``atom`` = atom values on the input scale, when there are
        atoms), ``observed_data``, ``sample_stats`` (the route's statistics; ``family``
        (chain, draw), the index in :data:`bayescal.bayesian.mixture.FAMILIES` of each
        draw's family, when both were fitted; and ``informative`` (chain, draw), 0 for the
        constant-map draws of the average), the configuration in the root attrs. There is no
        pointwise ``log_likelihood`` group, so ``arviz.loo`` refuses the posterior rather than
        treat the two classes as two observations.
    atoms_ : ndarray
        Atom values on the input scale.
    grid_ : ndarray of shape (grid_size,)
        Working-scale grid of the cached map draws.
    diagnostics_ : dict
        Per fitted component family (``"gaussian"``, ``"beta"``): the route's diagnostics per
        class (``class_0``, ``class_1``) and ``map``, that fit's map convergence
        (:func:`bayescal.bayesian.convergence.map_convergence`, whose ``meets_target`` says
        whether R-hat <= 1.01 and ESS >= 400 everywhere in the data region); ``map``, the least converged
        of the families holding at least :data:`MAP_CHECK_MIN_WEIGHT` of the draws (what the
        convergence warning reads); ``divergences``; ``model_averaging``, the pseudo-BMA+
        weights of the families' maps and the constant map and what set them
        (:func:`bayescal.bayesian.averaging.model_weights`); with ``components="select"``,
        ``family_selection``: the kept family (``chosen``; ``"averaged"`` where
        :data:`SELECT_AVERAGE_WITHIN` makes it average them), each family's ``elpd_joint_<family>``,
        their difference and its standard error, the largest Pareto k and the number of points;
        or, above :data:`SELECT_AVERAGE_UNITS` scores in a class, ``chosen`` ``"averaged"`` and
        the classes' sizes (``class_units``).

    References
    ----------
    Naeini, M. P., Cooper, G. F. & Hauskrecht, M. (2014). Binary classifier calibration: a
    Bayesian non-parametric approach. arXiv:1401.3390 (SDM 2015).
    Ishwaran, H. & James, L. F. (2001). Gibbs sampling methods for stick-breaking priors.
    JASA 96, 161-173.
    Yao, Y., Vehtari, A., Simpson, D. & Gelman, A. (2018). Using stacking to average
    Bayesian predictive distributions. Bayesian Analysis 13, 917-1007.

    Examples
    --------
    >>> import numpy as np, bayescal
    >>> rng = np.random.default_rng(0)
    >>> y = rng.random(500) < 0.4
    >>> s = np.where(y, rng.beta(5, 2, 500), rng.beta(2, 5, 500))
    >>> cal = bayescal.make_calibrator("dpm", random_state=0, draws=200, tune=200).fit(s, y)
    >>> band = cal.credible_band(ci_prob=0.95)   # (score, ci_bound)
    """

    _min_samples = 2
    _min_per_class = 1
    _predict_params = ("score_kind", "grid_size")  # the map's grid was laid out with grid_size
    _PARTIAL_VARIABLES = tuple(name for family in mixture.FAMILIES for name in mixture.PARAMS[family])
    _fitted_schema = {
        "atoms_": schema.array("f", ("a",), order="increasing"),
        "grid_": schema.array("f", ("g",), order="increasing", max_size=schema.int_param("grid_size")),
        "diagnostics_": schema.mapping(),
    }

    def __init__(
        self,
        *,
        n_components: int = 20,
        inference: str = "gibbs",
        components: str = "select",
        priors: Any = None,
        draws: int | None = None,
        chains: int = 2,
        tune: int = 500,
        random_state: Any = None,
        score_kind: str = "probability",
        compress_above: int = 2048,
        n_bins: int = 512,
        atom_threshold: float = 0.01,
        atom_min_count: int = 5,
        grid_size: int = 1024,
        n_jobs: int = 1,
        route_options: dict | None = None,
        null_stacking: bool = True,
        random_seed: int | None = None,
    ):
        self.n_components = n_components
        self.inference = inference
        self.components = components
        self.priors = priors
        self.draws = draws
        self.chains = chains
        self.tune = tune
        self.random_state = random_state
        self.score_kind = score_kind
        self.compress_above = compress_above
        self.n_bins = n_bins
        self.atom_threshold = atom_threshold
        self.atom_min_count = atom_min_count
        self.grid_size = grid_size
        self.n_jobs = n_jobs
        self.route_options = route_options
        self.null_stacking = null_stacking
        self.random_seed = random_seed

    # ---- fitting ------------------------------------------------------------------
    def _check_params(self) -> None:
        from bayescal.bayesian.routes import ROUTES, SAMPLING_ROUTES

        if self.draws is not None:  # the convergence check splits each chain in halves of at least 2
            check_integer(self.draws, "draws", 4)
        for name, low, high in (
            ("n_components", 2, None),
            ("chains", 1, None),
            ("tune", 0, None),
            ("compress_above", 2, None),
            ("n_bins", 2, _MAX_BINS),
            ("atom_min_count", 2, None),  # a repeated score: at least two rows
            ("grid_size", 16, _MAX_BINS),
            ("n_jobs", 1, None),
        ):
            check_integer(getattr(self, name), name, low, high)
        cells = int(self.chains) * int(self.draws or _DEFAULT_DRAWS_BOUND) * int(self.grid_size)
        if cells > _MAX_MAP_VALUES:  # the map draws cached on the grid, per class and for the map
            raise ValueError(
                f"chains={self.chains} x draws={self.draws} x grid_size={self.grid_size} = {cells:.3g} map values "
                f"(about {3 * 8 * cells / 2**30:.0f} GiB kept on the grid): lower grid_size or draws so that the "
                f"product stays within {_MAX_MAP_VALUES:.3g}."
            )
        if self.inference not in ROUTES:
            raise ValueError(f"inference={self.inference!r} is not one of {tuple(ROUTES)}.")
        if self.components not in COMPONENTS:
            raise ValueError(f"components={self.components!r} is not one of {COMPONENTS}.")
        if not 0.0 < check_number(self.atom_threshold, "atom_threshold") <= 1.0:
            raise ValueError(f"atom_threshold={self.atom_threshold} must lie in (0, 1].")
        check_bool(self.null_stacking, "null_stacking")
        if self.route_options is not None and not isinstance(self.route_options, dict):
            raise ValueError("route_options must be a dict of keyword arguments for the inference route, or None.")
        # the calibrator passes these to the route itself: in route_options they would clash or overrule
        own = {"n_components": "n_components", "random_seed": "random_state", "family": "components"}
        if self.inference in SAMPLING_ROUTES:
            own |= {"draws": "draws", "tune": "tune", "chains": "chains"}
        elif "draws" in (self.route_options or {}):  # a route's own draws: as many as the calibrator asks
            check_integer(self.route_options["draws"], "route_options['draws']", 4)
            if self.draws is not None:
                raise ValueError(
                    f"draws={self.draws} and route_options['draws']={self.route_options['draws']} both set the "
                    f"{self.inference} route's draws: pass one of them."
                )
        clash = sorted(set(self.route_options or {}) & set(own))
        if clash:
            raise ValueError(
                f"route_options[{clash[0]!r}] is set by the calibrator: pass {own[clash[0]]}= to DPMCalibrator instead."
            )

    def _families(self, score_kind: str) -> tuple[str, ...]:
        """The component families this fit uses (see ``components``)."""
        from bayescal.bayesian.routes import BETA_ROUTES

        beta_applies = score_kind == "probability" and self.inference in BETA_ROUTES
        if self.components in ("auto", "select"):
            return ("gaussian", "beta") if beta_applies else ("gaussian",)
        if self.components == "beta" and not beta_applies:
            raise ValueError(
                f"components='beta' needs score_kind='probability' and inference in {BETA_ROUTES} (got "
                f"{score_kind!r}, {self.inference!r}): use components='gaussian', 'auto' or 'select'."
            )
        return (self.components,)

    def _fit(self, data: ScoreData, X=None) -> None:
        self._check_params()
        prep = prepare(
            data,
            atom_threshold=float(self.atom_threshold),
            atom_min_count=int(self.atom_min_count),
            compress_above=int(self.compress_above),
            n_bins=int(self.n_bins),
        )
        families = self._families(data.score_kind)
        seed = resolve_random_state(self.random_state, self.random_seed, "DPMCalibrator")
        # streams: per family (by its place in mixture.FAMILIES) two classes and the assembly, and one
        # for the averaging; a family's draws do not depend on whether the other is fitted too
        seeds = [int(s.generate_state(1)[0]) for s in np.random.SeedSequence(_entropy(seed)).spawn(7)]
        self.atoms_ = prep.atoms
        self.grid_ = self._prediction_grid(prep)
        self._atoms_t = to_working(self.atoms_, self.score_kind) if self.atoms_.size else np.empty(0)
        attrs = {
            "created_by": f"bayescal {__version__}",
            "calibrator": "DPMCalibrator",
            "inference": self.inference,
            "components": self.components,
            "n_components": int(self.n_components),
            "score_kind": data.score_kind,
            "compressed": int(prep.compressed),
            "n_bins": prep.n_bins,
            "random_state": "None" if not isinstance(seed, (int, np.integer)) else int(seed),
        }
        self.diagnostics_ = {}
        region = weighted_quantile(np.concatenate(prep.xs), [0.025, 0.975], np.concatenate(prep.cs))
        family_seeds = {f: (seeds[:3], seeds[4:7])[mixture.FAMILIES.index(f)] for f in families}
        select = self.components == "select" and len(families) > 1
        if select and float(np.max(prep.totals)) > SELECT_AVERAGE_UNITS:
            self.diagnostics_["family_selection"] = {"chosen": AVERAGED, "class_units": prep.totals.tolist()}
            select = False
        if select and self.inference == "gibbs":
            fits = self._select_in_stretches(prep, families, family_seeds, attrs, region)
        else:
            fits, caught = self._fit_families(prep, families, family_seeds, attrs, region)
            if select and (chosen := self._select_family(prep, fits)) != AVERAGED:
                fits = {chosen: fits[chosen]}
            for family in fits:  # the warnings of a family that selection drops are not the fit's
                for message, category in caught[family]:
                    warn(message, category)
        self.diagnostics_["divergences"] = sum(
            int(self.diagnostics_[f][f"class_{c}"].get("divergences", 0)) for f in fits for c in (0, 1)
        )
        self._combine(prep, fits, np.random.default_rng(seeds[3]))
        self.idata_.attrs["diagnostics"] = json.dumps(self.diagnostics_)
        warn_convergence(self.diagnostics_, self.inference, self.route_options)

    def _select_family(self, prep: PreparedData, fits: dict) -> str:
        r"""The family that ``components="select"`` keeps: of the families' full fits, the one
        whose class densities predict the fitted points better, by the weighted sum
        :math:`\sum_i c_i \log p(t_i, y_i \mid D_{-i})` of their PSIS leave-one-out log
        densities (:func:`bayescal.bayesian.averaging.loo_log_scores`) over every point of
        :meth:`_loo_inputs` with its count :math:`c_i` (a bin centre stands for its scores, so
        the comparison weighs all N scores, not a sample of them); the first family on a tie, or
        with too few draws to compare (with a warning). The other families' diagnostics are
        dropped; the choice and the comparison (with the standard error of the difference,
        :math:`\sqrt{N}` times the weighted standard deviation of the pointwise differences)
        go to ``diagnostics_["family_selection"]``. :data:`AVERAGED` (every family kept, to be
        averaged) where the lead is below :data:`SELECT_AVERAGE_WITHIN` standard errors."""
        from bayescal.bayesian.averaging import loo_log_scores

        families = list(fits)
        selection: dict[str, Any] = {}
        score, name = SELECT_SCORES[SELECT_SCORE]
        inputs = self._loo_inputs(prep, {f: fit[0] for f, fit in fits.items()}, None, "components='select'")
        if inputs is None:
            chosen = families[0]
        else:
            log_joints, y, reffs, counts = inputs
            scores = {f: loo_log_scores(log_joints[f], y, reffs[f]) for f in families}
            elpd = {f: float((counts * scores[f][score]).sum()) for f in families}
            chosen = max(families, key=lambda f: elpd[f])
            runner_up = max((f for f in families if f != chosen), key=lambda f: elpd[f])
            gap = scores[chosen][score] - scores[runner_up][score]
            n_units = counts.sum()
            sd = np.sqrt(np.average((gap - np.average(gap, weights=counts)) ** 2, weights=counts))
            lead, lead_se = float((counts * gap).sum()), float(np.sqrt(n_units) * sd)
            if lead < SELECT_AVERAGE_WITHIN * lead_se:
                chosen = AVERAGED
            selection = {f"elpd_{name}_{f}": elpd[f] for f in families} | {
                f"elpd_{name}_diff": lead,
                f"elpd_{name}_diff_se": lead_se,
                "pareto_k_max": float(np.nanmax([scores[f][2] for f in families])),
                "n_points": int(y.size),
                "n_units": float(n_units),
            }
        for f in families:
            if chosen != AVERAGED and f != chosen:
                del self.diagnostics_[f]
        self.diagnostics_["family_selection"] = {"chosen": chosen} | selection
        return chosen

    def _fit_families(
        self,
        prep: PreparedData,
        families: tuple[str, ...],
        seeds: dict[str, list[int]],
        attrs: dict,
        region: np.ndarray,
    ) -> tuple[dict[str, tuple[xr.DataTree, np.ndarray, list[dict]]], dict[str, list]]:
        """Every family's model (:meth:`_fit_family`), with one BLAS thread (:func:`bayescal._threads.one_blas_thread`),
        and the warnings each family's fit raised, held (:func:`bayescal._warnings.held`) for the
        caller to emit for the families it keeps.

        With the sampler, two families are fitted in two threads: each family's serial steps (priors,
        start search, assembly, map draws, convergence) then overlap the other's sweeps, which
        release the GIL.
        Each family has its own random streams, so its draws do not depend on this."""
        from bayescal._threads import map_in_threads, one_blas_thread

        strict = len(families) == 1

        def fit(family: str) -> tuple:
            with held() as caught:
                return self._fit_family(prep, family, seeds[family], attrs, region, strict), caught

        with one_blas_thread():  # a class's parameters are small arrays: BLAS threads only wait on busy cores
            if len(families) == 1 or self.inference != "gibbs":  # the PyMC routes run their own threads
                results = [fit(f) for f in families]
            else:
                results = map_in_threads(fit, families, len(families))
        fits, caught = zip(*results, strict=True)
        return dict(zip(families, fits, strict=True)), dict(zip(families, caught, strict=True))

    def _fit_family(
        self, prep: PreparedData, family: str, seeds: list[int], attrs: dict, region: np.ndarray, strict: bool
    ) -> tuple[xr.DataTree, np.ndarray, list[dict]]:
        """One component family's model: priors (``strict``: refuse keys of the other family),
        the route on each class (streams ``seeds[:2]``) and the posterior (:meth:`_family_posterior`,
        assembled with stream ``seeds[2]``)."""
        priors = self._family_priors(prep, family, strict)
        fits = self._run_route(prep, priors, seeds[:2], family)
        return self._family_posterior(prep, family, fits, seeds[2], attrs, priors, region)

    def _family_priors(self, prep: PreparedData, family: str, strict: bool) -> list[dict]:
        """Each class's hyperparameters for ``family`` (:func:`bayescal.bayesian.priors.resolve_priors`)."""
        from bayescal.bayesian.priors import resolve_priors

        priors = resolve_priors(self.priors, prep.xs, prep.cs, int(self.n_components), family, strict=strict)
        return [p | {"scale_floor": prep.scale_floor} for p in priors]

    def _family_posterior(
        self,
        prep: PreparedData,
        family: str,
        fits: list,
        seed: int,
        attrs: dict,
        priors: list[dict],
        region: np.ndarray,
        check_only: bool = False,
    ) -> tuple[xr.DataTree, np.ndarray, list[dict]]:
        """The posterior of one family from its classes' route fits (assembled with stream
        ``seed``), its map draws on ``grid_`` and their convergence over the working-scale
        ``region``, which go with the route's diagnostics to ``diagnostics_[family]``. Returns the
        posterior, the grid draws and the priors (as lists). With ``check_only`` the map is drawn
        only at the grid points the convergence check reads
        (:func:`bayescal.bayesian.convergence.check_points`; the same values there), as for a
        pilot fit whose map is not kept."""
        from bayescal.bayesian.assembly import assemble_posterior

        priors_listed = [{k: np.asarray(v).tolist() for k, v in p.items()} for p in priors]
        tree = assemble_posterior(fits, prep, np.random.default_rng(seed), attrs | {"priors": priors_listed}, family)
        post = tree["posterior"]
        pi, weight, params, atom_prob = _flat_draws(post)
        points = self.grid_[check_points(self.grid_, region)] if check_only else self.grid_
        grid = mixture.map_draws(points, np.empty(0), pi, weight, *params[family], atom_prob, family)
        self.diagnostics_[family] = {
            f"class_{c}": {k: v for k, v in fits[c].diagnostics.items() if isinstance(v, (bool, int, float, str))}
            for c in (0, 1)
        } | {
            "map": map_convergence(
                grid,
                (post.sizes["chain"], post.sizes["draw"]),
                points,
                region,
                lambda t: from_working(t, self.score_kind),
            )
        }
        return tree, grid, priors_listed

    def _select_in_stretches(
        self,
        prep: PreparedData,
        families: tuple[str, ...],
        seeds: dict[str, list[int]],
        attrs: dict,
        region: np.ndarray,
    ) -> dict[str, tuple[xr.DataTree, np.ndarray, list[dict]]]:
        """``components="select"`` with the sampler: every family's chains run to
        :data:`SELECT_PILOT_DRAWS` kept draws (the families in two threads), :meth:`_select_family`
        compares the families on those draws, and only the kept family's chains run on to
        ``draws`` (both families', in two threads, where it averages them). A chain run in stretches is the chain run at once
        (:class:`bayescal.bayesian.gibbs.GibbsChains`), so the kept fit is still the posterior of
        ``components=<that family>`` with the same ``random_state``, at about 1.3 (10^3 scores)
        to 1.5 (compressed scores, where the warm-up is most of the sweeps) times one family's
        cost instead of twice. With the numpy sweeps the chains run in one
        stretch and the comparison reads all their draws."""
        from bayescal._threads import map_in_threads, one_blas_thread
        from bayescal.bayesian.gibbs import GibbsChains

        def pilot(family: str) -> tuple[list[dict], list]:
            priors = self._family_priors(prep, family, strict=False)
            chains = self._run_route(prep, priors, seeds[family][:2], family, route=GibbsChains)
            for c in chains:
                c.advance(SELECT_PILOT_DRAWS)
            return priors, chains

        with one_blas_thread():  # as in _fit_families
            started = dict(zip(families, map_in_threads(pilot, families, len(families)), strict=True))
        # the comparison reads the pilot posteriors and their map's ESS; the kept family's map on
        # the whole grid is drawn once, from its final draws
        fits = {
            family: self._family_posterior(
                prep, family, [c.class_fit() for c in chains], seeds[family][2], attrs, priors, region, check_only=True
            )
            for family, (priors, chains) in started.items()
        }
        chosen = self._select_family(prep, fits)
        kept = families if chosen == AVERAGED else (chosen,)
        self.diagnostics_["family_selection"]["pilot_draws"] = min(c.kept for f in kept for c in started[f][1])

        def run_on(family: str) -> None:
            for c in started[family][1]:
                if c.kept < c.n_keep:  # else the pilot ran it to the end (or draws <= pilot)
                    c.advance(c.n_keep)

        with one_blas_thread():
            map_in_threads(run_on, kept, len(kept))
        return {
            f: self._family_posterior(
                prep, f, [c.class_fit() for c in started[f][1]], seeds[f][2], attrs, started[f][0], region
            )
            for f in kept
        }

    def _combine(
        self, prep: PreparedData, fits: dict[str, tuple[xr.DataTree, np.ndarray, list[dict]]], rng: np.random.Generator
    ) -> None:
        """``idata_`` and the cached grid draws from the families' fits: each draw position goes to
        one model (a family, or the constant map with ``null_stacking``) in proportion to the
        averaging weights (:meth:`_average`); ``diagnostics_["map"]`` is the worst convergence
        of the families that carry the map."""
        from bayescal.bayesian.assembly import combine_families

        families = list(fits)
        trees = {f: fit[0] for f, fit in fits.items()}
        post = trees[families[0]]["posterior"]
        shape = (post.sizes["chain"], post.sizes["draw"])
        weights = dict.fromkeys(families, 1.0 / len(families))
        if len(families) > 1 or self.null_stacking:
            weights = self._average(prep, trees, rng, weights)
        S = shape[0] * shape[1]
        slots = slot_models(weights, S, rng) if len(weights) > 1 else np.full(S, families[0], dtype=object)
        informative = slots != CONSTANT
        top = max(families, key=lambda f: weights[f])
        slot_family = np.where(informative, slots, top)
        if len(families) > 1:
            self.idata_ = combine_families(trees, slot_family)
            self.idata_.attrs["priors"] = json.dumps({f: fit[2] for f, fit in fits.items()})
        else:
            self.idata_ = trees[families[0]]
        if CONSTANT in weights:
            self.idata_["sample_stats"]["informative"] = xr.DataArray(
                informative.astype(np.int8).reshape(shape), dims=("chain", "draw")
            )
        carrying = [f for f in families if weights[f] >= MAP_CHECK_MIN_WEIGHT] or [top]
        self.diagnostics_["map"] = _worst(self.diagnostics_[f]["map"] for f in carrying)
        grid_draws = fits[families[0]][1]
        for family in families[1:]:
            grid_draws = np.where((slot_family == family)[:, None], fits[family][1], grid_draws)
        self._restore(grid_draws)

    def _run_route(
        self, prep: PreparedData, priors: list[dict], seeds: list[int], family: str, route: Any = None
    ) -> list:
        """Each class's mixture fitted by the inference route (in two threads with ``n_jobs=2``), or
        ``route`` (a callable with the route's arguments, such as the sampler's chains) called instead."""
        from bayescal.bayesian.routes import SAMPLING_ROUTES, get_route

        route = get_route(self.inference) if route is None else route
        options = dict(self.route_options or {})
        if self.inference in SAMPLING_ROUTES:
            options = {"tune": int(self.tune), "chains": int(self.chains)} | options
        if self.draws is not None:
            options["draws"] = int(self.draws)
        if family != "gaussian":
            options["family"] = family

        def run(c: int):
            try:
                return route(
                    prep.xs[c],
                    prep.cs[c],
                    priors[c],
                    n_components=int(self.n_components),
                    random_seed=seeds[c],
                    **options,
                )
            except TypeError as exc:
                if "unexpected keyword" not in str(exc):
                    raise
                raise ValueError(
                    f"route_options {sorted(options)} do not fit inference={self.inference!r} "
                    f"({exc}): see the route's docstring in bayescal.bayesian for its options."
                ) from None

        if int(self.n_jobs) > 1:
            from bayescal._threads import map_in_threads

            return map_in_threads(run, (0, 1), 2)
        return [run(0), run(1)]

    def _prediction_grid(self, prep: PreparedData) -> np.ndarray:
        r"""The working-scale grid of cached map draws, over the continuous points' range plus
        :data:`GRID_PAD` of it (at least :data:`GRID_PAD` x 1e-6) each side.

        Equally spaced while that gives at least :data:`GRID_POINTS_PER_SD` points per robust
        standard deviation :math:`\hat\sigma` (interquartile range / 1.349) of the continuous points; a
        few outlying scores (heavy-tailed decision values) would otherwise leave the bulk of the data
        between a handful of grid points, where the interpolated map and band are straight lines.
        Beyond that the points are equally spaced on :math:`u = \operatorname{asinh}((t - m) / s)`,
        :math:`m` the points' weighted median and :math:`s` :data:`~bayescal.data.ASINH_SPREAD`
        :math:`\hat\sigma`, the layout of the compressed scores' bins: nearly equal in width
        within about :math:`s` of the median, widening in proportion to the distance beyond."""
        pooled, counts = np.concatenate(prep.xs), np.concatenate(prep.cs)
        lo, hi = float(pooled.min()), float(pooled.max())
        pad = GRID_PAD * max(hi - lo, 1e-6)
        lo, hi = lo - pad, hi + pad
        size = int(self.grid_size)
        q1, m, q3 = weighted_quantile(pooled, [0.25, 0.5, 0.75], counts)
        sd = (q3 - q1) / 1.349
        if not sd > 0 or (hi - lo) / (size - 1) <= sd / GRID_POINTS_PER_SD:
            return np.linspace(lo, hi, size)
        s = ASINH_SPREAD * sd
        grid = m + s * np.sinh(np.linspace(np.arcsinh((lo - m) / s), np.arcsinh((hi - m) / s), size))
        grid[[0, -1]] = lo, hi
        return grid

    def _data_range(self) -> tuple[float, float]:
        """The continuous points' working-scale range, read back from ``grid_`` (:meth:`_prediction_grid`)."""
        g0, g1 = float(self.grid_[0]), float(self.grid_[-1])
        span = g1 - g0
        pad = span * GRID_PAD / (1 + 2 * GRID_PAD) if span >= (1 + 2 * GRID_PAD) * 1e-6 else GRID_PAD * 1e-6
        return g0 + pad, g1 - pad

    def _average(
        self, prep: PreparedData, trees: dict[str, xr.DataTree], rng: np.random.Generator, equal: dict[str, float]
    ) -> dict[str, float]:
        """Averaging weights of the families' maps and (with ``null_stacking``) the constant map
        (:func:`bayescal.bayesian.averaging.model_weights` on the points of :meth:`_loo_inputs`);
        ``equal`` (the families alone, in equal parts) when there are too few draws."""
        from bayescal.bayesian.averaging import model_weights

        inputs = self._loo_inputs(
            prep, trees, rng, "Averaging the maps (null_stacking, or both component families)",
            "the map is the mixtures' alone, the families in equal parts. Raise draws, or set null_stacking=False "
            "and components to one family.",
        )  # fmt: skip
        if inputs is None:
            return equal
        result = model_weights(*inputs[:3], constant=bool(self.null_stacking))
        self.diagnostics_["model_averaging"] = result
        return {name[len("weight_") :]: w for name, w in result.items() if name.startswith("weight_")}

    def _loo_inputs(
        self,
        prep: PreparedData,
        trees: dict[str, xr.DataTree],
        rng: np.random.Generator | None,
        what: str,
        instead: str = "the first component family is kept. Raise draws.",
    ) -> tuple[dict[str, np.ndarray], np.ndarray, dict[str, float], np.ndarray] | None:
        r"""What the leave-one-out comparisons of the fits read: per family the log joint
        :math:`\log p(t_i, y = c \mid \theta_s)` (draws, class, point), the points' labels, per
        family the relative efficiency of its draws, and the points' counts.

        The points are the continuous points (or bin centres) and atoms of each class (not the
        pooled points a class borrows, :mod:`bayescal.bayesian.preparation`): without
        ``rng``, every one with its weight as count; otherwise points of count one: every one
        repeated its weight's number of times when the weights are integers summing to at most
        :data:`AVERAGING_POINTS` (as the rows they count), else as many as the total weight
        (rounded; at most :data:`AVERAGING_POINTS`) drawn with ``rng`` with probability
        proportional to weight (the averaging weights' Bayesian bootstrap resamples points, not
        counts, and their evidence grows with the number of points, which is thus the data's
        number of rows, never more); the draws are at most
        :data:`AVERAGING_DRAWS` of each family (every j-th of each chain).
        None, with a warning naming ``what`` and what happens ``instead``, when there are fewer
        than :data:`AVERAGING_MIN_DRAWS` draws; None silently when there is no point (each class
        has one continuous value and there are no atoms: nothing to compare the fits on).
        """
        units = [(x, np.full(x.size, c), w) for c, (x, w) in enumerate(zip(prep.xs, prep.cs)) if not prep.borrowed[c]]
        units += [(prep.atoms_t, np.full(prep.atoms_t.size, c), prep.atom_counts[c]) for c in (0, 1)]
        t, y, w = (np.concatenate(a) for a in zip(*units))
        keep_units = w > 0
        t, y, w = t[keep_units], y[keep_units], w[keep_units]
        if t.size == 0:  # each class one continuous value, no atoms: no point has a class's own fit
            return None
        post = next(iter(trees.values()))["posterior"]
        n_chain, n_draw = post.sizes["chain"], post.sizes["draw"]
        if n_chain * n_draw < AVERAGING_MIN_DRAWS:
            warn(
                f"{what} needs at least {AVERAGING_MIN_DRAWS} posterior draws (chains x draws), got "
                f"{n_chain * n_draw}: {instead}"
            )
            return None
        every_point = rng is None
        total = float(w.sum())
        if every_point:
            rows = np.arange(t.size)
        elif total <= AVERAGING_POINTS and np.all(w == np.round(w)):  # the rows the counts stand for
            rows = np.repeat(np.arange(t.size), w.astype(np.int64))
        else:  # as many points as the data hold rows, at most AVERAGING_POINTS
            n_points = int(min(AVERAGING_POINTS, max(1, round(total))))
            rows = rng.choice(t.size, size=n_points, p=w / total)
        counts = w[rows] if every_point else np.ones(rows.size)
        step = -(-n_chain * n_draw // AVERAGING_DRAWS)
        keep = (np.arange(n_chain)[:, None] * n_draw + np.arange(0, n_draw, step)[None, :]).ravel()
        values, at = np.unique(t[rows], return_inverse=True)  # drawn bins repeat: evaluate each once
        log_joints, reffs = {}, {}
        for family, tree in trees.items():
            pi, weight, params, atom_prob = _flat_draws(tree["posterior"])
            draws = [a[keep] for a in (pi, weight, *params[family], atom_prob)]
            log_joints[family] = mixture.log_joint(values, self._atoms_t, *draws, family=family)[:, :, at]
            ess = self.diagnostics_[family]["map"]["ess_bulk_median"]
            reffs[family] = float(np.clip(ess / (n_chain * n_draw), 0.01, 1.0))
        return log_joints, y[rows], reffs, counts

    # ---- evaluation -----------------------------------------------------------------
    def _check_fitted(self) -> None:
        """``grid_`` is a strictly increasing prediction grid of ``grid_size`` points, as ``_on_grid`` assumes."""
        super()._check_fitted()
        g = self.grid_
        if g.size != self.grid_size or not np.all(np.diff(g) > 0):
            raise ValueError(f"grid_ is not a strictly increasing grid of grid_size={self.grid_size} points.")

    def _check_posterior(self, tree: xr.DataTree) -> None:
        """The generic checks, then the layout :func:`_flat_draws` reads: ``pi`` (chain, draw);
        ``weight`` and the two parameters of each fitted component family (``mu``, ``sigma`` and/or
        ``beta_a``, ``beta_b``; chain, draw, class, component); ``atom_prob`` (chain, draw, class,
        atom) with one atom per value of ``atoms_``; with two families, ``sample_stats.family``."""
        super()._check_posterior(tree)
        post = tree["posterior"]
        families = _present_families(post)
        if not families:
            raise ValueError(
                f"idata_.posterior holds no component parameters: it needs those of one of {mixture.FAMILIES} "
                f"({mixture.PARAMS})."
            )
        per_component = ("chain", "draw", "class", "component")
        want = {"pi": ("chain", "draw"), "weight": per_component}
        if self.atoms_.size or "atom_prob" in post:
            want["atom_prob"] = ("chain", "draw", "class", "atom")
        for family in families:
            want |= dict.fromkeys(mixture.PARAMS[family], per_component)
        for name, dims in want.items():
            if name not in post or post[name].dims != dims or post[name].dtype.kind != "f":
                raise ValueError(f"idata_.posterior.{name} is missing, or not floats with dims {dims}.")
        if post.sizes["class"] != 2 or post.sizes.get("atom", 0) != self.atoms_.size:
            raise ValueError("idata_.posterior has the wrong number of classes or atoms.")
        if len(families) > 1:
            stats = tree["sample_stats"] if "sample_stats" in tree.children else None
            codes = [mixture.FAMILIES.index(f) for f in families]
            if stats is None or "family" not in stats or not np.isin(stats["family"].values, codes).all():
                raise ValueError(
                    f"idata_.posterior holds the parameters of {families}, but sample_stats.family does not say "
                    f"which family each draw is (codes {codes}, the indices in {mixture.FAMILIES})."
                )
        for family in families:  # each draw has its own family's parameters (NaN only at the other's)
            own = (
                np.isin(tree["sample_stats"]["family"].values, mixture.FAMILIES.index(family))
                if len(families) > 1
                else np.ones((post.sizes["chain"], post.sizes["draw"]), dtype=bool)
            )
            for name in mixture.PARAMS[family]:
                if np.isnan(post[name].values[own]).any():
                    raise ValueError(f"idata_.posterior.{name} is NaN at a draw of the {family} family.")

    def _pooled_on_constant_draws(self, per_class: np.ndarray) -> np.ndarray:
        r"""Class distributions (S, 2, ...) with both classes of the constant-map draws
        (``informative`` = 0) set to the pooled :math:`\pi f_1 + (1 - \pi) f_0`: on those
        draws the scores do not depend on the class, as their map :math:`\pi` says."""
        if self._informative.all():
            return per_class
        pi = self._draws[0].reshape(-1, *([1] * (per_class.ndim - 2)))
        pooled = pi * per_class[:, 1] + (1.0 - pi) * per_class[:, 0]
        out = per_class.copy()
        constant = ~self._informative
        out[constant, 0] = out[constant, 1] = pooled[constant]
        return out

    def _with_constant_draws(self, draws: np.ndarray) -> np.ndarray:
        """Map draws (S, n) with the constant-map draws (``informative`` = 0) set to pi."""
        if self._informative.all():
            return draws
        return np.where(self._informative[:, None], draws, self._draws[0][:, None])

    def _restore(self, grid_draws: np.ndarray | None = None) -> None:
        """Cache the flattened draws, each draw's component family and the map draws on ``grid_``
        (``grid_draws``, the mixtures' maps there, when the fit has them; rebuilt after loading)."""
        self._draws = _flat_draws(self.idata_["posterior"])
        pi = self._draws[0]
        post = self.idata_["posterior"]
        self._shape = (post.sizes["chain"], post.sizes["draw"])
        self._atoms_t = to_working(self.atoms_, self.score_kind) if self.atoms_.size else np.empty(0)
        stats = self.idata_["sample_stats"] if "sample_stats" in self.idata_.children else None
        families = _present_families(post)
        if len(families) > 1:
            self._draw_family = stats["family"].values.reshape(-1).astype(np.int64)
        else:
            self._draw_family = np.full(pi.shape[0], mixture.FAMILIES.index(families[0]))
        informative = np.ones(pi.shape[0], dtype=bool)
        for group in ("sample_stats", "posterior"):  # files written before it moved keep it in the posterior
            if group in self.idata_.children and "informative" in self.idata_[group]:
                informative = self.idata_[group]["informative"].values.reshape(-1).astype(bool)
                break
        self._informative = informative
        if grid_draws is None:
            grid_draws = self._mixture_map(self.grid_, np.empty(0))
        self._grid_draws = self._with_constant_draws(grid_draws)
        self._grid_mean = self._grid_draws.mean(axis=0)

    def _by_family(self, evaluate) -> np.ndarray:
        """``evaluate(family, pi, weight, p1, p2, atom_prob)`` on the draws of each component
        family, put back in draw order: an array whose first axis runs over the S draws."""
        pi, weight, params, atom_prob = self._draws
        out = None
        for code, family in enumerate(mixture.FAMILIES):
            rows = self._draw_family == code
            if not rows.any():
                continue
            p1, p2 = params[family]
            if rows.all():
                return evaluate(family, pi, weight, p1, p2, atom_prob)
            part = evaluate(family, pi[rows], weight[rows], p1[rows], p2[rows], atom_prob[rows])
            if out is None:
                out = np.empty((pi.shape[0], *part.shape[1:]))
            out[rows] = part
        return out

    def _mixture_map(self, t: np.ndarray, atoms_t: np.ndarray) -> np.ndarray:
        """The mixtures' map draws (S, n) at working-scale ``t`` (:func:`bayescal.bayesian.mixture.map_draws`)."""
        return self._by_family(lambda f, *draws: mixture.map_draws(t, atoms_t, *draws, family=f))

    def _split(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Which points are at atoms, and the points with those off the atoms held within the
        continuous points' range (:meth:`_data_range`), where the cached grid holds the map."""
        at_atom = np.isin(t, self._atoms_t) if self._atoms_t.size else np.zeros(t.shape, dtype=bool)
        return at_atom, np.clip(t, *self._data_range())

    def _on_grid(self, t: np.ndarray, table: np.ndarray) -> np.ndarray:
        """Linear interpolation of ``table`` (rows tabulated on ``grid_``) at ``t``: each point's
        place among the grid points (a fractional index), then every row there."""
        g = self.grid_
        place = interp_sorted(t, g, np.arange(g.size, dtype=np.float64))
        return interp_regular(place, 0.0, 1.0, table)

    def _predictor(self) -> DPMCalibrator:
        """A shallow copy without the posterior (``idata_``) and the map draws on the grid, which
        the posterior-mean map of :meth:`predict_proba` does not read: about a tenth of the size
        in a lazy Dask prediction's graph (1 MB instead of 10 with the default draws)."""
        light = copy.copy(self)
        light.idata_ = light._grid_draws = None
        return light

    def _map_draws(self, t: np.ndarray, X=None) -> np.ndarray:
        t = np.asarray(t, dtype=np.float64)
        at_atom, held = self._split(t)
        out = np.empty((self._grid_draws.shape[0], t.size))
        if (~at_atom).any():
            out[:, ~at_atom] = self._on_grid(held[~at_atom], self._grid_draws)
        if at_atom.any():
            out[:, at_atom] = self._with_constant_draws(self._mixture_map(t[at_atom], self._atoms_t))
        return out.reshape(*self._shape, t.size)

    def _calibrate(self, t: np.ndarray, X=None) -> np.ndarray:
        t = np.asarray(t, dtype=np.float64)
        at_atom, held = self._split(t)
        out = self._on_grid(held, self._grid_mean)  # everywhere (one pass), then replaced at atoms
        if at_atom.any():
            uniq, inv = np.unique(t[at_atom], return_inverse=True)
            out[at_atom] = self._with_constant_draws(self._mixture_map(uniq, self._atoms_t)).mean(axis=0)[inv]
        return out

    def density_map(self, grid: ArrayLike | None = None) -> xr.DataArray:
        r"""Posterior draws of the continuous class densities on ``grid``, dims ``(chain, draw, class, score)``.

        The density is of the input-scale score: :math:`(1 - Q_c) f_c(t(s))\,|dt/ds|`, with
        :math:`dt/ds = 1/(s(1-s))` for probabilities and 1 for decision values, so with the
        atom masses (:meth:`score_atoms`) it makes up the whole class distribution. On the
        constant-map draws of the null-model average (``sample_stats.informative`` = 0) both
        classes get the pooled density :math:`\pi f_1 + (1 - \pi) f_0`, so that every draw's
        densities give its map by Bayes' rule. ``grid`` is as in :meth:`calibration_map`; atom
        values on it get the continuous part only.
        """
        g = self._grid(grid)
        t = to_working(g, self.score_kind)
        logf = self._by_family(
            lambda f, pi, weight, p1, p2, atom_prob: (
                mixture.log_density(t, weight, p1, p2, f)
                + np.log1p(-np.clip(atom_prob.sum(axis=-1), 0.0, 1.0))[..., None]
            )
        )  # (S, 2, n); a draw with all of a class's mass on its atoms has no continuous density (0)
        if self.score_kind == "probability":  # the density vanishes at exact 0 and 1
            edge = (g <= 0.0) | (g >= 1.0)
            gi = np.where(edge, 0.5, g)
            logf = np.where(edge, -np.inf, logf - np.log(gi) - np.log1p(-gi))
        dens = self._pooled_on_constant_draws(np.exp(logf)).reshape(*self._shape, 2, g.size)
        return xr.DataArray(
            dens,
            dims=("chain", "draw", "class", "score"),
            coords={"chain": np.arange(self._shape[0]), "draw": np.arange(self._shape[1]), "class": [0, 1], "score": g},
            name="density",
            attrs=self._grid_attrs(g),
        )

    def score_atoms(self) -> xr.DataArray:
        """Posterior draws of the point masses of the class score distributions, dims
        ``(chain, draw, class, atom)``: ``idata_.posterior.atom_prob``, with both classes of
        the constant-map draws given the pooled masses, as in :meth:`density_map`."""
        atoms = super().score_atoms()
        if atoms.sizes["atom"] == 0 or self._informative.all():
            return atoms
        flat = atoms.values.reshape(-1, 2, atoms.sizes["atom"])
        return atoms.copy(data=self._pooled_on_constant_draws(flat).reshape(atoms.shape))


def _entropy(seed: Any) -> Any:
    """Entropy for :class:`numpy.random.SeedSequence` from an int, a Generator or None."""
    if isinstance(seed, np.random.Generator):
        return int(seed.integers(2**63))
    return seed


def _present_families(post: xr.Dataset) -> list[str]:
    """The component families whose parameters the posterior holds."""
    return [f for f in mixture.FAMILIES if all(p in post for p in mixture.PARAMS[f])]


def _flat_draws(
    post: xr.Dataset,
) -> tuple[np.ndarray, np.ndarray, dict[str, tuple[np.ndarray, np.ndarray]], np.ndarray]:
    """A posterior's arrays flattened over (chain, draw): pi (S,), weight (S, 2, K), per component
    family it holds the two parameters (S, 2, K), atom_prob (S, 2, A; A = 0 without atoms)."""
    S = post.sizes["chain"] * post.sizes["draw"]
    atom_prob = flat_draws(post, "atom_prob") if "atom_prob" in post else np.empty((S, 2, 0))
    params = {
        f: (flat_draws(post, mixture.PARAMS[f][0]), flat_draws(post, mixture.PARAMS[f][1]))
        for f in _present_families(post)
    }
    return flat_draws(post, "pi"), flat_draws(post, "weight"), params, atom_prob


def _worst(convergences) -> dict[str, float]:
    """The least converged of several maps' convergence summaries (largest R-hat, with its
    score and gap; smallest ESS; largest Monte Carlo error of the mean, with its score)."""
    items = list(convergences)

    def largest(key: str) -> dict:
        return max(items, key=lambda c: -np.inf if np.isnan(c[key]) else c[key])

    out = dict(largest("rhat_max"))
    for key in ("ess_bulk_min", "ess_bulk_median", "ess_tail_min"):
        out[key] = float(min(c[key] for c in items))
    noisiest = largest("mcse_mean_max")
    out |= {key: noisiest[key] for key in ("mcse_mean_max", "mcse_mean_max_score")}
    out["meets_target"] = meets_target(out)
    return out
