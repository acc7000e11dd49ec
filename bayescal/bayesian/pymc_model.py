r"""The per-class truncated Dirichlet-process mixture written once in PyMC, with its ADVI and NUTS routes.

Model (one class; ``x_i`` points on the working scale with counts ``c_i``; ``K`` components)

.. math::

    \alpha &\sim \mathrm{Gamma}(a_\alpha, b_\alpha) \\
    v_k \mid \alpha &\sim \mathrm{Beta}(1, \alpha), \quad k = 1, \dots, K-1, \qquad v_K = 1 \\
    w_k &= v_k \prod_{j<k} (1 - v_j) \\
    \mu_k &\sim \mathcal N(m_k, s), \qquad
    \log \sigma_k \sim \mathcal N(\log h, \tau) \\
    \log p(x \mid \theta) &= \sum_i c_i \log \sum_k w_k \, \mathcal N(x_i \mid \mu_k, \sigma_k)

with the hyperparameters ``alpha_shape`` :math:`a_\alpha`, ``alpha_rate`` :math:`b_\alpha`,
``mu_loc`` :math:`m`, ``mu_scale`` :math:`s`, ``sigma_logmean`` :math:`\log h`,
``sigma_logsd`` :math:`\tau` of the ``prior`` dict (built by
:mod:`bayescal.bayesian.priors`). With Beta components (``family="beta"``,
:mod:`bayescal.bayesian.mixture`) the component density of a logit :math:`x` is
:math:`a_k \log \operatorname{expit}(x) + b_k \log \operatorname{expit}(-x) - \log B(a_k, b_k)`
with :math:`\log a_k \sim \mathcal N(\ell^a_k, \tau)`, :math:`\log b_k \sim \mathcal N(\ell^b_k, \tau)`
(``a_logloc``, ``b_logloc``, ``ab_logsd``); the stick-breaking part is the same. These are
the models the Gibbs route (:mod:`bayescal.bayesian.gibbs`) samples. The weighted likelihood is exact for raw data
(``c_i = 1``) and is the binned approximation when ``x_i`` are bin centres.

Compilation. The data (``x``, ``counts``) and every hyperparameter are ``pm.Data`` shared
variables, so a model for a given ``K`` is built once and its compiled functions (one
``pm.ADVI`` object's adam step function, compiled once with a shared learning rate; the
log-density of a flat parameter vector used for Pareto-smoothed importance sampling; the
NUTS step method) are kept for the life of the process. A later fit with the same ``K``
only swaps the shared values, resets the variational parameters, adam's moments and
iteration counter, and reseeds the step function's random generator: no compilation
(``pm.fit`` would rebuild and recompile all of this on every call). Models sit in a
thread-safe pool, one per concurrent fit, so the two classes can be fitted in parallel
threads. PyTensor keeps compiled code on disk under ``pytensor.config.base_compiledir``
(``~/.pytensor`` by default: C modules in ``compiledir_*``, the numba backend's cache in
``numba/``), and a new process reuses it; the graph's construction and rewriting, which no
disk cache avoids, are paid once per process. An adam iteration's cost grows with N on raw
points and is independent of N on bins. Measured costs: ``docs/evidence/sampler_history.md``.

References
----------
Ishwaran, H. & James, L. F. (2001). Gibbs sampling methods for stick-breaking priors.
JASA 96(453), 161-173.
Kucukelbir, A. et al. (2017). Automatic differentiation variational inference. JMLR 18.
Yao, Y., Vehtari, A., Simpson, D. & Gelman, A. (2018). Yes, but did it work?: Evaluating
variational inference. ICML.
Vehtari, A. et al. (2024). Pareto smoothed importance sampling. JMLR 25(72).
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
import xarray as xr
from scipy.special import logit, logsumexp

from bayescal._validation import check_bool, check_integer, check_number
from bayescal._warnings import warn
from bayescal.bayesian.class_fit import ClassFit

__all__ = ["build_model", "fit_advi", "fit_nuts"]

#: hyperparameters that are model data (``pm.Data``), per component family; the ``init_*`` keys
#: only start the routes
_DATA_KEYS = {
    "gaussian": ("alpha_shape", "alpha_rate", "mu_loc", "mu_scale", "sigma_logmean", "sigma_logsd"),
    "beta": ("alpha_shape", "alpha_rate", "a_logloc", "b_logloc", "ab_logsd"),
}
#: the free component parameters and the prior keys that start them
_START_KEYS = {"gaussian": {"mu": "init_mu", "sigma": "init_sigma"}, "beta": {"beta_a": "init_a", "beta_b": "init_b"}}


def family_of(prior: dict) -> str:
    """The component family whose hyperparameters ``prior`` holds (:func:`bayescal.bayesian.priors.prior_keys`)."""
    return "beta" if "a_logloc" in prior else "gaussian"


def build_model(n_components: int, family: str = "gaussian", binned: bool = False):
    r"""Build the PyMC model of one class's mixture for ``K = n_components`` components of ``family``.

    Data and hyperparameters are placeholders (``pm.Data``) set with :func:`pymc.set_data`;
    the model exposes the deterministic ``weight`` (K,) next to ``alpha``, ``v`` and the
    family's two component parameters (``mu`` and ``sigma``, or ``beta_a`` and ``beta_b``),
    and the weighted log-likelihood as the potential ``loglik``. Every component's spread on the
    working scale, :math:`\sigma_k` or :math:`\sqrt{1/a_k + 1/b_k}` (about the standard
    deviation of a Beta component's logit), is at least the data ``scale_floor`` (0 for raw
    scores; the narrowest bin for compressed ones, :class:`bayescal.bayesian.preparation.PreparedData`),
    where the components' priors are truncated. For Gaussian components the prior of
    :math:`\sigma_k` is the log-normal truncated at the floor (``pm.Truncated``), whose
    unconstrained coordinate is :math:`\log(\sigma_k - \text{floor})`: the bound is a
    transform, so the log density is smooth and finite on the whole unconstrained space (a
    wall there stalls gradient-based fits). For Beta components, whose spread is not one
    parameter, the potential ``floor`` sets the log density to :math:`-\infty` below it.

    With ``binned=True`` (Gaussian components only) the data are bins instead of points: the
    finite working-scale edges ``lower`` and ``upper`` of each bin and its count ``counts``,
    and the likelihood is that of the counts of a partition of the line (give the outermost
    bins finite edges far beyond the data for the line's open ends),

    .. math:: \log p(c \mid \theta) = \sum_b c_b \log \sum_k w_k
              \left[\Phi\!\left(\tfrac{u_b - \mu_k}{\sigma_k}\right)
              - \Phi\!\left(\tfrac{l_b - \mu_k}{\sigma_k}\right)\right],

    the exact likelihood of binned scores (each difference is taken in the tail on the far
    side of :math:`\mu_k`, so it keeps its precision). Unlike the weighted point likelihood
    at bin centres it is bounded: a component cannot gain by narrowing onto one bin.

    Parameters
    ----------
    n_components : int
        K, the truncation of the Dirichlet process.
    family : {"gaussian", "beta"}, default "gaussian"
        Component family.
    binned : bool, default False
        Bins (``lower``, ``upper``, ``counts``) instead of points (``x``, ``counts``).

    Returns
    -------
    pymc.Model
        The model, its data and hyperparameters still to be set.
    """
    import pymc as pm
    import pytensor.tensor as pt

    if family not in _DATA_KEYS:
        raise ValueError(f"family={family!r} is not one of {tuple(_DATA_KEYS)}.")
    if binned and family != "gaussian":
        raise ValueError(f"binned=True is written for Gaussian components, not family={family!r}.")
    K = int(n_components)
    with pm.Model() as model:
        if binned:
            lower = pm.Data("lower", np.array([-1.0, 0.0]))
            upper = pm.Data("upper", np.array([0.0, 1.0]))
        else:
            x = pm.Data("x", np.zeros(2))
        counts = pm.Data("counts", np.ones(2))
        alpha_shape = pm.Data("alpha_shape", 1.0)
        alpha_rate = pm.Data("alpha_rate", 1.0)

        # the components' spread on the working scale is at least scale_floor (the prior truncated there)
        scale_floor = pm.Data("scale_floor", 0.0)
        alpha = pm.Gamma("alpha", alpha=alpha_shape, beta=alpha_rate)
        v = pm.Beta("v", alpha=1.0, beta=alpha, shape=K - 1)
        v_full = pt.concatenate([v, pt.ones(1)])
        remaining = pt.concatenate([pt.ones(1), pt.cumprod(1.0 - v)])
        weight = pm.Deterministic("weight", v_full * remaining)
        if family == "gaussian":
            mu_loc = pm.Data("mu_loc", np.zeros(K))
            mu_scale = pm.Data("mu_scale", 1.0)
            sigma_logmean = pm.Data("sigma_logmean", 0.0)
            sigma_logsd = pm.Data("sigma_logsd", 1.0)
            mu = pm.Normal("mu", mu=mu_loc, sigma=mu_scale, shape=K)
            sigma = pm.Truncated(
                "sigma", pm.LogNormal.dist(mu=sigma_logmean, sigma=sigma_logsd), lower=scale_floor, shape=K
            )
            if binned:
                z_lo = (lower[:, None] - mu[None, :]) / (np.sqrt(2.0) * sigma[None, :])
                z_hi = (upper[:, None] - mu[None, :]) / (np.sqrt(2.0) * sigma[None, :])
                above = (lower + upper)[:, None] > 2.0 * mu[None, :]  # the bin lies mostly above mu_k
                mass = 0.5 * pt.switch(above, pt.erfc(z_lo) - pt.erfc(z_hi), pt.erfc(-z_hi) - pt.erfc(-z_lo))
                log_prob = pt.log(pt.dot(pt.maximum(mass, 1e-300), weight))  # (bins,)
            else:
                z = (x[:, None] - mu[None, :]) / sigma[None, :]
                log_phi = -0.5 * z**2 - pt.log(sigma)[None, :] - 0.5 * np.log(2 * np.pi)
        else:
            a_logloc = pm.Data("a_logloc", np.zeros(K))
            b_logloc = pm.Data("b_logloc", np.zeros(K))
            ab_logsd = pm.Data("ab_logsd", 1.0)
            a = pm.LogNormal("beta_a", mu=a_logloc, sigma=ab_logsd, shape=K)
            b = pm.LogNormal("beta_b", mu=b_logloc, sigma=ab_logsd, shape=K)
            log_beta_fn = pt.gammaln(a) + pt.gammaln(b) - pt.gammaln(a + b)
            # log expit(x) = -softplus(-x), log expit(-x) = -softplus(x)
            log_phi = (
                -a[None, :] * pt.softplus(-x)[:, None] - b[None, :] * pt.softplus(x)[:, None] - log_beta_fn[None, :]
            )
        if not binned:
            log_prob = pt.logsumexp(pt.log(weight)[None, :] + log_phi, axis=1)  # (points,)
        pm.Potential("loglik", pt.sum(counts * log_prob))
        if family == "beta":
            pm.Potential("floor", pt.switch(pt.any(1.0 / a + 1.0 / b < scale_floor**2), -np.inf, 0.0))
    return model


def _check_inputs(x, counts, prior, n_components, draws):
    x = np.asarray(x, dtype=np.float64)
    counts = np.asarray(counts, dtype=np.float64)
    if x.ndim != 1 or x.shape != counts.shape or x.size == 0:
        raise ValueError(
            f"x and counts must be non-empty 1-D arrays of equal length; got shapes {x.shape} and "
            f"{counts.shape}. Pass one class's points and their weights."
        )
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(counts)) and np.all(counts >= 0) and counts.sum() > 0):
        raise ValueError(
            "x must be finite and counts finite, non-negative with a positive total; "
            "drop infinite scores or map them to the working scale first."
        )
    if int(n_components) != n_components or n_components < 2:
        raise ValueError(f"n_components must be an integer >= 2; got {n_components!r}.")
    if int(draws) != draws or draws < 1:
        raise ValueError(f"draws must be a positive integer; got {draws!r}.")
    from bayescal.bayesian.priors import prior_keys

    family = family_of(prior)
    missing = [k for k in prior_keys(family) if k not in prior]
    if missing:
        raise ValueError(f"prior is missing keys {missing}; build it with bayescal.bayesian.priors.")
    K = int(n_components)
    vectors = [k for k in prior_keys(family) if k.endswith(("_loc", "_logloc")) or k.startswith("init_")]
    for key in vectors:
        if np.shape(prior[key]) != (K,):
            raise ValueError(
                f"prior[{key!r}] must have shape ({K},) to match n_components; got {np.shape(prior[key])}."
            )
    positive = (
        ("alpha_shape", "alpha_rate", "mu_scale", "sigma_logsd")
        if family == "gaussian"
        else ("alpha_shape", "alpha_rate", "ab_logsd")
    )
    for key in positive:
        if not float(prior[key]) > 0:
            raise ValueError(f"prior[{key!r}] must be a positive number; got {prior[key]!r}.")
    return x, counts


def _check_family(prior: dict, family: str) -> None:
    if family_of(prior) != family:
        raise ValueError(
            f"prior holds the hyperparameters of {family_of(prior)!r} components but family={family!r}: "
            "build the prior with bayescal.bayesian.priors.resolve_priors(..., family)."
        )


def _set_data(model, prior, **data):
    """Set the model's data (``x`` and ``counts``, or with ``binned=True`` ``lower``, ``upper``
    and ``counts``) and the hyperparameters of ``prior``."""
    import pymc as pm

    values = {k: np.asarray(prior[k], dtype=np.float64) for k in _DATA_KEYS[family_of(prior)]}
    values["scale_floor"] = np.float64(prior.get("scale_floor", 0.0))
    pm.set_data(data | values, model=model)


def _initial_values(prior) -> dict[str, np.ndarray]:
    """KDE-informed starting point on the constrained scale (alpha at its prior mean; a Gaussian
    component's scale at least 1 % above the prior's ``scale_floor``, inside its support)."""
    w = np.clip(np.asarray(prior["init_weight"], dtype=np.float64), 1e-12, None)
    w = w / w.sum()
    remaining = 1.0 - np.concatenate([[0.0], np.cumsum(w)[:-1]])
    v = np.clip(w[:-1] / np.clip(remaining[:-1], 1e-12, None), 1e-6, 1 - 1e-6)
    start = {name: np.asarray(prior[key], dtype=np.float64) for name, key in _START_KEYS[family_of(prior)].items()}
    if "sigma" in start:
        start["sigma"] = np.maximum(start["sigma"], 1.01 * float(prior.get("scale_floor", 0.0)))
    return {"alpha": np.float64(prior["alpha_shape"] / prior["alpha_rate"]), "v": v} | start


def _unconstrained(init: dict[str, np.ndarray], scale_floor: float = 0.0) -> dict[str, np.ndarray]:
    r"""The same point on PyMC's transformed scale (log for alpha and the Beta shapes, log-odds
    for v, :math:`\log(\sigma - \text{floor})` for the truncated Gaussian scales)."""
    out = {"alpha_log__": np.log(init["alpha"]), "v_logodds__": logit(init["v"])}
    for name in ("beta_a", "beta_b"):
        if name in init:
            out[f"{name}_log__"] = np.log(init[name])
    if "mu" in init:
        out |= {"mu": init["mu"], "sigma_interval__": np.log(init["sigma"] - scale_floor)}
    return out


@dataclass
class _Advi:
    """Compiled ADVI pieces of one model."""

    step: object  # one adam update; returns the negative ELBO estimate
    learning_rate: object  # shared scalar read by adam
    opt_state: list  # adam's shared moments and iteration counter
    rngs: list  # random generators of the step function
    mean: object  # shared mean-field location (flat vector on the transformed scale)
    rho: object  # shared mean-field rho; std = log(1 + exp(rho))
    point_fn: object  # flat vector -> [log p(theta, data) with Jacobian, weight, the two parameters, alpha]


@dataclass
class _Slot:
    """One model for a given K with its compiled functions, used by one fit at a time."""

    model: object
    advi: _Advi | None = None
    nuts: dict = field(default_factory=dict)  # target_accept -> compiled NUTS step
    extra: dict = field(default_factory=dict)  # other routes' compiled pieces (bayescal.bayesian.vi)


#: free slots per (K, family); a fit borrows one (building it if none is free) and gives it back
_POOL: dict[tuple[int, str], list[_Slot]] = {}
_POOL_LOCK = threading.Lock()
#: fewest draws for which the Pareto tail fit of PSIS is attempted
_PSIS_MIN_DRAWS = 100
#: number of compilations in this process, per route (read by the tests)
N_COMPILATIONS = {"advi": 0, "nuts": 0, "vi": 0}


def count_compilation(route: str) -> None:
    """Record one compilation of ``route``'s functions (thread-safe; read by the tests)."""
    with _POOL_LOCK:
        N_COMPILATIONS[route] = N_COMPILATIONS.get(route, 0) + 1


