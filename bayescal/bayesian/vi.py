r"""The variational route ``inference="vi"``: three variational approximations of one class's mixture.

Every method approximates the posterior of the model of :mod:`bayescal.bayesian.pymc_model`
on PyMC's unconstrained scale :math:`\theta` (log :math:`\alpha`, log-odds of the sticks,
:math:`\mu`, :math:`\log(\sigma - \text{floor})` (the scales' prior is truncated at the data's
floor, :func:`~bayescal.bayesian.pymc_model.build_model`), or log :math:`a`, log :math:`b` for
Beta components; :math:`D = 3K` coordinates) by a Gaussian or a mixture of Gaussians :math:`q`,
draws from it, and reports how far :math:`q` is from the posterior by Pareto-smoothed
importance sampling (PSIS, Vehtari et al. 2024) of the ratios
:math:`\log r_s = \log p(\theta_s, x) - \log q(\theta_s)`.

``method="pathfinder"``
    Multi-path Pathfinder (Zhang et al. 2022) by :func:`pymc_extras.fit_pathfinder`:
    ``num_paths`` L-BFGS runs from the KDE-informed start jittered by ``jitter`` on the
    unconstrained scale; each path's Gaussian with the lowest KL along the optimisation path
    is kept, and ``draws`` draws are resampled from the pooled draws of all paths by
    Pareto-smoothed importance resampling (PSIR).
``method="dadvi"``
    Deterministic ADVI (Giordano, Ingram & Broderick 2024): the mean-field Gaussian ELBO is
    estimated with ``n_fixed_draws`` standard-normal draws fixed once, so it is a
    deterministic function of the variational parameters :math:`\eta = (m, \log s)` and is
    minimised by L-BFGS-B (scipy) with the exact gradient until its optimality gap (the
    Newton decrement with L-BFGS-B's inverse Hessian) is below :data:`DADVI_GAP` nats,
    restarting the optimiser where its line search gives up early. With ``linear_response=True`` the draws come from
    :math:`\mathcal N(m, \Sigma_{LR})`, the linear-response covariance (Giordano, Broderick &
    Jordan 2018) :math:`\Sigma_{LR} = [H^{-1}]_{mm}`, the mean block of the inverse Hessian
    of the objective in :math:`\eta` at the optimum (forward differences of the exact gradient), which restores the posterior
    correlations that a mean-field fit drops and corrects its too-small variances. The
    objective is written like :func:`pymc_extras.inference.dadvi.dadvi.create_dadvi_graph`
    but with the fixed draws an input, so it is compiled once per process and ``K``.
``method="fullrank_advi"``
    Full-rank ADVI (Kucukelbir et al. 2017) by PyMC's :class:`pymc.FullRankADVI`: a Gaussian
    with a dense Cholesky factor fitted by adam on the stochastic ELBO, with the windowed
    stopping rule of :func:`bayescal.bayesian.pymc_model.fit_advi`.

With ``num_paths = R > 1`` the DADVI and full-rank fits run R times (the first from the
KDE-informed start, the others from it jittered uniformly by ``±jitter`` with other fixed
draws or seeds) and draw an equal share from each, i.e. from the equal mixture of the R
Gaussians; Pathfinder pools its paths by importance resampling instead. With
``importance_sampling="psir"`` (Pathfinder's default) the final draws are resampled with the
Pareto-smoothed weights; with ``"none"`` (the default of the other two) they are the
approximation's own draws and PSIS only diagnoses.

Reliability (``ClassFit.diagnostics``, so ``DPMCalibrator.diagnostics_[family]["class_c"]``):
``pareto_k`` (:math:`\hat k`; below 0.7 the importance-weighted draws are reliable, Yao et
al. 2018), ``ess_importance``, ``converged`` (every path's optimiser met its stopping rule; for DADVI,
every path's optimality gap is within :data:`DADVI_GAP`),
``elbo_final`` (the best path's ELBO estimate), ``elbo_spread`` (best minus worst path, in
nats: how much the paths disagree), ``n_paths``, ``runtime_s``. A ``UserWarning`` names the
sampler route when :math:`\hat k > 0.7`.

On the coverage study's truths no method meets the bar of the default route, and the
importance ratios' :math:`\hat k` is above the warning's threshold on essentially every fit,
so ``inference="gibbs"`` stays the default and this route is opt-in; a fit also costs several
times the sampler's time. Measured 2026-12-04 (``docs/evidence/vi.md``, 8 seeds a cell):
``DPMCalibrator(inference="vi")`` with its defaults covered the true map with its 95 % band
at 0.77-1.00 of the data region on eleven cells (four truths, 300 to 10^4 scores), inside
0.92-0.98 on two, and met the whole bar (50 % and 80 % bands, error) on one (the piled scores
at 10^4), against two for the sampler on the same replicates; a warm fit took 9.5 and 23
times the sampler's at 10^3 and 10^4 scores, and the first fit in a fresh process 19.3 s (the
page's timing section). On Gaussian components alone mean-field DADVI covered 0.48-0.98 and
:math:`\hat k` exceeded 0.7 on all 56 fits. The study stops at 10^4 scores; on more, the
objective is worse conditioned and a path can run out of iterations or stop short of its
optimum (``converged`` false, and the route warns). Mean-field DADVI is its default method: it came closest to the
sampler's bands and map at the lowest cost of the candidates (full-rank ADVI covers more only
with wider bands and a worse map). Measurements: ``docs/evidence/vi.md``; their history is on
``docs/evidence/sampler_history.md``.
On small data the posterior-mean maps of this route and the sampler agree within 0.03 mean
absolute and 0.08 largest difference (``tests/bayesian/test_vi.py``); the bands do not.

References
----------
Zhang, L., Carpenter, B., Gelman, A. & Vehtari, A. (2022). Pathfinder: parallel quasi-Newton
variational inference. JMLR 23(306).
Giordano, R., Ingram, M. & Broderick, T. (2024). Black box variational inference with a
deterministic objective: faster, more accurate, and even more black box. JMLR 25(18).
Giordano, R., Broderick, T. & Jordan, M. I. (2018). Covariances, robustness, and variational
Bayes. JMLR 19(51).
Kucukelbir, A., Tran, D., Ranganath, R., Gelman, A. & Blei, D. M. (2017). Automatic
differentiation variational inference. JMLR 18(14).
Yao, Y., Vehtari, A., Simpson, D. & Gelman, A. (2018). Yes, but did it work?: Evaluating
variational inference. ICML.
Vehtari, A., Simpson, D., Gelman, A., Yao, Y. & Gabry, J. (2024). Pareto smoothed importance
sampling. JMLR 25(72).
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp

from bayescal._stats import hessian_from_gradient
from bayescal._validation import check_bool, check_integer, check_number
from bayescal._warnings import warn
from bayescal.bayesian import pymc_model as pmm
from bayescal.bayesian.class_fit import ClassFit

__all__ = ["KHAT_WARN", "METHODS", "fit_vi"]

METHODS = ("pathfinder", "dadvi", "fullrank_advi")
"""The variational approximations of :func:`fit_vi` (``route_options={"method": ...}``)."""
DEFAULT_METHOD = "dadvi"

METHOD_OPTIONS = {
    "pathfinder": frozenset(),
    "dadvi": frozenset({"n_fixed_draws", "linear_response", "init_std"}),
    "fullrank_advi": frozenset({"learning_rate", "window", "tol", "init_std"}),
}
"""The options of :func:`fit_vi` that only some methods use (``num_paths``, ``jitter``,
``importance_sampling`` and ``max_iterations`` apply to every method)."""
OPTION_DEFAULTS = {
    "n_fixed_draws": 30,
    "linear_response": False,
    "learning_rate": 0.01,
    "window": 500,
    "tol": 2e-4,
    "init_std": 0.1,
}
"""The values of those options when not given."""
FULLRANK_MAX_REJECTED = 1000
"""Full-rank ADVI steps undone (their draw's log density not finite) after which a path gives up."""
DADVI_GAP = 0.01
"""Optimality gap (nats) within which a DADVI path has converged: half the Newton decrement
:math:`g^T H^{-1} g / 2` of the objective at the optimiser's last point, with L-BFGS-B's inverse
Hessian, which estimates how far the objective is above its minimum."""
DADVI_RESTARTS = 5
"""Restarts of L-BFGS-B (fresh memory, from where it stopped) while a DADVI path's gap exceeds
:data:`DADVI_GAP`: its line search can stop far from the optimum after steps into a region where
the objective is not finite, and report success."""
KHAT_WARN = 0.7
"""Pareto k-hat above which the importance ratios say the approximation is unreliable (Yao et al. 2018)."""


def _require_pymc_extras():
    try:
        import pymc_extras
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "route_options={'method': 'pathfinder'} needs the pymc-extras package: pip install bayescal[vi] "
            "(or use method='dadvi' or 'fullrank_advi', which need PyMC only)."
        ) from exc
    return pymc_extras


