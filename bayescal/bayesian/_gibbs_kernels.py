r"""Compiled sweeps of the blocked Gibbs sampler (:mod:`bayescal.bayesian.gibbs`).

One call of the kernel runs one chain of one class from its start to its last sweep, with
its own ``numpy.random.Generator`` (numba reads and advances the generator's state, so a
chain is reproducible from the generator's seed and independent of the thread it runs on).
The kernels release the GIL, so chains run in parallel threads. The sweeps' optional
Hamiltonian moves (:func:`hmc_move`) run on :func:`marginal_logpost`, the class's log
posterior with the allocations summed out. The module also holds the
mixtures' log-sum-exp over components (:func:`mixture_logsumexp`, for
:func:`bayescal.bayesian.mixture.log_density`), which shares the sweeps' compiled exp.

Numba compiles them on first use and caches the machine code on disk (next to this file,
or in numba's user-wide cache when the package directory is read-only, or in
``NUMBA_CACHE_DIR``); when no cache location is writable the kernels are compiled in
memory, once per process.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from bayescal._numba import njit

__all__ = ["BETA", "GAUSSIAN", "first_inverse_mass", "hmc_move", "marginal_logpost", "mixture_logsumexp", "run_chain"]

GAUSSIAN = 0
BETA = 1
_FEW = 6
"""Units that the conditional binomials leave to be allocated one by one."""
_MODERATE = 32
"""Largest count allocated unit by unit, the most likely component first; larger ones by
conditional binomials over the components (the likely ones first) while more than
:data:`_FEW` units are left."""
_LIKELY = 0.02
"""Components at least this likely at a point take their binomial draws first (so that the
count is used up before the unlikely ones)."""


_BTRS_MIN_MEAN = 10.0
"""Binomial draws whose smaller expected count, n min(p, 1 - p), is at least this use BTRS
(:func:`binomial`); smaller ones numpy's algorithm (inversion)."""
_STIRLING_TAIL = np.array(
    [
        0.0810614667953272,
        0.0413406959554092,
        0.0276779256849983,
        0.02079067210376509,
        0.0166446911898211,
        0.0138761288230707,
        0.0118967099458917,
        0.0104112652619720,
        0.00925546218271273,
        0.00833056343336287,
    ]
)
"""log k! - [(k + 1/2) log(k + 1) - (k + 1) + log(2 pi) / 2] for k = 0..9 (:func:`stirling_tail`)."""


_MAX_PRIOR_TRIES = 1000
"""Most draws from an empty Beta component's prior until one lies above the floor (the last is kept)."""
_HMC_MAX_LOG_SHAPE = 200.0
"""Largest magnitude of a log scale or log shape a Hamiltonian trajectory may reach; beyond it
the trajectory has diverged and the move is rejected."""
_HMC_TARGET = 0.7
"""Mean acceptance probability that the warm-up tunes the Hamiltonian moves' step size to."""


LBETA_STIRLING = 1e5
"""Larger Beta shape from which :func:`lbeta` takes Stirling's series (see there)."""

_FASTMATH = {"reassoc", "contract", "nsz"}
"""Floating-point freedoms the compiler may take: reordering sums (so reductions vectorise), fused
multiply-adds and ignoring the sign of zero; not assuming away NaN or infinity."""


def _jit(fn):
    """Compiled with the disk cache where possible (:func:`bayescal._numba.njit`)."""
    return njit(fn, fastmath=_FASTMATH)


_inline = numba.njit(fastmath=_FASTMATH)
_inline_always = numba.njit(inline="always", fastmath=_FASTMATH)
"""Helpers are compiled as functions (LLVM still inlines the small ones): inlined at numba's IR
level, every call site of a helper is type-inferred and optimised anew, which about doubles the
compilation of the first fit after installing (``docs/evidence/speed.md``, the first fit ever;
the change is in the CHANGELOG). The few helpers
marked ``_inline_always`` stay inlined into their callers because their floating-point results
depend on it (the compiler may reassociate and contract across the call): so compiled, the
sampler reproduces bit for bit the draws of the committed studies (``benchmarks/dpm_coverage.py
--verify``)."""


_LOG2E = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10


@_inline
def exp_inplace(z, bits):  # pragma: no cover - compiled
    r"""``z[:] = exp(z)`` for ``z <= 0`` (below -700 taken as -700), to double precision
    (relative error below 4e-16): :math:`e^z = 2^j e^r`, :math:`j = \operatorname{round}(z / \log 2)`,
    :math:`|r| \le \log(2) / 2`, :math:`e^r` by its Taylor polynomial of degree 13, and
    :math:`2^j` built in the exponent bits. Unlike ``math.exp`` the loop vectorises."""
    n = z.shape[0]
    for i in range(n):
        x = max(z[i], -700.0)
        j = math.floor(x * _LOG2E + 0.5)
        r = x - j * _LN2_HI - j * _LN2_LO
        p = 1.0 / 6227020800.0  # Horner: sum_{m <= 13} r^m / m!
        p = p * r + 1.0 / 479001600.0
        p = p * r + 1.0 / 39916800.0
        p = p * r + 1.0 / 3628800.0
        p = p * r + 1.0 / 362880.0
        p = p * r + 1.0 / 40320.0
        p = p * r + 1.0 / 5040.0
        p = p * r + 1.0 / 720.0
        p = p * r + 1.0 / 120.0
        p = p * r + 1.0 / 24.0
        p = p * r + 1.0 / 6.0
        p = p * r + 0.5
        p = p * r + 1.0
        z[i] = p * r + 1.0
        bits[i] = (np.int64(j) + 1023) << 52
    scale = bits.view(np.float64)
    for i in range(n):
        z[i] *= scale[i]


@_inline
def exp_shifted_sums(E, top, tot, bits):  # pragma: no cover - compiled
    """Log terms ``E`` (K, n) to ``exp(E[k, i] - top[i])`` in place, with their column sums in ``tot``
    (n): the exp-and-sum of a log-sum-exp over components, in loops over points that vectorise."""
    K, n = E.shape
    for k in range(K):
        row = E[k]
        for i in range(n):
            row[i] -= top[i]
    exp_inplace(E.reshape(K * n), bits)
    for i in range(n):
        tot[i] = 0.0
    for k in range(K):
        row = E[k]
        for i in range(n):
            tot[i] += row[i]


@_jit
def mixture_logsumexp(xa, xb, const, p1, p2, code, out, r0, r1):  # pragma: no cover - compiled
    """Rows ``r0:r1`` of the mixtures' log densities at n points (:func:`bayescal.bayesian.mixture.log_density`):
    ``out[r, i] = log sum_k exp(log phi_rk(x_i) + const[r, k])`` with Gaussian (``code`` 0; p1 = mu,
    p2 = sigma) or Beta (``code`` 1; p1 = a, p2 = b, on ``xa, xb = log expit(+-x)``) components.
    A module-level function, so numba's disk cache finds it again in a new process."""
    K = const.shape[1]
    n = xa.shape[0]
    E = np.empty((K, n))
    top = np.empty(n)
    tot = np.empty(n)
    bits = np.empty(K * n, dtype=np.int64)
    for r in range(r0, r1):
        for i in range(n):
            top[i] = -np.inf
        for k in range(K):
            c = const[r, k]
            a = p1[r, k]
            row = E[k]
            if code == 0:
                inv = 1.0 / p2[r, k]
                for i in range(n):
                    z = (xa[i] - a) * inv
                    row[i] = c - 0.5 * z * z
            else:
                b = p2[r, k]
                for i in range(n):
                    row[i] = c + a * xa[i] + b * xb[i]
            for i in range(n):
                top[i] = max(top[i], row[i])
        exp_shifted_sums(E, top, tot, bits)
        for i in range(n):
            out[r, i] = top[i] + math.log(tot[i]) if top[i] > -np.inf else -np.inf