@contextmanager
def _borrow(n_components: int, family: str = "gaussian"):
    """A model for ``K`` components of ``family`` that no other fit is using (thread-safe).

    Fits of the two classes may run in parallel threads; each gets its own slot, so the
    shared data and optimiser state of one fit are never touched by another. Slots are
    kept for the life of the process, so later fits with the same K reuse their
    compiled functions.
    """
    key = (int(n_components), family)
    with _POOL_LOCK:
        free = _POOL.setdefault(key, [])
        slot = free.pop() if free else None
    if slot is None:
        slot = _Slot(build_model(*key))
    try:
        yield slot
    finally:
        with _POOL_LOCK:
            _POOL[key].append(slot)


def flat_point_graph(model):
    """``(flat, outs, size)``: a flat vector of the unconstrained parameters (in the order of
    ``model.value_vars``, as PyMC's approximations order them), of length ``size``, and the graph
    of [log p(theta, data) with the Jacobian, ``weight``, the two component parameters,
    ``alpha``] at it."""
    import pytensor.tensor as pt
    from pytensor.graph.replace import graph_replace

    point = model.initial_point()
    flat = pt.vector("flat", dtype="float64")
    replace, size = {}, 0
    for var in model.value_vars:
        shape = point[var.name].shape
        n = int(np.prod(shape))
        replace[var] = flat[size : size + n].reshape(shape)
        size += n
    outs = model.replace_rvs_by_values([model.logp(jacobian=True), *(model[name] for name in draw_names(model))])
    return flat, graph_replace(outs, replace, strict=False), size