# ---- compiled pieces, kept per model slot (one compilation per process and K) -----------------------
@dataclass
class _Flat:
    """Functions of one flat unconstrained parameter vector (order of ``model.value_vars``)."""

    size: int
    point_fn: object  # flat -> [log p(theta, x) with Jacobian, weight, the two component parameters, alpha]
    dadvi_fg: object  # (eta, z) -> [objective, gradient]


def _flat_parts(slot) -> _Flat:
    if "flat" in slot.extra:
        return slot.extra["flat"]
    import pytensor
    import pytensor.tensor as pt
    from pytensor.graph.replace import vectorize_graph

    flat, outs, size = pmm.flat_point_graph(slot.model)
    point_fn = pytensor.function([flat], outs, on_unused_input="ignore")

    eta = pt.vector("eta", dtype="float64")
    z = pt.matrix("z", dtype="float64")
    mean, log_sd = eta[:size], eta[size:]
    logp_draws = vectorize_graph(outs[0], replace={flat: mean[None, :] + pt.exp(log_sd)[None, :] * z})
    objective = -pt.mean(logp_draws) - pt.sum(log_sd)
    grad = pytensor.grad(objective, eta)
    parts = _Flat(size, point_fn, pytensor.function([eta, z], [objective, grad]))
    slot.extra["flat"] = parts
    pmm.count_compilation("vi")
    return parts


