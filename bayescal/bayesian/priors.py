r"""KDE-informed (empirical-Bayes) priors for the per-class Dirichlet-process mixture.

For one class with working-scale scores :math:`x_i` and frequency weights :math:`c_i`
(ones for raw scores, bin counts for compressed data, ``sample_weight`` otherwise), with
:math:`n = \sum_i c_i`, weighted standard deviation :math:`\hat s`, robust spread
:math:`\hat r = \min(\hat s, \mathrm{IQR}/1.349)` and Silverman's robust bandwidth
:math:`h = 1.06\,\hat r\,n^{-1/5}` (the bandwidth of the KDE calibrator on unbounded scales;
the working scale is one), the hyperparameters of the model in :mod:`bayescal.bayesian.dpm` are

=================  ===========================================  ==========================
key                value                                        layer
=================  ===========================================  ==========================
``alpha_shape``    :math:`a = 1000`                             default
``alpha_rate``     :math:`b = 1000`                             default
``mu_loc``         :math:`m_k = \hat Q(q_k)`, centre-out (below)   KDE-informed
``mu_scale``       :math:`s = \hat s`                           KDE-informed
``sigma_logmean``  :math:`\log h`                               KDE-informed
``sigma_logsd``    :math:`\tau = 1`                             default
``init_mu``        :math:`m_k`                                  KDE-informed
``init_sigma``     :math:`h` for every component                KDE-informed
``init_weight``    :math:`1/K` for every component              KDE-informed
=================  ===========================================  ==========================

where :math:`\hat Q` is the weighted quantile function of the class's scores (the
quantiles of its KDE up to the kernel's smoothing) and the levels :math:`q_k` are the
:math:`K` midpoints :math:`(j - 1/2)/K` taken **centre-out**: :math:`q_1, q_2, \dots` are
the two middle ones, then alternately the next below and above, the extreme quantiles
last. The order matters because the truncated stick-breaking prior is not exchangeable in
:math:`k`: :math:`E[w_k]` falls geometrically with :math:`k`, and a stick left unoccupied
keeps a weight of about :math:`1/(n + 2)`. With the ascending order the first, heaviest
sticks would sit at the lowest quantiles, and a small class would carry several such empty
components in its lower tail, which raises the posterior-mean map at that end of the data
region (measured history: ``docs/evidence/sampler_history.md``). So component means start
spread over the class's own score distribution, each free to move by about one class standard
deviation, and component scales are log-normal around the KDE bandwidth with a factor
:math:`e^{\tau} \approx 2.7` of spread.

The bandwidth takes the robust spread, the location prior the standard deviation. A share
:math:`\varepsilon` of scores at a distance :math:`D` from the bulk (glitches of a scoring
pipeline, a few scores of :math:`10^{-12}` on the logit scale) adds about :math:`\varepsilon D^2`
to :math:`\hat s^2` but moves the quartiles by :math:`O(\varepsilon)` of the bulk's spread.
With :math:`\hat s` in :math:`h`, half a percent of scores spread a few hundred units wide
centred the components' scales some twenty times wider than the bulk's bandwidth, so the
components smoothed over the bulk's features and the map's band sat off the truth there; with
:math:`\hat r` the scale prior describes the bulk, and the far scores still get a component of
their own, since the likelihood of a score hundreds of bulk widths from every component
outweighs a few prior standard deviations of :math:`\log\sigma`.
The location prior keeps :math:`\hat s`, which lets a component reach them (measurements:
``docs/evidence/coverage.md``, the rows of ``prior_spread="sd"`` beside the default's).

The concentration's prior ``alpha ~ Gamma(1000, 1000)`` holds :math:`\alpha` near 1 (mean 1,
standard deviation 0.03): a Dirichlet process of concentration 1, which favours a few occupied
components while allowing many (Ishwaran & James 2001; Escobar & West 1995), with the
concentration fixed rather than learnt. Learnt under the usual ``Gamma(1, 1)``, its posterior
at a few hundred to a few thousand scores is wide and moves with the number of occupied
components, which the sampler changes slowly, and that slow direction keeps the chains from
converging; held, it is gone, and far more fits converge, with about the same map error and
band width and a little lower coverage up to :math:`10^3` scores (measurements:
``docs/evidence/coverage.md``, the rows of ``priors={"alpha_shape": 1.0, "alpha_rate": 1.0}``
beside the default's on the same seeds; their history: ``docs/evidence/sampler_history.md``).
``priors={"alpha_shape": 1.0, "alpha_rate": 1.0}`` learns it again.

**Beta components** (``family="beta"``, :mod:`bayescal.bayesian.mixture`). Component k is
Beta(:math:`a_k, b_k`) on :math:`s = \operatorname{expit}(t)`, whose logit has mean about
:math:`\log(a_k / b_k)` and variance about :math:`1/a_k + 1/b_k`. Matching these to the
same KDE quantities (centre :math:`m_k`, variance :math:`h^2`) gives the prior centres
:math:`\ell^a_k = \log((1 + e^{m_k}) / h^2)`, :math:`\ell^b_k = \log((1 + e^{-m_k}) / h^2)`
(keys ``a_logloc``, ``b_logloc``), with :math:`\log a_k \sim \mathcal N(\ell^a_k, \tau^2)`,
:math:`\log b_k \sim \mathcal N(\ell^b_k, \tau^2)`, :math:`\tau` = ``ab_logsd`` = 1; the
chains start at the centres (``init_a``, ``init_b``).

Here, for the Beta family only, :math:`h` is the bandwidth of a class of at most
:data:`BETA_PRIOR_MAX_UNITS` scores, :math:`h \max(1, n / 1000)^{1/5}`: it does not shrink
with :math:`n`. A Beta component's concentration :math:`a_k + b_k` sets both its width and
its shape near 0 and 1, so a prior whose :math:`h^2` fell as :math:`n^{-2/5}` would centre the
shapes, at :math:`10^5` scores, 3-4 prior standard deviations above those of a class that is
itself one Beta density; the posterior would tile the class with narrow components whose
tails, and so the map near 0 and 1, miss the truth. Components are the mixture's building
blocks, not smoothing kernels: more scores do not make a density's features narrower. The
Gaussian family's scale prior keeps the bandwidth of all :math:`n` scores, since the same
change there lowered the band's coverage at the kinks of a map with a flat stretch. The
changelog records the measured effect of both; ``docs/evidence/coverage.md`` the coverage
now (``benchmarks/dpm_coverage.py``).

Precedence is user > KDE-informed > default: :func:`resolve_priors` starts from the
defaults, overwrites with the KDE-informed values, then with what the user passed.

References
----------
Ishwaran, H. & James, L. F. (2001). Gibbs sampling methods for stick-breaking priors.
JASA 96, 161-173.
Escobar, M. D. & West, M. (1995). Bayesian density estimation and inference using
mixtures. JASA 90, 577-588.
Silverman, B. W. (1986). Density Estimation for Statistics and Data Analysis. Chapman & Hall.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from bayescal._stats import silverman_bandwidth, weighted_mean_std, weighted_quantile

__all__ = ["BETA_PRIOR_MAX_UNITS", "DEFAULT_PRIOR", "PRIOR_KEYS", "kde_prior", "prior_keys", "resolve_priors"]

_SCALAR = {
    "gaussian": ("alpha_shape", "alpha_rate", "mu_scale", "sigma_logmean", "sigma_logsd"),
    "beta": ("alpha_shape", "alpha_rate", "ab_logsd"),
}
_VECTOR = {
    "gaussian": ("mu_loc", "init_mu", "init_sigma", "init_weight"),
    "beta": ("a_logloc", "b_logloc", "init_a", "init_b", "init_weight"),
}
SCALAR_KEYS = _SCALAR["gaussian"]
VECTOR_KEYS = _VECTOR["gaussian"]
PRIOR_KEYS = SCALAR_KEYS + VECTOR_KEYS
"""Every hyperparameter of one class's Gaussian mixture (:func:`prior_keys` for each family)."""