def adam_step(approx, *params) -> tuple:
    """``(step, learning_rate, opt_state, rngs)``: the adam step on the negative ELBO of a PyMC
    approximation (``pm.ADVI`` or ``pm.FullRankADVI``) compiled once, with a shared learning rate,
    and its shared updates split into the random generators and adam's state (the approximation's
    own ``params`` excluded), so a later fit resets them instead of recompiling."""
    import pymc as pm
    import pytensor
    from pytensor.tensor.random.type import RandomGeneratorType

    if list(approx.approx.groups[0].ordering) != [v.name for v in approx.approx.model.value_vars]:
        raise RuntimeError(
            f"{type(approx).__name__} orders the parameters differently from model.value_vars; "
            "the flat start vector would be misplaced."
        )
    lr = pytensor.shared(np.float64(0.01), name="learning_rate")
    step = approx.objective.step_function(obj_optimizer=pm.adam(learning_rate=lr), score=True)
    updated = [inp.variable for inp in step.maker.inputs if inp.update is not None]
    rngs = [v for v in updated if isinstance(v.type, RandomGeneratorType)]
    opt_state = [v for v in updated if v not in rngs and all(v is not p for p in params)]
    return step, lr, opt_state, rngs


def _advi_parts(slot: _Slot) -> _Advi:
    """Compile (once per slot) the ADVI step function and the log-density of a flat parameter vector."""
    if slot.advi is not None:
        return slot.advi
    import pymc as pm

    advi = pm.ADVI(model=slot.model, random_seed=0)
    mean, rho = (advi.approx.groups[0].params_dict[k] for k in ("mu", "rho"))
    step, lr, opt_state, rngs = adam_step(advi, mean, rho)
    flat, outs, _ = flat_point_graph(slot.model)
    point_fn = pm.pytensorf.compile([flat], outs)
    slot.advi = _Advi(step, lr, opt_state, rngs, mean, rho, point_fn)
    with _POOL_LOCK:
        N_COMPILATIONS["advi"] += 1
    return slot.advi