@dataclass
class _FullRank:
    step: object
    learning_rate: object
    opt_state: list
    rngs: list
    mean: object
    l_tril: object


def _fullrank_parts(slot) -> _FullRank:
    if "fullrank" in slot.extra:
        return slot.extra["fullrank"]
    import pymc as pm

    advi = pm.FullRankADVI(model=slot.model, random_seed=0)
    mean, l_tril = (advi.approx.groups[0].params_dict[k] for k in ("mu", "L_tril"))
    step, lr, opt_state, rngs = pmm.adam_step(advi, mean, l_tril)
    parts = _FullRank(step, lr, opt_state, rngs, mean, l_tril)
    slot.extra["fullrank"] = parts
    pmm.count_compilation("vi")
    return parts


def _finite_objective(fg, z):
    """``eta -> fg(eta, z)``, with ``(inf, 0)`` where the objective is not finite or PyMC refuses a
    component parameter (a line-search step so long that ``exp`` of a log-shape under- or overflows,
    which PyMC's parameter checks raise as ``ParameterValueError``): L-BFGS-B then shortens the step."""
    from pymc.logprob.utils import ParameterValueError

    def objective(eta):
        try:
            f, g = fg(eta, z)
        except ParameterValueError:
            return np.inf, np.zeros_like(eta)
        return (float(f), g) if np.isfinite(f) and np.all(np.isfinite(g)) else (np.inf, np.zeros_like(eta))

    return objective


