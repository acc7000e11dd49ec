"""The calibrator contract (see the architecture page of the documentation).

Every calibrator is a scikit-learn estimator over 1-D scores. A subclass implements two
things on the working scale ``t`` (see :mod:`bayescal.data`):

* ``_fit(data, X=None)``: learn from a :class:`~bayescal.data.ScoreData`;
* ``_map_draws(t, X=None)``: the calibration map at ``t`` as an array of shape
  ``(chain, draw, n)``. A point estimate returns ``chain = draw = 1``; a Bayesian calibrator
  returns its posterior draws. ``_calibrate(t, X=None)``, the map used by ``predict_proba``,
  defaults to the mean over draws.

Everything else (validation, ``predict_proba``, ``predict``, ``predict_posterior``,
``predict_interval``, ``calibration_map``, ``credible_band``, ``save``, and for label shift
``with_class_prior`` and ``estimate_class_prior``) lives here once, so metrics, plots and
decisions never ask which kind of calibrator they were given.

Capabilities beyond the contract are declared, not probed: :class:`ClassConditional` marks
a calibrator that models the class score densities (class prior draws, ``density_map``,
``score_atoms``); :class:`PosteriorClassConditional` implements the first and last from a
posterior holding ``pi`` and ``atom_prob``. Prior shift is one wrapper,
:class:`PriorShiftedCalibrator`, that adjusts ``_map_draws`` of any fitted calibrator.
"""

from __future__ import annotations

import copy
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from math import ceil
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.utils.validation import check_is_fitted

from bayescal import _schema as schema
from bayescal._typing import ArrayLike, RandomStateLike
from bayescal._validation import (
    DEFAULT_CI_PROB,
    RowValueError,
    check_ci_prob,
    check_features,
    check_integer,
    check_min_samples,
    check_number,
    check_scores,
    is_dask_collection,
    random_generator,
)
from bayescal._warnings import warn
from bayescal.data import ScoreData, ScoreSummary, check_dask_scores_shape, prepare_data, to_working

__all__ = [
    "Calibrator",
    "BayesianCalibrator",
    "ClassConditional",
    "PosteriorClassConditional",
    "PriorShiftedCalibrator",
    "PriorShiftedClassConditional",
    "DEFAULT_CI_PROB",
    "DEFAULT_GRID_SIZE",
]

#: Number of points of the default score grid of :meth:`Calibrator.calibration_map`.
DEFAULT_GRID_SIZE = 201
# DEFAULT_CI_PROB (0.95), the probability of every band when ``ci_prob=None``, is defined
# in bayescal._validation (which cannot import this module) and re-exported here.
MAX_GRID_SIZE = 10**7
"""Most points an integer ``grid`` may ask for (a map over 10^7 points is 80 MB per draw)."""
MAX_PRIOR_DRAWS = 10**6
"""Most draws of the deployment prior ``n_prior_draws`` may ask for (the shifted map over the
default grid of 201 scores is then 1.6 GB)."""


def check_ci_kind(ci_kind: str | None) -> str:
    """``ci_kind`` as given, or ArviZ's ``rcParams["stats.ci_kind"]`` when None; "eti" or "hdi"."""
    import arviz_base

    ci_kind = arviz_base.rcParams["stats.ci_kind"] if ci_kind is None else ci_kind
    if ci_kind not in ("eti", "hdi"):
        raise ValueError(f"ci_kind={ci_kind!r} must be 'eti' or 'hdi'.")
    return ci_kind


def band_of(cmap: xr.DataArray, ci_prob: float, ci_kind: str) -> xr.DataArray:
    """The pointwise interval of map draws ``cmap`` (dims ``chain, draw, score``), dims
    ``(score, ci_bound)``, as :meth:`Calibrator.credible_band` returns it (checked arguments)."""
    import arviz_stats

    # the interval is taken per score position: a grid that repeats a score is the user's to
    # ask for, so its coordinate goes back on afterwards (ArviZ warns on repeated coordinates)
    band = getattr(arviz_stats, ci_kind)(cmap.drop_vars("score"), prob=ci_prob)
    band = band.transpose("score", "ci_bound").assign_coords(score=cmap["score"])
    band.attrs.update(cmap.attrs)
    band.attrs.update(
        {"ci_kind": ci_kind, "ci_prob": ci_prob, "degenerate": int(cmap.sizes["chain"] * cmap.sizes["draw"] == 1)}
    )
    band.name = "credible_band"
    return band


def check_grid_size(grid: Any, minimum: int = 1) -> int:
    """An integer ``grid`` (a number of points) of at least ``minimum`` and at most
    :data:`MAX_GRID_SIZE`, or a ValueError naming it."""
    size = check_integer(grid, "grid", minimum=minimum)
    if size > MAX_GRID_SIZE:
        raise ValueError(
            f"grid={size} points is more than {MAX_GRID_SIZE}: pass a smaller number of points, or an array of "
            "the scores you need."
        )
    return size


RELATIVE_WEIGHT_MEAN = 0.1
"""Mean of the positive weights below which ``sample_weight`` looks relative (normalised to sum
to 1, say) rather than frequencies, which calibrators read it as."""


def _warn_relative_weights(w: np.ndarray, name: str) -> None:
    """Warn when the positive weights average below :data:`RELATIVE_WEIGHT_MEAN`: a calibrator
    whose fit depends on their scale then fits as if it had seen that few samples."""
    positive = w[w > 0]
    mean = float(positive.mean()) if positive.size else 1.0
    if mean < RELATIVE_WEIGHT_MEAN:
        warn(
            f"sample_weight averages {mean:.3g} over the {positive.size} rows it weighs: {name} reads weights as "
            f"frequencies (a weight of 2 counts as two rows), so it fits as if it had seen {positive.sum():.3g} "
            "rows. If these are relative weights (importance or survey weights), rescale them to average 1: "
            "sample_weight * (sample_weight > 0).sum() / sample_weight.sum()."
        )


def _column_names(X: Any) -> np.ndarray | None:
    """The column names of a frame ``X`` as a string array, when every one is a string (as
    scikit-learn records ``feature_names_in_``); None for arrays and unnamed columns."""
    columns = getattr(X, "columns", None)
    if columns is None or not all(isinstance(c, str) for c in columns):
        return None
    return np.array(list(columns), dtype=str)


def _same_parameter(a: Any, b: Any) -> bool:
    """Whether two values of a parameter are the same: arrays and sequences by their elements,
    estimators (a wrapped calibrator) by their type and parameters, anything else by ``==``."""
    if hasattr(a, "get_params") and hasattr(b, "get_params"):
        return type(a) is type(b) and all(
            _same_parameter(v, b.get_params(deep=False).get(k)) for k, v in a.get_params(deep=False).items()
        )
    if isinstance(a, (np.ndarray, list, tuple)) or isinstance(b, (np.ndarray, list, tuple)):
        try:
            return bool(np.array_equal(np.asarray(a, dtype=object), np.asarray(b, dtype=object)))
        except (TypeError, ValueError):
            return False
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return a is b