def _nuts_step(slot: _Slot, target_accept: float):
    """Compile (once per slot and ``target_accept``) PyMC's NUTS step method."""
    key = float(target_accept)
    if key not in slot.nuts:
        import pymc as pm

        slot.nuts[key] = pm.NUTS(model=slot.model, target_accept=key)
        with _POOL_LOCK:
            N_COMPILATIONS["nuts"] += 1
    return slot.nuts[key]


def _flat_start(model, prior) -> np.ndarray:
    """The KDE-informed start as one flat vector, in the order of ``model.value_vars``."""
    start = _unconstrained(_initial_values(prior), float(prior.get("scale_floor", 0.0)))
    return np.concatenate([np.ravel(start[v.name]) for v in model.value_vars])


def _run_advi(engine, flat_start, seed, learning_rate, max_iterations, window, tol, init_std):
    """Adam on the negative ELBO from the KDE-informed start; returns (losses, converged, nan)."""
    from pymc.pytensorf import reseed_rngs

    engine.mean.set_value(flat_start.copy())
    engine.rho.set_value(np.full_like(flat_start, np.log(np.expm1(init_std))))
    for var in engine.opt_state:
        var.set_value(np.zeros_like(var.get_value()))
    engine.learning_rate.set_value(np.float64(learning_rate))
    reseed_rngs(engine.rngs, seed)
    losses = np.empty(max_iterations)
    previous = None
    for i in range(max_iterations):
        losses[i] = engine.step()
        if not np.isfinite(losses[i]):
            return losses[: i + 1], False, True
        if (i + 1) % window == 0:
            current = losses[i + 1 - window : i + 1].mean()
            if previous is not None and abs(current - previous) <= tol * abs(current):
                return losses[: i + 1], True, False
            previous = current
    return losses, False, False