DEFAULT_PRIOR: dict[str, float] = {"alpha_shape": 1000.0, "alpha_rate": 1000.0, "sigma_logsd": 1.0, "ab_logsd": 1.0}
"""The data-free default layer (the rest comes from the class's scores)."""

BETA_PRIOR_MAX_UNITS = 1000
"""The Beta components' shape priors are centred with the bandwidth :math:`h` of a class of at
most this many scores (the module docstring says why)."""

_LOG_1E100 = 230.0  # about log(1e100)
_RANGES = {
    "mu_loc": (-1e100, 1e100),
    "init_mu": (-1e100, 1e100),
    "mu_scale": (1e-100, 1e100),
    "init_sigma": (1e-100, 1e100),
    "sigma_logmean": (-_LOG_1E100, _LOG_1E100),
    "sigma_logsd": (1e-3, 20.0),
    "a_logloc": (-_LOG_1E100, _LOG_1E100),
    "b_logloc": (-_LOG_1E100, _LOG_1E100),
    "ab_logsd": (1e-3, 20.0),
}
"""Bounds of the hyperparameters whose squares, reciprocals or exponentials the sampler forms
(as decision values are bounded by 1e100): beyond them they overflow or divide by zero."""
_POSITIVE = ("alpha_shape", "alpha_rate", "mu_scale", "sigma_logsd", "init_sigma", "ab_logsd", "init_a", "init_b")