# ---- the three methods: each returns a list of paths (dicts) and, for Pathfinder, the draws ---------
def _dadvi_path(flat: _Flat, start, rng, n_fixed_draws, linear_response, max_iterations, init_std):
    """One DADVI optimisation: L-BFGS-B from ``start``, restarted with a fresh memory from where it
    stopped while the optimality gap exceeds :data:`DADVI_GAP` (at most :data:`DADVI_RESTARTS`
    times, ``max_iterations`` iterations in all); converged when the gap is within it."""
    from scipy.optimize import minimize

    D = flat.size
    z = rng.standard_normal((n_fixed_draws, D))
    eta = np.concatenate([start, np.full(D, np.log(init_std))])
    finite = _finite_objective(flat.dadvi_fg, z)
    best = {"value": np.inf, "eta": eta, "grad": np.zeros_like(eta)}

    def objective(e):  # remembers the best point: L-BFGS-B may return one where the objective is not finite
        value, grad = finite(e)
        if np.isfinite(value) and value <= best["value"]:  # ties: the later point, as L-BFGS-B returns it
            best.update(value=value, eta=e.copy(), grad=grad.copy())
        return value, grad

    n_iterations, restarts = 0, -1
    while restarts < DADVI_RESTARTS and n_iterations < max_iterations:
        restarts += 1
        result = minimize(
            objective,
            best["eta"],
            jac=True,
            method="L-BFGS-B",
            options={"maxiter": max_iterations - n_iterations, "maxcor": 20, "ftol": 1e-10, "gtol": 1e-6},
        )
        n_iterations += int(result.nit)
        eta, value, grad = best["eta"], best["value"], best["grad"]  # result.x was evaluated, so never better
        gap = 0.5 * float(grad @ result.hess_inv.matvec(grad)) if np.isfinite(value) else float("inf")
        if gap <= DADVI_GAP:
            break
    m, sd = eta[:D], np.exp(eta[D:])
    path = {
        "mean": m,
        "cov": np.diag(sd**2),
        "elbo": 0.5 * D * (1.0 + np.log(2 * np.pi)) - float(value),  # the objective drops the entropy's constant
        "converged": bool(gap <= DADVI_GAP),
        "optimality_gap": gap,
        "n_iterations": n_iterations,
        "n_restarts": restarts,
        "grad_max": float(np.max(np.abs(grad))),
        "lr_applied": False,
        "hessian_min_eig": float("nan"),
    }
    if linear_response:
        H = hessian_from_gradient(lambda e: finite(e)[1], eta)  # of the objective in eta
        eig = np.linalg.eigvalsh(H)
        path["hessian_min_eig"] = float(eig[0])
        if eig[0] > 0:
            cov = np.linalg.inv(H)[:D, :D]
            path["cov"] = 0.5 * (cov + cov.T)
            path["lr_applied"] = True
    return path


def _fullrank_path(parts: _FullRank, start, seed, learning_rate, max_iterations, window, tol, init_std):
    from pymc.pytensorf import reseed_rngs

    D = start.size
    parts.mean.set_value(start.copy())
    rows, cols = np.tril_indices(D)
    diagonal = rows == cols  # PyMC stores the diagonal of L as rho, with L_ii = log(1 + exp(rho))
    parts.l_tril.set_value(np.where(diagonal, np.log(np.expm1(init_std)), 0.0))
    for var in parts.opt_state:
        var.set_value(np.zeros_like(var.get_value()))
    parts.learning_rate.set_value(np.float64(learning_rate))
    reseed_rngs(parts.rngs, seed)
    losses = np.empty(max_iterations)
    previous, converged, n, rejected = None, False, max_iterations, 0
    state = [parts.mean, parts.l_tril, *parts.opt_state]
    for i in range(max_iterations):
        saved = [v.get_value() for v in state]
        losses[i] = parts.step()
        if not np.isfinite(losses[i]):  # a draw where the log density is not finite: undo the step
            for v, value in zip(state, saved, strict=True):
                v.set_value(value)
            losses[i] = np.nan
            rejected += 1
            if rejected > FULLRANK_MAX_REJECTED:
                raise RuntimeError(
                    f"full-rank ADVI drew {rejected} parameter vectors with a non-finite log density by iteration "
                    f"{i + 1}; use route_options={{'method': 'dadvi'}} or inference='gibbs'."
                )
            continue
        if (i + 1) % window == 0:
            current = np.nanmean(losses[i + 1 - window : i + 1])
            if previous is not None and abs(current - previous) <= tol * abs(current):
                converged, n = True, i + 1
                break
            previous = current
    packed = parts.l_tril.get_value()
    L = np.zeros((D, D))
    L[rows, cols] = np.where(diagonal, np.logaddexp(0.0, packed), packed)
    return {
        "mean": parts.mean.get_value().copy(),
        "cov": L @ L.T,
        "elbo": -float(np.nanmean(losses[max(0, n - window) : n])),
        "converged": converged,
        "n_iterations": n,
        "n_rejected": rejected,
    }