@_inline
def stirling_tail(k):  # pragma: no cover - compiled
    """The error of Stirling's formula for log k!: a table up to 9, then its series (Hörmann 1993)."""
    if k <= 9.0:
        return _STIRLING_TAIL[int(k)]
    kp1sq = (k + 1.0) * (k + 1.0)
    return (1.0 / 12.0 - (1.0 / 360.0 - 1.0 / 1260.0 / kp1sq) / kp1sq) / (k + 1.0)


@_inline
def binomial(gen, n, p):  # pragma: no cover - compiled
    r"""One exact Binomial(n, p) draw (``0 < p < 1``): for :math:`n \min(p, 1 - p) \ge 10` by
    transformed rejection with squeeze, BTRS (Hörmann 1993, as in TensorFlow's and JAX's
    samplers), whose set-up is a few arithmetic operations, so it costs the same for every
    (n, p); otherwise by ``gen.binomial`` (numpy's inversion there). The sweeps draw a binomial
    for each likely component of each bin with many scores, with n and p new every time: numpy's
    BTPE sets itself up anew on every such call, which made the draws most of a sweep's time
    at 10^6 - 10^7 scores.

    References
    ----------
    Hörmann, W. (1993). The generation of binomial random variates. Journal of Statistical
    Computation and Simulation 46, 101-110.
    """
    flip = p > 0.5
    pp = 1.0 - p if flip else p
    if n * pp < _BTRS_MIN_MEAN:
        return gen.binomial(n, p)
    nf = float(n)
    q = 1.0 - pp
    spq = math.sqrt(nf * pp * q)
    b = 1.15 + 2.53 * spq
    a = -0.0873 + 0.0248 * b + 0.01 * pp
    c = nf * pp + 0.5
    v_r = 0.92 - 4.2 / b
    r = pp / q
    alpha = (2.83 + 5.1 / b) * spq
    m = math.floor((nf + 1.0) * pp)
    while True:
        u = gen.random() - 0.5
        v = gen.random()
        us = 0.5 - abs(u)
        k = math.floor((2.0 * a / us + b) * u + c)
        if k < 0.0 or k > nf:
            continue
        if us >= 0.07 and v <= v_r:
            break
        v = math.log(v * alpha / (a / (us * us) + b))
        bound = (
            (m + 0.5) * math.log((m + 1.0) / (r * (nf - m + 1.0)))
            + (nf + 1.0) * math.log((nf - m + 1.0) / (nf - k + 1.0))
            + (k + 0.5) * math.log(r * (nf - k + 1.0) / (k + 1.0))
            + stirling_tail(m)
            + stirling_tail(nf - m)
            - stirling_tail(k)
            - stirling_tail(nf - k)
        )
        if v <= bound:
            break
    draw = np.int64(k)
    return n - draw if flip else draw


@_inline
def log_phi(family, xa, xb, p1, p2, cst):  # pragma: no cover - compiled
    """log phi_k at one point less the point-only constant: Gaussian (xa = centred x;
    p1 = mu, p2 = exp(-u), cst = -u) or Beta (xa, xb = log expit(+-x); p1 = a, p2 = b,
    cst = -log B(a, b))."""
    if family == GAUSSIAN:
        z = (xa - p1) * p2
        return cst - 0.5 * z * z
    return cst + p1 * xa + p2 * xb


@_inline
def comp_consts(family, th1, th2, k, out3):  # pragma: no cover - compiled
    """(p1, p2, cst) of component k from its sampled state (mu, u) or (log a, log b)."""
    if family == GAUSSIAN:
        out3[0] = th1[k]
        out3[1] = math.exp(-th2[k])
        out3[2] = -th2[k]
    else:
        a = math.exp(th1[k])
        b = math.exp(th2[k])
        out3[0] = a
        out3[1] = b
        out3[2] = -lbeta(a, b)


@_inline
def log_weights(v, logw):  # pragma: no cover - compiled
    K = logw.shape[0]
    rest = 0.0
    for k in range(K - 1):
        logw[k] = math.log(v[k]) + rest
        rest += math.log1p(-v[k])
    logw[K - 1] = rest


@_inline
def categorical(gen, prob, tot, K):  # pragma: no cover - compiled
    """One draw from ``prob / tot`` by inversion (the last component takes the rounding)."""
    u = gen.random() * tot
    acc = 0.0
    last = 0
    for k in range(K):
        if prob[k] > 0.0:
            acc += prob[k]
            last = k
            if u < acc:
                return k
    return last


@_inline
def add_suff(suff, k, c, x1, x2):  # pragma: no cover - compiled
    suff[k, 0] += c
    suff[k, 1] += c * x1
    suff[k, 2] += c * x2


@_inline_always
def _stirling_tail(z):  # pragma: no cover - compiled
    """lgamma(z) - [(z - 1/2) log z - z + log(2 pi) / 2] for z >= 20, to double precision."""
    r = 1.0 / (z * z)
    return (1.0 / 12.0 - r * (1.0 / 360.0 - r * (1.0 / 1260.0 - r / 1680.0))) / z


@_inline_always
def lbeta(a, b):  # pragma: no cover - compiled
    """log B(a, b). lgamma(a) + lgamma(b) - lgamma(a + b) loses about 1e-16 a log a when a shape
    is large (3e-10 at a = 1e5, 5e-2 at 1e13): from a larger shape of 1e5 Stirling's series
    gives it without the cancellation (below, the three lgammas)."""
    lo = min(a, b)
    hi = max(a, b)
    if hi < LBETA_STIRLING:
        return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)
    s = a + b
    # (hi - 1/2) log(hi / s) and the Stirling tails of hi and s: the common part of both cases
    common = -(hi - 0.5) * math.log1p(lo / hi) + _stirling_tail(hi) - _stirling_tail(s)
    if lo >= 20.0:
        return 0.5 * math.log(2.0 * math.pi / s) + common + (lo - 0.5) * math.log(lo / s) + _stirling_tail(lo)
    return math.lgamma(lo) + common - lo * math.log(s) + lo