def prior_keys(family: str = "gaussian") -> tuple[str, ...]:
    """The hyperparameter names of one class's mixture with components of ``family``."""
    return _SCALAR[family] + _VECTOR[family]


def kde_prior(
    x: np.ndarray, counts: np.ndarray, n_components: int, family: str = "gaussian", robust: bool = True
) -> dict[str, Any]:
    r"""KDE-informed hyperparameters of one class (see the module docstring).

    Parameters
    ----------
    x : ndarray of shape (n,)
        The class's working-scale scores (or bin centres).
    counts : ndarray of shape (n,)
        Their frequency weights.
    n_components : int
        Truncation level K.
    family : {"gaussian", "beta"}, default "gaussian"
    robust : bool, default True
        Whether the bandwidth :math:`h` takes the robust spread :math:`\min(\hat s, \mathrm{IQR}/1.349)`
        (:func:`bayescal._stats.silverman_bandwidth`) rather than the standard deviation.

    Returns
    -------
    dict
        ``mu_loc``, ``mu_scale``, ``sigma_logmean``, ``init_mu``, ``init_sigma``, ``init_weight``
        (Gaussian), or ``a_logloc``, ``b_logloc``, ``init_a``, ``init_b``, ``init_weight`` (Beta).
    """
    x = np.asarray(x, dtype=np.float64)
    counts = np.asarray(counts, dtype=np.float64)
    K = int(n_components)
    _, sd = weighted_mean_std(x, counts)
    h = silverman_bandwidth(x, counts, robust=robust)
    if not h > 0:  # a class whose scores are all equal: a narrow but finite scale
        sd = 1e-3 * max(1.0, float(np.abs(x).max()))
        h = sd
    order = np.argsort(np.abs(2 * np.arange(K) + 1 - K), kind="stable")  # centre-out: heaviest sticks mid-class
    loc = weighted_quantile(x, (order + 0.5) / K, counts)
    if family == "beta":
        h_shape = h * max(1.0, float(counts.sum()) / BETA_PRIOR_MAX_UNITS) ** 0.2  # h at <= that many scores
        a_log = np.log1p(np.exp(np.clip(loc, -700, 700))) - 2.0 * np.log(h_shape)
        b_log = np.log1p(np.exp(np.clip(-loc, -700, 700))) - 2.0 * np.log(h_shape)
        return {
            "a_logloc": a_log,
            "b_logloc": b_log,
            "init_a": np.exp(a_log),
            "init_b": np.exp(b_log),
            "init_weight": np.full(K, 1.0 / K),
        }
    return {
        "mu_loc": loc,
        "mu_scale": float(sd),
        "sigma_logmean": float(np.log(h)),
        "init_mu": loc.copy(),
        "init_sigma": np.full(K, h),
        "init_weight": np.full(K, 1.0 / K),
    }


def _all_keys() -> set[str]:
    return {k for family in _SCALAR for k in prior_keys(family)}