def _pathfinder(slot, prior, draws, seed, num_paths, jitter, importance_sampling, max_iterations):
    pmx = _require_pymc_extras()
    from pymc_extras.inference.pathfinder.lbfgs import LBFGSConfig

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = pmx.fit_pathfinder(
            lbfgs_config=LBFGSConfig(maxiter=max_iterations),
            model=slot.model,
            num_paths=num_paths,
            num_draws=draws,
            num_draws_per_path=draws,
            importance_sampling=importance_sampling,
            jitter=jitter,
            initvals=pmm._initial_values(prior),
            random_seed=seed,
            progressbar=False,
            parallel=False,
        )
    post, pf, lbfgs = idata["posterior"], idata["pathfinder"], idata["lbfgs"]
    values = {name: post[name].values.reshape(-1, *post[name].shape[2:]) for name in pmm.draw_names(slot.model)}
    elbos = pf["paths_logP_mean"].values - pf["paths_logQ_mean"].values
    statuses = dict(zip(lbfgs["status"].values.tolist(), lbfgs["status_counts"].values.tolist(), strict=True))
    k = pf["pareto_k"].values if "pareto_k" in pf else np.nan
    return values, {
        "converged": statuses.get("CONVERGED", 0) == num_paths,
        "ran_out": statuses.get("MAX_ITER_REACHED", 0) > 0,
        "n_iterations": int(lbfgs["niter"].values.sum()),
        "elbo": elbos,
        "pareto_k": float(k) if np.ndim(k) == 0 and k is not None else float("nan"),
        "n_successful_paths": int(pf["num_successful_paths"].values),
    }


def _cholesky(cov: np.ndarray) -> np.ndarray:
    """Cholesky factor of a covariance, its eigenvalues floored at 1e-12 of the largest when it is not positive definite."""
    try:
        return np.linalg.cholesky(cov)
    except np.linalg.LinAlgError:
        eig, vec = np.linalg.eigh(0.5 * (cov + cov.T))
        eig = np.maximum(eig, 1e-12 * max(eig.max(), 1e-300))
        return np.linalg.cholesky((vec * eig) @ vec.T + 1e-300 * np.eye(cov.shape[0]))