@_inline
def swap_logprior(family, th1, th2, k, m, s2, ell, tau, loc1, loc2):  # pragma: no cover - compiled
    """Change of the components' log prior when components k and k + 1 exchange parameters
    (the prior centres are component-specific)."""
    if family == GAUSSIAN:
        a = th1[k]
        b = th1[k + 1]
        return -0.5 * ((b - m[k]) ** 2 + (a - m[k + 1]) ** 2 - (a - m[k]) ** 2 - (b - m[k + 1]) ** 2) / s2
    a1 = th1[k]
    b1 = th1[k + 1]
    a2 = th2[k]
    b2 = th2[k + 1]
    inv = 0.5 / (tau * tau)
    return -inv * (
        (b1 - loc1[k]) ** 2
        + (a1 - loc1[k + 1]) ** 2
        - (a1 - loc1[k]) ** 2
        - (b1 - loc1[k + 1]) ** 2
        + (b2 - loc2[k]) ** 2
        + (a2 - loc2[k + 1]) ** 2
        - (a2 - loc2[k]) ** 2
        - (b2 - loc2[k + 1]) ** 2
    )


@_inline_always
def beta_logpost(la, lb, nk, s1, s2, l1, l2, tau):  # pragma: no cover - compiled
    """Log conditional of one Beta component's (log a, log b) given its sufficient statistics."""
    a = math.exp(la)
    b = math.exp(lb)
    return a * s1 + b * s2 - nk * lbeta(a, b) - 0.5 * ((la - l1) / tau) ** 2 - 0.5 * ((lb - l2) / tau) ** 2


@_inline
def below_floor(family, t1, t2, log_floor):  # pragma: no cover - compiled
    """Whether a component's spread on the working scale is below ``exp(log_floor)``: its scale
    for a Gaussian (``t2 = log sigma``), :math:`\\sqrt{1/a + 1/b}` for a Beta (``t1, t2 = log a,
    log b``), about the standard deviation of its logit."""
    if family == GAUSSIAN:
        return t2 < log_floor
    return math.exp(-t1) + math.exp(-t2) < math.exp(2.0 * log_floor)


@_inline
def truncated_normal(gen, mean, sd, lower):  # pragma: no cover - compiled
    """A draw of N(mean, sd^2) restricted to [lower, inf): the plain draw when it lands there (so
    with ``lower = -inf`` the draws are the unrestricted ones), else by rejection, from the normal
    while the bound is below the mean and from Robert's (1995) shifted exponential beyond it."""
    x = mean + sd * gen.standard_normal()
    if x >= lower:
        return x
    a = (lower - mean) / sd
    if a <= 0.5:
        while True:
            x = mean + sd * gen.standard_normal()
            if x >= lower:
                return x
    rate = 0.5 * (a + math.sqrt(a * a + 4.0))
    while True:
        z = a - math.log(gen.random()) / rate
        if gen.random() <= math.exp(-0.5 * (z - rate) ** 2):
            return mean + sd * z


@_inline
def stick_log_density(v, alpha):  # pragma: no cover - compiled
    r"""Log density of the stick-breaking weights in their free coordinates :math:`w_1 .. w_{K-1}`,
    from their sticks ``v``, less a constant: :math:`\sum_{k<K} [(\alpha - 1) \log(1 - v_k) - \log R_k]`,
    :math:`R_k = \prod_{l<k} (1 - v_l)` (the Beta(1, alpha) sticks and the Jacobian
    :math:`|\partial v / \partial w| = \prod_k 1 / R_k`)."""
    acc = 0.0
    log_r = 0.0
    for k in range(v.shape[0]):
        l1 = math.log1p(-v[k])
        acc += (alpha - 1.0) * l1 - log_r
        log_r += l1
    return acc


@_inline
def concentration_log_density(u, suff, a0, b0):  # pragma: no cover - compiled
    r"""Log density of :math:`u = \log \alpha` given the components' counts ``suff[:, 0]``, with
    the sticks integrated out, less a constant:

    .. math:: a u - b e^u + \sum_{k < K} \left[u + \log \Gamma(\alpha + T_k)
        - \log \Gamma(1 + n_k + \alpha + T_k)\right],

    :math:`T_k = \sum_{j > k} n_j`, from the Gamma(a, b) prior (with the Jacobian :math:`e^u`) and
    :math:`\prod_k B(1 + n_k, \alpha + T_k) / B(1, \alpha)`, the stick-breaking probability of the
    counts (Ishwaran & James 2001). The terms past the last occupied component are 0."""
    K = suff.shape[0]
    alpha = math.exp(u)
    acc = a0 * u - b0 * alpha
    tail = 0.0
    for k in range(K):
        tail += suff[k, 0]
    for k in range(K - 1):
        nk = suff[k, 0]
        tail -= nk
        if nk + tail <= 0.0:
            break
        rest = max(tail, 0.0)
        acc += u + math.lgamma(alpha + rest) - math.lgamma(1.0 + nk + alpha + rest)
    return acc


_SLICE_STEPS = 32
"""Most steps of width 1 (on log alpha) by which :func:`draw_concentration` steps its slice out."""


@_inline
def draw_concentration(suff, alpha, a0, b0, gen):  # pragma: no cover - compiled
    r"""A draw of the concentration :math:`\alpha` given the counts ``suff[:, 0]`` alone
    (:func:`concentration_log_density`; the sticks integrated out), by slice sampling on
    :math:`\log \alpha` with stepping out and shrinkage (Neal 2003, figures 3 and 5), from the
    current ``alpha``. The sticks are then drawn given it and the counts, so together the two
    steps draw :math:`(\alpha, v)` from their joint conditional given the allocations."""
    u0 = math.log(alpha)
    log_y = concentration_log_density(u0, suff, a0, b0) + math.log1p(-gen.random())
    left = u0 - gen.random()
    right = left + 1.0
    j = int(gen.random() * _SLICE_STEPS)
    k = _SLICE_STEPS - 1 - j
    while j > 0 and concentration_log_density(left, suff, a0, b0) > log_y:
        left -= 1.0
        j -= 1
    while k > 0 and concentration_log_density(right, suff, a0, b0) > log_y:
        right += 1.0
        k -= 1
    while True:
        u1 = left + gen.random() * (right - left)
        if concentration_log_density(u1, suff, a0, b0) > log_y:
            return math.exp(u1)
        if u1 < u0:
            left = u1
        else:
            right = u1


@_inline
def class_loglik(family, xa, xb, c_all, logw, th1, th2, E, top, tot, bits):  # pragma: no cover - compiled
    r"""The class's weighted log-likelihood :math:`\sum_i c_i \log \sum_k w_k \phi_k(x_i)` (less the
    points-only constant) for log weights ``logw`` and components ``th1``, ``th2`` as the sweeps hold them."""
    K = logw.shape[0]
    n = xa.shape[0]
    for i in range(n):
        top[i] = -np.inf
    for k in range(K):
        if family == GAUSSIAN:
            log_terms(family, xa, xb, logw[k] - th2[k], th1[k], math.exp(-th2[k]), E[k], top)
        else:
            a = math.exp(th1[k])
            b = math.exp(th2[k])
            log_terms(family, xa, xb, logw[k] - lbeta(a, b), a, b, E[k], top)
    exp_shifted_sums(E, top, tot, bits)
    value = 0.0
    for i in range(n):
        value += c_all[i] * (top[i] + math.log(tot[i]))
    return value


