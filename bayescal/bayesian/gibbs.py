r"""Blocked Gibbs sampler for one class's truncated stick-breaking mixture (Gaussian or Beta components).

The model is the one written in PyMC in :mod:`bayescal.bayesian.pymc_model` (and out in
math in :class:`bayescal.bayesian.dpm.DPMCalibrator`), for points :math:`x_i` with
frequency weights :math:`c_i` (ones for raw scores, bin counts for compressed data):

.. math::
    \alpha \sim \mathrm{Gamma}(a, b), \quad v_k \sim \mathrm{Beta}(1, \alpha)\ (k < K),\ v_K = 1,
    \quad w_k = v_k \prod_{j<k} (1 - v_j),\\
    \mu_k \sim \mathcal N(m_k, s^2), \quad \sigma_k \sim \mathrm{LogNormal}(\ell, \tau^2), \quad
    x_i \sim \textstyle\sum_k w_k \mathcal N(\mu_k, \sigma_k^2)\ \text{with weight } c_i.

Each sweep of the blocked sampler of Ishwaran & James (2001, section 5.2) updates, compiled
with numba (:mod:`bayescal.bayesian._gibbs_kernels`; ``backend="numpy"`` runs the same sweeps
vectorised in numpy, the reference implementation):

1. allocations: the :math:`c_i` units of point i go to components by
   :math:`\mathrm{Multinomial}(c_i, r_{i\cdot})`, :math:`r_{ik} \propto w_k \mathcal N(x_i \mid \mu_k, \sigma_k)`,
   giving per component the sufficient statistics :math:`n_k, \sum x, \sum x^2`;
2. sticks: :math:`v_k \sim \mathrm{Beta}(1 + n_k,\ \alpha + \sum_{j>k} n_j)`;
3. concentration: :math:`\alpha \sim \mathrm{Gamma}(a + K - 1,\ b - \sum_{k<K} \log(1 - v_k))`;
4. means: conjugate normal, precision :math:`1/s^2 + n_k/\sigma_k^2`,
   mean :math:`(m_k/s^2 + \sum_{i \in k} x_i/\sigma_k^2)` / precision;
5. scales: ``n_mh`` random-walk Metropolis steps on :math:`u_k = \log \sigma_k` targeting
   :math:`-\tfrac{(u - \ell)^2}{2\tau^2} - n_k u - \tfrac{S_k}{2} e^{-2u}`,
   :math:`S_k = \sum_{i \in k} (x_i - \mu_k)^2`, with step :math:`2.4 / \sqrt{\tau^{-2} + 2 n_k}`
   (the local curvature). This keeps the log-normal prior of the PyMC model exactly
   (no conjugate inverse-gamma substitute), so both routes sample the same posterior.
   An empty component (:math:`n_k = 0`) has its prior as conditional: its scale is drawn
   from it exactly, without Metropolis steps.

With Beta components (``family="beta"``, :mod:`bayescal.bayesian.mixture`) a component is
Beta(:math:`a_k, b_k`) on the probability :math:`s = \operatorname{expit}(x)`; its
sufficient statistics are :math:`n_k, \sum \log s, \sum \log(1 - s)`, and steps 4-5 become
``n_mh`` random-walk Metropolis steps on :math:`(\log a_k, \log b_k)` along the directions
(1, 1) (concentration) and (1, -1) (location), under independent normal priors
:math:`\log a_k \sim \mathcal N(\ell^a_k, \tau^2)`, :math:`\log b_k \sim \mathcal N(\ell^b_k, \tau^2)`
(:mod:`bayescal.bayesian.priors`), step :math:`1.7 / \sqrt{\tau^{-2} + n_k}`; an empty
component's shapes are drawn from those priors exactly.

Optionally (``label_swaps=True``), after step 1 the labels of adjacent components k, k + 1
are exchanged, with their parameters and allocations, by Metropolis-Hastings with the sticks
integrated out (Papaspiliopoulos & Roberts 2008): the acceptance ratio is that of the
stick-breaking marginal of the counts,
:math:`\prod_k B(1 + n_k, \alpha + \sum_{j>k} n_j) / B(1, \alpha)`, times that of the
components' priors (whose centres differ by k); step 2 then draws the sticks given the
exchanged counts, so the posterior is unchanged. It is off by default: on the simulated
truths it did not raise the map's effective sample size.

**Hamiltonian moves** (``hmc_steps > 0``). Given the allocations the parameters are nearly
fixed and given the parameters the allocations are, so the sweeps move the map by small steps.
With ``hmc_steps = L`` a sweep adds, after step 5, one Hamiltonian Monte Carlo move
(Neal 2011) of the sticks and all components together, with the allocations summed out: the
target is the class's weighted log-likelihood :math:`\sum_i c_i \log \sum_k w_k \phi_k(x_i)`
plus the priors, on :math:`(\operatorname{logit} v_k, \theta_{1k}, \theta_{2k})`
(:func:`bayescal.bayesian._gibbs_kernels.marginal_logpost`), L leapfrog steps with a diagonal
mass. The move leaves the posterior of the sticks and components given :math:`\alpha` unchanged,
and the next sweep draws the allocations afresh, so the sampler's posterior is the same. The
warm-up tunes the step size to a mean acceptance of 0.7 by dual averaging (Hoffman & Gelman
2014) and the mass from the variances of its positions between a fifth and half of the way
through (regularised as in Stan); after the warm-up a move precedes each kept draw.
Measurements: ``docs/evidence/candidates.md`` and ``docs/evidence/speed.md``; their history is
on ``docs/evidence/sampler_history.md``.

**Merge-split moves** (``merge_split > 0``, Gaussian components). From thousands of scores on,
the sweeps empty surplus components, or fill new ones, far more slowly than a fit lasts: a
component's weight moves by small steps, so the number of occupied components drifts over
thousands of sweeps. With ``merge_split = M`` a sweep adds, after
step 5, M reversible-jump proposals (Richardson & Green 1997) written for the fixed truncation,
on the sticks and components with the allocations summed out (given :math:`\alpha`): an ordered
pair (j, k) is drawn uniformly, then a merge or a split with probability 1/2. A merge puts at j
the component that keeps the pair's weight share's mean and variance, and sends k, now a spare,
to a draw from its prior with weight :math:`r (w_j + w_k)`, :math:`-\log r \sim
\mathrm{Gamma}(2, \tfrac12 \log(2 + N))`; a split is its inverse, with :math:`u_1, |u_2| \sim
\mathrm{Beta}(2, 2)` (:math:`u_2` with a random sign) and :math:`u_3 \sim U(0, 1)`, discarding
the spare at k. The pair's total weight is kept, so the weights' Jacobian is 1; the components'
is :math:`\sigma / (2 \sqrt{u_1 (1 - u_1)} (1 - u_2^2) u_3 (1 - u_3))` on log scales
(:func:`bayescal.bayesian._gibbs_kernels.merge_split_move`; ``tests/bayesian/test_gibbs.py``
checks that without data the moves keep the prior). Off by default: the moves empty surplus
components, but the chains converge no better with them, and they cost several times the
fit's time. Measurements: ``docs/evidence/candidates.md``; their history is on
``docs/evidence/sampler_history.md``.

**Floor on the components' spread** (``prior["scale_floor"]``). At bin centres with large
counts the weighted likelihood grows without bound as a component narrows onto one bin; the
sweeps do not reach those spikes, but the Hamiltonian moves find them
(``tests/bayesian/test_gibbs.py``). The calibrator therefore truncates the components' priors
on compressed data at the narrowest bin, :math:`h` (binned counts say nothing about structure
narrower than a bin): :math:`\sigma_k \ge h`, or for Beta components
:math:`1/a_k + 1/b_k \ge h^2` (about the variance of the component's logit). Every update
respects it: the Metropolis steps reject proposals below it, empty components are drawn from
the truncated prior, a Hamiltonian trajectory that crosses it is rejected, and a start below it
is raised onto it. Above the floor the likelihood is bounded, so the moves run on compressed
data too; by default (``hmc_steps="auto"``) with :data:`HMC_AUTO_STEPS` leapfrog steps for a
class of more than :data:`HMC_AUTO_UNITS` units, where the plain sweeps creep and the moves
lower the map's error and raise the band's coverage. Below :data:`HMC_AUTO_UNITS` units they
are off by default for their cost, though they mix better there too. Where the plain sweeps
stall is the components' redundancy: a spare component trades mass with the one that fits the
data. Measurements:
``docs/evidence/coverage.md``, ``docs/evidence/speed.md`` and ``docs/evidence/candidates.md``;
their history is on ``docs/evidence/sampler_history.md``.

**Start.** By default (``start="auto"``, :func:`auto_start`) a class's chains start from
the prior's ``init_*`` values (components at the class's quantiles, as wide as the KDE
bandwidth) up to :data:`DISPERSED_START_UNITS` units, each from its own draw from the prior
above that while the plain sweeps run (no Hamiltonian moves, so up to :data:`HMC_AUTO_UNITS`
units by default) on data with a floor on the components' spread (the calibrator's
compressed scores: "Floor" above), and at the posterior mode above :data:`MODE_START_UNITS`
units. Without the floor a draw from the prior can put a narrow component on a value that
many units share, a spike of the likelihood that the sweeps do not leave.

With many units the sweeps approach the high-posterior region slowly: given the parameters
the allocations are nearly fixed and vice versa, so the chain creeps along the ridges where
overlapping components trade mass, as EM does. Above :data:`MODE_START_UNITS` units a
class's chains therefore start at the posterior mode found by L-BFGS
(:mod:`bayescal.bayesian.mode_start`). On small classes the mode start changes neither the
band's coverage nor the map's error, so there the search is not run.

``start="dispersed"`` starts each chain from its own draw from the prior (concentration,
sticks and every component's parameters, raised onto the scale floor; Gelman & Rubin 1992),
so chains that would not meet start apart and R-hat shows it: chains that all start at the
same values look more alike than chains started apart. From a few thousand units on they do
not meet within a default fit, so there the shared start's R-hat understates the chains'
disagreement, and the dispersed starts are the default. Below :data:`DISPERSED_START_UNITS`
units the two starts converge alike, so there the KDE-informed values are kept, as they are
where the Hamiltonian moves run. ``start="prior"`` and ``start="mode"`` force one start for
every class. ``start="single"`` starts every chain with one component holding the whole
class (:func:`bayescal.bayesian.mode_start.single_start`), from which the sweeps add
components rather than empty them. Measurements: ``docs/evidence/coverage.md`` and
``docs/evidence/candidates.md``; the history of the starts is on
``docs/evidence/sampler_history.md``.

**Concentration.** Step 3 draws :math:`\alpha` given the sticks, and of the :math:`K - 1`
sticks most belong to empty components, whose step-2 draws :math:`v_k \sim \mathrm{Beta}(1,
\alpha)` carry the current :math:`\alpha` into its next draw, a feedback that can slow the
concentration of a blocked sampler. With
``alpha_update="collapsed"`` a sweep instead draws :math:`\alpha` given the allocations' counts
alone, the sticks integrated out (density :math:`\propto \mathrm{Gamma}(\alpha; a, b)
\prod_{k<K} B(1 + n_k, \alpha + \sum_{j>k} n_j) / B(1, \alpha)`, by slice sampling on
:math:`\log \alpha`; :func:`bayescal.bayesian._gibbs_kernels.draw_concentration`), then the
sticks given it: the two steps draw :math:`(\alpha, v)` jointly from their conditional given
the allocations, so the posterior is the same and only the chain's path changes. It is off by
default, since the chains mixed no faster with it (``docs/evidence/coverage.md``, its rows
``route_options={"alpha_update": "collapsed"}``; history on ``docs/evidence/sampler_history.md``).
The slow direction is the number of components in use, which the concentration follows
whichever way it is drawn. The default prior therefore holds the concentration near 1
(Gamma(1000, 1000); :mod:`bayescal.bayesian.priors` says why).

**Chains and randomness.** Each chain has its own ``numpy.random.Generator`` spawned from
``random_seed`` (:meth:`numpy.random.SeedSequence.spawn`), so a chain's draws depend on the
seed alone, not on the thread that ran it; chains run in ``n_threads`` threads (the compiled
sweeps release the GIL). The allocation of a count :math:`c_i` is exact multinomial: one or two
units by inversion; up to 32, the most likely component's share by comparing a uniform per unit with its
probability, then each remaining unit by inversion among the other components; larger counts
by conditional binomials over the components (the likely ones first) while more than a few
units are left, then unit-by-unit inversion; a binomial with an expected count of 10 or more
is drawn by BTRS (Hörmann 1993), whose set-up costs a few operations, since n and p are new at
every call (:func:`bayescal.bayesian._gibbs_kernels.binomial`). :class:`GibbsChains` runs the
chains in stretches (a chain keeps its state and generator between them, so its draws are
those of one run), which lets ``components="select"`` compare the two component families on
their first draws and run on only the chains of the family it keeps.

The same seed gives the same draws bit for bit on one machine with one set of library
versions, not across processors: the compiled kernels may reorder sums so that they
vectorise (``bayescal.bayesian._gibbs_kernels._FASTMATH``), the order then depends on the
processor's vector width, and a last-bit difference that reaches an accept decision or an
allocation sends the chain on another path, so another processor's chains are a different,
equally valid, set of draws (their summaries agree within Monte Carlo error). The Hamiltonian
moves (by default on classes of more than :data:`HMC_AUTO_UNITS` units) carry such a
difference into every decision; the plain sweeps mostly absorb it (a check across processors
is recorded on ``docs/evidence/sampler_history.md``).

Non-integer weights (``sample_weight``): the integer part :math:`\lfloor c_i \rfloor` is
allocated multinomially and the remainder :math:`c_i - \lfloor c_i \rfloor` goes whole to one
component drawn from :math:`r_{i\cdot}`, contributing its fractional weight to the sufficient
statistics. For integer counts this is the exact sampler; for fractional weights it targets
the weighted (power) likelihood :math:`\prod_i p(x_i)^{c_i}` approximately.

References
----------
Ishwaran, H. & James, L. F. (2001). Gibbs sampling methods for stick-breaking priors.
JASA 96, 161-173.
Gelman, A. & Rubin, D. B. (1992). Inference from iterative simulation using multiple
sequences. Statistical Science 7, 457-472.
Hoffman, M. D. & Gelman, A. (2014). The No-U-Turn sampler: adaptively setting path lengths in
Hamiltonian Monte Carlo. JMLR 15, 1593-1623.
Hörmann, W. (1993). The generation of binomial random variates. Journal of Statistical
Computation and Simulation 46, 101-110.
Neal, R. M. (2003). Slice sampling. Annals of Statistics 31, 705-767.
Neal, R. M. (2011). MCMC using Hamiltonian dynamics. In Handbook of Markov Chain Monte Carlo,
chapter 5. Chapman & Hall/CRC.
Papaspiliopoulos, O. & Roberts, G. O. (2008). Retrospective Markov chain Monte Carlo methods
for Dirichlet process hierarchical models. Biometrika 95, 169-186.
Richardson, S. & Green, P. J. (1997). On Bayesian analysis of mixtures with an unknown number of
components. JRSS B 59, 731-792.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import xarray as xr
from scipy.special import betaln, log_expit

from bayescal.bayesian.class_fit import ClassFit
from bayescal.bayesian.mode_start import mode_start, single_start

__all__ = [
    "ALPHA_UPDATES",
    "DISPERSED_START_UNITS",
    "HMC_AUTO_STEPS",
    "HMC_AUTO_UNITS",
    "MODE_START_UNITS",
    "STARTS",
    "THIN_RANGE",
    "THIN_UNITS",
    "GibbsChains",
    "auto_start",
    "chains_class_fit",
    "default_thin",
    "fit_gibbs",
    "start_sticks",
]

_V_EPS = 1e-12
_LOG_SQRT_2PI = 0.5 * np.log(2.0 * np.pi)
THIN_UNITS = 7_200
"""Units (rows of data, or compressed counts) allocated per kept draw by the default thinning."""
THIN_RANGE = (2, 40)
"""Smallest and largest default thinning (:func:`default_thin`)."""
MODE_START_UNITS = 100_000
"""Total count of a class above which the chains start at the posterior mode (``start="auto"``)."""
STARTS = ("auto", "mode", "prior", "single", "dispersed")
"""The values of ``start`` (:func:`fit_gibbs`)."""
ALPHA_UPDATES = ("conditional", "collapsed")
"""The values of ``alpha_update`` (:func:`fit_gibbs`; module docstring, "Concentration")."""
DISPERSED_START_UNITS = 2_048
"""Total count of a class above which the chains start apart, each at its own prior draw, when
no Hamiltonian moves run and the components' spread has a floor (``start="auto"``;
:func:`auto_start`). The calibrator's default ``compress_above``: its compressed scores have the floor."""
HMC_AUTO_UNITS = 20_000
"""Total count of a class above which the compiled sweeps add Hamiltonian moves (``hmc_steps="auto"``)."""
HMC_AUTO_STEPS = 20
"""Leapfrog steps of the Hamiltonian moves that ``hmc_steps="auto"`` runs above :data:`HMC_AUTO_UNITS`."""