_CHUNK_ELEMENTS = 2**24  # map draws evaluated in chunks of at most this many (draw x score) values


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
        whether ``sample_weight`` (and so a :class:`~bayescal.data.ScoreSummary`) is honoured;
    ``weight_scale_matters``
        whether the fit depends on the weights' scale, not only on their ratios (a prior, a
        bandwidth or a smoothing whose strength is set against the number of samples): such a
        calibrator warns when the weights look relative rather than frequencies
        (:data:`RELATIVE_WEIGHT_MEAN`);
    ``fixed_midpoint``
        whether the map sends the working-scale score 0 to 1/2 whatever the data (temperature
        scaling): such a calibrator cannot follow a base rate far from the classifier's;
    ``score_kind``
        ``"probability"`` (scores in [0, 1]) or ``"decision"`` (raw decision values): the
        input scale. Calibrators that take both have it as a parameter; the class attribute
        is the default every caller may read.
    ``_fitted_schema``
        its fitted attributes, name -> :class:`~bayescal._schema.Fitted` (merged with the
        base classes' declarations); :mod:`bayescal.io` saves only declared attributes and
        checks a file against the declaration before building anything from it.

    Capabilities beyond the contract are declared by inheritance: a calibrator that models
    the class score densities inherits :class:`ClassConditional`.
    """

    score_kind: str = "probability"
    fixed_midpoint: bool = False
    _min_samples: int = 2
    _min_per_class: int = 1
    monotone: bool = False
    feature_aware: bool = False
    supports_weights: bool = True
    weight_scale_matters: bool = True
    gives_venn_abers_pairs: bool = False
    """Whether :meth:`_pairs` gives the Venn-Abers multiprobability pair (declared, not probed)."""
    _fitted_schema = {
        "classes_": schema.labels(),
        "n_features_in_": schema.scalar("i", low=1, high=1),
        "score_range_": schema.array("f", (2,), order="nondecreasing"),
        "n_features_x_": schema.scalar("i", low=1, optional=True),
        "feature_names_x_": schema.array("U", ("d",), optional=True),
        "class_prior_": schema.scalar("f", low=0.0, high=1.0, open=True, optional=True),
    }

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

    def _check_fitted(self) -> None:
        """Cross-checks of the fitted attributes that ``_fitted_schema`` cannot state.

        Called by :func:`bayescal.io.load` (and ``save``) after every declared attribute
        passed its own checks; raises ``ValueError``. Default: the score range lies in [0, 1]
        for probability scores.
        """
        if self.score_kind == "probability":
            lo, hi = self.score_range_
            if lo < 0.0 or hi > 1.0:
                raise ValueError(f"score_range_ [{lo}, {hi}] lies outside [0, 1] for probability scores.")

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

    def _record_feature_names(self, names: np.ndarray | None) -> None:
        """Keep the columns' names of the features of this fit (a pandas or Dask frame's), checked
        at prediction; forget those of an earlier fit when this one has none."""
        if names is None:
            self.__dict__.pop("feature_names_x_", None)
        else:
            self.feature_names_x_ = names

    def _check_X(self, X: Any, n: int, *, fitting: bool) -> np.ndarray | None:
        if not self.feature_aware:
            if X is not None:
                raise ValueError(
                    f"{self._name} uses scores only, but X was passed: drop X, or use a feature-aware "
                    "calibrator such as 'mbct'."
                )
            return None
        names = _column_names(X)
        X = check_features(X, n, name="X")
        if fitting:
            self._record_feature_names(names)
            return X
        if X.shape[1] != self.n_features_x_:
            raise ValueError(
                f"X has {X.shape[1]} columns but {self._name} was fitted with {self.n_features_x_}: "
                "pass the same feature columns as in fit."
            )
        fitted = getattr(self, "feature_names_x_", None)
        if names is not None and fitted is not None and not np.array_equal(names, fitted):
            raise ValueError(
                f"X has the columns {names.tolist()} but {self._name} was fitted on {fitted.tolist()}: the "
                f"features are matched by position, so pass the same columns in the same order (X[{fitted.tolist()}])."
            )
        return X

    # ---- public API ----------------------------------------------------------------
    def fit(
        self,
        scores: ArrayLike | ScoreSummary,
        y: ArrayLike | None = None,
        sample_weight: ArrayLike | None = None,
        *,
        X: ArrayLike | None = None,
        pos_label: Any = None,
    ) -> "Calibrator":
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

        A fit that raises leaves the calibrator as it was before the call (fitted or not),
        not holding a mix of the new data's attributes and the former fit's.
        """
        before = dict(self.__dict__)
        try:
            return self._fit_all(scores, y, sample_weight, X, pos_label)
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(before)
            raise

    def _fit_all(self, scores: Any, y: Any, sample_weight: Any, X: Any, pos_label: Any) -> "Calibrator":
        """:meth:`fit`'s work: validation, the shared attributes (:meth:`_start_fit`) and :meth:`_fit`."""
        if y is None and not isinstance(scores, ScoreSummary):
            raise ValueError(
                f"{self._name} requires y to be passed, but the target y is None: pass the true binary labels."
            )
        if any(is_dask_collection(v) for v in (scores, y, sample_weight, X)):
            if self.feature_aware:
                self._record_feature_names(_column_names(X))
            return self._fit_dask(scores, y, sample_weight, X=X, pos_label=pos_label)
        score_kind = self.score_kind
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
        if sample_weight is not None and self.weight_scale_matters:
            _warn_relative_weights(data.w, self._name)
        weighted = isinstance(scores, ScoreSummary) or sample_weight is not None  # else every weight is 1
        present = data.w > 0  # a row of weight 0 is no row: it counts for no class and widens no range
        # a summary's rows are bins: count its weight, not its rows
        n1 = float(data.w[data.y == 1].sum()) if isinstance(scores, ScoreSummary) else int(data.y[present].sum())
        n0 = float(data.w[data.y == 0].sum()) if isinstance(scores, ScoreSummary) else int(present.sum()) - n1
        self._start_fit(
            data.classes,
            data.scores[present].min(),
            data.scores[present].max(),
            n0,
            n1,
            None if X is None else X.shape[1],
            prevalence=float(data.w[data.y == 1].sum() / data.w.sum()) if weighted else n1 / data.n,
        )
        self._fit(data, X)
        return self

    def _start_fit(
        self,
        classes: np.ndarray,
        score_min: float,
        score_max: float,
        n0: float,
        n1: float,
        n_features_x: int | None = None,
        *,
        prevalence: float | None = None,
    ) -> None:
        """Check the class counts and set the attributes every fit sets, from in-memory or Dask data.

        ``class_prior_`` is the (weighted) share of positives in the calibration data,
        ``prevalence``, or ``n1 / (n0 + n1)`` when not given.
        """
        if n_features_x is not None:
            self.n_features_x_ = n_features_x
        check_min_samples(n0, n1, self._min_samples, self._name, per_class=self._min_per_class)
        self._record_fitted_params()
        self.class_prior_ = float(n1 / (n0 + n1)) if prevalence is None else float(prevalence)
        self.classes_ = classes
        self.n_features_in_ = 1
        self.score_range_ = np.array([score_min, score_max])

    def _fit_dask(
        self, scores: Any, y: Any, sample_weight: Any = None, *, X: Any = None, pos_label: Any = None
    ) -> "Calibrator":
        """Fit a 1-D calibrator on Dask collections through a :class:`~bayescal.data.ScoreSummary`."""
        self._check_X(X, 0, fitting=True)  # a score-only calibrator rejects any X
        if not self.supports_weights:
            raise ValueError(
                f"{self._name} cannot fit on Dask data: it does not use sample weights, so the rows cannot be "
                "reduced to a ScoreSummary. Compute the data (.compute()) if it fits in memory, or use a "
                "calibrator that accepts a ScoreSummary."
            )
        summary = ScoreSummary._from_dask(
            scores, y, sample_weight, score_kind=self.score_kind, pos_label=pos_label, shard=False
        )
        return self.fit(summary)

    _predict_params: tuple[str, ...] = ("score_kind",)
    """Parameters that prediction reads as the fit used them: changed after the fit (``set_params``
    without a refit), they are refused rather than read against a fit made with other values."""

    def _record_fitted_params(self) -> None:
        """Remember every parameter's value at this fit (also of a fit loaded from a file): prediction
        refuses a change of the :attr:`_predict_params`, a save a change of any."""
        self._params_of_fit = {  # containers copied (a list changed in place is a change); estimators not
            k: copy.deepcopy(v) if isinstance(v, (list, dict, np.ndarray)) else v
            for k, v in self.get_params(deep=False).items()
        }

    def _changed_params(self, names: Any) -> None:
        """Refuse the parameters among ``names`` whose value differs from the fit's."""
        fitted = getattr(self, "_params_of_fit", {})
        for name in names:
            if name in fitted and not _same_parameter(getattr(self, name), fitted[name]):
                raise ValueError(
                    f"{name}={getattr(self, name)!r} was set after this {self._name} was fitted with "
                    f"{name}={fitted[name]!r}: fit it again, or set {name} back."
                )

    def _check_params_of_fit(self) -> None:
        """Refuse any parameter changed since the fit (``set_params`` without a refit): a saved file
        names its parameters, and they must be those its fitted state came from."""
        self._changed_params(self.get_params(deep=False))

    def _check_fitted_params(self) -> None:
        """:func:`~sklearn.utils.validation.check_is_fitted`, and refuse parameters that prediction
        reads (:attr:`_predict_params`) changed since the fit."""
        check_is_fitted(self)
        self._changed_params(self._predict_params)

    def _working(self, scores: Any, name: str = "scores") -> np.ndarray:
        self._check_fitted_params()
        s = check_scores(scores, score_kind=self.score_kind, name=name)
        return to_working(s, self.score_kind)

    def predict_proba(self, scores: ArrayLike, *, X: ArrayLike | None = None) -> np.ndarray:
        """Calibrated probabilities, shape ``(n, 2)``: columns P(y=negative), P(y=positive).

        A Dask array (or Dask dataframe column) gives a lazy Dask result computed block by
        block (``map_blocks`` / ``map_partitions``): nothing is collected.

        Parameters
        ----------
        scores : array-like of shape (n,) or (n, 1), or Dask array / column
            Scores on the input scale (as in :meth:`fit`).
        X : array-like of shape (n, d), optional
            Features, for feature-aware calibrators only (the columns used in :meth:`fit`).

        Returns
        -------
        ndarray of shape (n, 2)
            The posterior-mean map for a Bayesian calibrator; a Dask array (or a Dask
            dataframe with one column per class) for Dask input.
        """
        if is_dask_collection(scores):
            return self._predict_proba_dask(scores.data if isinstance(scores, xr.DataArray) else scores, X)
        t = self._working(scores)
        X = self._check_X(X, t.shape[0], fitting=False)
        p = np.clip(self._calibrate(t, X), 0.0, 1.0)
        return np.column_stack([1.0 - p, p])

    def predict_posterior(self, scores: ArrayLike, *, X: ArrayLike | None = None) -> xr.DataArray:
        """Draws of the calibrated P(y=1) at each score, dims ``(chain, draw, obs_id)``.

        A point estimate is a posterior with one draw, so every calibrator answers and
        decisions and diagnostics never ask which kind they were given.

        Parameters
        ----------
        scores : array-like of shape (n,) or (n, 1)
            Scores on the input scale.
        X : array-like of shape (n, d), optional
            Features, for feature-aware calibrators only.

        Returns
        -------
        xarray.DataArray
            Named ``p``, dims ``(chain, draw, obs_id)``.
        """
        t = self._working(scores)
        X = self._check_X(X, t.shape[0], fitting=False)
        draws = np.clip(self._map_draws(t, X), 0.0, 1.0)
        return xr.DataArray(
            draws,
            dims=("chain", "draw", "obs_id"),
            coords={
                "chain": np.arange(draws.shape[0]),
                "draw": np.arange(draws.shape[1]),
                "obs_id": np.arange(draws.shape[2]),
            },
            name="p",
        )

    def _predictor(self) -> Calibrator:
        """What each Dask task of a lazy :meth:`predict_proba` holds: the calibrator itself, or a
        copy without the parts its point predictions never read (each task's graph carries it)."""
        return self

    def _predict_proba_dask(self, scores: Any, X: Any) -> Any:
        check_is_fitted(self)
        predictor = self._predictor()
        if X is not None:
            raise ValueError(f"{self._name}: Dask input with features is not supported; compute X or use numpy.")
        if hasattr(scores, "map_partitions") and not hasattr(scores, "map_blocks"):  # Dask Series
            import pandas as pd

            columns = [str(c) for c in self.classes_]
            meta = pd.DataFrame({c: pd.Series(dtype=float) for c in columns})

            def partition(part: Any) -> Any:
                try:
                    p = predictor.predict_proba(part.to_numpy())
                except RowValueError as exc:  # name the row by its index label, which the user sees
                    label = part.index[exc.index]
                    label = label.item() if isinstance(label, np.generic) else label  # 1057, not np.int64(1057)
                    raise ValueError(exc.text(f"label {label!r}")) from None
                return pd.DataFrame(p, index=part.index, columns=columns)

            return scores.map_partitions(partition, meta=meta)
        check_dask_scores_shape(scores)
        if scores.ndim == 2:
            scores = scores[:, 0]

        def block(values: np.ndarray, block_info: dict | None = None) -> np.ndarray:
            try:
                return predictor.predict_proba(values)
            except RowValueError as exc:  # name the row of the whole array, not of the chunk
                start = block_info[0]["array-location"][0][0] if block_info else 0
                raise exc.moved(start) from None

        return scores.map_blocks(
            block, new_axis=1, chunks=(scores.chunks[0], (2,)), dtype=np.float64, meta=np.empty((0, 2))
        )

    def predict(self, scores: ArrayLike, threshold: float | None = None, *, X: ArrayLike | None = None) -> np.ndarray:
        """Predicted labels: the positive class where the calibrated P(y=1) exceeds ``threshold``.

        Parameters
        ----------
        scores : array-like of shape (n,) or (n, 1)
            Scores on the input scale.
        threshold : float, optional
            Cut-off on the calibrated probability, in [0, 1]; 0.5 when None. The
            cost-optimal one is :func:`bayescal.decision.cost_cutoff`.
        X : array-like of shape (n, d), optional
            Features, for feature-aware calibrators only.

        Returns
        -------
        ndarray of shape (n,)
            Labels from ``classes_``.
        """
        threshold = 0.5 if threshold is None else check_number(threshold, "threshold", low=0.0, high=1.0)
        p = self.predict_proba(scores, X=X)[:, 1]
        return self.classes_[(p > threshold).astype(int)]

    def _grid(self, grid: Any) -> np.ndarray:
        self._check_fitted_params()
        kind = self.score_kind
        if grid is None or (np.isscalar(grid) and not isinstance(grid, (str, bytes))):
            size = DEFAULT_GRID_SIZE if grid is None else check_grid_size(grid)
            lo, hi = self.score_range_
            if hi <= lo:  # every training score equal
                lo, hi = (0.0, 1.0) if kind == "probability" else (lo - 1.0, hi + 1.0)
            return np.linspace(lo, hi, size)
        return check_scores(grid, score_kind=kind, name="grid")

    def calibration_map(self, grid: ArrayLike | None = None) -> xr.DataArray:
        """The calibration map P(y=1 | score) on ``grid`` with dims ``(chain, draw, score)``.

        Parameters
        ----------
        grid : array-like of scores or int, optional
            On the input scale: an array of scores, or an integer number of points
            (:data:`DEFAULT_GRID_SIZE` = 201 when None) spread over the range of the scores
            seen in ``fit``, where the map is supported by data.

        Returns
        -------
        xarray.DataArray
            Dims ``(chain, draw, score)`` (a point estimate has one chain and one draw);
            attrs ``score_scale``, ``calibrator``, ``observed_range`` (the range of the
            fitted scores) and ``extrapolated`` (1 when a grid point lies outside it).
        """
        if self.feature_aware:
            raise ValueError(f"{self._name} depends on features as well as scores: it has no 1-D calibration map.")
        g = self._grid(grid)
        draws = np.clip(self._map_draws(to_working(g, self.score_kind)), 0.0, 1.0)
        return xr.DataArray(
            draws,
            dims=("chain", "draw", "score"),
            coords={"chain": np.arange(draws.shape[0]), "draw": np.arange(draws.shape[1]), "score": g},
            name="calibration_map",
            attrs=self._grid_attrs(g),
        )

    def _grid_attrs(self, g: np.ndarray) -> dict[str, Any]:
        """Attrs of a DataArray over the input-scale grid ``g``: its scale, the calibrator, the
        range of the fitted scores and whether any point of ``g`` lies outside it."""
        lo, hi = self.score_range_
        return {
            "score_scale": self.score_kind,
            "calibrator": self._name,
            "observed_range": [float(lo), float(hi)],
            "extrapolated": int(bool(np.any((g < lo) | (g > hi)))),
        }

    def credible_band(
        self, grid: ArrayLike | None = None, ci_prob: float | None = None, ci_kind: str | None = None
    ) -> xr.DataArray:
        """Pointwise credible interval of the calibration map, dims ``(score, ci_bound)``.

        Parameters
        ----------
        grid : array-like of scores or int, optional
            As in :meth:`calibration_map`.
        ci_prob : float, optional
            Probability of the interval, in (0, 1); :data:`DEFAULT_CI_PROB` (0.95) when None.
        ci_kind : {"eti", "hdi"}, optional
            Equal-tailed or highest-density interval; ArviZ's ``rcParams["stats.ci_kind"]``
            (``"eti"`` unless changed) when None.

        Returns
        -------
        xarray.DataArray
            Dims ``(score, ci_bound)`` with ``ci_bound = ["lower", "upper"]`` and attrs
            ``ci_kind``, ``ci_prob``, ``degenerate`` (1 for a point-estimate calibrator,
            whose band collapses onto the map) and those of :meth:`calibration_map`.
        """
        ci_prob = check_ci_prob(ci_prob)
        ci_kind = check_ci_kind(ci_kind)
        return band_of(self.calibration_map(grid), ci_prob, ci_kind)

    def predict_interval(
        self, scores: ArrayLike, ci_prob: float | None = None, *, X: ArrayLike | None = None
    ) -> xr.DataArray:
        r"""Pointwise equal-tailed interval of the calibrated P(y=1) at each score, dims ``(obs_id, ci_bound)``.

        For score :math:`s_i` the bounds are the empirical quantiles of the
        :meth:`predict_posterior` draws :math:`p_{cd}(s_i)`, pooled over chains and draws,

        .. math::

            \left[\, Q_{(1-\gamma)/2}\{p_{cd}(s_i)\},\; Q_{(1+\gamma)/2}\{p_{cd}(s_i)\} \,\right],

        with :math:`\gamma` = ``ci_prob``: an interval of the posterior of P(y=1 | s), not a
        prediction interval for the label. A point-estimate calibrator has one draw, so its
        interval collapses onto the prediction (attr ``degenerate=1``); calibrators with
        intervals of their own (Venn-Abers) override this method.

        Parameters
        ----------
        scores : array-like of shape (n,) or (n, 1)
            Scores on the input scale (as in :meth:`fit`).
        ci_prob : float, optional
            Probability of the interval, in (0, 1); :data:`DEFAULT_CI_PROB` (0.95) when None.
        X : array-like of shape (n, d), optional
            Features, for feature-aware calibrators only (the columns used in :meth:`fit`).

        Returns
        -------
        xarray.DataArray
            Named ``p_interval``, dims ``(obs_id, ci_bound)`` with
            ``ci_bound = ["lower", "upper"]``; attrs ``ci_kind`` (``"eti"``), ``ci_prob`` and
            ``degenerate`` (1 when the posterior has a single draw).
        """
        ci_prob = check_ci_prob(ci_prob)
        t = self._working(scores)
        X = self._check_X(X, t.shape[0], fitting=False)
        q = np.empty((t.size, 2))
        n_draws = 1
        for rows, draws in self._draw_blocks(t, X):
            n_draws = draws.shape[0] * draws.shape[1]
            flat = draws.reshape(n_draws, -1)
            q[rows] = np.quantile(flat, [(1.0 - ci_prob) / 2.0, (1.0 + ci_prob) / 2.0], axis=0).T
        return xr.DataArray(
            q,
            dims=("obs_id", "ci_bound"),
            coords={"obs_id": np.arange(t.size), "ci_bound": ["lower", "upper"]},
            name="p_interval",
            attrs={"ci_kind": "eti", "ci_prob": ci_prob, "degenerate": int(n_draws == 1)},
        )

    def _draw_blocks(self, t: np.ndarray, X: np.ndarray | None = None) -> Iterator[tuple[slice, np.ndarray]]:
        """The map's draws at working-scale ``t`` (clipped to [0, 1], as :meth:`predict_posterior`
        gives them), a block of scores at a time: ``(rows, draws)``, ``draws`` of shape (chain,
        draw, block) holding at most :data:`_CHUNK_ELEMENTS` values, so a summary over the scores
        per draw needs memory of the number of draws, not draws times scores."""
        n_draws = int(np.prod(self._map_draws(t[:1], None if X is None else X[:1]).shape[:2]))
        step = max(1, _CHUNK_ELEMENTS // n_draws)
        for start in range(0, t.size, step):
            rows = slice(start, start + step)
            yield rows, np.clip(self._map_draws(t[rows], None if X is None else X[rows]), 0.0, 1.0)

    # ---- label shift ----------------------------------------------------------------
    def _base_prior_draws(self) -> np.ndarray:
        """The class prior that each draw of the map assumes, shape ``(chain, draw)``.

        Class-conditional calibrators give their own (posterior) class prior; the others
        the share of positives in the calibration data, the same for every draw.
        """
        check_is_fitted(self)
        if isinstance(self, ClassConditional):
            return np.asarray(self.class_prior_draws().transpose("chain", "draw").values, dtype=np.float64)
        try:
            prior = float(self.class_prior_)
        except AttributeError:
            raise ValueError(
                f"This {self._name} was fitted (or saved) without class_prior_, the share of positives "
                "in its calibration data: refit it to use prior shift."
            ) from None
        shape = self._map_draws(np.zeros(1)).shape[:2] if isinstance(self, BayesianCalibrator) else (1, 1)
        return np.full(shape, prior)

    def _prior_shift_caveat(self) -> str | None:
        """Why this fitted map breaks the assumption of :meth:`with_class_prior` and
        :meth:`estimate_class_prior` (a map calibrated at ``class_prior_``), or None."""
        return None

    def _warn_prior_shift_caveat(self) -> None:
        message = self._prior_shift_caveat()
        if message is not None:
            warn(message)

    def with_class_prior(
        self, prior: float | tuple[float, float], *, n_prior_draws: int = 1000, random_state: RandomStateLike = None
    ) -> "Calibrator":
        r"""This fitted calibrator's maps under another class prior (label shift), as a new calibrator.

        Under label shift the class score densities stay and only the prevalence changes, so
        by Bayes' rule each map draw's odds are multiplied by the ratio of the prior odds:

        .. math::

            \frac{q'(s)}{1 - q'(s)} = \frac{q(s)}{1 - q(s)} \cdot
            \frac{\pi' / (1 - \pi')}{\pi / (1 - \pi)}.

        For class-conditional calibrators (:class:`ClassConditional`, e.g. the DPM) this is
        exact per posterior draw, :math:`\pi` being that draw's class prior; for the others
        it is the Bayes odds adjustment of Saerens, Latinne & Decaestecker (2002) with
        :math:`\pi` the share of positives in the calibration data (``class_prior_``).

        Parameters
        ----------
        prior : float in (0, 1) or tuple (a, b)
            The deployment prevalence :math:`\pi'`; a pair ``(a, b)`` stands for
            :math:`\pi' \sim \mathrm{Beta}(a, b)`, drawn independently for each map draw so
            that its uncertainty enters :meth:`credible_band`, :meth:`predict_posterior` and
            everything computed from them.
        n_prior_draws : int, default 1000
            With a Beta prior, at least this many draws of the shifted map: each posterior
            draw of the map is paired with ``ceil(n_prior_draws / n_draws)`` draws of
            :math:`\pi'`; at most :data:`MAX_PRIOR_DRAWS` (10^6).
        random_state : None, int or numpy Generator
            Seeds the draws of :math:`\pi'` (Beta prior only).

        Returns
        -------
        PriorShiftedCalibrator
            A fitted calibrator (this one is left untouched) whose ``calibration_map``,
            ``credible_band``, ``predict_proba`` and ``predict_posterior`` are for
            prevalence ``prior``; it is :class:`ClassConditional` when this one is.

        References
        ----------
        Saerens, M., Latinne, P. & Decaestecker, C. (2002). Adjusting the outputs of a
        classifier to new a priori probabilities: a simple procedure. Neural Computation
        14(1), 21-41.
        """
        check_is_fitted(self)
        self._warn_prior_shift_caveat()
        cls = PriorShiftedClassConditional if isinstance(self, ClassConditional) else PriorShiftedCalibrator
        shifted = cls(self, prior, n_prior_draws=n_prior_draws, random_state=random_state)
        shifted._shift(self)
        return shifted

    def estimate_class_prior(
        self,
        scores: ArrayLike,
        *,
        ci_prob: float = 0.95,
        calibration: tuple[ArrayLike, ArrayLike] | tuple[ArrayLike, ArrayLike, ArrayLike | None] | None = None,
        n_bootstrap: int | None = None,
        prior: tuple[float, float] | None = None,
        max_draws: int | None = None,
        random_state: RandomStateLike = None,
        X: ArrayLike | None = None,
    ) -> xr.Dataset:
        r"""The prevalence among new, unlabelled scores under label shift.

        Under label shift the scores of the new population have density
        :math:`\pi' f_1(s) + (1 - \pi') f_0(s)`. With the map :math:`q` fitted at prior
        :math:`\pi`, :math:`f_1/f_0 = [q/(1-q)] / [\pi/(1-\pi)]`, so the log-likelihood of
        :math:`\pi'` given the new scores :math:`s_1..s_n` is, up to a constant,

        .. math::

            \ell(\pi') = \sum_i \log\big(\pi' q(s_i)(1 - \pi) + (1 - \pi')(1 - q(s_i))\,\pi\big).

        * Class-conditional calibrators with a posterior (:class:`ClassConditional` with more
          than one draw; the DPM): the posterior of
          :math:`\pi'` under a ``Beta(*prior)`` prior, computed per posterior draw of
          :math:`(q, \pi)` on a grid (``max_draws`` draws, thinned evenly; scores binned
          to at most 512 points on the working scale) and mixed over the draws, so the
          uncertainty of the densities enters. The estimate is the posterior mean, the
          interval equal-tailed, and ``class_prior`` holds one draw of :math:`\pi'` per
          used posterior draw.
        * Other calibrators (point estimates, including the KDE): the maximum-likelihood estimate, i.e. the fixed point of the EM
          of Saerens et al. (2002), found by solving :math:`\ell'(\pi') = 0`. The interval is
          the likelihood-ratio interval :math:`\{\pi' : 2(\ell(\hat\pi) - \ell(\pi'))
          \le \chi^2_{1, \mathrm{ci\_prob}}\}`, which treats the fitted map as known (right
          when the calibration data far outnumber the new scores); or, given the
          ``calibration`` data, the percentile bootstrap interval: ``n_bootstrap`` times, the
          calibration rows and the new scores are resampled with replacement, a clone of this
          calibrator is refitted and the estimate recomputed, so the map's own uncertainty
          enters.

        Both assume the map is calibrated at the training prevalence and that only the
        prevalence changed (the class score densities did not). An option the chosen route
        does not use (``prior`` or ``max_draws`` for a point estimate, ``n_bootstrap`` without
        ``calibration``) is refused by name, not ignored.

        Parameters
        ----------
        scores : array-like of shape (n,)
            Unlabelled scores of the new population, on this calibrator's input scale.
        ci_prob : float, default 0.95
            Probability of the interval ``class_prior_ci``, in (0, 1).
        calibration : tuple (scores, y) or (scores, y, sample_weight), optional
            The data this calibrator was fitted on, for the bootstrap interval (point-estimate
            calibrators only).
        n_bootstrap : int, optional
            Bootstrap replicates (only with ``calibration``); 200 when None.
        prior : tuple (a, b), optional
            Beta prior of :math:`\pi'` (class-conditional calibrators with a posterior
            only); (1, 1), the uniform prior, when None.
        max_draws : int, optional
            At most this many posterior draws of the map, thinned evenly, enter the
            posterior of :math:`\pi'` (class-conditional calibrators with a posterior only);
            200 when None.
        random_state : None, int or numpy Generator
            Seeds the posterior draws of :math:`\pi'` (class-conditional calibrators) or
            the bootstrap.
        X : array-like, optional
            Features of feature-aware calibrators.

        Returns
        -------
        xarray.Dataset
            ``class_prior`` (chain, draw): posterior draws (the maximum-likelihood route:
            the estimate as one draw, or the bootstrap replicates); ``class_prior_estimate`` (scalar);
            ``class_prior_ci`` (ci_bound); attrs ``method`` ("posterior" or "em"),
            ``ci_prob``, ``ci_kind``, ``training_prior`` (mean of :math:`\pi`), ``n_scores``.

        References
        ----------
        Saerens, M., Latinne, P. & Decaestecker, C. (2002). Adjusting the outputs of a
        classifier to new a priori probabilities: a simple procedure. Neural Computation
        14(1), 21-41.
        """
        from bayescal import prior_shift

        ci_prob = check_ci_prob(ci_prob)
        t = self._working(scores)
        X = self._check_X(X, t.shape[0], fitting=False)
        self._warn_prior_shift_caveat()
        base = self._base_prior_draws()
        posterior = isinstance(self, ClassConditional) and base.size > 1
        unused = [
            f"{name}={value!r}"
            for name, value, used in (
                ("prior", prior, posterior),
                ("max_draws", max_draws, posterior),
                ("n_bootstrap", n_bootstrap, calibration is not None and not posterior),
            )
            if value is not None and not used
        ]
        if unused:
            route = (
                "from its posterior draws"
                if posterior
                else "by maximum likelihood" + (" and the bootstrap" if calibration is not None else "")
            )
            raise ValueError(
                f"{', '.join(unused)}: {self._name} estimates the "
                f"prevalence {route}, which does not use {'it' if len(unused) == 1 else 'them'}: omit "
                f"{'it' if len(unused) == 1 else 'them'} (prior= and max_draws= are for calibrators with a "
                "posterior, such as the DPM; n_bootstrap= for the bootstrap interval of the others, with calibration=)."
            )
        if posterior:
            if calibration is not None:
                raise ValueError(
                    f"{self._name}'s posterior already carries the uncertainty of its map: omit "
                    "calibration= (the bootstrap is for point-estimate calibrators)."
                )
            return prior_shift.prior_posterior(
                self, t, base, ci_prob=ci_prob, prior=prior, max_draws=max_draws, random_state=random_state
            )
        q = np.clip(self._calibrate(t, X), 0.0, 1.0)
        out = prior_shift.prior_mle(q, float(base.mean()), ci_prob=ci_prob)
        if calibration is None:
            return out
        if self.feature_aware:
            raise ValueError(
                f"The bootstrap interval refits {self._name} on scores alone; it is not available for "
                "feature-aware calibrators: omit calibration= for the likelihood-ratio interval."
            )
        return prior_shift.bootstrap_interval(
            self, out, t, calibration, n_bootstrap=n_bootstrap, ci_prob=ci_prob, random_state=random_state
        )

    def save(self, path: str | Path, *, overwrite: bool = False) -> None:
        """Save the fitted calibrator to a netCDF file (see :func:`bayescal.io.save`; no pickle).

        An existing file is replaced only with ``overwrite=True`` (``FileExistsError``
        otherwise); the file is written under a temporary name in the same folder and then
        renamed, so an interrupted save leaves no half-written file.

        Parameters
        ----------
        path : str or path-like
            The file to write (netCDF).
        overwrite : bool, default False
            Replace an existing file at ``path``.
        """
        from bayescal.io import save

        save(self, path, overwrite=overwrite)

    @classmethod
    def load(cls, path: str | Path) -> "Calibrator":
        """Load a calibrator saved with :meth:`save`; the file must hold this class (or a subclass).

        Parameters
        ----------
        path : str or path-like
            A file written by :meth:`save`.

        Returns
        -------
        Calibrator
            The fitted calibrator, ready to predict.
        """
        from bayescal.io import load

        return load(path, expected=cls)


class BayesianCalibrator(Calibrator):
    """A calibrator with a posterior over calibration maps.

    Subclasses set ``idata_`` (an ``xarray.DataTree`` with at least a ``posterior`` group)
    in ``_fit`` and implement ``_map_draws`` from it.
    """

    _fitted_schema = {"idata_": schema.posterior()}

    #: posterior variables whose every draw is a probability, and those that are scales
    _PROBABILITY_VARIABLES = ("weight", "atom_prob", "pi")
    _SCALE_VARIABLES = ("sigma", "beta_a", "beta_b")
    #: posterior variables that are NaN at the draws of a model without them (the subclass
    #: checks which draws those are); their other draws are checked as above
    _PARTIAL_VARIABLES: tuple[str, ...] = ()

    def _check_posterior(self, tree: xr.DataTree) -> None:
        """Check a loaded posterior before the calibrator is rebuilt from it; raise ``ValueError``.

        Generic checks: finite numbers in ``observed_data``; a ``posterior`` group whose
        variables all start with the dims ``(chain, draw)`` and whose draws are all finite (but
        for NaN in those named in ``_PARTIAL_VARIABLES``); variables
        named in ``_SCALE_VARIABLES`` (``sigma``, ``beta_a``, ``beta_b``) positive; those in
        ``_PROBABILITY_VARIABLES`` (``weight``, ``atom_prob``, ``pi``) in [0, 1]; ``weight``
        summing to 1 over ``component`` and ``atom_prob`` to at most 1 over ``atom``.
        A subclass extends this for its own layout (and calls ``super()``).
        """
        if "posterior" not in tree.children:
            raise ValueError("idata_ has no 'posterior' group.")
        if "observed_data" in tree.children:
            observed = tree["observed_data"]
            assert isinstance(observed, xr.DataTree)
            for name, var in observed.to_dataset(inherit=False).data_vars.items():
                if var.dtype.kind not in "fiub" or not np.isfinite(var.values.astype(np.float64)).all():
                    raise ValueError(f"idata_.observed_data.{name} holds a value that is not a finite number.")
        node = tree["posterior"]
        assert isinstance(node, xr.DataTree)
        post = node.to_dataset(inherit=False)
        if not {"chain", "draw"} <= set(post.dims):
            raise ValueError("idata_.posterior lacks the 'chain' and 'draw' dimensions.")
        for name, var in post.data_vars.items():
            if var.dims[:2] != ("chain", "draw"):
                raise ValueError(f"idata_.posterior.{name} has dims {var.dims}, not ('chain', 'draw', ...).")
            values = np.asarray(var.values)
            if values.dtype.kind not in "fiub":
                raise ValueError(f"idata_.posterior.{name} has dtype {values.dtype}, not numbers.")
            values = values.astype(np.float64)
            if name in self._PARTIAL_VARIABLES:  # NaN where the draw's model has no such parameter
                values = values[~np.isnan(values)]
            if not np.isfinite(values).all():
                raise ValueError(f"idata_.posterior.{name} holds a value that is not finite.")
            if name in self._SCALE_VARIABLES and not (values > 0).all():
                raise ValueError(f"idata_.posterior.{name} holds a scale <= 0.")
            if name in self._PROBABILITY_VARIABLES and not ((values >= 0) & (values <= 1)).all():
                raise ValueError(f"idata_.posterior.{name} holds a value outside [0, 1].")
            if (
                name == "weight"
                and "component" in var.dims
                and not np.allclose(var.sum("component").values, 1.0, rtol=0, atol=1e-6)
            ):
                raise ValueError("idata_.posterior.weight does not sum to 1 over 'component'.")
            if name == "atom_prob" and "atom" in var.dims and (var.sum("atom").values > 1 + 1e-9).any():
                raise ValueError("idata_.posterior.atom_prob sums to more than 1 over 'atom'.")

    def sample_posterior_predictive(
        self, scores: ArrayLike, *, random_state: RandomStateLike = None, random_seed: RandomStateLike = None
    ) -> xr.DataTree:
        """Replicated labels at ``scores``: y_rep ~ Bernoulli(map draw), one per posterior draw.

        Parameters
        ----------
        scores : array-like of shape (n,)
            Scores on the input scale.
        random_state : None, int or numpy.random.Generator, default None
            Randomness of the replicated labels.
        random_seed : deprecated
            Old name of ``random_state``; accepted with a ``DeprecationWarning`` for one release.

        Returns
        -------
        xarray.DataTree
            A ``posterior_predictive`` group holding ``y`` with dims ``(chain, draw, obs_id)``.
        """
        p = self.predict_posterior(scores)
        rng = random_generator(random_state, random_seed, "sample_posterior_predictive")
        y_rep = (rng.random(p.shape) < p.values).astype(np.int8)
        ds = xr.Dataset({"y": (p.dims, y_rep)}, coords=p.coords)
        return xr.DataTree.from_dict({"posterior_predictive": ds})


# ----------------------------------------------------------------------------- declared capabilities


class ClassConditional(ABC):
    r"""Declares that a calibrator models the class score densities (Bayes' rule calibrators).

    Such a calibrator computes its map as

    .. math:: q(s) = \frac{\pi f_1(s)}{\pi f_1(s) + (1 - \pi) f_0(s)}

    per draw, from a class prior :math:`\pi` and class-conditional score distributions
    (continuous densities plus, optionally, point masses at atom values). Inheriting this
    class is the declaration; diagnostics (the model's score distribution, the
    score-density check), prior shift (exact per draw) and prevalence estimation (a
    posterior) use these methods instead of probing attributes. Draws are aligned with
    :meth:`Calibrator.calibration_map`: draw ``(c, d)`` of each method belongs to draw
    ``(c, d)`` of the map.
    """

    # provided by the Calibrator the declaration is mixed into
    score_kind: str
    calibration_map: Callable[..., xr.DataArray]

    @abstractmethod
    def class_prior_draws(self) -> xr.DataArray:
        r"""Draws of the class prior :math:`\pi = P(y=1)` the map uses, dims ``(chain, draw)``.

        Returns
        -------
        xarray.DataArray
            Dims ``(chain, draw)``; draw ``(c, d)`` is the :math:`\pi` of map draw ``(c, d)``.
        """

    @abstractmethod
    def density_map(self, grid: ArrayLike | None = None) -> xr.DataArray:
        r"""Draws of the continuous part of the class score densities on ``grid`` (input scale).

        Per draw and class :math:`c \in \{0, 1\}`, the density :math:`f_c(s)` of the scores
        of class :math:`c` (with respect to the input-scale score :math:`s`) without its
        point masses; with :meth:`score_atoms`, each class's distribution has total mass one:
        :math:`\int f_c(s)\,ds + \sum_a m_{c,a} = 1`.

        Parameters
        ----------
        grid : array-like of scores or int, optional
            As in :meth:`Calibrator.calibration_map`: an array of input-scale scores, or a
            number of points (:data:`DEFAULT_GRID_SIZE` when None) over the fitted scores' range.

        Returns
        -------
        xarray.DataArray
            Dims ``(chain, draw, class, score)``, ``class = [0, 1]``.
        """

    def score_atoms(self) -> xr.DataArray:
        """Point masses of the class score distributions (none by default).

        Returns
        -------
        xarray.DataArray
            Dims ``(chain, draw, class, atom)``: the mass :math:`m_{c,a}` of class ``c``'s
            scores at each atom, the ``atom`` coordinate holding the atom values (input
            scale); an empty ``atom`` dimension when the model has no atoms.
        """
        prior = self.class_prior_draws()
        return xr.DataArray(
            np.zeros((prior.sizes["chain"], prior.sizes["draw"], 2, 0)),
            dims=("chain", "draw", "class", "atom"),
            coords={"class": [0, 1], "atom": np.empty(0)},
            name="atom_prob",
        )


def atom_scores(calibrator: Any) -> np.ndarray:
    """The sorted scores (input scale) a calibrator models as point masses
    (:meth:`ClassConditional.score_atoms`); none for a calibrator that is not class-conditional."""
    if not isinstance(calibrator, ClassConditional):
        return np.empty(0)
    return np.unique(np.asarray(calibrator.score_atoms()["atom"].values, dtype=np.float64))


class PosteriorClassConditional(ClassConditional):
    """:class:`ClassConditional` for a Bayesian calibrator whose posterior (``idata_``) holds
    the class prior ``pi`` (chain, draw) and, optionally, the atom masses ``atom_prob``
    (chain, draw, class, atom). The subclass implements :meth:`density_map`."""

    idata_: xr.DataTree

    def class_prior_draws(self) -> xr.DataArray:
        r"""Posterior draws of the class prior :math:`\pi = P(y=1)`: ``idata_.posterior.pi``.

        Returns
        -------
        xarray.DataArray
            Dims ``(chain, draw)``, aligned with the draws of the calibration map.
        """
        check_is_fitted(self)
        return self.idata_["posterior"]["pi"].transpose("chain", "draw")

    def score_atoms(self) -> xr.DataArray:
        """Posterior draws of the point masses of the class score distributions.

        Returns
        -------
        xarray.DataArray
            ``idata_.posterior.atom_prob``, dims ``(chain, draw, class, atom)``; when the
            posterior has no ``atom_prob`` (or no atoms), an empty ``atom`` dimension.
        """
        check_is_fitted(self)
        post = self.idata_["posterior"]
        if "atom_prob" not in post or post.sizes.get("atom", 0) == 0:
            return super().score_atoms()
        return post["atom_prob"].transpose("chain", "draw", "class", "atom")


# ----------------------------------------------------------------------------- prior shift


def _check_prior(prior: Any) -> tuple[str, tuple[float, ...]]:
    """``("point", (p,))`` for a number in (0, 1), ``("beta", (a, b))`` for a pair of positive numbers."""
    if isinstance(prior, (tuple, list)) and len(prior) == 2:
        a, b = (check_number(v, "prior", low=0.0) for v in prior)
        if a <= 0 or b <= 0:
            raise ValueError(f"prior={tuple(prior)!r}: the Beta parameters (a, b) must be positive, e.g. (20, 180).")
        return "beta", (a, b)
    if isinstance(prior, (bool, np.bool_)) or not np.isscalar(prior):
        raise ValueError(f"prior={prior!r} must be a prevalence in (0, 1) or a pair (a, b) of Beta parameters.")
    p = check_number(prior, "prior", low=0.0, high=1.0)
    if not 0.0 < p < 1.0:
        raise ValueError(
            f"prior={prior!r} must lie strictly between 0 and 1 (a prevalence of 0 or 1 leaves one class)."
        )
    return "point", (p,)


def shift_odds(q: np.ndarray, base: np.ndarray | float, new: np.ndarray | float) -> np.ndarray:
    r"""Probabilities ``q`` (computed at class prior ``base``) under class prior ``new``.

    :math:`q' = q r_1 / (q r_1 + (1 - q) r_0)` with :math:`r_1 = \pi'/\pi`,
    :math:`r_0 = (1 - \pi')/(1 - \pi)`: the odds multiplied by the prior-odds ratio,
    written so that 0 and 1 stay exact. Arrays broadcast.
    """
    num = q * (new / base)
    return num / (num + (1.0 - q) * ((1.0 - new) / (1.0 - base)))


class PriorShiftedCalibrator(Calibrator):
    r"""A calibrator's maps under another class prior (label shift).

    Built by :meth:`Calibrator.with_class_prior`, which returns it fitted; as an estimator
    in its own right, :meth:`fit` fits a clone of ``calibrator`` and shifts it. Draw
    :math:`(c, d)` of the map becomes (see :func:`shift_odds`)

    .. math::

        \operatorname{logit} q'_{cd}(s) = \operatorname{logit} q_{cd}(s)
        + \operatorname{logit} \pi'_{cd} - \operatorname{logit} \pi_{cd},

    with :math:`\pi_{cd}` the class prior of that draw (:class:`ClassConditional`) or the
    calibration data's share of positives (others), and :math:`\pi'` the deployment prior:
    a constant, or with ``prior=(a, b)`` independent :math:`\mathrm{Beta}(a, b)` draws,
    ``k = ceil(n_prior_draws / n_draws)`` per map draw (the shifted posterior then has
    ``k`` times as many draws per chain).

    Parameters
    ----------
    calibrator : Calibrator
        The calibrator to shift (fitted when built by ``with_class_prior``; :meth:`fit`
        fits a clone of it).
    prior : float in (0, 1) or tuple (a, b), default 0.5
        The deployment prevalence :math:`\pi'`, or the parameters of its Beta distribution.
    n_prior_draws : int, default 1000
        With a Beta prior, at least this many draws of the shifted map; at most
        :data:`MAX_PRIOR_DRAWS` (10^6).
    random_state : None, int or numpy Generator, default None
        Seeds the draws of :math:`\pi'` (Beta prior only).

    Attributes
    ----------
    calibrator_ : Calibrator
        The fitted calibrator whose maps are shifted.
    prior_draws_ : ndarray of shape (chain, draw)
        :math:`\pi'` per draw of the shifted map.
    base_prior_draws_ : ndarray of shape (chain, draw)
        :math:`\pi` per draw of the shifted map.
    class_prior_ : float
        Mean of ``prior_draws_``.
    """

    def __init__(
        self, calibrator: Any = None, prior: Any = 0.5, *, n_prior_draws: int = 1000, random_state: Any = None
    ):
        self.calibrator = calibrator
        self.prior = prior
        self.n_prior_draws = n_prior_draws
        self.random_state = random_state

    def _wrapped(self) -> Any:
        """``calibrator``, or an error naming it when none was given."""
        if self.calibrator is None:
            raise AttributeError(
                "PriorShiftedCalibrator has no calibrator: pass calibrator=, e.g. "
                "PriorShiftedCalibrator(make_calibrator('dpm'), prior=0.3), or use calibrator.with_class_prior(0.3)."
            )
        return self.calibrator

    @property
    def score_kind(self) -> str:  # type: ignore[override]
        """The input scale, ``"probability"`` or ``"decision"``: that of ``calibrator``."""
        return self._wrapped().score_kind

    @property
    def feature_aware(self) -> bool:  # type: ignore[override]
        """Whether ``fit`` / ``predict_proba`` use ``X=``: as ``calibrator``."""
        return self._wrapped().feature_aware

    @property
    def monotone(self) -> bool:  # type: ignore[override]
        """Whether the map is non-decreasing in the score: as ``calibrator`` (a positive
        factor on the odds keeps the order)."""
        return self._wrapped().monotone

    def fit(
        self, scores: Any, y: Any = None, sample_weight: Any = None, *, X: Any = None, pos_label: Any = None
    ) -> "PriorShiftedCalibrator":
        r"""Fit a clone of ``calibrator`` on the data and shift its maps to ``prior``.

        Parameters
        ----------
        scores : array-like of shape (n,) or (n, 1), or ScoreSummary
            Classifier scores on ``calibrator``'s input scale (see :meth:`Calibrator.fit`).
        y : array-like of shape (n,)
            True binary labels.
        sample_weight : array-like of shape (n,), optional
            Non-negative weights, if ``calibrator`` honours them.
        X : array-like of shape (n, d), optional
            Features, for a feature-aware ``calibrator`` only.
        pos_label : optional
            The positive class when labels are not {0, 1}, booleans or {-1, 1}.

        Returns
        -------
        self
            With ``calibrator_`` the fitted clone; the training prevalence :math:`\pi` is
            that of the clone (its class prior draws, or its ``class_prior_``).
        """
        if not isinstance(self.calibrator, Calibrator):
            raise ValueError(
                f"calibrator={self.calibrator!r} must be a bayescal calibrator, e.g. bayescal.make_calibrator('platt')."
            )
        fitted = clone(self.calibrator).fit(scores, y, sample_weight, X=X, pos_label=pos_label)
        self._shift(fitted)
        return self

    def _shift(self, fitted: Calibrator) -> None:
        kind, params = _check_prior(self.prior)
        base = fitted._base_prior_draws()
        if kind == "point":
            k = 1
            new = np.full(base.shape, params[0])
        else:
            n_prior_draws = check_integer(self.n_prior_draws, "n_prior_draws", 1)
            if n_prior_draws > MAX_PRIOR_DRAWS:
                raise ValueError(
                    f"n_prior_draws={n_prior_draws} is more than {MAX_PRIOR_DRAWS}: the shifted posterior holds "
                    "that many draws of the map (each over the whole grid); pass a smaller number."
                )
            k = max(1, ceil(n_prior_draws / base.size))
            rng = random_generator(self.random_state, where=self._name)
            new = rng.beta(params[0], params[1], size=(base.shape[0], base.shape[1] * k))
        self.calibrator_ = fitted
        self._k = k
        self.base_prior_draws_ = np.repeat(base, k, axis=1)
        self.prior_draws_ = np.clip(new, 1e-300, 1.0 - 1e-16)
        self.class_prior_ = float(self.prior_draws_.mean())
        self.classes_ = fitted.classes_
        self.n_features_in_ = fitted.n_features_in_
        self.score_range_ = fitted.score_range_
        for name in ("n_features_x_", "feature_names_x_"):  # those of this fit only
            if hasattr(fitted, name):
                setattr(self, name, getattr(fitted, name))
            else:
                self.__dict__.pop(name, None)

    def predict_interval(
        self, scores: ArrayLike, ci_prob: float | None = None, *, X: ArrayLike | None = None
    ) -> xr.DataArray:
        r"""The interval of the calibrated P(y=1) at each score under the shifted prior.

        When ``calibrator_`` has an interval of its own rather than one of its map draws
        (Venn-Abers' pair :math:`[p_0, p_1]`) and the prior is one number, that interval with
        each end shifted by :func:`shift_odds` (the shifted probability, :func:`shift_odds` of
        the original's, lies inside it, as the shift keeps the order); otherwise the
        equal-tailed interval of the shifted draws (:meth:`Calibrator.predict_interval`).

        Parameters
        ----------
        scores : array-like of shape (n,) or (n, 1)
            Scores on the input scale.
        ci_prob : float, optional
            As in :meth:`Calibrator.predict_interval` (ignored by a Venn-Abers pair).
        X : array-like of shape (n, d), optional
            Features, for feature-aware calibrators only.

        Returns
        -------
        xarray.DataArray
            As ``calibrator_.predict_interval``, named ``p_interval``, dims ``(obs_id, ci_bound)``.
        """
        check_is_fitted(self)
        own = type(self.calibrator_).predict_interval is not Calibrator.predict_interval
        if own and self.prior_draws_.size == 1:
            inner = self.calibrator_.predict_interval(scores, ci_prob, X=X)
            return inner.copy(data=shift_odds(inner.values, self.base_prior_draws_.item(), self.prior_draws_.item()))
        return super().predict_interval(scores, ci_prob, X=X)

    @property
    def gives_venn_abers_pairs(self) -> bool:  # type: ignore[override]
        """Whether the shifted calibrator gives Venn-Abers pairs: the wrapped one does, and the
        shift is to one prevalence (a distribution of prevalences has no pair)."""
        fitted = getattr(self, "calibrator_", None)
        inner = self._wrapped() if fitted is None else fitted
        return bool(inner.gives_venn_abers_pairs) and (fitted is None or self.prior_draws_.size == 1)

    def _pairs(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The wrapped calibrator's Venn-Abers pair ``(p0, p1)`` at working-scale ``t``, each end
        shifted (when :attr:`gives_venn_abers_pairs`)."""
        p0, p1 = self.calibrator_._pairs(t)
        shift = (self.base_prior_draws_.item(), self.prior_draws_.item())
        return shift_odds(p0, *shift), shift_odds(p1, *shift)

    def _base_prior_draws(self) -> np.ndarray:
        """The deployment prior of each draw of the shifted map, ``(chain, draw)``: a further shift
        starts from it (not from its mean, ``class_prior_``)."""
        check_is_fitted(self)
        return self.prior_draws_

    def _map_draws(self, t: np.ndarray, X: np.ndarray | None = None) -> np.ndarray:
        q = np.clip(self.calibrator_._map_draws(t, X), 0.0, 1.0)
        if self._k > 1:
            q = np.repeat(q, self._k, axis=1)
        return shift_odds(q, self.base_prior_draws_[..., None], self.prior_draws_[..., None])

    def _calibrate(self, t: np.ndarray, X: np.ndarray | None = None) -> np.ndarray:
        t = np.asarray(t, dtype=np.float64)
        out = np.empty(t.shape[0])
        for rows, draws in self._draw_blocks(t, X):  # the mean of the shifted draws, a block at a time
            out[rows] = draws.mean(axis=(0, 1))
        return out

    def _restore(self) -> None:  # pragma: no cover - not saved
        raise ValueError("A prior-shifted calibrator is not saved: save the original and call with_class_prior again.")

    def save(self, path: str | Path, *, overwrite: bool = False) -> None:
        """Not supported: save the original calibrator and call :meth:`with_class_prior` after loading.

        A shifted calibrator is fully determined by the original and the prior, so it is not
        written to disk; this always raises.

        Parameters
        ----------
        path : str or path-like
            Ignored.
        overwrite : bool, default False
            Ignored.

        Raises
        ------
        ValueError
            Always, naming the way to save (``self.calibrator_.save(path)``).
        """
        raise ValueError(
            f"{self._name} is not saved: save the original calibrator (self.calibrator_) and call "
            "with_class_prior(...) on it after loading."
        )

    def with_class_prior(
        self, prior: float | tuple[float, float], *, n_prior_draws: int = 1000, random_state: RandomStateLike = None
    ) -> Calibrator:
        """The original calibrator's maps under ``prior`` (shifts do not compound).

        The shift is applied to ``calibrator_``, the unshifted calibrator, so the result
        is the same as ``calibrator_.with_class_prior(prior, ...)``: its maps are for
        prevalence ``prior``, whatever prior this one was shifted to.

        Parameters
        ----------
        prior : float in (0, 1) or tuple (a, b)
            The new deployment prevalence, or its Beta parameters (see
            :meth:`Calibrator.with_class_prior`).
        n_prior_draws : int, default 1000
            With a Beta prior, at least this many draws of the shifted map.
        random_state : None, int or numpy Generator, default None
            Seeds the draws of the prevalence (Beta prior only).

        Returns
        -------
        PriorShiftedCalibrator
            A new fitted calibrator; this one is left untouched.
        """
        check_is_fitted(self)
        return self.calibrator_.with_class_prior(prior, n_prior_draws=n_prior_draws, random_state=random_state)

    def estimate_class_prior(self, scores: ArrayLike, **kwargs: Any) -> xr.Dataset:
        """The prevalence among new, unlabelled scores: that of the original calibrator.

        Calls ``calibrator_.estimate_class_prior`` (:meth:`Calibrator.estimate_class_prior`):
        the class score densities, hence the likelihood of the new prevalence, do not depend
        on the prior this calibrator was shifted to.

        Parameters
        ----------
        scores : array-like of shape (n,)
            Unlabelled scores of the new population, on the input scale.
        **kwargs
            Passed on: ``ci_prob``, ``calibration``, ``n_bootstrap``, ``prior``,
            ``max_draws``, ``random_state``, ``X``.

        Returns
        -------
        xarray.Dataset
            As :meth:`Calibrator.estimate_class_prior`.
        """
        check_is_fitted(self)
        return self.calibrator_.estimate_class_prior(scores, **kwargs)


class PriorShiftedClassConditional(ClassConditional, PriorShiftedCalibrator):
    r""":class:`PriorShiftedCalibrator` of a class-conditional calibrator.

    The class score densities (:meth:`density_map`, :meth:`score_atoms`) are those of the
    original, each draw repeated as often as it is paired with draws of the deployment
    prior; the class prior draws (:meth:`class_prior_draws`) are the deployment prior's
    :math:`\pi'`. Bayes' rule on these gives the shifted map draw by draw, so diagnostics
    and prevalence estimation see a consistent model.

    Parameters
    ----------
    calibrator : Calibrator and ClassConditional
        The class-conditional calibrator to shift.
    prior : float in (0, 1) or tuple (a, b), default 0.5
        The deployment prevalence :math:`\pi'`, or the parameters of its Beta distribution.
    n_prior_draws : int, default 1000
        With a Beta prior, at least this many draws of the shifted map; at most
        :data:`MAX_PRIOR_DRAWS` (10^6).
    random_state : None, int or numpy Generator, default None
        Seeds the draws of :math:`\pi'` (Beta prior only).

    See Also
    --------
    PriorShiftedCalibrator : the attributes and the shift itself.
    """

    def class_prior_draws(self) -> xr.DataArray:
        r"""Draws of the deployment class prior :math:`\pi'`.

        Returns
        -------
        xarray.DataArray
            ``prior_draws_`` named ``pi``, dims ``(chain, draw)`` (constant for a point prior).
        """
        check_is_fitted(self)
        return xr.DataArray(self.prior_draws_, dims=("chain", "draw"), name="pi")

    def _repeat(self, da: xr.DataArray) -> xr.DataArray:
        """Each draw repeated as often as it is paired with prior draws (draw-major, as the maps)."""
        da = da.transpose("chain", "draw", ...)
        coords = {k: v for k, v in da.coords.items() if "chain" not in v.dims and "draw" not in v.dims}
        return xr.DataArray(
            np.repeat(da.values, self._k, axis=1), dims=da.dims, coords=coords, name=da.name, attrs=da.attrs
        )

    def density_map(self, grid: ArrayLike | None = None) -> xr.DataArray:
        """The original calibrator's class score densities on ``grid``, draws aligned with the shifted map.

        Parameters
        ----------
        grid : array-like of scores or int, optional
            As in :meth:`Calibrator.calibration_map`.

        Returns
        -------
        xarray.DataArray
            Dims ``(chain, draw, class, score)``; each draw of the original repeated once
            per prior draw paired with it.
        """
        check_is_fitted(self)
        return self._repeat(self.calibrator_.density_map(grid))

    def score_atoms(self) -> xr.DataArray:
        """The original calibrator's point masses of the class score distributions.

        Returns
        -------
        xarray.DataArray
            Dims ``(chain, draw, class, atom)``, draws aligned with the shifted map as in
            :meth:`density_map`.
        """
        check_is_fitted(self)
        return self._repeat(self.calibrator_.score_atoms())