@_inline
def gaussian_logprior(t1, t2, mk, s2, ell, tau, log_floor):  # pragma: no cover - compiled
    """Log prior of one Gaussian component (centred mean ``t1``, log scale ``t2``) less a constant;
    -inf below the floor."""
    if t2 < log_floor:
        return -np.inf
    return -0.5 * (t1 - mk) ** 2 / s2 - 0.5 * ((t2 - ell) / tau) ** 2


@_inline
def merge_split_logjac(u1, u2, u3, sd):  # pragma: no cover - compiled
    r"""Log Jacobian of the split of a Gaussian component (mean, log scale ``log sd``) by
    :math:`(u_1, u_2, u_3)` into two (means, log scales), at fixed weights' share :math:`u_1`:
    :math:`\sigma / (2 \sqrt{u_1 (1 - u_1)} (1 - u_2^2) u_3 (1 - u_3))` (Richardson & Green 1997,
    eq. 12, on log scales)."""
    return (
        math.log(sd)
        - math.log(2.0)
        - 0.5 * math.log(u1 * (1.0 - u1))
        - math.log1p(-u2 * u2)
        - math.log(u3)
        - math.log1p(-u3)
    )


@_inline
def merge_split_proposal_terms(u1, u2, e_r, r_scale):  # pragma: no cover - compiled
    r"""The log densities a merge-split proposal draws by: of the spare's weight share,
    :math:`-\log r = e_r \sim \mathrm{Gamma}(2, \text{r\_scale})` on the scale of r (``e_r`` plus the
    Gamma log density), and of :math:`u_1, |u_2| \sim \mathrm{Beta}(2, 2)`."""
    log_q_r = math.log(e_r) - e_r / r_scale - 2.0 * math.log(r_scale) + e_r
    log_g = math.log(6.0 * u1 * (1.0 - u1)) + math.log(3.0 * abs(u2) * (1.0 - abs(u2)))
    return log_q_r, log_g


@_inline
def merge_split_move(
    xa,
    xb,
    c_all,
    v,
    th1,
    th2,
    alpha,
    m,
    s2,
    ell,
    tau,
    log_floor,
    log_norm_sp,
    r_scale,
    gen,
    E,
    top,
    tot,
    bits,
    logw,
    v_old,
    lt_old,
):  # pragma: no cover - compiled
    r"""One merge-or-split proposal for Gaussian components on the class's posterior with the
    allocations summed out (given :math:`\alpha`), accepted by Metropolis-Hastings; returns
    (accepted, the log target after the move).

    An ordered pair (j, k) is drawn uniformly, and a merge or a split with probability 1/2.
    A merge replaces components j and k by one at j that keeps their pooled weight share's first
    two moments (Richardson & Green 1997) and sends k, as a spare, to a draw from its prior
    with weight :math:`r (w_j + w_k)`, :math:`-\log r \sim \mathrm{Gamma}(2, \text{r\_scale})`;
    a split is its inverse: j is split by :math:`u_1, |u_2| \sim \mathrm{Beta}(2, 2)` (u_2 with
    a random sign) and :math:`u_3 \sim U(0, 1)`, and the spare at k is discarded. The pair's total
    weight is kept, so the other components' weights are unchanged. ``lt_old`` is the log target
    (:func:`class_loglik` + :func:`stick_log_density` + the components' log priors) at the
    current state; ``log_norm_sp`` the log normalising constant of a component's prior (the
    spare's proposal density less :func:`gaussian_logprior`); ``logw`` and ``v_old`` are work
    arrays.

    References
    ----------
    Richardson, S. & Green, P. J. (1997). On Bayesian analysis of mixtures with an unknown number
    of components. JRSS B 59, 731-792.
    """
    K = th1.shape[0]
    j = int(gen.random() * K)
    k = int(gen.random() * (K - 1))
    if k >= j:
        k += 1
    merge = gen.random() < 0.5
    log_weights(v, logw)
    wj = math.exp(logw[j])
    wk = math.exp(logw[k])
    tot_w = wj + wk
    mu_j, mu_k, ls_j, ls_k = th1[j], th1[k], th2[j], th2[k]
    if merge:
        u1 = wj / tot_w
        if not 0.0 < u1 < 1.0:
            return False, lt_old
        s2j = math.exp(2.0 * ls_j)
        s2k = math.exp(2.0 * ls_k)
        mu = u1 * mu_j + (1.0 - u1) * mu_k
        var = u1 * s2j + (1.0 - u1) * s2k + u1 * (1.0 - u1) * (mu_j - mu_k) ** 2
        sd = math.sqrt(var)
        u2 = (mu - mu_j) / (sd * math.sqrt((1.0 - u1) / u1))
        u3 = u1 * s2j / ((1.0 - u2 * u2) * var)
        if not (abs(u2) < 1.0 and 0.0 < u3 < 1.0):
            return False, lt_old
        e_r = gen.gamma(2.0, r_scale)
        r = math.exp(-e_r)
        if not 0.0 < r < 1.0:
            return False, lt_old
        mu_sp = m[k] + math.sqrt(s2) * gen.standard_normal()
        u_sp = truncated_normal(gen, ell, tau, log_floor)
        new_wj = (1.0 - r) * tot_w
        new_wk = r * tot_w
        new_j1, new_j2, new_k1, new_k2 = mu, math.log(sd), mu_sp, u_sp
        log_q_sp = gaussian_logprior(mu_sp, u_sp, m[k], s2, ell, tau, log_floor) + log_norm_sp
        log_q_r, log_g = merge_split_proposal_terms(u1, u2, e_r, r_scale)
        log_extra = log_g - log_q_sp - log_q_r - merge_split_logjac(u1, u2, u3, sd)
    else:
        r = wk / tot_w
        if not 0.0 < r < 1.0:
            return False, lt_old
        e_r = -math.log(r)
        u1 = gen.beta(2.0, 2.0)
        u2 = gen.beta(2.0, 2.0) * (1.0 if gen.random() < 0.5 else -1.0)
        u3 = gen.random()
        if not (0.0 < u1 < 1.0 and 0.0 < u3 < 1.0 and abs(u2) < 1.0):
            return False, lt_old
        sd = math.exp(ls_j)
        new_j1 = mu_j - u2 * sd * math.sqrt((1.0 - u1) / u1)
        new_k1 = mu_j + u2 * sd * math.sqrt(u1 / (1.0 - u1))
        new_j2 = 0.5 * math.log(u3 * (1.0 - u2 * u2) * sd * sd / u1)
        new_k2 = 0.5 * math.log((1.0 - u3) * (1.0 - u2 * u2) * sd * sd / (1.0 - u1))
        if new_j2 < log_floor or new_k2 < log_floor:
            return False, lt_old
        new_wj = u1 * tot_w
        new_wk = (1.0 - u1) * tot_w
        log_q_sp = gaussian_logprior(mu_k, ls_k, m[k], s2, ell, tau, log_floor) + log_norm_sp
        log_q_r, log_g = merge_split_proposal_terms(u1, u2, e_r, r_scale)
        log_extra = log_q_sp + log_q_r - log_g + merge_split_logjac(u1, u2, u3, sd)
    # the new sticks: only those between the pair (and the first of it) change
    lo = min(j, k)
    hi = max(j, k)
    d_lo = (new_wj if lo == j else new_wk) - (wj if lo == j else wk)
    for i in range(K - 1):
        v_old[i] = v[i]
    log_r = 0.0
    ok = True
    for i in range(K - 1):
        if i >= lo and i <= hi:
            r_i = math.exp(log_r) - (d_lo if i > lo else 0.0)
            wi = math.exp(logw[i])
            if i == j:
                wi = new_wj
            elif i == k:
                wi = new_wk
            vi = wi / r_i if r_i > 0.0 else 2.0
            if not 1e-12 <= vi <= 1.0 - 1e-12:
                ok = False
                break
            v[i] = vi
        log_r += math.log1p(-v_old[i])
    if not ok:
        for i in range(K - 1):
            v[i] = v_old[i]
        return False, lt_old
    th1[j] = new_j1
    th2[j] = new_j2
    th1[k] = new_k1
    th2[k] = new_k2
    log_weights(v, logw)
    lt_new = class_loglik(GAUSSIAN, xa, xb, c_all, logw, th1, th2, E, top, tot, bits) + stick_log_density(v, alpha)
    for i in range(K):
        lt_new += gaussian_logprior(th1[i], th2[i], m[i], s2, ell, tau, log_floor)
    log_acc = lt_new - lt_old + log_extra
    if lt_new > -np.inf and log_acc == log_acc and math.log(gen.random()) < log_acc:
        return True, lt_new
    for i in range(K - 1):
        v[i] = v_old[i]
    th1[j] = mu_j
    th2[j] = ls_j
    th1[k] = mu_k
    th2[k] = ls_k
    return False, lt_old