def _mixture_draws(paths, draws, rng):
    """Equal shares of ``draws`` from each path's Gaussian and the log density of their equal mixture."""
    R = len(paths)
    sizes = np.full(R, draws // R)
    sizes[: draws % R] += 1
    chols = [_cholesky(p["cov"]) for p in paths]
    theta = np.concatenate(
        [
            p["mean"] + rng.standard_normal((n, p["mean"].size)) @ chol.T
            for p, n, chol in zip(paths, sizes, chols, strict=True)
        ]
    )
    log_q = []
    for p, chol in zip(paths, chols, strict=True):
        resid = np.linalg.solve(chol, (theta - p["mean"]).T)
        log_q.append(
            -0.5 * np.sum(resid**2, axis=0) - np.sum(np.log(np.diag(chol))) - 0.5 * theta.shape[1] * np.log(2 * np.pi)
        )
    return theta, logsumexp(np.array(log_q) + np.log(sizes / draws)[:, None], axis=0)


def _psis(log_ratio):
    """Pareto-smoothed log weights (normalised), k-hat and the importance ESS."""
    from arviz_stats.base.array import array_stats

    if log_ratio.size < pmm._PSIS_MIN_DRAWS or not np.all(np.isfinite(log_ratio)):
        return None, float("nan"), float("nan")
    log_w, k = array_stats.psislw(-log_ratio)  # arviz-stats takes the negative log ratios (log-lik convention)
    w = np.exp(log_w - logsumexp(log_w))
    return w, float(k), float(1.0 / np.sum(w**2))


def _check_options(
    method, num_paths, jitter, importance_sampling, n_fixed_draws, draws, *, linear_response=False, **numbers
):
    """The route's options, each refused by name where it is of the wrong kind or out of range
    (``numbers``: ``init_std``, ``learning_rate``, ``tol`` positive; ``window`` and
    ``max_iterations``, None for the method's default, positive integers)."""
    for name, value in numbers.items():
        label = f"route_options['{name}']"
        if name in ("window", "max_iterations"):
            if value is not None:
                check_integer(value, label, 1)
        else:
            check_number(value, label, low=0.0, inclusive=False)
    check_bool(linear_response, "route_options['linear_response']")
    check_number(jitter, "route_options['jitter']", low=0.0)
    check_integer(n_fixed_draws, "route_options['n_fixed_draws']", 2)
    if method not in METHODS:
        raise ValueError(f"route_options['method']={method!r} is not one of {METHODS}.")
    if int(num_paths) != num_paths or num_paths < 1 or num_paths > draws:
        raise ValueError(
            f"route_options['num_paths'] must be an integer between 1 and draws={draws}; got {num_paths!r}."
        )
    allowed = ("psir", "psis") if method == "pathfinder" else ("psir", "none")
    if importance_sampling is not None and importance_sampling not in allowed:
        raise ValueError(
            f"route_options['importance_sampling'] must be one of {allowed} or None (the method's default) "
            f"with method={method!r}; got {importance_sampling!r}."
        )


def fit_vi(
    x: np.ndarray,
    counts: np.ndarray,
    prior: dict,
    *,
    n_components: int,
    random_seed: int | None,
    draws: int = 1000,
    method: str = DEFAULT_METHOD,
    num_paths: int | None = None,
    jitter: float = 0.5,
    importance_sampling: str | None = None,
    n_fixed_draws: int | None = None,
    linear_response: bool | None = None,
    max_iterations: int | None = None,
    learning_rate: float | None = None,
    window: int | None = None,
    tol: float | None = None,
    init_std: float | None = None,
    family: str = "gaussian",
) -> ClassFit:
    r"""Variational approximation of one class's mixture posterior (see the module docstring).

    Parameters
    ----------
    x, counts, prior, n_components, draws, random_seed
        As for every route (:mod:`bayescal.bayesian.routes`).
    method : {"dadvi", "pathfinder", "fullrank_advi"}, default "dadvi"
        The approximation.
    num_paths : int or None, default None
        Independent optimisations (Pathfinder paths; DADVI / full-rank restarts); None is
        the method's default: 4 for Pathfinder, 2 for the others.
    jitter : float, default 0.5
        Half-width of the uniform jitter of the start of paths after the first on the
        unconstrained scale (Pathfinder jitters every path).
    importance_sampling : {"psir", "psis", "none"} or None, default None
        ``"psir"``: resample the draws with replacement by their Pareto-smoothed importance
        weights; ``"none"``: keep the approximation's draws (DADVI, full-rank); ``"psis"``
        (Pathfinder only): resample without replacement. None is the method's default
        ("psir" for Pathfinder, "none" otherwise).
    n_fixed_draws : int or None, default None
        DADVI's fixed draws (None: 30).
    linear_response : bool or None, default None
        DADVI: draw from the linear-response covariance instead of the mean-field one (None:
        False, because the coverage study measured it no better and sometimes far worse;
        module docstring).
    max_iterations : int or None
        Optimiser iterations per path (None: 2000 L-BFGS steps for DADVI, 1000 for
        Pathfinder's L-BFGS, 20000 for full-rank adam).
    learning_rate, window, tol, init_std
        Full-rank ADVI's adam step, convergence window and tolerance (as in
        :func:`bayescal.bayesian.pymc_model.fit_advi`; None: 0.01, 500, 2e-4), and the initial
        scale of DADVI and full-rank ADVI (None: 0.1). An option the chosen ``method`` does not
        use is refused (:data:`METHOD_OPTIONS`).
    family : {"gaussian", "beta"}, default "gaussian"
        Component family of the model (``prior`` must hold its hyperparameters); the coverage
        measured on the evidence page is of Gaussian components.

    Returns
    -------
    ClassFit
        One chain of ``draws`` independent draws in a random order; diagnostics ``route`` = "vi", ``method``, ``pareto_k``,
        ``ess_importance``, ``importance_resampled``, ``converged``, ``n_iterations``,
        ``n_paths``, ``elbo_final``, ``elbo_spread``, ``runtime_s`` and, for DADVI,
        ``linear_response`` (the correction was applied on every path), ``hessian_min_eig``,
        ``optimality_gap`` (the largest over paths, nats; see :data:`DADVI_GAP`) and
        ``n_restarts`` (L-BFGS-B restarts over paths);
        for full-rank ADVI, ``n_rejected``: adam steps undone because their draw's log density
        was not finite (a component's scale or shape under- or overflowing), as NumPyro's
        ``stable_update`` does; a path gives up after :data:`FULLRANK_MAX_REJECTED`.

    Notes
    -----
    Opt-in: the band of mean-field DADVI (the default) misses the coverage study's bar on
    every measured cell, and :math:`\hat k` flags essentially every fit (module docstring;
    ``docs/evidence/vi.md``). Use ``inference="gibbs"`` for bands you can rely on.

    Warns
    -----
    UserWarning
        When :math:`\hat k >` :data:`KHAT_WARN`: the band may be misplaced or too narrow, and
        ``inference="gibbs"`` is the remedy; and when ``converged`` is false, naming
        ``inference="gibbs"`` (and ``route_options['max_iterations']`` when the iterations ran out).
    """
    start_time = time.perf_counter()
    x, counts = pmm._check_inputs(x, counts, prior, n_components, draws)
    pmm._check_family(prior, family)
    given = {
        "n_fixed_draws": n_fixed_draws,
        "linear_response": linear_response,
        "learning_rate": learning_rate,
        "window": window,
        "tol": tol,
        "init_std": init_std,
    }
    stray = sorted(k for k, v in given.items() if v is not None and k not in METHOD_OPTIONS.get(method, given))
    if stray:
        raise ValueError(
            f"route_options['{stray[0]}'] does nothing with method={method!r}, which takes "
            f"{', '.join(sorted(METHOD_OPTIONS[method])) or 'none of the method-specific options'}: drop it, "
            "or choose the method it belongs to."
        )
    n_fixed_draws, linear_response, learning_rate, window, tol, init_std = (
        OPTION_DEFAULTS[k] if v is None else v for k, v in given.items()
    )
    if num_paths is None:
        num_paths = 4 if method == "pathfinder" else 2
    _check_options(
        method,
        num_paths,
        jitter,
        importance_sampling,
        n_fixed_draws,
        draws,
        linear_response=linear_response,
        init_std=init_std,
        learning_rate=learning_rate,
        tol=tol,
        window=window,
        max_iterations=max_iterations,
    )
    R, draws = int(num_paths), int(draws)
    how = importance_sampling or ("psir" if method == "pathfinder" else "none")
    resample = how != "none"
    ss = np.random.SeedSequence(random_seed)
    path_seeds = [int(s.generate_state(1)[0]) for s in ss.spawn(R + 1)]
    rng = np.random.default_rng(path_seeds[-1])
    diagnostics: dict = {"route": "vi", "method": method, "n_paths": R}
    with pmm._borrow(n_components, family) as slot:
        pmm._set_data(slot.model, prior, x=x, counts=counts)
        if method == "pathfinder":
            values, info = _pathfinder(
                slot, prior, draws, path_seeds[0], R, max(float(jitter), 1e-8), how, max_iterations or 1000
            )
            elbos = info["elbo"][np.isfinite(info["elbo"])]
            pareto_k, ess = info["pareto_k"], float("nan")
            resampled = resample  # pymc-extras' own importance step
            ran_out = info["ran_out"]
            diagnostics |= {
                "converged": info["converged"],
                "n_iterations": info["n_iterations"],
                "n_successful_paths": info["n_successful_paths"],
            }
        else:
            start = pmm._flat_start(slot.model, prior)
            starts = [start] + [start + rng.uniform(-jitter, jitter, start.size) for _ in range(R - 1)]
            if method == "dadvi":
                flat = _flat_parts(slot)
                paths = [
                    _dadvi_path(
                        flat,
                        s,
                        np.random.default_rng(seed),
                        int(n_fixed_draws),
                        bool(linear_response),
                        max_iterations or 2000,
                        init_std,
                    )
                    for s, seed in zip(starts, path_seeds, strict=False)
                ]
                diagnostics["linear_response"] = all(p["lr_applied"] for p in paths)
                diagnostics["hessian_min_eig"] = float(min(p["hessian_min_eig"] for p in paths))
                diagnostics["optimality_gap"] = float(max(p["optimality_gap"] for p in paths))
                diagnostics["n_restarts"] = int(sum(p["n_restarts"] for p in paths))
            else:
                flat = _flat_parts(slot)
                parts = _fullrank_parts(slot)
                paths = [
                    _fullrank_path(parts, s, seed, learning_rate, max_iterations or 20_000, window, tol, init_std)
                    for s, seed in zip(starts, path_seeds, strict=False)
                ]
                diagnostics["n_rejected"] = int(sum(p["n_rejected"] for p in paths))
            theta, log_q = _mixture_draws(paths, draws, rng)
            results = [flat.point_fn(t) for t in theta]
            log_p = np.array([r[0] for r in results])
            values = {name: np.array([r[j] for r in results]) for j, name in enumerate(pmm.draw_names(slot.model), 1)}
            weights, pareto_k, ess = _psis(log_p - log_q)
            resampled = resample and weights is not None  # PSIS needs 100 draws
            elbos = np.array([p["elbo"] for p in paths])
            budget = max_iterations or (2000 if method == "dadvi" else 20_000)
            ran_out = any(not p["converged"] and p["n_iterations"] >= budget for p in paths)
            diagnostics |= {
                "converged": all(p["converged"] for p in paths),
                "n_iterations": int(sum(p["n_iterations"] for p in paths)),
            }
            if resample and weights is not None:
                positions = (rng.uniform() + np.arange(draws)) / draws
                idx = np.minimum(np.searchsorted(np.cumsum(weights), positions), draws - 1)
                values = {k: v[idx] for k, v in values.items()}
    diagnostics |= {
        "pareto_k": float(pareto_k),
        "ess_importance": float(ess),
        "importance_resampled": bool(resampled),
        "elbo_final": float(elbos.max()) if elbos.size else float("nan"),
        "elbo_spread": float(elbos.max() - elbos.min()) if elbos.size else float("nan"),
        "runtime_s": time.perf_counter() - start_time,
    }
    if not diagnostics["converged"]:
        gap = f" (optimality gap {diagnostics['optimality_gap']:.3g} nats)" if "optimality_gap" in diagnostics else ""
        more = (  # per path: one may stall while another runs out of iterations
            "raise route_options['max_iterations'], or "
            if ran_out
            else "its optimiser stalled before its iterations ran out, so "
        )
        warn(
            f"The variational fit ({method}) did not converge: an optimisation of its {R} path(s) stopped short "
            f"of its optimum{gap} after {diagnostics['n_iterations']} iterations in all, so its draws may be far "
            f"from the posterior: {more}use inference='gibbs' (the sampler)."
        )
    if pareto_k > KHAT_WARN:
        warn(
            f"The variational fit ({method}) has Pareto k-hat {pareto_k:.2f} > {KHAT_WARN}: the approximation is "
            f"far from the posterior and its credible band may be misplaced or too narrow. Use inference='gibbs' "
            f"(the sampler) for a band you can trust."
        )
    # the draws are independent but come path by path (resampled ones in the weights' order): in a
    # random order, so that convergence diagnostics of the one chain do not read the paths' blocks as
    # autocorrelation
    order = rng.permutation(draws)
    weight, p1, p2, alpha = (values[name][order] for name in pmm.draw_names(slot.model))
    posterior = pmm._to_posterior(weight, p1, p2, alpha, 1, draws, family)
    return ClassFit(posterior, diagnostics)