def auto_start(n_units: float, hmc_steps: int, backend: str, scale_floor: float) -> str:
    """The start that ``start="auto"`` picks for a class (module docstring, "Start").

    "mode" above :data:`MODE_START_UNITS` units; "dispersed" above :data:`DISPERSED_START_UNITS`
    when the plain compiled sweeps run (``hmc_steps`` 0, backend "numba") on data with a floor
    on the components' spread (``scale_floor`` > 0, as on the calibrator's compressed scores,
    where no start can sit on a spike of the likelihood); "prior" otherwise.

    Parameters
    ----------
    n_units : float
        The class's total count.
    hmc_steps : int
        Leapfrog steps of the Hamiltonian moves, resolved ("auto" already replaced).
    backend : {"numba", "numpy"}
        The sweeps' backend.
    scale_floor : float
        The floor on the components' spread (``prior["scale_floor"]``; 0 for none).

    Returns
    -------
    str
    """
    if n_units > MODE_START_UNITS:
        return "mode"
    if n_units > DISPERSED_START_UNITS and hmc_steps == 0 and backend == "numba" and scale_floor > 0:
        return "dispersed"
    return "prior"


def default_thin(n_units: float) -> int:
    r"""Sweeps per kept draw when ``thin`` is not given: :data:`THIN_UNITS` // N, within :data:`THIN_RANGE`.

    A sweep costs in proportion to the units N it allocates, and consecutive sweeps are
    strongly correlated: the number of occupied components, and with it the map's shape where
    data are few, moves by small steps, so the map's draws decorrelate over tens of sweeps at
    N = 10^3 and hundreds at 10^4. Keeping one sweep in ``thin`` spends the sampler's time on
    sweeps rather than on storing and evaluating near-copies of a draw (each kept draw is
    evaluated on the prediction grid and in the leave-one-out averaging). The rule is one
    budget of allocated units per kept draw, so a fit's sweeps cost about the same at every
    class size: one sweep in 40 is kept up to 180 units, in 12 at 600, in 3 at 2,400 and in 2
    from 3,600 on. Where sweeps are cheap they buy convergence; on compressed data the chains
    mix so slowly that more sweeps per draw raise the effective sample size little
    (measurements: ``docs/evidence/coverage.md``, column "converged", and
    ``docs/evidence/speed.md``; their history is on ``docs/evidence/sampler_history.md``).

    Parameters
    ----------
    n_units : float
        The class's total count (rows, or the sum of the compressed counts).

    Returns
    -------
    int
    """
    low, high = THIN_RANGE
    return int(min(max(THIN_UNITS // max(float(n_units), 1.0), low), high))


def start_sticks(init_weight) -> np.ndarray:
    """The K - 1 stick fractions whose stick-breaking weights are ``init_weight`` (floored at 1e-10
    and renormalised), each within [1e-12, 1 - 1e-12]: where every chain's sticks start."""
    w0 = np.clip(np.asarray(init_weight, dtype=np.float64), 1e-10, None)
    w0 = w0 / w0.sum()
    rest = 1.0 - np.concatenate([[0.0], np.cumsum(w0)[:-1]])
    return np.clip(w0[:-1] / np.maximum(rest[:-1], 1e-300), _V_EPS, 1 - _V_EPS)


def _log_weights(v: np.ndarray) -> np.ndarray:
    """Stick-breaking log weights from sticks ``v`` of shape (C, K - 1): (C, K)."""
    log_v = np.log(v)
    log_rest = np.cumsum(np.log1p(-v), axis=1)
    C = v.shape[0]
    return np.concatenate([log_v, np.zeros((C, 1))], axis=1) + np.concatenate([np.zeros((C, 1)), log_rest], axis=1)


class _Gaussian:
    """Gaussian components: conjugate means, Metropolis log-scales (module docstring)."""

    names = ("mu", "sigma")

    def __init__(self, x, counts, prior, C, n_mh):
        self.shift = float(np.average(x, weights=counts))  # centred data: stable sufficient statistics
        self.xc = x - self.shift
        self.feats = np.column_stack([np.ones_like(x), self.xc, self.xc * self.xc])
        self.m = np.asarray(prior["mu_loc"], dtype=np.float64) - self.shift
        self.s2 = float(prior["mu_scale"]) ** 2
        self.ell, self.tau = float(prior["sigma_logmean"]), float(prior["sigma_logsd"])
        self.mu = np.tile(np.asarray(prior["init_mu"], dtype=np.float64) - self.shift, (C, 1))
        self.log_floor = _log_floor(prior)
        _, u0 = _start_above_floor(
            "gaussian", self.mu, np.log(np.asarray(prior["init_sigma"], np.float64)), self.log_floor
        )
        self.u = np.tile(u0, (C, 1))
        self.n_mh = n_mh

    def log_terms(self, logw):
        """log w_k + log phi_k(x_i) less the data-only constant, shape (C, K, n)."""
        const = logw - self.u
        resp = self.xc[None, None, :] - self.mu[:, :, None]
        resp *= (np.sqrt(0.5) * np.exp(-self.u))[:, :, None]
        np.square(resp, out=resp)
        np.subtract(const[:, :, None], resp, out=resp)
        return resp

    point_constant = -_LOG_SQRT_2PI

    def update(self, suff, rng):
        nk, sx, sxx = suff[..., 0], suff[..., 1], suff[..., 2]
        prec = 1.0 / self.s2 + nk * np.exp(-2 * self.u)
        mean = (self.m / self.s2 + sx * np.exp(-2 * self.u)) / prec
        self.mu = mean + rng.standard_normal(nk.shape) / np.sqrt(prec)
        ss = np.maximum(sxx - 2 * self.mu * sx + nk * self.mu * self.mu, 0.0)
        step = 2.4 / np.sqrt(1.0 / self.tau**2 + 2.0 * nk)
        ell, tau = self.ell, self.tau

        def logpost(uu):
            return -0.5 * ((uu - ell) / tau) ** 2 - nk * uu - 0.5 * ss * np.exp(-2 * uu)

        lp, accepted, occupied = logpost(self.u), 0, nk > 0
        for _ in range(self.n_mh):
            prop = self.u + step * rng.standard_normal(nk.shape)
            lp_prop = logpost(prop)
            acc = (np.log(rng.random(nk.shape)) < lp_prop - lp) & (prop >= self.log_floor)
            self.u = np.where(acc, prop, self.u)
            lp = np.where(acc, lp_prop, lp)
            accepted += int((acc & occupied).sum())
        empty = ell + tau * rng.standard_normal(nk.shape)  # empty: prior draws, above the floor
        low = ~occupied & (empty < self.log_floor)
        if low.any():  # those below it from the prior truncated there (so all are its draws)
            a = (self.log_floor - ell) / tau
            from scipy.stats import truncnorm

            empty[low] = truncnorm.rvs(a, np.inf, loc=ell, scale=tau, size=int(low.sum()), random_state=rng)
        self.u = np.where(occupied, self.u, empty)
        return accepted, self.n_mh * int(occupied.sum())

    def params(self):
        return self.mu + self.shift, np.exp(self.u)


class _Beta:
    """Beta components on expit(x): Metropolis on (log a, log b) (module docstring)."""

    names = ("beta_a", "beta_b")
    point_constant = 0.0

    def __init__(self, x, counts, prior, C, n_mh):
        self.ls1, self.ls2 = log_expit(x), log_expit(-x)
        self.feats = np.column_stack([np.ones_like(x), self.ls1, self.ls2])
        self.la0 = np.asarray(prior["a_logloc"], dtype=np.float64)
        self.lb0 = np.asarray(prior["b_logloc"], dtype=np.float64)
        self.tau = float(prior["ab_logsd"])
        self.log_floor = _log_floor(prior)
        start_a, start_b = _start_above_floor(
            "beta",
            np.log(np.asarray(prior["init_a"], dtype=np.float64)),
            np.log(np.asarray(prior["init_b"], dtype=np.float64)),
            self.log_floor,
        )
        self.la, self.lb = np.tile(start_a, (C, 1)), np.tile(start_b, (C, 1))
        self.n_mh = n_mh

    def below_floor(self, la, lb):
        """Whether 1/a + 1/b, about the variance of the component's logit, is below the floor's square."""
        return np.exp(-la) + np.exp(-lb) < np.exp(2 * self.log_floor)

    def log_terms(self, logw):
        a, b = np.exp(self.la), np.exp(self.lb)
        const = logw - betaln(a, b)
        return const[:, :, None] + a[:, :, None] * self.ls1[None, None, :] + b[:, :, None] * self.ls2[None, None, :]

    def update(self, suff, rng):
        nk, s1, s2 = suff[..., 0], suff[..., 1], suff[..., 2]
        la0, lb0, tau = self.la0, self.lb0, self.tau

        def logpost(la, lb):
            a, b = np.exp(la), np.exp(lb)
            return a * s1 + b * s2 - nk * betaln(a, b) - 0.5 * ((la - la0) / tau) ** 2 - 0.5 * ((lb - lb0) / tau) ** 2

        lp, accepted, occupied = logpost(self.la, self.lb), 0, nk > 0
        step = 1.7 / np.sqrt(1.0 / tau**2 + nk)
        for _ in range(self.n_mh):
            for sign in (1.0, -1.0):  # concentration, then location
                e = step * rng.standard_normal(nk.shape)
                pla, plb = self.la + e, self.lb + sign * e
                lp_prop = logpost(pla, plb)
                acc = (np.log(rng.random(nk.shape)) < lp_prop - lp) & ~self.below_floor(pla, plb)
                self.la, self.lb = np.where(acc, pla, self.la), np.where(acc, plb, self.lb)
                lp = np.where(acc, lp_prop, lp)
                accepted += int((acc & occupied).sum())
        ea = la0 + tau * rng.standard_normal(nk.shape)  # empty: prior draws, above the floor
        eb = lb0 + tau * rng.standard_normal(nk.shape)
        for _ in range(_MAX_PRIOR_TRIES):
            low = ~occupied & self.below_floor(ea, eb)
            if not low.any():
                break
            ea[low] = (la0 + tau * rng.standard_normal(nk.shape))[low]
            eb[low] = (lb0 + tau * rng.standard_normal(nk.shape))[low]
        self.la, self.lb = np.where(occupied, self.la, ea), np.where(occupied, self.lb, eb)
        return accepted, 2 * self.n_mh * int(occupied.sum())

    def params(self):
        return np.exp(self.la), np.exp(self.lb)


_FAMILIES = {"gaussian": _Gaussian, "beta": _Beta}
_MAX_PRIOR_TRIES = 1000
"""Most rounds of redrawing empty Beta components below the floor from their prior (as the compiled sweeps)."""


def _log_floor(prior: dict) -> float:
    """log of the prior's ``scale_floor`` (the components' smallest spread), -inf without one."""
    floor = float(prior.get("scale_floor", 0.0))
    return float(np.log(floor)) if floor > 0 else -np.inf


def _start_above_floor(family: str, th1: np.ndarray, th2: np.ndarray, log_floor: float):
    """Start parameters (mu, log sigma; or log a, log b) raised onto the floor ``exp(log_floor)``
    where below it: a Gaussian scale to the floor, a too concentrated Beta component's shapes
    scaled down together until 1/a + 1/b equals the floor's square."""
    if family == "gaussian":
        return th1, np.maximum(th2, log_floor)
    lift = np.log(np.maximum(np.exp(2 * log_floor) / (np.exp(-th1) + np.exp(-th2)), 1.0))
    return th1 - lift, th2 - lift


def _sample_numpy(x, counts, prior, K, C, tune, thin, n_keep, n_mh, family, random_seed):
    """The sweeps in vectorised numpy (the reference implementation; ``backend="numpy"``)."""
    rng = np.random.default_rng(random_seed)
    comps = _FAMILIES[family](x, counts, prior, C, n_mh)

    c_int = np.floor(counts)
    c_frac = counts - c_int
    has_frac = bool(np.any(c_frac > 0))
    has_int = bool(np.any(c_int > 0))
    c_int_i = c_int.astype(np.int64)
    a, b = float(prior["alpha_shape"]), float(prior["alpha_rate"])

    v = np.tile(start_sticks(prior["init_weight"]), (C, 1))
    alpha = np.full(C, a / b)

    n_iter = tune + n_keep * thin
    p1_name, p2_name = comps.names
    out = {k: np.empty((C, n_keep, K)) for k in ("weight", p1_name, p2_name)}
    out_alpha = np.empty((C, n_keep))
    out_ll = np.empty((C, n_keep))
    out_occ = np.empty((C, n_keep), dtype=np.int64)
    accepted = proposed = 0
    arangeK = np.arange(K)
    frac_feats = comps.feats * c_frac[:, None]
    for it in range(n_iter):
        # 1. allocations: responsibilities r[c, k, i] by a log-sum-exp over components (axis 1,
        #    so the reductions run along contiguous rows of points), in place
        resp = comps.log_terms(_log_weights(v))
        top = resp.max(axis=1, keepdims=True)
        resp -= top
        np.exp(resp, out=resp)
        tot = resp.sum(axis=1, keepdims=True)
        resp /= tot
        suff = np.zeros((C, K, 3))  # per component: n_k and the family's two sufficient sums
        if has_int:
            suff += rng.multinomial(c_int_i, resp.transpose(0, 2, 1)).transpose(0, 2, 1) @ comps.feats
        if has_frac:
            k_draw = np.minimum((np.cumsum(resp, axis=1) < rng.random((C, 1, x.size))).sum(axis=1), K - 1)
            suff += (k_draw[:, None, :] == arangeK[None, :, None]) @ frac_feats
        nk = suff[..., 0]
        # 2. sticks
        tail = nk.sum(axis=1, keepdims=True) - np.cumsum(nk, axis=1)
        v = np.clip(rng.beta(1.0 + nk[:, :-1], alpha[:, None] + tail[:, :-1]), _V_EPS, 1 - _V_EPS)
        # 3. concentration
        alpha = rng.gamma(a + K - 1, 1.0 / (b - np.log1p(-v).sum(axis=1)))
        # 4-5. component parameters
        acc, prop = comps.update(suff, rng)
        accepted, proposed = accepted + acc, proposed + prop
        if it >= tune and (it - tune) % thin == 0:
            j = (it - tune) // thin
            p1, p2 = comps.params()
            out["weight"][:, j] = np.exp(_log_weights(v))
            out[p1_name][:, j] = p1
            out[p2_name][:, j] = p2
            out_alpha[:, j] = alpha
            out_ll[:, j] = (top[:, 0] + np.log(tot[:, 0]) + comps.point_constant) @ counts  # at the sweep's start
            out_occ[:, j] = (nk > 0).sum(axis=1)
    return out, out_alpha, out_ll, out_occ, {"mh_acceptance": float(accepted / max(proposed, 1))}


def _chain_streams(random_seed, C: int) -> list[np.random.Generator]:
    """One independent generator per chain, spawned from ``random_seed``."""
    if isinstance(random_seed, np.random.Generator):
        return list(random_seed.spawn(C))
    return [np.random.Generator(np.random.PCG64(ss)) for ss in np.random.SeedSequence(random_seed).spawn(C)]


def _family_arrays(x, counts, prior, K, family):
    """The kernel's data and prior arrays, and the start of the component parameters."""
    zeros = np.zeros(K)
    if family == "gaussian":
        shift = float(np.average(x, weights=counts))  # centred data: stable sufficient statistics
        data = (x - shift, np.zeros_like(x))
        hyper = (
            np.asarray(prior["mu_loc"], dtype=np.float64) - shift,
            float(prior["mu_scale"]) ** 2,
            float(prior["sigma_logmean"]),
            float(prior["sigma_logsd"]),
            zeros,
            zeros,
        )
        start = (
            np.asarray(prior["init_mu"], dtype=np.float64) - shift,
            np.log(np.asarray(prior["init_sigma"], dtype=np.float64)),
        )
        return data, hyper, start, shift
    data = (log_expit(x), log_expit(-x))
    tau = float(prior["ab_logsd"])
    hyper = (
        zeros,
        1.0,
        0.0,
        tau,
        np.asarray(prior["a_logloc"], dtype=np.float64),
        np.asarray(prior["b_logloc"], dtype=np.float64),
    )
    start = (
        np.log(np.asarray(prior["init_a"], dtype=np.float64)),
        np.log(np.asarray(prior["init_b"], dtype=np.float64)),
    )
    return data, hyper, start, 0.0


class _CompiledChains:
    """The sweeps compiled (:mod:`bayescal.bayesian._gibbs_kernels`), one chain per task, in threads,
    run in one or more stretches: each chain keeps its state and generator between them, so the
    draws are those of one uninterrupted run."""

    def __init__(
        self,
        x,
        counts,
        prior,
        K,
        C,
        tune,
        thin,
        n_keep,
        n_mh,
        label_swaps,
        family,
        random_seed,
        n_threads,
        hmc_steps,
        merge_split,
        dispersed=False,
        alpha_update="conditional",
    ):
        from bayescal.bayesian import _gibbs_kernels as kern

        self.kern = kern
        (self.xa, self.xb), hyper, (th1_0, th2_0), self.shift = _family_arrays(x, counts, prior, K, family)
        self.m, self.s2, self.ell, self.tau, self.loc1, self.loc2 = hyper
        c_int = np.floor(counts)
        self.c_frac = counts - c_int
        self.c_int = c_int.astype(np.int64)
        self.counts = counts
        self.a, self.b = float(prior["alpha_shape"]), float(prior["alpha_rate"])
        self.log_floor = _log_floor(prior)
        th1_0, th2_0 = _start_above_floor(family, th1_0, th2_0, self.log_floor)
        self.tune, self.thin, self.n_keep, self.n_mh = tune, thin, n_keep, n_mh
        self.label_swaps, self.hmc_steps, self.family = label_swaps, hmc_steps, family
        self.merge_split = merge_split
        self.collapsed_alpha = alpha_update == "collapsed"
        self.n_iter = tune + n_keep * thin
        self.p1_name, self.p2_name = _FAMILIES[family].names
        self.out = {k: np.empty((C, n_keep, K)) for k in ("weight", self.p1_name, self.p2_name)}
        self.out_alpha = np.empty((C, n_keep))
        self.out_ll = np.empty((C, n_keep))
        self.out_occ = np.empty((C, n_keep), dtype=np.int64)
        self.stats = np.zeros((C, 8))
        self.minv = np.ones((C, 3 * K - 1))  # the Hamiltonian moves' adaptation, kept between stretches
        self.hmc_eps = np.full((C, 1), 0.2)
        self.gens = _chain_streams(random_seed, C)
        self.family_code = kern.GAUSSIAN if family == "gaussian" else kern.BETA
        v0 = start_sticks(prior["init_weight"])
        if dispersed:
            self.state = [self._prior_draw(rng, K) for rng in self.gens]
        else:
            self.state = [[v0.copy(), th1_0.copy(), th2_0.copy(), self.a / self.b] for _ in range(C)]
        self.it = 0  # sweeps run so far
        self.workers = min(C, n_threads if n_threads is not None else (os.cpu_count() or 1))

    def _prior_draw(self, rng: np.random.Generator, K: int) -> list:
        """One chain's start drawn from the prior with its own generator (``start="dispersed"``):
        alpha ~ Gamma(a, b), sticks v_k ~ Beta(1, alpha), each component's parameters from their
        priors (Gaussian: mean and log scale; Beta: log shapes), raised onto the floor."""
        alpha = rng.gamma(self.a, 1.0 / self.b)
        v = np.clip(rng.beta(1.0, alpha, K - 1), _V_EPS, 1 - _V_EPS)
        if self.family == "gaussian":
            th1 = self.m + np.sqrt(self.s2) * rng.standard_normal(K)
            th2 = self.ell + self.tau * rng.standard_normal(K)
        else:
            th1 = self.loc1 + self.tau * rng.standard_normal(K)
            th2 = self.loc2 + self.tau * rng.standard_normal(K)
        th1, th2 = _start_above_floor(self.family, th1, th2, self.log_floor)
        return [v, th1, th2, alpha]

    def advance(self, n_kept: int) -> None:
        """Run every chain on until it has ``n_kept`` kept draws (all of them: to the last sweep)."""
        it_end = self.n_iter if n_kept >= self.n_keep else self.tune + n_kept * self.thin
        if it_end <= self.it:
            return
        it0 = self.it

        def run(c: int) -> None:
            v, th1, th2, alpha = self.state[c]
            self.state[c][3] = self.kern.run_chain(
                self.family_code, self.xa, self.xb, self.c_int, self.c_frac, self.counts, self.m, self.s2, self.ell,
                self.tau, self.loc1, self.loc2, self.a, self.b, self.log_floor, v, th1, th2, float(alpha), it0, it_end, self.tune,
                self.thin, self.n_mh, self.label_swaps, self.hmc_steps, self.merge_split, self.collapsed_alpha, self.gens[c], self.out["weight"][c],
                self.out[self.p1_name][c], self.out[self.p2_name][c], self.out_alpha[c], self.out_ll[c],
                self.out_occ[c], self.stats[c], self.minv[c], self.hmc_eps[c],
            )  # fmt: skip

        C = len(self.gens)
        if self.workers > 1:
            with ThreadPoolExecutor(max_workers=self.workers) as pool:
                list(pool.map(run, range(C)))
        else:
            for c in range(C):
                run(c)
        self.it = it_end

    def draws(self, n_kept: int):
        """The first ``n_kept`` kept draws of every chain (as ``_sample_numpy`` returns them)."""
        out = {k: val[:, :n_kept].copy() for k, val in self.out.items()}
        out_ll = self.out_ll[:, :n_kept].copy()
        if self.family == "gaussian":
            out[self.p1_name] += self.shift
            out_ll += _LOG_SQRT_2PI * -self.counts.sum()
        stats = self.stats
        extra = {"mh_acceptance": float(stats[:, 0].sum() / max(stats[:, 1].sum(), 1.0))}
        if self.label_swaps:
            extra["swap_acceptance"] = float(stats[:, 2].sum() / max(stats[:, 3].sum(), 1.0))
        if self.merge_split:
            extra["merge_split_acceptance"] = float(stats[:, 6].sum() / max(stats[:, 7].sum(), 1.0))
        if self.hmc_steps:
            extra["hmc_acceptance"] = float(stats[:, 4].sum() / max(stats[:, 5].sum(), 1.0))
        return out, self.out_alpha[:, :n_kept].copy(), out_ll, self.out_occ[:, :n_kept].copy(), extra


def fit_gibbs(
    x: np.ndarray,
    counts: np.ndarray,
    prior: dict,
    *,
    n_components: int,
    random_seed: int | None,
    draws: int = 500,
    tune: int = 500,
    thin: int | None = None,
    chains: int = 2,
    n_mh: int = 2,
    family: str = "gaussian",
    label_swaps: bool = False,
    backend: str = "numba",
    n_threads: int | None = None,
    start: str = "auto",
    hmc_steps: int | str = "auto",
    merge_split: int = 0,
    alpha_update: str = "conditional",
) -> ClassFit:
    """Sample one class's mixture posterior with the blocked Gibbs sampler (module docstring).

    Parameters
    ----------
    x : ndarray of shape (n,)
        Working-scale points (raw scores or bin centres).
    counts : ndarray of shape (n,)
        Non-negative frequency weights.
    prior : dict
        Hyperparameters of ``family`` (:func:`bayescal.bayesian.priors.prior_keys`);
        ``init_*`` start every chain. An optional ``scale_floor`` (default 0) truncates the
        components' priors below that spread (module docstring, "Floor").
    n_components : int
        Truncation level K (>= 2).
    draws : int, default 500
        Kept draws per chain (after thinning: fewer, less correlated draws than the
        other routes' 1000).
    random_seed : int, numpy.random.Generator or None
        Seed of the chains' generators (one spawned per chain); the same seed gives the same
        draws, whatever ``n_threads``.
    tune : int, default 500
        Discarded warm-up sweeps per chain.
    thin : int or None, default None
        Keep every ``thin``-th sweep after warm-up (None: :func:`default_thin` of the class's
        total count: 40 up to 180 units, 12 at 600, 2 from 3,600).
    chains : int, default 2
        Independent chains.
    n_mh : int, default 2
        Metropolis steps on each component's scale (or shapes) per sweep.
    family : {"gaussian", "beta"}, default "gaussian"
        Component family (:mod:`bayescal.bayesian.mixture`).
    label_swaps : bool, default False
        Exchange adjacent components' labels after each allocation step (module docstring).
    backend : {"numba", "numpy"}, default "numba"
        Compiled sweeps, or the numpy reference implementation (plain sweeps only; its own
        random stream, so other draws from the same posterior).
    n_threads : int or None, default None
        Threads running the chains (None: one per chain, at most the machine's CPUs).
    hmc_steps : int or "auto", default "auto"
        Leapfrog steps of one Hamiltonian move of the sticks and components, with the
        allocations summed out, in every warm-up sweep and before each kept draw (module
        docstring, "Hamiltonian moves"); 0 runs the plain sweeps. "auto":
        :data:`HMC_AUTO_STEPS` when the class's total count exceeds :data:`HMC_AUTO_UNITS`
        (and the backend is numba), else 0. On bin centres give ``prior["scale_floor"]`` (the
        calibrator does), or the moves find the likelihood's spikes (module docstring, "Floor").
    merge_split : int, default 0
        Merge-split proposals per sweep, with the allocations summed out (module docstring,
        "Merge-split moves"); Gaussian components only, compiled sweeps only.
    alpha_update : {"conditional", "collapsed"}, default "conditional"
        How a sweep draws the concentration :math:`\alpha` (module docstring, "Concentration"):
        given the sticks, after them (step 3), or given the components' counts alone, with the
        sticks integrated out, before the sticks are drawn given it ("collapsed"; compiled sweeps
        only).
    start : {"auto", "mode", "prior", "single", "dispersed"}, default "auto"
        Where every chain starts: at the posterior mode found from the prior's ``init_*``
        values by :func:`bayescal.bayesian.mode_start.mode_start`, at those values
        themselves ("prior"), with one component holding the whole class
        (:func:`bayescal.bayesian.mode_start.single_start`, the customary start of a
        Dirichlet-process-mixture sampler), or each chain at its own draw from the prior
        ("dispersed": over-dispersed starts, so that chains which fail to meet show it in
        R-hat; compiled sweeps only; module docstring, "Start"). "auto" (:func:`auto_start`):
        the mode when the class's total count exceeds :data:`MODE_START_UNITS`, where the
        warm-up sweeps alone fall short of the high-posterior region; dispersed starts above
        :data:`DISPERSED_START_UNITS` when the plain compiled sweeps run (``hmc_steps``
        resolves to 0) above a ``scale_floor``, where chains from one start understate their
        disagreement; else the prior's values.

    Returns
    -------
    ClassFit
        ``posterior`` with ``weight`` and the family's two parameters (``mu``, ``sigma`` or
        ``beta_a``, ``beta_b``; chain, draw, component) and ``alpha`` (chain, draw);
        ``sample_stats`` with ``class_log_likelihood`` (the class's weighted data log-likelihood;
        not ArviZ's pointwise ``log_likelihood``, so ``arviz.loo`` does not mistake it) and
        ``n_occupied`` (components holding any weight) per draw; ``diagnostics`` with
        ``runtime_s``, ``n_iterations``, ``mh_acceptance`` (and ``swap_acceptance`` and
        ``hmc_acceptance``, the mean acceptance probability of the Hamiltonian moves after the
        warm-up, when they run, and ``merge_split_acceptance``, the share of merge-split proposals
        accepted), ``backend``.
    """
    chains = GibbsChains(
        x, counts, prior, n_components=n_components, random_seed=random_seed, draws=draws, tune=tune, thin=thin,
        chains=chains, n_mh=n_mh, family=family, label_swaps=label_swaps, backend=backend, n_threads=n_threads,
        start=start, hmc_steps=hmc_steps, merge_split=merge_split, alpha_update=alpha_update,
    )  # fmt: skip
    chains.advance(int(draws))
    return chains.class_fit()


class GibbsChains:
    """The chains of :func:`fit_gibbs`, run in stretches: :meth:`advance` runs them on to a number
    of kept draws and :meth:`class_fit` returns the draws so far. A chain keeps its state and
    generator between stretches, so its draws are those of :func:`fit_gibbs` with the same
    arguments; ``components="select"`` uses this to stop the chains of the family it does not keep
    (:class:`bayescal.bayesian.dpm.DPMCalibrator`). Stretches need the compiled sweeps (the
    Hamiltonian moves' step size and mass, set in the warm-up, carry over); with the numpy
    sweeps the chains run in one.

    Parameters are those of :func:`fit_gibbs`; the start search (``start``) runs here.
    """

    def __init__(
        self,
        x: np.ndarray,
        counts: np.ndarray,
        prior: dict,
        *,
        n_components: int,
        random_seed: int | None,
        draws: int = 500,
        tune: int = 500,
        thin: int | None = None,
        chains: int = 2,
        n_mh: int = 2,
        family: str = "gaussian",
        label_swaps: bool = False,
        backend: str = "numba",
        n_threads: int | None = None,
        start: str = "auto",
        hmc_steps: int | str = "auto",
        merge_split: int = 0,
        alpha_update: str = "conditional",
    ) -> None:
        if isinstance(hmc_steps, str) and hmc_steps != "auto":
            raise ValueError(f"hmc_steps={hmc_steps!r} must be 'auto' or an integer >= 0.")
        for name, val, low in (
            ("n_components", n_components, 2),
            ("draws", draws, 1),
            ("tune", tune, 0),
            ("thin", 1 if thin is None else thin, 1),
            ("chains", chains, 1),
            ("n_mh", n_mh, 1),
            ("n_threads", 1 if n_threads is None else n_threads, 1),
            ("hmc_steps", 0 if hmc_steps == "auto" else hmc_steps, 0),
            ("merge_split", merge_split, 0),
        ):
            try:
                whole = not isinstance(val, (str, bytes, bool, np.bool_)) and int(val) == val and val >= low
            except (TypeError, ValueError, OverflowError):  # text, None, NaN, infinity
                whole = False
            if not whole:
                raise ValueError(f"{name}={val!r} must be an integer >= {low}.")
        if backend not in ("numba", "numpy"):
            raise ValueError(f"backend={backend!r} is not one of ('numba', 'numpy').")
        if backend == "numpy" and (label_swaps or hmc_steps not in (0, "auto") or merge_split):
            raise ValueError(
                "backend='numpy' runs the plain blocked sweeps: set label_swaps=False, hmc_steps=0 and merge_split=0."
            )
        if alpha_update not in ALPHA_UPDATES:
            raise ValueError(f"alpha_update={alpha_update!r} is not one of {ALPHA_UPDATES}.")
        if backend == "numpy" and alpha_update != "conditional":
            raise ValueError("alpha_update='collapsed' runs in the compiled sweeps: set backend='numba'.")
        if merge_split and family != "gaussian":
            raise ValueError(
                f"merge_split={merge_split} proposes moves of Gaussian components, but this fit has {family!r} "
                "components: with DPMCalibrator, set components='gaussian'."
            )
        if family not in _FAMILIES:
            raise ValueError(f"family={family!r} is not one of {tuple(_FAMILIES)}.")
        if start not in STARTS:
            raise ValueError(f"start={start!r} is not one of {STARTS}.")
        if start == "dispersed" and backend == "numpy":
            raise ValueError("start='dispersed' draws each chain's start in the compiled sweeps: set backend='numba'.")
        x = np.asarray(x, dtype=np.float64)
        counts = np.asarray(counts, dtype=np.float64)
        if x.ndim != 1 or counts.shape != x.shape or not np.all(np.isfinite(x)):
            raise ValueError("x and counts must be finite 1-D arrays of the same length.")
        if not np.all(np.isfinite(counts)) or np.any(counts < 0) or not counts.sum() > 0:
            raise ValueError("counts must be finite and non-negative with a positive sum.")
        for key, value in prior.items():  # the sweeps read K from these vectors, the outputs from n_components
            if np.ndim(value) > 0 and np.shape(value) != (int(n_components),):
                raise ValueError(
                    f"prior[{key!r}] has shape {np.shape(value)}, not ({int(n_components)},) for "
                    f"n_components={n_components}: resolve the priors with the same n_components."
                )
        keep = counts > 0
        x, counts = x[keep], counts[keep]
        units = float(counts.sum())
        if thin is None:
            thin = default_thin(units)
        K, C = int(n_components), int(chains)
        n_keep = int(draws)
        n_iter = int(tune) + n_keep * int(thin)
        t0 = time.perf_counter()
        if hmc_steps == "auto":
            hmc_steps = HMC_AUTO_STEPS if units > HMC_AUTO_UNITS and backend == "numba" else 0
        if start == "auto":
            start = auto_start(units, int(hmc_steps), backend, float(prior.get("scale_floor", 0.0)))
        if start == "mode":
            prior = mode_start(x, counts, prior, family)
        elif start == "single":
            prior = single_start(x, counts, prior, family)
        self.family, self.backend, self.start, self.thin, self.n_keep = family, backend, start, int(thin), n_keep
        self.n_iter, self.K, self.C = n_iter, K, C
        self.x, self.counts, self.prior, self.random_seed = x, counts, prior, random_seed
        self.tune, self.n_mh = int(tune), int(n_mh)
        self.kept = 0
        self._numpy = None
        self.compiled = None
        if backend == "numba":
            self.compiled = _CompiledChains(
                x, counts, prior, K, C, int(tune), int(thin), n_keep, int(n_mh), bool(label_swaps), family,
                random_seed, n_threads, int(hmc_steps), int(merge_split), start == "dispersed", alpha_update,
            )  # fmt: skip
        self.in_stretches = backend == "numba"
        self.runtime_s = time.perf_counter() - t0  # the start search and set-up; advance adds its stretches

    def advance(self, n_kept: int) -> None:
        """Run the chains on until each has ``n_kept`` kept draws (at most ``draws``); without
        :attr:`in_stretches`, the first call runs them to the end."""
        n_kept = min(int(n_kept), self.n_keep) if self.in_stretches else self.n_keep
        if n_kept <= self.kept:
            return
        t0 = time.perf_counter()
        if self.compiled is not None:
            self.compiled.advance(n_kept)
        else:
            self._numpy = _sample_numpy(
                self.x, self.counts, self.prior, self.K, self.C, self.tune, self.thin, self.n_keep, self.n_mh,
                self.family, self.random_seed,
            )  # fmt: skip
        self.kept = n_kept
        self.runtime_s += time.perf_counter() - t0

    def class_fit(self) -> ClassFit:
        """The draws kept so far as a :class:`ClassFit` (:func:`fit_gibbs`'s Returns)."""
        n_keep = self.kept
        if self.compiled is not None:
            out, out_alpha, out_ll, out_occ, extra = self.compiled.draws(n_keep)
            n_iter = self.compiled.it
        else:
            out, out_alpha, out_ll, out_occ, extra = self._numpy
            n_iter = self.n_iter
        diagnostics = {
            "route": "gibbs",
            "family": self.family,
            "runtime_s": float(self.runtime_s),
            "n_iterations": int(n_iter),
            "thin": self.thin,
            "chains": self.C,
            "mean_occupied": float(out_occ.mean()),
            "backend": self.backend,
            "start": self.start,
        } | extra
        return chains_class_fit(out, out_alpha, out_ll, out_occ, diagnostics)


def chains_class_fit(
    out: dict[str, np.ndarray], alpha: np.ndarray, log_lik: np.ndarray, occupied: np.ndarray, diagnostics: dict
) -> ClassFit:
    """The :class:`ClassFit` of chains' kept draws (:func:`fit_gibbs`'s Returns): ``out`` maps
    ``weight`` and the family's two parameter names to arrays (chain, draw, component); ``alpha``,
    the class's log-likelihood ``log_lik`` and the ``occupied`` components' count are (chain, draw)."""
    C, n_keep, K = out["weight"].shape
    dims3, dims2 = ("chain", "draw", "component"), ("chain", "draw")
    coords = {"chain": np.arange(C), "draw": np.arange(n_keep), "component": np.arange(K)}
    posterior = xr.Dataset({k: (dims3, val) for k, val in out.items()} | {"alpha": (dims2, alpha)}, coords=coords)
    stats = xr.Dataset(
        {"class_log_likelihood": (dims2, log_lik), "n_occupied": (dims2, occupied)},
        coords={"chain": coords["chain"], "draw": coords["draw"]},
    )
    return ClassFit(posterior=posterior, diagnostics=diagnostics, sample_stats=stats)