@_jit
def run_chain(
    family,
    xa,
    xb,
    c_int,
    c_frac,
    c_all,
    m,
    s2,
    ell,
    tau,
    loc1,
    loc2,
    a0,
    b0,
    log_floor,
    v,
    th1,
    th2,
    alpha,
    it0,
    n_iter,
    tune,
    thin,
    n_mh,
    label_swaps,
    n_leap,
    n_sm,
    collapsed_alpha,
    gen,
    out_w,
    out_1,
    out_2,
    out_alpha,
    out_ll,
    out_occ,
    stats,
    minv,
    hmc_eps,
):  # pragma: no cover - compiled
    """Run sweeps ``it0`` .. ``n_iter - 1`` of one chain (module docstring of
    :mod:`bayescal.bayesian.gibbs`), writing its draws; returns the concentration after them.

    ``v`` (K-1,), ``th1``, ``th2`` (K,) and ``alpha`` are the state before sweep ``it0``;
    ``v``, ``th1`` and ``th2`` are updated in place, and so are the Hamiltonian moves' inverse
    mass ``minv`` (3K - 1,) and step size ``hmc_eps`` (1,), set by the warm-up (start: ones and
    0.2). A chain run in two calls (the second from where the first stopped, with the same
    generator) is therefore the chain run in one, as long as the first call ends after the
    warm-up when the moves run (their step-size and mass adaptation lives in one call).
    ``log_floor`` is the log of the components' smallest spread (:func:`below_floor`; ``-inf``
    for none): proposals below it are rejected and empty components drawn above it. ``stats`` accumulates
    the Metropolis acceptance counts and proposals of the component steps (``stats[0:2]``), of
    the label swaps (``stats[2:4]``), the Hamiltonian acceptance (``stats[4:6]``) and the merge-split
    proposals accepted and made (``stats[6:8]``; ``n_sm`` a sweep, Gaussian components only:
    :func:`merge_split_move`). With ``collapsed_alpha`` the concentration is drawn given the
    counts alone (:func:`draw_concentration`) before the sticks, instead of given the sticks after them.
    """
    K = th1.shape[0]
    n = xa.shape[0]
    logw = np.empty(K)
    E = np.empty((K, n))
    totv = np.empty(n)
    prob = np.empty(K)
    ebits = np.empty(n * K, dtype=np.int64)
    topv = np.empty(n)
    order = np.empty(K, dtype=np.int64)
    ident = np.arange(K)
    consts = np.empty((K, 3))
    c3 = np.empty(3)
    suff = np.empty((K, 3))
    acc_c = 0.0
    prop_c = 0.0
    acc_s = 0.0
    prop_s = 0.0
    sfx = np.empty(K)
    a_post = a0 + K - 1
    # Hamiltonian moves (n_leap > 0): state, inverse mass, step size and its dual averaging
    D = 3 * K - 1
    hq = np.empty(D)
    hmc_R = np.empty(K)
    hmc_grad = np.empty(D)
    hmc_q0 = np.empty(D)
    hmc_p = np.empty(D)
    w_mean = np.zeros(D)
    w_m2 = np.zeros(D)
    w_n = 0.0
    w_start = tune // 5 if tune >= 50 else tune
    w_end = tune // 2 if tune >= 50 else tune
    eps = hmc_eps[0]
    da_mu = math.log(10.0 * eps)
    da_n = 0.0
    h_bar = 0.0
    log_eps_bar = 0.0
    v_old = np.empty(K - 1)
    r_scale = 0.5 * math.log(2.0 + np.sum(c_all))
    log_norm_sp = -0.5 * math.log(2.0 * math.pi * s2) - 0.5 * math.log(2.0 * math.pi * tau * tau)
    if log_floor > -np.inf:
        log_norm_sp -= math.log(0.5 * math.erfc((log_floor - ell) / (tau * math.sqrt(2.0))))
    for it in range(it0, n_iter):
        # ---- 1. allocations
        log_weights(v, logw)
        for k in range(K):
            comp_consts(family, th1, th2, k, c3)
            consts[k, 0] = c3[0]
            consts[k, 1] = c3[1]
            consts[k, 2] = c3[2] + logw[k]
        for k in range(K):
            suff[k, 0] = 0.0
            suff[k, 1] = 0.0
            suff[k, 2] = 0.0
        ll = 0.0
        # log terms E[k, i] less each point's largest, exp, and their sums: loops over points, which vectorise
        for i in range(n):
            topv[i] = -np.inf
        for k in range(K):
            log_terms(family, xa, xb, consts[k, 2], consts[k, 0], consts[k, 1], E[k], topv)
        exp_shifted_sums(E, topv, totv, ebits)
        for i in range(n):
            xi_a = xa[i]
            xi_b = xb[i]
            tot = totv[i]
            for k in range(K):
                prob[k] = E[k, i]
            ll += c_all[i] * (topv[i] + math.log(tot))
            f2 = xi_a * xi_a if family == GAUSSIAN else xi_b
            ci = c_int[i]
            if 2 < ci <= _MODERATE:
                # the most likely component's share by one comparison of a uniform per unit (no
                # branch to mispredict), then each unit not taken by inversion among the others
                # with a fresh uniform (given that it is not the most likely component's, its
                # component is drawn from the others' probabilities): exact, and at a few units
                # per bin (10^4 compressed scores) faster than the binomials (speed page: the
                # sampler's time in a default fit fell by a quarter)
                tk = 0
                for k in range(1, K):
                    if prob[k] > prob[tk]:
                        tk = k
                ptop = prob[tk]
                ntop = 0
                for _ in range(ci):
                    ntop += gen.random() * tot < ptop
                if ntop > 0:
                    add_suff(suff, tk, float(ntop), xi_a, f2)
                rest = tot - ptop
                for _ in range(ci - ntop):
                    u = gen.random() * rest
                    acc = 0.0
                    chosen = tk
                    for k in range(K):
                        if k != tk and prob[k] > 0.0:
                            acc += prob[k]
                            chosen = k
                            if u < acc:
                                break
                    add_suff(suff, chosen, 1.0, xi_a, f2)
            elif ci > 0:
                left = ci
                rest = tot
                pos = 0
                n_ord = K
                src = ident
                if ci > 2:  # the likely components first (shorter scans, fewer binomials)
                    n_ord = 0
                    for k in range(K):
                        if prob[k] >= _LIKELY * tot:
                            order[n_ord] = k
                            n_ord += 1
                    for a in range(1, n_ord):  # likely ones by decreasing probability (insertion sort)
                        k = order[a]
                        b = a - 1
                        while b >= 0 and prob[order[b]] < prob[k]:
                            order[b + 1] = order[b]
                            b -= 1
                        order[b + 1] = k
                    for k in range(K):
                        if prob[k] < _LIKELY * tot and prob[k] > 0.0:
                            order[n_ord] = k
                            n_ord += 1
                    src = order
                    while pos < n_ord and left > _FEW:
                        k = order[pos]
                        p = prob[k]
                        q = p / rest if rest > 0.0 else 1.0
                        draw = left if q >= 1.0 else binomial(gen, left, q)
                        if draw > 0:
                            add_suff(suff, k, float(draw), xi_a, f2)
                            left -= draw
                        rest = max(rest - p, 0.0)
                        pos += 1
                # the last few units one by one among the components not yet drawn (inversion)
                for _ in range(left):
                    u = gen.random() * rest
                    acc = 0.0
                    chosen = -1
                    for jj in range(pos, n_ord):
                        k = src[jj]
                        if prob[k] > 0.0:
                            acc += prob[k]
                            chosen = k
                            if u < acc:
                                break
                    if chosen < 0:  # none left (rounding): the most likely component
                        chosen = 0
                        for k in range(K):
                            if prob[k] > prob[chosen]:
                                chosen = k
                    add_suff(suff, chosen, 1.0, xi_a, f2)
            if c_frac[i] > 0.0:
                add_suff(suff, categorical(gen, prob, tot, K), c_frac[i], xi_a, f2)
        # ---- 1b. label swaps of adjacent sticks (sticks integrated out; Papaspiliopoulos & Roberts 2008)
        if label_swaps:
            tail = 0.0
            for k in range(K - 1, -1, -1):
                sfx[k] = tail  # weight allocated beyond component k
                tail += suff[k, 0]
            for k in range(K - 1):
                n1 = suff[k, 0]
                n2 = suff[k + 1, 0]
                if n1 == n2:
                    continue
                rest = sfx[k + 1]
                delta = lbeta(1.0 + n2, alpha + n1 + rest) - lbeta(1.0 + n1, alpha + n2 + rest)
                if k + 1 < K - 1:
                    delta += lbeta(1.0 + n1, alpha + rest) - lbeta(1.0 + n2, alpha + rest)
                delta += swap_logprior(family, th1, th2, k, m, s2, ell, tau, loc1, loc2)
                prop_s += 1.0
                if math.log(gen.random()) < delta:
                    acc_s += 1.0
                    for j in range(3):
                        tmp = suff[k, j]
                        suff[k, j] = suff[k + 1, j]
                        suff[k + 1, j] = tmp
                    tmp = th1[k]
                    th1[k] = th1[k + 1]
                    th1[k + 1] = tmp
                    tmp = th2[k]
                    th2[k] = th2[k + 1]
                    th2[k + 1] = tmp
                    sfx[k] = rest + n1  # component k now holds n2; beyond it n1 + rest
        # ---- 2. sticks and 3. concentration (collapsed: the concentration first, given the counts)
        if collapsed_alpha:
            alpha = draw_concentration(suff, alpha, a0, b0, gen)
        tail = 0.0
        for k in range(K):
            tail += suff[k, 0]
        log_rest = 0.0
        for k in range(K - 1):
            tail -= suff[k, 0]
            vk = gen.beta(1.0 + suff[k, 0], alpha + tail)
            vk = min(max(vk, 1e-12), 1.0 - 1e-12)
            v[k] = vk
            log_rest += math.log1p(-vk)
        if not collapsed_alpha:
            alpha = gen.gamma(a_post, 1.0 / (b0 - log_rest))
        # ---- 4-5. component parameters given the allocations
        for k in range(K):
            nk = suff[k, 0]
            if family == GAUSSIAN:
                u = th2[k]
                e2 = math.exp(-2.0 * u)
                prec = 1.0 / s2 + nk * e2
                mean = (m[k] / s2 + suff[k, 1] * e2) / prec
                mu = mean + gen.standard_normal() / math.sqrt(prec)
                th1[k] = mu
                if nk == 0.0:  # an empty component's scale is a draw from its prior
                    th2[k] = truncated_normal(gen, ell, tau, log_floor)
                    continue
                ss = max(suff[k, 2] - 2.0 * mu * suff[k, 1] + nk * mu * mu, 0.0)
                step = 2.4 / math.sqrt(1.0 / (tau * tau) + 2.0 * nk)
                lp = -0.5 * ((u - ell) / tau) ** 2 - nk * u - 0.5 * ss * math.exp(-2.0 * u)
                for _ in range(n_mh):
                    pu = u + step * gen.standard_normal()
                    lpp = -0.5 * ((pu - ell) / tau) ** 2 - nk * pu - 0.5 * ss * math.exp(-2.0 * pu)
                    prop_c += 1.0
                    if math.log(gen.random()) < lpp - lp and not below_floor(family, 0.0, pu, log_floor):
                        u = pu
                        lp = lpp
                        acc_c += 1.0
                th2[k] = u
            else:
                if nk == 0.0:  # an empty component's shapes are a draw from their prior (above the floor)
                    for _ in range(_MAX_PRIOR_TRIES):
                        th1[k] = loc1[k] + tau * gen.standard_normal()
                        th2[k] = loc2[k] + tau * gen.standard_normal()
                        if not below_floor(family, th1[k], th2[k], log_floor):
                            break
                    continue
                la = th1[k]
                lb = th2[k]
                s1 = suff[k, 1]
                sb = suff[k, 2]

                lp = beta_logpost(la, lb, nk, s1, sb, loc1[k], loc2[k], tau)
                step = 1.7 / math.sqrt(1.0 / (tau * tau) + nk)
                for _ in range(n_mh):
                    for sign in (1.0, -1.0):  # concentration, then location
                        e = step * gen.standard_normal()
                        pla = la + e
                        plb = lb + sign * e
                        lpp = beta_logpost(pla, plb, nk, s1, sb, loc1[k], loc2[k], tau)
                        prop_c += 1.0
                        if math.log(gen.random()) < lpp - lp and not below_floor(family, pla, plb, log_floor):
                            la = pla
                            lb = plb
                            lp = lpp
                            acc_c += 1.0
                th1[k] = la
                th2[k] = lb
        # ---- 5b. merge-split proposals with the allocations summed out (Gaussian components)
        if n_sm > 0 and family == GAUSSIAN:
            log_weights(v, logw)
            lt = class_loglik(family, xa, xb, c_all, logw, th1, th2, E, topv, totv, ebits) + stick_log_density(v, alpha)
            for k in range(K):
                lt += gaussian_logprior(th1[k], th2[k], m[k], s2, ell, tau, log_floor)
            for _ in range(n_sm):
                accepted, lt = merge_split_move(
                    xa, xb, c_all, v, th1, th2, alpha, m, s2, ell, tau, log_floor, log_norm_sp, r_scale, gen, E, topv,
                    totv, ebits, logw, v_old, lt,
                )  # fmt: skip
                stats[6] += 1.0 if accepted else 0.0
                stats[7] += 1.0
        # ---- 6. a Hamiltonian move of sticks and components with the allocations summed out
        # (every warm-up sweep, for the adaptation; after it, before each kept draw)
        if n_leap > 0 and (it < tune or (it - tune) % thin == 0):
            for k in range(K - 1):
                hq[k] = math.log(v[k]) - math.log1p(-v[k])
            for k in range(K):
                hq[K - 1 + k] = th1[k]
                hq[2 * K - 1 + k] = th2[k]
            if it == 0:
                first_inverse_mass(
                    family, xa, xb, c_all, hq, alpha, m, s2, ell, tau, loc1, loc2, log_floor,
                    hmc_grad, E, topv, totv, ebits, hmc_R, minv,
                )  # fmt: skip
            accept = hmc_move(
                family, xa, xb, c_all, hq, alpha, m, s2, ell, tau, loc1, loc2, log_floor, eps, n_leap, minv, gen,
                E, topv, totv, ebits, hmc_R, hmc_grad, hmc_q0, hmc_p,
            )  # fmt: skip
            for k in range(K - 1):
                v[k] = min(max(1.0 / (1.0 + math.exp(-hq[k])), 1e-12), 1.0 - 1e-12)
            for k in range(K):
                th1[k] = hq[K - 1 + k]
                th2[k] = hq[2 * K - 1 + k]
            if it < tune:  # step size by dual averaging (Hoffman & Gelman 2014), mass from a window
                da_n += 1.0
                h_bar += (_HMC_TARGET - accept - h_bar) / (da_n + 10.0)
                log_eps = da_mu - math.sqrt(da_n) / 0.05 * h_bar
                decay = da_n**-0.75
                log_eps_bar = decay * log_eps + (1.0 - decay) * log_eps_bar
                eps = math.exp(log_eps)
                if w_start <= it < w_end:
                    w_n += 1.0
                    for d in range(D):
                        delta = hq[d] - w_mean[d]
                        w_mean[d] += delta / w_n
                        w_m2[d] += delta * (hq[d] - w_mean[d])
                    if it == w_end - 1 and w_n > 2.0:
                        for d in range(D):
                            minv[d] = (w_n / (w_n + 5.0)) * w_m2[d] / (w_n - 1.0) + 1e-3 * 5.0 / (w_n + 5.0)
                        da_mu = math.log(10.0 * eps)
                        da_n = 0.0
                        h_bar = 0.0
                        log_eps_bar = 0.0
                if it == tune - 1:
                    eps = math.exp(log_eps_bar)
            else:
                stats[4] += accept
                stats[5] += 1.0
        # ---- record
        if it >= tune and (it - tune) % thin == 0:
            j = (it - tune) // thin
            log_weights(v, logw)
            occ = 0
            for k in range(K):
                out_w[j, k] = math.exp(logw[k])
                if family == GAUSSIAN:
                    out_1[j, k] = th1[k]
                    out_2[j, k] = math.exp(th2[k])
                else:
                    out_1[j, k] = math.exp(th1[k])
                    out_2[j, k] = math.exp(th2[k])
                if suff[k, 0] > 0.0:
                    occ += 1
            out_alpha[j] = alpha
            out_ll[j] = ll
            out_occ[j] = occ
    hmc_eps[0] = eps
    stats[0] += acc_c
    stats[1] += prop_c
    stats[2] += acc_s
    stats[3] += prop_s
    return alpha