def _warn_not_converged(losses: np.ndarray, window: int, tol: float, which: str) -> None:
    elbo = -losses[-min(window, len(losses)) :].mean()
    if len(losses) >= 2 * window:
        moved = f"moved from {-losses[-2 * window : -window].mean():.6g} to {elbo:.6g}"
    else:
        moved = f"is {elbo:.6g} after fewer than two windows of {window}"
    warn(
        f"ADVI{which} did not converge in {len(losses)} iterations: the windowed ELBO mean {moved} (relative "
        f"change above tol={tol:g}); raise max_iterations or tol, or use inference='gibbs'."
    )


def _params(model) -> tuple[str, str]:
    """The names of the model's two component parameters."""
    return ("beta_a", "beta_b") if "beta_a" in model.named_vars else ("mu", "sigma")


def draw_names(model) -> tuple[str, str, str, str]:
    """The variables one posterior draw is read into: weights, the two component parameters,
    concentration (the order of :func:`flat_point_graph`'s outputs after the log density)."""
    return ("weight", *_params(model), "alpha")


def _stored(values: np.ndarray) -> np.ndarray:
    """A sampler statistic as the fitted model keeps it: booleans (``diverging``) as int8."""
    return values.astype(np.int8) if values.dtype.kind == "b" else values


def _to_posterior(weight, p1, p2, alpha, n_chains, n_draws, family: str = "gaussian") -> xr.Dataset:
    """The route's posterior layout (:class:`~bayescal.bayesian.class_fit.ClassFit`)."""
    from bayescal.bayesian.mixture import PARAMS

    name1, name2 = PARAMS[family]
    K = weight.shape[-1]
    coords = {"chain": np.arange(n_chains), "draw": np.arange(n_draws), "component": np.arange(K)}
    shape3 = (n_chains, n_draws, K)
    return xr.Dataset(
        {
            "weight": (("chain", "draw", "component"), np.reshape(weight, shape3)),
            name1: (("chain", "draw", "component"), np.reshape(p1, shape3)),
            name2: (("chain", "draw", "component"), np.reshape(p2, shape3)),
            "alpha": (("chain", "draw"), np.reshape(alpha, (n_chains, n_draws))),
        },
        coords=coords,
    )