def _check_user_class(
    user: Any, n_components: int, where: str, family: str = "gaussian", strict: bool = True
) -> dict[str, Any]:
    if not isinstance(user, Mapping):  # the package's contract: every bad input is a ValueError
        raise ValueError(  # noqa: TRY004
            f"{where} is a {type(user).__name__}: pass a dict of hyperparameters, e.g. {{'alpha_shape': 2.0}}."
        )
    keys = prior_keys(family)
    unknown = sorted(set(map(str, user)) - (set(keys) if strict else _all_keys()))
    if unknown:
        known = list(keys) if strict else sorted(_all_keys())
        whose = f"{family} components" if strict else "the component families"
        raise ValueError(f"{where} has unknown key(s) {unknown}: the hyperparameters of {whose} are {known}.")
    out: dict[str, Any] = {}
    for key, value in user.items():
        if key not in keys:  # another family's hyperparameter (strict=False)
            continue
        raw = np.asarray(value)
        if raw.dtype.kind not in "iuf":  # booleans and text are not hyperparameters
            raise ValueError(f"{where}[{key!r}]={value!r} must be a number or an array of numbers.")
        arr = raw.astype(np.float64)
        if key in _SCALAR[family]:
            if arr.ndim != 0:
                raise ValueError(f"{where}[{key!r}] must be a number, got shape {arr.shape}.")
            val: Any = float(arr)
        else:
            if arr.ndim == 0:
                arr = np.full(n_components, float(arr))
            if arr.shape != (n_components,):
                raise ValueError(
                    f"{where}[{key!r}] has shape {arr.shape}: pass a number or an array of "
                    f"n_components={n_components} values."
                )
            val = arr.copy()
        if not np.all(np.isfinite(val)):
            raise ValueError(f"{where}[{key!r}] is not finite: pass finite numbers.")
        if key in _POSITIVE and np.any(np.asarray(val) <= 0):
            raise ValueError(f"{where}[{key!r}] must be positive.")
        if key in _RANGES and not np.all((np.asarray(val) >= _RANGES[key][0]) & (np.asarray(val) <= _RANGES[key][1])):
            low, high = _RANGES[key]
            raise ValueError(
                f"{where}[{key!r}]={value!r} lies outside [{low:g}, {high:g}], where the sampler's arithmetic holds: "
                "pass a value inside it."
            )
        if key == "init_weight":
            if np.any(val < 0) or not val.sum() > 0:
                raise ValueError(f"{where}['init_weight'] must be non-negative with a positive sum.")
            val = val / val.sum()
        out[key] = val
    return out


def resolve_priors(
    priors: Any,
    xs: Sequence[np.ndarray],
    counts: Sequence[np.ndarray],
    n_components: int,
    family: str = "gaussian",
    strict: bool = True,
) -> list[dict[str, Any]]:
    """Hyperparameters of both classes with precedence user > KDE-informed > default.

    Parameters
    ----------
    priors : dict, sequence of two dicts, or None
        User overrides. A dict whose keys are hyperparameter names applies to both
        classes; ``{0: {...}, 1: {...}}`` or ``[{...}, {...}]`` sets each class separately
        (a class may be omitted or ``None``). Scalars given for a per-component key
        (``mu_loc``, ``init_*``) are broadcast to all components.
    xs, counts : sequence of two arrays
        Each class's working-scale scores and frequency weights.
    n_components : int
    family : {"gaussian", "beta"}, default "gaussian"
        Component family: which hyperparameters exist (:func:`prior_keys`).
    strict : bool, default True
        Whether a hyperparameter of another family is an error; with False it is skipped (when
        both families are fitted, each takes its own keys from one ``priors``).

    Returns
    -------
    list of two dicts
        Complete hyperparameter dicts for class 0 and class 1 (keys :func:`prior_keys`).

    Raises
    ------
    ValueError
        On unknown keys, wrong shapes, non-finite or non-positive values.
    """
    if priors is None:
        per_class: list[Any] = [None, None]
    elif isinstance(priors, Mapping) and all(str(k) in (prior_keys(family) if strict else _all_keys()) for k in priors):
        per_class = [priors, priors]
    elif isinstance(priors, Mapping) and set(priors) <= {0, 1, "0", "1"}:
        per_class = [priors.get(0, priors.get("0")), priors.get(1, priors.get("1"))]
    elif isinstance(priors, Sequence) and not isinstance(priors, (str, bytes)) and len(priors) == 2:
        per_class = list(priors)
    elif isinstance(priors, Mapping):
        if any(k in (0, 1, "0", "1") for k in priors):
            raise ValueError(
                "priors mixes class keys (0, 1) with hyperparameter names: pass either one dict for both "
                "classes, or {0: {...}, 1: {...}} with the shared hyperparameters repeated in each."
            )
        unknown = sorted(str(k) for k in priors if str(k) not in (prior_keys(family) if strict else _all_keys()))
        raise ValueError(
            f"priors has unknown key(s) {unknown}: use hyperparameter names "
            f"{list(prior_keys(family)) if strict else sorted(_all_keys())}, "
            "or class labels 0 and 1 mapping to such dicts."
        )
    else:
        raise ValueError(
            f"priors is a {type(priors).__name__}: pass None, a dict of hyperparameters, "
            "or one dict per class ({0: {...}, 1: {...}} or [{...}, {...}])."
        )
    out = []
    for c in (0, 1):
        prior: dict[str, Any] = {k: v for k, v in DEFAULT_PRIOR.items() if k in _SCALAR[family]}
        prior.update(kde_prior(xs[c], counts[c], n_components, family))
        if per_class[c] is not None:
            prior.update(_check_user_class(per_class[c], n_components, f"priors for class {c}", family, strict))
        out.append(prior)
    return out