@_inline_always
def digamma(x):  # pragma: no cover - compiled
    """psi(x) for x > 0: the recurrence up to x >= 6, then the asymptotic series (error below 1e-12)."""
    acc = 0.0
    while x < 6.0:
        acc -= 1.0 / x
        x += 1.0
    inv = 1.0 / x
    inv2 = inv * inv
    return (
        acc + math.log(x) - 0.5 * inv - inv2 * (1.0 / 12.0 - inv2 * (1.0 / 120.0 - inv2 * (1.0 / 252.0 - inv2 / 240.0)))
    )


@_inline_always
def log_terms(code, xa, xb, c, p1, p2, row, top):  # pragma: no cover - compiled
    """One component's log terms at every point, ``row[i] = c + log phi(x_i)`` less the point-only
    constant (:func:`log_phi`: Gaussian, ``code`` 0, p1 = mu, p2 = 1 / sigma; Beta, p1 = a,
    p2 = b on ``xa, xb = log expit(+-x)``), and the running maximum over components ``top``:
    the sweeps' allocations and the Hamiltonian moves' target. (:func:`mixture_logsumexp`
    writes the same loop out: through this helper its compiled arithmetic, and so the stored
    maps, changed in the last bit.)"""
    for i in range(xa.shape[0]):
        t = log_phi(code, xa[i], xb[i], p1, p2, c)
        row[i] = t
        top[i] = max(top[i], t)


