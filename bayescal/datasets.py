"""Simulated data with a known truth.

* :func:`make_naeini2014` draws the 2-D two-class problem of Naeini, Cooper & Hauskrecht's
  calibration papers (a disc inside a ring), and :func:`svm_scores` turns it into the scores
  of a linear or quadratic SVM as in the authors' demo.
* :func:`simulate_scores` draws classifier scores from two class-conditional densities,
  so the true calibration map

  .. math:: P(y=1 \\mid s) = \\frac{\\pi f_1(s)}{\\pi f_1(s) + (1-\\pi) f_0(s)}

  is known exactly (the generative model of Naeini et al. 2014, section 4). Presets cover a
  smooth miscalibration, a non-monotone map and a rare positive class; any pair of scipy
  frozen distributions (or :class:`Mixture` of them) can be used.

References
----------
Naeini, M. P., Cooper, G. F. & Hauskrecht, M. (2014). Binary classifier calibration: a
Bayesian non-parametric approach. arXiv:1401.3390 (SDM 2015 for the BBQ version).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
from scipy import stats
from scipy.special import expit, logsumexp

from bayescal._typing import ArrayLike, RandomStateLike
from bayescal._validation import check_integer, check_number, check_score_kind, random_generator

__all__ = ["make_naeini2014", "svm_scores", "Mixture", "ScoreTruth", "SimulatedScores", "TRUTHS", "simulate_scores"]


def make_naeini2014(n_samples: int = 2000, *, random_state: RandomStateLike = None) -> pd.DataFrame:
    r"""The simulated 2-D data set of Naeini et al. (2014), Table 1.

    Class 0 fills the disc of radius 2 and class 1 the ring between radius 2 and 4. In polar
    coordinates the angle is uniform on :math:`[0, 2\pi)` and the radius uniform on
    :math:`[0, 2)` (class 0) or :math:`[2, 4)` (class 1), so points are denser near the
    centre than under an area-uniform draw. This is the geometry of the file the authors
    ship with their demo code (radius quantiles 0.52 / 1.04 / 1.52 for class 0 and
    2.49 / 3.01 / 3.48 for class 1; an area-uniform disc would have a median radius of 1.41);
    the papers describe it loosely as "a square inside a ring".

    Parameters
    ----------
    n_samples : int, default 2000
        Total number of points, at least 4. The first ``n_samples // 2`` rows are the train
        split, the rest the test split; each split is balanced (class 0 gets the smaller half
        when the split size is odd).
    random_state : None, int or numpy Generator
        Seed for reproducible draws.

    Returns
    -------
    pandas.DataFrame
        Columns ``split`` ("train"/"test"), ``x1``, ``x2``, ``y`` (0/1), ordered as in the
        authors' file: train then test, and within each split class 0 then class 1.
    """
    n_samples = check_integer(n_samples, "n_samples", minimum=4)
    rng = random_generator(random_state)
    frames = []
    n_train = n_samples // 2
    for split, m in (("train", n_train), ("test", n_samples - n_train)):
        for label, (r_lo, r_hi), k in ((0, (0.0, 2.0), m // 2), (1, (2.0, 4.0), m - m // 2)):
            r = rng.uniform(r_lo, r_hi, k)
            theta = rng.uniform(0.0, 2.0 * np.pi, k)
            frames.append(
                pd.DataFrame(
                    {
                        "split": split,
                        "x1": r * np.cos(theta),
                        "x2": r * np.sin(theta),
                        "y": np.full(k, label, dtype=np.int64),
                    }
                )
            )
    return pd.concat(frames, ignore_index=True)


def svm_scores(train: pd.DataFrame, test: pd.DataFrame, *, kernel: str = "linear") -> tuple[np.ndarray, np.ndarray]:
    r"""Scores of an SVM fitted on ``train``, as in the Naeini et al. demo.

    Fits scikit-learn ``SVC(kernel="linear")`` or ``SVC(kernel="poly", degree=2)`` (default
    ``C``, ``gamma="scale"``, ``coef0=0``) on the feature columns of ``train`` and returns
    :math:`s = 1 / (1 + e^{-d})` of the decision values :math:`d` on both sets. The
    scikit-learn quadratic kernel :math:`(\gamma\, x^\top x')^2` has no linear term, unlike
    the authors' MATLAB kernel, so its scores differ from theirs (see
    ``naeini_quadratic_svm_scores.csv`` in the reference data).

    Parameters
    ----------
    train, test : pandas.DataFrame
        Feature columns plus a ``y`` column (in ``test`` it is ignored and may be absent); a
        ``split`` column is ignored.
    kernel : {"linear", "quadratic"}

    Returns
    -------
    (train_scores, test_scores) : tuple of ndarray
        Probabilities in [0, 1] (``score_kind="probability"``).
    """
    from sklearn.svm import SVC

    kernels = {"linear": {"kernel": "linear"}, "quadratic": {"kernel": "poly", "degree": 2}}
    if kernel not in kernels:
        raise ValueError(f"kernel={kernel!r} is not one of {sorted(kernels)}: use 'linear' or 'quadratic'.")
    for name, df in (("train", train), ("test", test)):
        if not isinstance(df, pd.DataFrame):
            raise ValueError(f"{name} is a {type(df).__name__}: pass a DataFrame such as make_naeini2014() returns.")
    if "y" not in train.columns:
        raise ValueError("train has no 'y' column: pass the labels in a column named 'y'.")
    features = [c for c in train.columns if c not in ("split", "y")]
    missing = [c for c in features if c not in test.columns]
    if missing:
        raise ValueError(f"test lacks the feature column(s) {missing} that train has: pass the same columns.")
    svm = SVC(**kernels[kernel]).fit(train[features].to_numpy(), train["y"].to_numpy())  # type: ignore[arg-type]
    return (
        expit(svm.decision_function(train[features].to_numpy())),
        expit(svm.decision_function(test[features].to_numpy())),
    )


class Mixture:
    """A finite mixture of scipy frozen distributions, with the methods :class:`ScoreTruth` uses.

    Parameters
    ----------
    components : sequence of scipy frozen distributions
    weights : sequence of float
        Non-negative mixing weights (normalised to sum to one).
    """

    def __init__(self, components: list, weights: list[float]):
        w = np.asarray(weights, dtype=np.float64)
        if len(components) == 0 or w.shape != (len(components),):
            raise ValueError("Mixture needs one weight per component and at least one component.")
        if not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
            raise ValueError(f"Mixture weights {w.tolist()} must be finite, non-negative and not all zero.")
        self.components = list(components)
        self.weights = w / w.sum()

    def logpdf(self, x: ArrayLike) -> np.ndarray:
        r"""Log density of the mixture, :math:`\log \sum_k w_k f_k(x)`, at each ``x``.

        Parameters
        ----------
        x : array-like of float
            Points, any shape.

        Returns
        -------
        ndarray of float, the shape of ``x``
        """
        x = np.asarray(x, dtype=np.float64)
        with np.errstate(divide="ignore"):  # a component of weight 0 adds nothing (not 0 x inf)
            terms = np.stack([np.log(wk) + c.logpdf(x) for wk, c in zip(self.weights, self.components) if wk > 0])
        return logsumexp(terms, axis=0)

    def pdf(self, x: ArrayLike) -> np.ndarray:
        r"""Density of the mixture, :math:`\sum_k w_k f_k(x)`, at each ``x``.

        Parameters
        ----------
        x : array-like of float
            Points, any shape.

        Returns
        -------
        ndarray of float, the shape of ``x``
        """
        return np.exp(self.logpdf(x))

    def rvs(self, size: int, random_state: RandomStateLike = None) -> np.ndarray:
        """Draw ``size`` points: a component by its weight for each, then a point from it.

        Parameters
        ----------
        size : int
            Number of points.
        random_state : None, int or numpy.random.Generator, default=None
            Seed or generator; the same seed gives the same points.

        Returns
        -------
        ndarray of shape (size,)
        """
        rng = random_generator(random_state)
        which = rng.choice(len(self.components), size=size, p=self.weights)
        out = np.empty(size)
        for k, c in enumerate(self.components):
            sel = which == k
            out[sel] = c.rvs(size=int(sel.sum()), random_state=rng)
        return out

    def __repr__(self) -> str:
        return f"Mixture({len(self.components)} components, weights={np.round(self.weights, 4).tolist()})"


class ScoreTruth(NamedTuple):
    """A generative model of scores: class prior and class-conditional score densities.

    Attributes
    ----------
    f0, f1 : scipy frozen distribution or :class:`Mixture`
        Score densities of the negatives and the positives (need ``logpdf`` and ``rvs``).
    pi : float
        P(y = 1).
    score_kind : {"probability", "decision"}
        Whether the scores are probabilities (supports inside [0, 1]) or decision values.
    """

    f0: Any
    f1: Any
    pi: float
    score_kind: str = "probability"

    def calibration_map(self, s: ArrayLike) -> np.ndarray:
        r"""The true :math:`P(y=1 \mid s) = \pi f_1(s) / (\pi f_1(s) + (1-\pi) f_0(s))`.

        Computed on the log scale (stable in the tails); NaN where both densities vanish.

        Parameters
        ----------
        s : array-like
            Scores on the input scale.

        Returns
        -------
        ndarray
            The true P(y = 1 | s).
        """
        s = np.asarray(s, dtype=np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            eta = (np.log(self.pi) + self.f1.logpdf(s)) - (np.log1p(-self.pi) + self.f0.logpdf(s))
            return np.where(np.isnan(eta), np.nan, expit(eta))


TRUTHS: dict[str, ScoreTruth] = {
    # over-confident-in-the-middle, monotone map; prevalence 0.4
    "beta_skewed": ScoreTruth(stats.beta(2, 5), stats.beta(5, 2), 0.4),
    # positives at both ends: a non-monotone (U-shaped) map
    "beta_bimodal": ScoreTruth(stats.beta(3, 3), Mixture([stats.beta(2, 9), stats.beta(9, 2)], [0.5, 0.5]), 0.5),
    # rare positives (3 %), map far below the diagonal for most scores
    "rare": ScoreTruth(stats.beta(2, 6), stats.beta(6, 2), 0.03),
    # a confident classifier: scores piled near 0 and 1 (about 14 % of the negatives below 1e-3,
    # 8 % of the positives above 1 - 1e-3), as boosted trees and neural networks give them
    "confident": ScoreTruth(stats.beta(0.4, 6), stats.beta(5, 0.5), 0.35),
    # Gaussian decision values with equal variances: the true map is exactly logistic,
    # sigma(2 d + log(pi / (1 - pi))) here, i.e. Platt scaling is the correct model
    "gaussian_decision": ScoreTruth(stats.norm(-1.0, 1.0), stats.norm(1.0, 1.0), 0.5, "decision"),
}
"""Named presets for :func:`simulate_scores`."""


class SimulatedScores(NamedTuple):
    """Output of :func:`simulate_scores`: ``scores``, ``y`` and the exact ``true_map``."""

    scores: np.ndarray
    y: np.ndarray
    true_map: Callable[[Any], np.ndarray]


def simulate_scores(
    truth: str | ScoreTruth = "beta_skewed", n: int = 1000, *, random_state: RandomStateLike = None
) -> SimulatedScores:
    r"""Draw scores and labels from a model whose calibration map is known.

    Each sample draws :math:`y \sim \mathrm{Bernoulli}(\pi)` and then
    :math:`s \sim f_y`; the true map is
    :math:`P(y=1 \mid s) = \pi f_1(s) / (\pi f_1(s) + (1-\pi) f_0(s))`.

    Parameters
    ----------
    truth : str or ScoreTruth
        A preset name from :data:`TRUTHS` (``"beta_skewed"``: Beta(2,5) vs Beta(5,2),
        pi=0.4; ``"beta_bimodal"``: Beta(3,3) vs 0.5 Beta(2,9) + 0.5 Beta(9,2), pi=0.5;
        ``"rare"``: Beta(2,6) vs Beta(6,2), pi=0.03; ``"confident"``: Beta(0.4,6) vs
        Beta(5,0.5), pi=0.35, scores piled near 0 and 1; ``"gaussian_decision"``: N(-1,1) vs
        N(1,1) decision values, pi=0.5, true map logistic), or any :class:`ScoreTruth`.
    n : int, default 1000
        Number of samples.
    random_state : None, int or numpy Generator

    Returns
    -------
    SimulatedScores
        ``scores`` (n,), ``y`` (n,) int 0/1, and ``true_map``, the callable
        :meth:`ScoreTruth.calibration_map`. Use ``truth.score_kind`` (``"probability"`` for
        the Beta presets) as the calibrators' ``score_kind``.
    """
    if isinstance(truth, str):
        if truth not in TRUTHS:
            raise ValueError(f"truth={truth!r} is not a preset: choose one of {sorted(TRUTHS)} or pass a ScoreTruth.")
        truth = TRUTHS[truth]
    if not isinstance(truth, ScoreTruth):
        raise ValueError(f"truth is a {type(truth).__name__}: pass a preset name or a ScoreTruth(f0, f1, pi).")
    check_score_kind(truth.score_kind)
    check_number(truth.pi, "truth.pi", low=0.0, high=1.0, inclusive=False)
    for name in ("f0", "f1"):
        dist = getattr(truth, name)
        if not (callable(getattr(dist, "rvs", None)) and callable(getattr(dist, "logpdf", None))):
            raise ValueError(
                f"truth.{name}={dist!r} is not a distribution: pass a frozen scipy distribution or a Mixture "
                "(with rvs and logpdf), e.g. scipy.stats.beta(2, 5)."
            )
    n = check_integer(n, "n", minimum=1)
    rng = random_generator(random_state)
    y = (rng.random(n) < truth.pi).astype(np.int64)
    scores = np.empty(n)
    for label, dist in ((0, truth.f0), (1, truth.f1)):
        sel = y == label
        scores[sel] = dist.rvs(size=int(sel.sum()), random_state=rng)
    if truth.score_kind == "probability" and (scores.min() < 0 or scores.max() > 1):
        raise ValueError(
            "truth.score_kind is 'probability' but the densities put scores outside [0, 1]: "
            "use distributions supported on [0, 1], or score_kind='decision'."
        )
    return SimulatedScores(scores, y, truth.calibration_map)
