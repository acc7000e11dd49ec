r"""The exact solution path of (weighted) nearly-isotonic regression.

Nearly-isotonic regression (Tibshirani, Hoefling & Tibshirani 2011) fits, for every
penalty :math:`\lambda \ge 0`,

.. math::

    \hat\beta(\lambda) = \arg\min_\beta \; \tfrac12 \sum_{i=1}^n w_i (z_i - \beta_i)^2
        + \lambda \sum_{i=1}^{n-1} (\beta_i - \beta_{i+1})_+ ,

so :math:`\lambda = 0` returns the data and a large enough :math:`\lambda` the (weighted)
isotonic regression. The path is piecewise linear in :math:`\lambda` and is computed
exactly by the paper's modified pool-adjacent-violators algorithm:

1. At :math:`\lambda = 0` adjacent equal responses form one *group*; every other point is
   a group of its own.
2. A group :math:`G` with weight :math:`W_G` and weighted mean :math:`\bar z_G` has, from
   the optimality conditions summed over the group,

   .. math:: \beta_G(\lambda) = \bar z_G + \lambda\, \frac{d_{\text{left}}(G) - d_{\text{right}}(G)}{W_G},

   where :math:`d` is 1 on a boundary where the fit decreases (a violation of
   monotonicity) and 0 where it increases. Neighbouring groups never cross, so the sign
   on each surviving boundary is the one of the data at :math:`\lambda = 0`.
3. Two adjacent groups collide when their lines meet; they then merge for good (groups
   never split). The next breakpoint is the smallest collision time; merging changes only
   the merged group's slope, so a heap of collision times gives the path in
   :math:`O(n \log n)`.
4. The path ends when no two groups approach: the fit is then isotonic.

The event loop is compiled with numba (a dependency of PyMC) on first use and cached on
disk. Breakpoints that coincide to a relative 1e-10 (several merges at the same
:math:`\lambda`) count as one; the loop runs on the weights divided by their mean and the
responses by their largest magnitude (its breakpoints scale back by the product), so this
tolerance, and the path, do not depend on the units of either. The fit at any
:math:`\lambda` follows from the merge
:math:`\lambda` of every boundary (step 2), so the path is stored in :math:`O(n)` memory.

References
----------
Tibshirani, R. J., Hoefling, H. & Tibshirani, R. (2011). Nearly-isotonic regression.
Technometrics, 53(1), 54-61.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from functools import cache

import numpy as np

from bayescal._typing import ArrayLike

__all__ = ["NearIsotonicPath", "neariso_path"]

_SAME_BREAKPOINT = 1e-10


@dataclass(frozen=True)
class NearIsotonicPath:
    """The nearly-isotonic regression path of responses ``z`` with weights ``w``.

    Attributes
    ----------
    z, w : ndarray of shape (n,)
        Responses and weights, in the order of the fit.
    lambdas : ndarray of shape (k,)
        The breakpoints, starting at 0 and ending where the fit becomes isotonic.
    merge_lambda : ndarray of shape (n - 1,)
        For each boundary between points ``i`` and ``i + 1``, the penalty at which it
        disappears (0 for equal neighbours, ``inf`` if it survives the whole path).
    df : ndarray of shape (k,)
        The degrees of freedom reported by the authors' ``neariso`` R package: the number
        of points minus the index of the breakpoint (it counts one merge per breakpoint,
        whatever the number of groups that fuse there).
    """

    z: np.ndarray
    w: np.ndarray
    lambdas: np.ndarray
    merge_lambda: np.ndarray
    df: np.ndarray

    def groups(self, lam: float) -> tuple[np.ndarray, np.ndarray]:
        r"""The fused groups at any ``lam >= 0``: the first point of each, and its fitted value.

        A group :math:`G` has value :math:`\bar z_G + \lambda (d_{\text{left}} - d_{\text{right}}) / W_G`
        (see the module docstring).
        """
        lam = float(lam)
        if not lam >= 0.0:
            raise ValueError(f"lam={lam} must be a non-negative number.")
        cut = np.flatnonzero(self.merge_lambda > lam) + 1  # first points of the groups after the first
        starts = np.concatenate([[0], cut])
        # group sums added within each group (a difference of cumulative sums loses a light group
        # next to heavy ones: 1 + 1e-124 - 1 = 0)
        W = np.add.reduceat(self.w, starts)
        S = np.add.reduceat(self.w * self.z, starts)
        down = (self.z[cut - 1] > self.z[cut]).astype(np.float64)  # a violation on the boundary
        return starts, S / W + lam * (np.concatenate([[0.0], down]) - np.concatenate([down, [0.0]])) / W

    def fitted(self, lam: float) -> np.ndarray:
        r"""The fit :math:`\hat\beta(\lambda)` at any ``lam >= 0``, shape ``(n,)``."""
        starts, value = self.groups(lam)
        return np.repeat(value, np.diff(np.append(starts, self.z.shape[0])))

    @property
    def beta(self) -> np.ndarray:
        """The fits at every breakpoint, shape ``(n, k)``."""
        return np.column_stack([self.fitted(lam) for lam in self.lambdas])


def neariso_path(z: ArrayLike, w: ArrayLike | None = None) -> NearIsotonicPath:
    """Compute the exact nearly-isotonic regression path (see the module docstring).

    Parameters
    ----------
    z : array-like of shape (n,)
        Responses in the order of the fit (for calibration: labels, or mean labels of tied
        scores, sorted by score).
    w : array-like of shape (n,), optional
        Positive weights (for calibration: the number of tied scores); ones by default.

    Returns
    -------
    NearIsotonicPath
    """
    z = np.array(z, dtype=np.float64).ravel()
    n = z.shape[0]
    w = np.ones(n) if w is None else np.array(w, dtype=np.float64).ravel()
    if n == 0:
        raise ValueError("z is empty: pass at least one response.")
    if w.shape != z.shape:
        raise ValueError(f"w has {w.shape[0]} values but z has {n}: pass one weight per response.")
    if not (np.all(np.isfinite(z)) and np.all(np.isfinite(w))):
        raise ValueError("z and w must be finite: remove NaN or infinite values.")
    if np.any(w <= 0):
        raise ValueError("w must be positive: drop the points of weight zero first.")

    merge_lambda = np.full(max(n - 1, 0), np.inf)
    merge_lambda[z[:-1] == z[1:]] = 0.0
    starts = np.flatnonzero(np.concatenate([[True], merge_lambda != 0.0]))
    ends = np.append(starts[1:], n)  # exclusive
    down = (z[ends[:-1] - 1] > z[starts[1:]]).astype(np.float64)  # a violation on boundary g | g+1
    # The path runs on w / m and z / s (m the mean weight, s the largest |z|), whose breakpoints
    # are those of (w, z) divided by m s, so that the tolerance below which two breakpoints are
    # one does not depend on the units of the weights or the responses.
    m = float(np.mean(w))
    s = float(np.max(np.abs(z))) or 1.0
    lambdas_arr = _event_loop()(
        np.add.reduceat(w / m, starts),
        np.add.reduceat((w / m) * (z / s), starts),
        np.concatenate([[0.0], down]),
        np.concatenate([down, [0.0]]),
        starts.astype(np.int64),
        merge_lambda,
        _SAME_BREAKPOINT,
    )
    lambdas_arr = lambdas_arr * (m * s)
    merge_lambda *= m * s
    df = n - np.arange(lambdas_arr.shape[0], dtype=np.float64)
    return NearIsotonicPath(z=z, w=w, lambdas=lambdas_arr, merge_lambda=merge_lambda, df=df)


@cache
def _event_loop():
    """Compile (on first use; cached on disk) the path's event loop with numba (a PyMC dependency)."""
    from bayescal._numba import njit

    @njit
    def run(W, S, d_left, d_right, first, merge_lambda, same):  # pragma: no cover - compiled
        """Merge groups in the order they collide; fill ``merge_lambda``; return the breakpoints.

        Groups are numbered left to right; a merged group keeps its left member's number.
        ``due[g]`` is the pending collision time of ``g`` with its right neighbour (-1 if
        none); a heap entry ``(t, g)`` is current only while ``due[g] == t``, so stale
        entries are skipped when popped.
        """
        n_groups = W.shape[0]
        mean = S / W
        slope = (d_left - d_right) / W
        nxt = np.arange(1, n_groups + 1)
        nxt[-1] = -1
        prv = np.arange(-1, n_groups - 1)
        due = np.full(n_groups, -1.0)

        def collision(g, h, lam):
            # when group g and its right neighbour h meet, or -1 if they do not approach
            approaching = slope[h] > slope[g] if d_right[g] > 0 else slope[h] < slope[g]
            if not approaching:
                return -1.0
            return max(lam, (mean[h] - mean[g]) / (slope[g] - slope[h]))

        heap = [(0.0, 0)]
        heap.pop()
        for g in range(n_groups - 1):
            t = collision(g, g + 1, 0.0)
            if t >= 0.0:
                due[g] = t
                heap.append((t, g))
        heapq.heapify(heap)
        lambdas = np.zeros(n_groups)
        k = 1
        while len(heap) > 0:
            t, g = heapq.heappop(heap)
            if due[g] != t:
                continue
            if t - lambdas[k - 1] > same * max(1.0, abs(t)):
                lambdas[k] = t
                k += 1
            lam = lambdas[k - 1]
            h = nxt[g]
            merge_lambda[first[h] - 1] = lam
            W[g] += W[h]
            S[g] += S[h]
            d_right[g] = d_right[h]
            mean[g] = S[g] / W[g]
            slope[g] = (d_left[g] - d_right[g]) / W[g]
            nxt[g] = nxt[h]
            if nxt[h] >= 0:
                prv[nxt[h]] = g
            due[h] = -1.0
            for f in (g, prv[g]):  # the pairs whose members changed
                if f < 0:
                    continue
                due[f] = -1.0
                if nxt[f] >= 0:
                    t = collision(f, nxt[f], lam)
                    if t >= 0.0:
                        due[f] = t
                        heapq.heappush(heap, (t, f))
        return lambdas[:k]

    return run