@_inline_always
def marginal_logpost(
    family, xa, xb, c_all, q, alpha, m, s2, ell, tau, loc1, loc2, log_floor, grad, E, top, tot, bits, R
):  # pragma: no cover - compiled
    r"""Log posterior of one class's sticks and components with the allocations summed out, and its gradient.

    ``q`` (3K - 1,) holds :math:`u_k = \operatorname{logit} v_k` (k < K), then the K first and the
    K second component parameters as the sweeps hold them (centred mean and log scale, or log
    shapes). The value, up to a constant, is

    .. math:: \sum_i c_i \log \sum_k w_k \phi_k(x_i) + \sum_{k<K} [\alpha \log(1 - v_k) + \log v_k]
              + \log p(\theta_1) + \log p(\theta_2),

    the stick-breaking prior Beta(1, alpha) with the Jacobian of the logit. ``grad`` receives
    the gradient; ``R`` (K,) the components' responsibility totals. ``E``, ``top``, ``tot``,
    ``bits`` are work arrays of the sweeps' shapes.
    """
    K = R.shape[0]
    n = xa.shape[0]
    # log weights and their stick derivatives
    logw = np.empty(K)
    rest = 0.0
    for k in range(K - 1):
        u = q[k]
        lv = -math.log1p(math.exp(-u)) if u > -30.0 else u
        l1v = -math.log1p(math.exp(u)) if u < 30.0 else -u
        logw[k] = lv + rest
        rest += l1v
    logw[K - 1] = rest
    value = 0.0
    for i in range(n):
        top[i] = -np.inf
    for k in range(K):
        t1 = q[K - 1 + k]
        t2 = q[2 * K - 1 + k]
        if abs(t2) > _HMC_MAX_LOG_SHAPE or (family != GAUSSIAN and abs(t1) > _HMC_MAX_LOG_SHAPE):
            return -np.inf  # a trajectory gone astray: the move is rejected
        if below_floor(family, t1, t2, log_floor):
            return -np.inf  # below the components' floor, outside the prior's support: rejected
        if family == GAUSSIAN:
            log_terms(family, xa, xb, logw[k] - t2, t1, math.exp(-t2), E[k], top)
        else:
            a = math.exp(t1)
            b = math.exp(t2)
            log_terms(family, xa, xb, logw[k] - lbeta(a, b), a, b, E[k], top)
    exp_shifted_sums(E, top, tot, bits)
    for i in range(n):
        value += c_all[i] * (top[i] + math.log(tot[i]))
        tot[i] = c_all[i] / tot[i]  # now the factor turning E into weighted responsibilities
    for k in range(K):
        t1 = q[K - 1 + k]
        t2 = q[2 * K - 1 + k]
        row = E[k]
        rk = 0.0
        g1 = 0.0
        g2 = 0.0
        if family == GAUSSIAN:
            inv = math.exp(-t2)
            for i in range(n):
                r = row[i] * tot[i]
                z = (xa[i] - t1) * inv
                rk += r
                g1 += r * z
                g2 += r * z * z
            grad[K - 1 + k] = g1 * inv - (t1 - m[k]) / s2
            grad[2 * K - 1 + k] = g2 - rk - (t2 - ell) / (tau * tau)
            value += -0.5 * (t1 - m[k]) ** 2 / s2 - 0.5 * ((t2 - ell) / tau) ** 2
        else:
            a = math.exp(t1)
            b = math.exp(t2)
            for i in range(n):
                r = row[i] * tot[i]
                rk += r
                g1 += r * xa[i]
                g2 += r * xb[i]
            dab = digamma(a + b)
            grad[K - 1 + k] = a * (g1 - rk * (digamma(a) - dab)) - (t1 - loc1[k]) / (tau * tau)
            grad[2 * K - 1 + k] = b * (g2 - rk * (digamma(b) - dab)) - (t2 - loc2[k]) / (tau * tau)
            value += -0.5 * ((t1 - loc1[k]) / tau) ** 2 - 0.5 * ((t2 - loc2[k]) / tau) ** 2
        R[k] = rk
    beyond = R[K - 1]
    for k in range(K - 2, -1, -1):
        u = q[k]
        v = 1.0 / (1.0 + math.exp(-u))
        l1v = -math.log1p(math.exp(u)) if u < 30.0 else -u
        lv = -math.log1p(math.exp(-u)) if u > -30.0 else u
        grad[k] = R[k] * (1.0 - v) - v * beyond - alpha * v + (1.0 - v)
        value += alpha * l1v + lv
        beyond += R[k]
    return value