def fit_advi(
    x: np.ndarray,
    counts: np.ndarray,
    prior: dict,
    *,
    n_components: int,
    random_seed: int | None,
    draws: int = 1000,
    learning_rate: float = 0.01,
    max_iterations: int = 10_000,
    window: int = 500,
    tol: float = 2e-4,
    init_std: float = 0.1,
    psis: bool = False,
    restarts: int = 1,
    family: str = "gaussian",
) -> ClassFit:
    r"""Mean-field ADVI of one class's mixture, optionally corrected by Pareto-smoothed importance sampling.

    Adam (``learning_rate``) maximises the ELBO of a Gaussian mean-field approximation
    :math:`q` on the unconstrained scale, started at the KDE-informed ``init_*`` values of
    ``prior`` with standard deviation ``init_std`` in every coordinate. Convergence: the
    mean negative ELBO over consecutive windows of ``window`` iterations changes by less
    than ``tol`` relative to its size,
    :math:`|\bar L_j - \bar L_{j-1}| \le \mathrm{tol}\,|\bar L_j|`; a ``UserWarning`` with
    the numbers is raised when ``max_iterations`` pass without it. The window must be long
    enough to average out the Monte Carlo noise of the one-draw ELBO estimate, or the rule
    stops on a lucky window while the ELBO is still rising (measured window lengths:
    ``docs/evidence/sampler_history.md``). A NaN ELBO restarts once
    with another seed and a tenth of the learning rate, then raises ``RuntimeError``.

    ``draws`` draws :math:`\theta_s \sim q` are taken and the importance ratios
    :math:`\log r_s = \log p(\theta_s, x) - \log q(\theta_s)` Pareto smoothed (Vehtari
    et al. 2024); the shape estimate :math:`\hat k` is reported as ``pareto_k`` (below 0.7
    the reweighted draws are reliable, Yao et al. 2018) and the importance-sampling
    effective sample size as ``ess_importance``. With ``psis=True`` the draws are
    resampled (systematic resampling) with the smoothed weights, and a ``UserWarning``
    says so when :math:`\hat k > 0.7`. On this model :math:`\hat k` is well above 0.7 and
    resampling lowers the band's coverage of the true map, so it is off by default: PSIS here
    diagnoses the variational fit, it does not repair it. PSIS needs at least 100 draws; with
    fewer, ``pareto_k`` is NaN.

    ``restarts = R > 1`` runs ADVI R times from the same start with independent seeds and
    draws an equal share of ``draws`` from each run's Gaussian, i.e. from their equal
    mixture :math:`q = R^{-1} \sum_r q_r` (the PSIS ratios then use this mixture density).
    A single mean-field fit settles in one local optimum of the ELBO (which components
    carry the mass) and its band ignores the others; pooling runs puts that
    between-optimum spread into the band, at R times the cost.

    Neither correction makes the mean-field band reliable: where it fails, NUTS on the same
    data and model covers with a band of the same width, so the ADVI band is misplaced (a
    local optimum), not too narrow. Measured band coverage: ``docs/evidence/sampler_history.md``.

    Returns
    -------
    ClassFit
        One chain of ``draws`` draws; diagnostics ``converged`` (every run), ``n_iterations``
        (summed over runs), ``restarts``, ``elbo_final`` (best final window mean),
        ``elbo_spread`` (best minus worst), ``pareto_k``, ``ess_importance``
        (importance-sampling effective sample size), ``psis_resampled``, ``learning_rate``
        (the smallest used), ``retried``, ``runtime_s``.
    """
    from arviz_stats.base.array import array_stats

    start_time = time.perf_counter()
    x, counts = _check_inputs(x, counts, prior, n_components, draws)
    _check_family(prior, family)
    if int(restarts) != restarts or not 1 <= restarts <= draws:
        raise ValueError(f"restarts must be an integer between 1 and draws={draws}; got {restarts!r}.")
    for name, value in (("learning_rate", learning_rate), ("tol", tol), ("init_std", init_std)):
        check_number(value, f"route_options['{name}']", low=0.0, inclusive=False)
    for name, value in (("max_iterations", max_iterations), ("window", window)):
        check_integer(value, f"route_options['{name}']", 1)
    check_bool(psis, "route_options['psis']")
    R = int(restarts)
    seeds = np.random.SeedSequence(random_seed).generate_state(3 + 2 * (R - 1))
    run_seeds, retry_seeds = [seeds[0], *seeds[3::2]], [seeds[1], *seeds[4::2]]
    runs = []
    with _borrow(n_components, family) as slot:
        engine = _advi_parts(slot)
        _set_data(slot.model, prior, x=x, counts=counts)
        flat_start = _flat_start(slot.model, prior)
        for r in range(R):
            lr = learning_rate
            losses, converged, nan = _run_advi(
                engine, flat_start, int(run_seeds[r]), lr, max_iterations, window, tol, init_std
            )
            retried = nan
            if nan:
                lr = learning_rate / 10
                losses, converged, nan = _run_advi(
                    engine, flat_start, int(retry_seeds[r]), lr, max_iterations, window, tol, init_std
                )
            if nan:
                raise RuntimeError(
                    f"ADVI produced a NaN (or infinite) ELBO at iteration {len(losses)} even after a retry with "
                    f"another seed and learning rate {lr:g}; the prior hyperparameters or data are probably "
                    f"degenerate (check prior['mu_scale'], prior['sigma_logmean'], the score spread) or use "
                    f"inference='gibbs'."
                )
            runs.append(
                {
                    "losses": losses,
                    "converged": converged,
                    "retried": retried,
                    "learning_rate": lr,
                    "mean": engine.mean.get_value().copy(),
                    "std": np.log1p(np.exp(engine.rho.get_value())),
                }
            )
        # draws: an equal share from each run's Gaussian, i.e. from their equal mixture
        sizes = np.full(R, draws // R)
        sizes[: draws % R] += 1
        which = np.repeat(np.arange(R), sizes)
        means = np.array([run["mean"] for run in runs])
        stds = np.array([run["std"] for run in runs])
        rng = np.random.default_rng(seeds[2])
        eps = rng.standard_normal((draws, means.shape[1]))
        theta = means[which] + stds[which] * eps
        results = [engine.point_fn(t) for t in theta]
    for r, run in enumerate(runs):
        if not run["converged"]:
            _warn_not_converged(run["losses"], window, tol, f" (restart {r + 1} of {R})" if R > 1 else "")
    elbos = [-run["losses"][-min(window, len(run["losses"])) :].mean() for run in runs]

    z = (theta[None, :, :] - means[:, None, :]) / stds[:, None, :]
    log_q_each = (
        -0.5 * np.sum(z**2, axis=2) - np.sum(np.log(stds), axis=1)[:, None] - 0.5 * means.shape[1] * np.log(2 * np.pi)
    )
    log_q = logsumexp(log_q_each + np.log(sizes / draws)[:, None], axis=0)
    log_p = np.array([r[0] for r in results])
    weight, p1, p2, alpha = (np.array([r[j] for r in results]) for j in range(1, 5))
    log_ratio = log_p - log_q
    pareto_k, ess = float("nan"), float("nan")
    if draws >= _PSIS_MIN_DRAWS and np.all(np.isfinite(log_ratio)):
        log_w, pareto_k = array_stats.psislw(-log_ratio)
        w = np.exp(log_w - log_w.max())
        w /= w.sum()
        ess = float(1.0 / np.sum(w**2))
        if psis:
            if pareto_k > 0.7:
                warn(
                    f"PSIS k-hat is {pareto_k:.2f} > 0.7 (importance ESS {ess:.1f} of {draws}): the reweighted "
                    f"ADVI draws are unreliable and their band too narrow; use psis=False or inference='gibbs'."
                )
            positions = (rng.uniform() + np.arange(draws)) / draws
            idx = np.minimum(np.searchsorted(np.cumsum(w), positions), draws - 1)
            weight, p1, p2, alpha = weight[idx], p1[idx], p2[idx], alpha[idx]
    diagnostics = {
        "route": "advi",
        "converged": all(run["converged"] for run in runs),
        "n_iterations": int(sum(len(run["losses"]) for run in runs)),
        "restarts": R,
        "elbo_final": float(max(elbos)),
        "elbo_spread": float(max(elbos) - min(elbos)),
        "pareto_k": float(pareto_k),
        "ess_importance": ess,
        "psis_resampled": bool(psis and np.isfinite(pareto_k)),
        "learning_rate": float(min(run["learning_rate"] for run in runs)),
        "retried": any(run["retried"] for run in runs),
        "runtime_s": time.perf_counter() - start_time,
    }
    return ClassFit(_to_posterior(weight, p1, p2, alpha, 1, draws, family), diagnostics)


def fit_nuts(
    x: np.ndarray,
    counts: np.ndarray,
    prior: dict,
    *,
    n_components: int,
    random_seed: int | None,
    draws: int = 1000,
    chains: int = 2,
    tune: int = 1000,
    target_accept: float = 0.9,
    family: str = "gaussian",
) -> ClassFit:
    """PyMC's NUTS on the same model, started at the KDE-informed values.

    ``chains`` chains, run one after the other in this process, of ``tune`` adaptation
    steps (discarded) and ``draws`` kept draws; the diagonal mass matrix adapts from unit
    variances around the start (PyMC's ``adapt_diag``). The compiled NUTS step is kept per
    model slot and ``target_accept``, so a later fit with the same K only swaps the data.
    Label switching between chains is harmless: the density and the calibration map are
    invariant to it.

    On raw data the cost grows linearly with N. Measured coverage and cost:
    ``docs/evidence/sampler_history.md``.

    Returns
    -------
    ClassFit
        ``(chains, draws)`` draws; diagnostics ``divergences`` (after tuning),
        ``mean_tree_depth``, ``runtime_s``; the sampler's ``sample_stats`` (``diverging``,
        ``energy``, ``lp``, ``tree_depth``, ``step_size``, ``acceptance_rate``).
    """
    import pymc as pm
    from pymc.step_methods.hmc.quadpotential import QuadPotentialDiagAdapt

    start_time = time.perf_counter()
    x, counts = _check_inputs(x, counts, prior, n_components, draws)
    _check_family(prior, family)
    for name, value in (("chains", chains), ("tune", tune)):
        if int(value) != value or value < (0 if name == "tune" else 1):
            raise ValueError(
                f"{name} must be a {'non-negative' if name == 'tune' else 'positive'} integer; got {value!r}."
            )
    if not 0 < check_number(target_accept, "route_options['target_accept']") < 1:
        raise ValueError(f"target_accept must lie in (0, 1); got {target_accept!r}.")
    with _borrow(n_components, family) as slot:
        _set_data(slot.model, prior, x=x, counts=counts)
        step = _nuts_step(slot, target_accept)
        flat_start = _flat_start(slot.model, prior)
        step.potential = QuadPotentialDiagAdapt(flat_start.size, flat_start, np.ones(flat_start.size), 10)
        idata = pm.sample(
            draws=int(draws),
            tune=int(tune),
            chains=int(chains),
            cores=1,
            step=step,
            initvals=_initial_values(prior),
            random_seed=random_seed,
            model=slot.model,
            progressbar=False,
            compute_convergence_checks=False,
        )
    post = idata.posterior
    weight, p1, p2 = (post[name].values for name in ("weight", *_params(slot.model)))
    posterior = _to_posterior(weight, p1, p2, post["alpha"].values, int(chains), int(draws), family)
    stats = idata.sample_stats.to_dataset()
    keep = [
        name for name in ("diverging", "energy", "lp", "tree_depth", "step_size", "acceptance_rate") if name in stats
    ]
    sample_stats = xr.Dataset(  # booleans as int8: files of fitted models hold numbers (bayescal.io)
        {name: (("chain", "draw"), _stored(stats[name].values)) for name in keep},
        coords={"chain": posterior.chain, "draw": posterior.draw},
    )
    diagnostics = {
        "route": "nuts",
        "divergences": int(stats["diverging"].values.sum()),
        "chains": int(chains),
        "tune": int(tune),
        "target_accept": float(target_accept),
        "mean_tree_depth": float(stats["tree_depth"].values.mean()),
        "runtime_s": time.perf_counter() - start_time,
    }
    return ClassFit(posterior, diagnostics, sample_stats)
