"""The calibrator contract (DESIGN.md section 3).

Every calibrator is a scikit-learn estimator over 1-D scores. A subclass implements two
things on the working scale ``t`` (see :mod:`bayescal.data`):

* ``_fit(data, X=None)``: learn from a :class:`~bayescal.data.ScoreData`;
* ``_map_draws(t, X=None)``: the calibration map at ``t`` as an array of shape
  ``(chain, draw, n)``. A point estimate returns ``chain = draw = 1``; a Bayesian calibrator
  returns its posterior draws. ``_calibrate(t, X=None)``, the map used by ``predict_proba``,
  defaults to the mean over draws.

Everything else (validation, ``predict_proba``, ``predict``, ``calibration_map``,
``credible_band``, ``save``) lives here once, so metrics, plots and decisions never ask
which kind of calibrator they were given.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from bayescal._validation import (check_ci_prob, check_features, check_integer, check_min_samples, check_number,
                                  check_scores, is_dask_collection)
from bayescal.data import ScoreData, ScoreSummary, prepare_data, to_working

__all__ = ["Calibrator", "BayesianCalibrator", "DEFAULT_GRID_SIZE"]

DEFAULT_GRID_SIZE = 201
MAX_GRID_SIZE = 10**7
"""Most points an integer ``grid`` may ask for (a map over 10^7 points is 80 MB per draw)."""


class Calibrator(ClassifierMixin, BaseEstimator):
    """Base class of every bayescal calibrator.

    Subclasses declare, as class attributes:

    ``_min_samples`` / ``_min_per_class``
        the fewest samples (and of each class) the method needs;
    ``monotone``
        whether the fitted map is non-decreasing in the score (checked by property tests);
    ``feature_aware``
        whether ``fit`` / ``predict_proba`` use ``X=`` (MBCT);
    ``supports_weights``
        whether ``sample_weight`` (and so a :class:`~bayescal.data.ScoreSummary`) is honoured.
    """

    _min_samples: int = 2
    _min_per_class: int = 1
    monotone: bool = False
    feature_aware: bool = False
    supports_weights: bool = True

    # ---- subclass hooks -------------------------------------------------------------
    def _fit(self, data: ScoreData, X: np.ndarray | None = None) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _map_draws(self, t: np.ndarray, X: np.ndarray | None = None) -> np.ndarray:
        """Calibration map at working-scale ``t``: array ``(chain, draw, n)``."""
        return self._calibrate(t, X)[None, None, :]

    def _calibrate(self, t: np.ndarray, X: np.ndarray | None = None) -> np.ndarray:
        """Point (or posterior-mean) calibrated P(y=1) at working-scale ``t``: array ``(n,)``."""
        return self._map_draws(t, X).mean(axis=(0, 1))

    def _restore(self) -> None:
        """Rebuild derived, unsaved state after :func:`bayescal.io.load` (default: nothing)."""

    # ---- scikit-learn plumbing ------------------------------------------------------
    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.one_d_array = True
        tags.input_tags.two_d_array = True  # a single column (n, 1) is accepted
        tags.classifier_tags.multi_class = False
        tags.classifier_tags.poor_score = True
        return tags

    @property
    def _name(self) -> str:
        return type(self).__name__

    def _check_X(self, X: Any, n: int, *, fitting: bool) -> np.ndarray | None:
        if not self.feature_aware:
            if X is not None:
                raise ValueError(
                    f"{self._name} uses scores only, but X was passed: drop X, or use a feature-aware "
                    "calibrator such as 'mbct'."
                )
            return None
        X = check_features(X, n, name="X")
        if not fitting and X.shape[1] != self.n_features_x_:
            raise ValueError(
                f"X has {X.shape[1]} columns but {self._name} was fitted with {self.n_features_x_}: "
                "pass the same feature columns as in fit."
            )
        return X

    # ---- public API ----------------------------------------------------------------
    def fit(self, scores: Any, y: Any = None, sample_weight: Any = None, *, X: Any = None,
            pos_label: Any = None) -> "Calibrator":
        """Fit the calibrator.

        Parameters
        ----------
        scores : array-like of shape (n,) or (n, 1), or ScoreSummary
            Classifier scores: probabilities in [0, 1] (``score_kind="probability"``) or raw
            decision values of magnitude at most 1e100 (``score_kind="decision"``). A
            :class:`~bayescal.data.ScoreSummary` may stand in for scores and labels when the
            calibrator honours weights. Lists, numpy arrays, pandas Series and xarray
            DataArrays are read alike; a masked array with masked entries is refused (drop or
            fill those rows first).
        y : array-like of shape (n,)
            True binary labels: {0, 1}, booleans, or any two values (the greater is positive
            unless ``pos_label`` says otherwise); numeric labels with a non-integer value,
            such as {0, 0.5}, need ``pos_label``.
        sample_weight : array-like of shape (n,), optional
            Non-negative frequency weights with positive total weight on each class (totals
            above 1e15 are divided by the largest weight, with a warning).
        X : array-like of shape (n, d), optional
            Features, for feature-aware calibrators only.
        pos_label : optional
            The positive class when labels are not {0, 1}, booleans or {-1, 1}.

        Returns
        -------
        self

        Notes
        -----
        Dask collections (Dask arrays or Dask dataframe columns; ``X`` a Dask dataframe or
        2-D Dask array) are reduced where they live and nothing is collected. A 1-D
        calibrator that honours weights fits on :meth:`ScoreSummary.from_dask
        <bayescal.data.ScoreSummary.from_dask>`: every score moves to the centre of its bin
        of the summary's grid, so the map differs from the fit on the rows by at most its
        change over half a bin. A feature-aware calibrator reduces the rows its own way
        (MBCT: see its class docstring).
        """
        if y is None and not isinstance(scores, ScoreSummary):
            raise ValueError(
                f"{self._name} requires y to be passed, but the target y is None: pass the true binary labels."
            )
        if any(is_dask_collection(v) for v in (scores, y, sample_weight, X)):
            return self._fit_dask(scores, y, sample_weight, X=X, pos_label=pos_label)
        score_kind = getattr(self, "score_kind", "probability")
        if isinstance(scores, ScoreSummary):
            if not self.supports_weights:
                raise ValueError(f"{self._name} cannot fit on a ScoreSummary: it does not use sample weights.")
            if y is not None or sample_weight is not None:
                raise ValueError("Pass either a ScoreSummary or scores with y, not both.")
            if scores.score_kind != score_kind:
                raise ValueError(
                    f"The ScoreSummary holds {scores.score_kind!r} scores but {self._name} has "
                    f"score_kind={score_kind!r}: set the same score_kind on both."
                )
            data = scores.to_data()
        else:
            if sample_weight is not None and not self.supports_weights:
                raise ValueError(f"{self._name} does not support sample_weight: fit without it.")
            data = prepare_data(scores, y, sample_weight, score_kind=score_kind, pos_label=pos_label)
        X = self._check_X(X, data.n, fitting=True)
        # a summary's rows are bins: count its weight, not its rows
        n1 = float(data.w[data.y == 1].sum()) if isinstance(scores, ScoreSummary) else int(data.y.sum())
        n0 = float(data.w[data.y == 0].sum()) if isinstance(scores, ScoreSummary) else data.n - n1
        self._start_fit(data.classes, data.scores.min(), data.scores.max(), n0, n1,
                        None if X is None else X.shape[1])
        self._fit(data, X)
        return self

    def _start_fit(self, classes: np.ndarray, score_min: float, score_max: float, n0: float, n1: float,
                   n_features_x: int | None = None) -> None:
        """Check the class counts and set the attributes every fit sets, from in-memory or Dask data."""
        if n_features_x is not None:
            self.n_features_x_ = n_features_x
        check_min_samples(n0, n1, self._min_samples, self._name, per_class=self._min_per_class)
        self.classes_ = classes
        self.n_features_in_ = 1
        self.score_range_ = np.array([score_min, score_max])

    def _fit_dask(self, scores: Any, y: Any, sample_weight: Any = None, *, X: Any = None,
                  pos_label: Any = None) -> "Calibrator":
        """Fit a 1-D calibrator on Dask collections through a :class:`~bayescal.data.ScoreSummary`."""
        self._check_X(X, 0, fitting=True)  # a score-only calibrator rejects any X
        if not self.supports_weights:
            raise ValueError(
                f"{self._name} cannot fit on Dask data: it does not use sample weights, so the rows cannot be "
                "reduced to a ScoreSummary. Compute the data (.compute()) if it fits in memory, or use a "
                "calibrator that accepts a ScoreSummary."
            )
        summary = ScoreSummary.from_dask(scores, y, sample_weight, score_kind=getattr(self, "score_kind", "probability"),
                                         pos_label=pos_label)
        return self.fit(summary)

    def _working(self, scores: Any, name: str = "scores") -> np.ndarray:
        check_is_fitted(self)
        s = check_scores(scores, score_kind=getattr(self, "score_kind", "probability"), name=name)
        return to_working(s, getattr(self, "score_kind", "probability"))

    def predict_proba(self, scores: Any, *, X: Any = None) -> np.ndarray:
        """Calibrated probabilities, shape ``(n, 2)``: columns P(y=negative), P(y=positive).

        A Dask array (or Dask dataframe column) gives a lazy Dask result computed block by
        block (``map_blocks`` / ``map_partitions``): nothing is collected.
        """
        if is_dask_collection(scores):
            return self._predict_proba_dask(scores.data if hasattr(scores, "variable") else scores, X)
        t = self._working(scores)
        X = self._check_X(X, t.shape[0], fitting=False)
        p = np.clip(self._calibrate(t, X), 0.0, 1.0)
        return np.column_stack([1.0 - p, p])

    def predict_posterior(self, scores: Any, *, X: Any = None) -> xr.DataArray:
        """Draws of the calibrated P(y=1) at each score, dims ``(chain, draw, obs_id)``.

        A point estimate is a posterior with one draw, so every calibrator answers and
        decisions and diagnostics never ask which kind they were given.
        """
        t = self._working(scores)
        X = self._check_X(X, t.shape[0], fitting=False)
        draws = np.clip(self._map_draws(t, X), 0.0, 1.0)
        return xr.DataArray(draws, dims=("chain", "draw", "obs_id"),
                            coords={"chain": np.arange(draws.shape[0]), "draw": np.arange(draws.shape[1]),
                                    "obs_id": np.arange(draws.shape[2])},
                            name="p")

    def _predict_proba_dask(self, scores: Any, X: Any) -> Any:
        check_is_fitted(self)
        if X is not None:
            raise ValueError(f"{self._name}: Dask input with features is not supported; compute X or use numpy.")
        if hasattr(scores, "map_partitions") and not hasattr(scores, "map_blocks"):  # Dask Series
            import pandas as pd

            columns = [str(c) for c in self.classes_]
            meta = pd.DataFrame({c: pd.Series(dtype=float) for c in columns})
            return scores.map_partitions(
                lambda part: pd.DataFrame(self.predict_proba(part.to_numpy()), index=part.index, columns=columns),
                meta=meta)
        if scores.ndim == 2:
            scores = scores[:, 0]
        return scores.map_blocks(lambda block: self.predict_proba(block), new_axis=1,
                                 chunks=(scores.chunks[0], (2,)), dtype=np.float64, meta=np.empty((0, 2)))

    def predict(self, scores: Any, threshold: float | None = None, *, X: Any = None) -> np.ndarray:
        """Predicted labels: the positive class where the calibrated P(y=1) exceeds ``threshold`` (0.5)."""
        threshold = 0.5 if threshold is None else check_number(threshold, "threshold", low=0.0, high=1.0)
        p = self.predict_proba(scores, X=X)[:, 1]
        return self.classes_[(p > threshold).astype(int)]

    def _grid(self, grid: Any) -> np.ndarray:
        check_is_fitted(self)
        kind = getattr(self, "score_kind", "probability")
        if grid is None or (np.isscalar(grid) and not isinstance(grid, (str, bytes))):
            size = DEFAULT_GRID_SIZE if grid is None else check_integer(grid, "grid", minimum=1)
            if size > MAX_GRID_SIZE:
                raise ValueError(f"grid={size} points is more than {MAX_GRID_SIZE}: pass a smaller number of "
                                 "points, or an array of the scores you need.")
            lo, hi = self.score_range_
            if hi <= lo:  # every training score equal
                lo, hi = (0.0, 1.0) if kind == "probability" else (lo - 1.0, hi + 1.0)
            return np.linspace(lo, hi, size)
        return check_scores(grid, score_kind=kind, name="grid")

    def calibration_map(self, grid: Any = None) -> xr.DataArray:
        """The calibration map P(y=1 | score) on ``grid`` with dims ``(chain, draw, score)``.

        ``grid`` is on the input scale: an array of scores, or an integer number of points
        (201 when ``None``) spread over the range of the scores seen in ``fit``, where the
        map is supported by data. Attr ``extrapolated`` says whether any grid point lies
        outside that range; ``observed_range`` gives it.
        """
        if self.feature_aware:
            raise ValueError(f"{self._name} depends on features as well as scores: it has no 1-D calibration map.")
        g = self._grid(grid)
        draws = np.clip(self._map_draws(to_working(g, getattr(self, "score_kind", "probability"))), 0.0, 1.0)
        lo, hi = self.score_range_
        return xr.DataArray(
            draws,
            dims=("chain", "draw", "score"),
            coords={"chain": np.arange(draws.shape[0]), "draw": np.arange(draws.shape[1]), "score": g},
            name="calibration_map",
            attrs={
                "score_scale": getattr(self, "score_kind", "probability"),
                "calibrator": self._name,
                "observed_range": [float(lo), float(hi)],
                "extrapolated": int(bool(np.any((g < lo) | (g > hi)))),
            },
        )

    def credible_band(self, grid: Any = None, ci_prob: float | None = None, ci_kind: str | None = None) -> xr.DataArray:
        """Pointwise interval of the calibration map, dims ``(score, ci_bound)``.

        ``ci_prob`` and ``ci_kind`` ("eti" or "hdi") default to ArviZ's
        ``rcParams["stats.ci_prob"]`` and ``rcParams["stats.ci_kind"]``. For a point-estimate
        calibrator (one draw) the band collapses onto the map (attr ``degenerate=1``).
        """
        import arviz_base
        import arviz_stats

        ci_prob = check_ci_prob(ci_prob)
        ci_kind = arviz_base.rcParams["stats.ci_kind"] if ci_kind is None else ci_kind
        if ci_kind not in ("eti", "hdi"):
            raise ValueError(f"ci_kind={ci_kind!r} must be 'eti' or 'hdi'.")
        cmap = self.calibration_map(grid)
        band = getattr(arviz_stats, ci_kind)(cmap, prob=ci_prob)
        band = band.transpose("score", "ci_bound")
        band.attrs.update(cmap.attrs)
        band.attrs.update({"ci_kind": ci_kind, "ci_prob": ci_prob,
                           "degenerate": int(cmap.sizes["chain"] * cmap.sizes["draw"] == 1)})
        band.name = "credible_band"
        return band

    def save(self, path: Any) -> None:
        """Save the fitted calibrator to a netCDF file (see :mod:`bayescal.io`; no pickle)."""
        from bayescal.io import save

        save(self, path)

    @classmethod
    def load(cls, path: Any) -> "Calibrator":
        """Load a calibrator saved with :meth:`save`; the file must hold this class (or a subclass)."""
        from bayescal.io import load

        return load(path, expected=cls)


class BayesianCalibrator(Calibrator):
    """A calibrator with a posterior over calibration maps.

    Subclasses set ``idata_`` (an ``xarray.DataTree`` with at least a ``posterior`` group)
    in ``_fit`` and implement ``_map_draws`` from it.
    """

    def sample_posterior_predictive(self, scores: Any, *, random_seed: Any = None) -> xr.DataTree:
        """Replicated labels at ``scores``: y_rep ~ Bernoulli(map draw), one per posterior draw.

        Returns an ``xarray.DataTree`` with a ``posterior_predictive`` group holding ``y`` with
        dims ``(chain, draw, obs_id)``.
        """
        p = self.predict_posterior(scores)
        rng = np.random.default_rng(random_seed)
        y_rep = (rng.random(p.shape) < p.values).astype(np.int8)
        ds = xr.Dataset({"y": (p.dims, y_rep)}, coords=p.coords)
        return xr.DataTree.from_dict({"posterior_predictive": ds})