@_inline_always
def first_inverse_mass(
    family, xa, xb, c_all, q, alpha, m, s2, ell, tau, loc1, loc2, log_floor, grad, E, top, tot, bits, R, minv
):  # pragma: no cover - compiled
    """The Hamiltonian moves' first diagonal inverse mass ``minv`` at ``q`` (:func:`marginal_logpost`'s
    layout): each coordinate's conditional variance given the responsibility totals ``R`` there,
    from the likelihood's curvature and the prior's (a stick's logit 1 / (R_k + 1); a Gaussian
    component's mean sigma_k^2 / R_k and log scale 1 / (2 R_k), a Beta component's log shapes
    1 / R_k, each with its prior's precision added). The warm-up replaces it by the variances of
    its positions."""
    K = R.shape[0]
    marginal_logpost(
        family, xa, xb, c_all, q, alpha, m, s2, ell, tau, loc1, loc2, log_floor, grad, E, top, tot, bits, R
    )
    for k in range(K):
        if family == GAUSSIAN:
            minv[K - 1 + k] = 1.0 / (R[k] * math.exp(-2.0 * q[2 * K - 1 + k]) + 1.0 / s2)
            minv[2 * K - 1 + k] = 1.0 / (2.0 * R[k] + 1.0 / (tau * tau))
        else:
            minv[K - 1 + k] = 1.0 / (R[k] + 1.0 / (tau * tau))
            minv[2 * K - 1 + k] = minv[K - 1 + k]
        if k < K - 1:
            minv[k] = 1.0 / (R[k] + 1.0)


@_inline_always
def hmc_move(
    family,
    xa,
    xb,
    c_all,
    q,
    alpha,
    m,
    s2,
    ell,
    tau,
    loc1,
    loc2,
    log_floor,
    eps,
    n_leap,
    minv,
    gen,
    E,
    top,
    tot,
    bits,
    R,
    grad,
    q0,
    p,
):  # pragma: no cover - compiled
    r"""One Hamiltonian Monte Carlo move of ``q`` on :func:`marginal_logpost` (the allocations
    summed out), with diagonal inverse mass ``minv``, step ``eps`` and ``n_leap`` leapfrog steps;
    ``q`` is updated in place (left as it was on rejection). Returns the acceptance probability."""
    D = q.shape[0]
    value = marginal_logpost(
        family, xa, xb, c_all, q, alpha, m, s2, ell, tau, loc1, loc2, log_floor, grad, E, top, tot, bits, R
    )
    kinetic = 0.0
    for d in range(D):
        q0[d] = q[d]
        p[d] = gen.standard_normal() / math.sqrt(minv[d])
        kinetic += 0.5 * minv[d] * p[d] * p[d]
    h0 = -value + kinetic
    for d in range(D):
        p[d] += 0.5 * eps * grad[d]
    for step in range(n_leap):
        for d in range(D):
            q[d] += eps * minv[d] * p[d]
        value = marginal_logpost(
            family, xa, xb, c_all, q, alpha, m, s2, ell, tau, loc1, loc2, log_floor, grad, E, top, tot, bits, R
        )
        if not value > -np.inf or value != value:
            break  # diverged: rejected below
        scale = eps if step < n_leap - 1 else 0.5 * eps
        for d in range(D):
            p[d] += scale * grad[d]
    kinetic = 0.0
    for d in range(D):
        kinetic += 0.5 * minv[d] * p[d] * p[d]
    delta = h0 - (-value + kinetic)
    accept = math.exp(min(delta, 0.0)) if delta == delta and value > -np.inf else 0.0
    if not gen.random() < accept:
        for d in range(D):
            q[d] = q0[d]
    return accept
