"""A scikit-learn classifier with any bayescal calibrator: cross-fitted scores, one object."""

from __future__ import annotations

import copy
from collections.abc import Iterable
from inspect import signature
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import xarray as xr
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import BaseCrossValidator, BaseShuffleSplit, LeaveOneOut, check_cv, cross_val_predict
from sklearn.preprocessing import LabelEncoder
from sklearn.utils import Bunch, _safe_indexing
from sklearn.utils._response import _get_response_values
from sklearn.utils.metadata_routing import (
    MetadataRouter,
    MethodMapping,
    _routing_enabled,
    process_routing,
)
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import (
    _check_method_params,
    _check_response_method,
    _check_sample_weight,
    check_is_fitted,
    column_or_1d,
    indexable,
)

from bayescal._typing import ArrayLike, RandomStateLike
from bayescal._validation import check_ci_prob, check_labels_present, random_generator
from bayescal._warnings import warn
from bayescal.base import BayesianCalibrator, Calibrator
from bayescal.baselines.venn_abers import merge_pairs, merged_probability, pair_interval

if TYPE_CHECKING:
    from scipy.sparse import sparray, spmatrix

__all__ = ["CalibratedClassifier"]

_RESPONSE_METHODS = ["decision_function", "predict_proba"]


def _response(estimator: Any, X: Any) -> tuple[np.ndarray, str]:
    """The estimator's score of the positive class and its score kind (decision values first, as scikit-learn)."""
    scores, _, method = _get_response_values(
        estimator,
        X,
        response_method=_RESPONSE_METHODS,
        pos_label=estimator.classes_[1],
        return_response_method_used=True,
    )
    kind = "decision" if method == "decision_function" else "probability"
    return np.asarray(scores, dtype=np.float64).reshape(-1), kind


def _check_splits(splits: list, n: int, *, prefit: bool, ensemble: bool) -> None:
    """Refuse cross-validation splits that would calibrate on scores of rows the estimator was
    fitted on, and, without ``ensemble``, splits whose held-out parts are not a partition of the
    rows (each row's out-of-fold score comes from exactly one fold)."""
    if not prefit:
        for i, (train, test) in enumerate(splits):
            both = np.intersect1d(np.asarray(train), np.asarray(test))
            if both.size:
                raise ValueError(
                    f"cv split {i} holds {both.size} row(s) in both its training and its held-out part (row "
                    f"{int(both[0])} first): the calibrator would see scores of rows the estimator was fitted on. "
                    "Pass disjoint splits, e.g. cv=StratifiedKFold(5)."
                )
    if not ensemble:
        held_out = np.bincount(np.concatenate([np.asarray(test, dtype=np.intp) for _, test in splits]), minlength=n)
        if np.any(held_out != 1):
            missing, repeated = int(np.sum(held_out == 0)), int(np.sum(held_out > 1))
            raise ValueError(
                f"cv's held-out parts must cover every row exactly once with ensemble=False (one estimator, "
                f"calibrated on out-of-fold scores), but {missing} row(s) are in none and {repeated} in more than "
                "one: pass a splitter whose test folds partition the rows (e.g. cv=StratifiedKFold(5)), or "
                "ensemble=True."
            )


def _check_estimator_classes(estimator: Any, classes: np.ndarray, *, prefit: bool) -> None:
    """Refuse a fitted estimator whose ``classes_`` are not ``classes`` (same values, same order):
    its scores would be of another positive class, or of more than two classes."""
    fitted = getattr(estimator, "classes_", None)
    if fitted is None:
        raise ValueError(
            f"estimator={type(estimator).__name__} has no classes_ after fit: pass a scikit-learn classifier."
        )
    fitted, expected = np.asarray(fitted).tolist(), classes.tolist()
    if fitted == expected:
        return
    if prefit:
        raise ValueError(
            f"The prefit estimator's classes_ are {fitted} but the labels of y are {expected}: its scores are "
            f"not scores of P(y={expected[1]!r}). Pass y in the estimator's labels (the same values), or a "
            "binary estimator trained on y's labels."
        )
    raise ValueError(
        f"estimator={type(estimator).__name__} fitted on y has classes_ {fitted}, not y's labels {expected}: "
        "pass a binary classifier whose classes_ are the labels it is fitted on."
    )


class CalibratedClassifier(ClassifierMixin, BaseEstimator):
    r"""A binary classifier whose probabilities are calibrated by any bayescal calibrator.

    The estimator's scores for calibration come from cross-fitting, so the calibrator never
    sees scores of rows the estimator was trained on (scikit-learn's
    ``CalibratedClassifierCV``, with bayescal's calibrators):

    * ``ensemble=True``: for each of the ``cv`` splits, a clone of the estimator is fitted
      on the training part and a clone of the calibrator on its scores of the held-out part;
      predictions average the ``cv`` calibrated classifiers (for Venn-Abers calibrators,
      the merge of cross Venn-Abers: see :meth:`predict_proba`). For a Bayesian calibrator the
      fold posteriors are independent (disjoint data), so averaging draw ``d`` of each fold
      gives draws of the posterior of the averaged probability
      :math:`\bar p(x) = \frac1K \sum_k p_k(x)`; each fold's posterior is fitted on about
      :math:`n/K` rows.
    * ``ensemble=False``: out-of-fold scores of all rows (``cross_val_predict``) calibrate
      one calibrator, and one estimator refitted on all rows gives the scores to calibrate at
      prediction. The Bayesian posterior is then the posterior of the map from out-of-fold
      scores to labels, from all :math:`n` rows, applied to the full-data estimator's
      scores: it assumes those scores relate to the labels as the out-of-fold scores do
      (nearly so for a stable estimator; the band does not include the difference).
    * ``ensemble="auto"`` (default): ``False`` for a prefit estimator (wrapped in
      ``sklearn.frozen.FrozenEstimator``: its scores on all rows are out-of-sample) and for
      Bayesian calibrators (one posterior from all rows, and one Bayesian fit instead of
      ``cv``); ``True`` otherwise, as scikit-learn.

    The scores are the estimator's ``decision_function`` when it has one and its
    ``predict_proba`` of the positive class otherwise (scikit-learn's order); the calibrator
    is given the matching ``score_kind`` ("decision" or "probability").

    Parameters
    ----------
    estimator : classifier, default None
        Any scikit-learn classifier with ``decision_function`` or ``predict_proba``;
        ``None`` uses ``LogisticRegression()``. Wrap a fitted one in
        ``sklearn.frozen.FrozenEstimator`` to calibrate it without refitting.
    method : str or Calibrator, default "dpm"
        A registered calibrator name (``bayescal.calibrators()``) or a calibrator instance,
        which is cloned; its ``score_kind`` is set to match the scores. Feature-aware
        calibrators (``"mbct"``) are not supported.
    cv : int, cross-validation generator or iterable, default 5
        As in scikit-learn: an int is a ``StratifiedKFold`` of that many folds.
    ensemble : bool or "auto", default "auto"
    n_jobs : int, default None
        Parallel jobs for ``cross_val_predict`` (``ensemble=False``).
    random_state : None, int or numpy.random.Generator, default None
        Seeds the calibrators that take a ``random_state`` (the DPM's sampler; the random
        splits of ``"scaling_binning"``, ``"spline"`` and ``"venn_abers"``), each fold's with
        its own seed drawn from it, so a fit is
        reproducible; it replaces the ``random_state`` of a calibrator instance given as
        ``method``. ``None`` leaves the calibrators' own. The estimator and ``cv`` are not
        seeded: pass them seeded (an int ``cv`` is an unshuffled ``StratifiedKFold``).

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        The two labels, sorted; ``classes_[1]`` is the positive class.
    calibrated_classifiers_ : list of Bunch
        Each with ``estimator`` (fitted) and ``calibrator`` (fitted); one for ``ensemble=False``.
    score_kind_ : str
        "decision" or "probability": which scores were calibrated.
    ensemble_ : bool
        The resolved ``ensemble``.
    n_features_in_, feature_names_in_
        From the fitted estimator, when it has them.

    References
    ----------
    Niculescu-Mizil, A. & Caruana, R. (2005). Predicting good probabilities with supervised
    learning. ICML, 625-632.
    """

    def __init__(
        self,
        estimator: BaseEstimator | None = None,
        *,
        method: str | Calibrator = "dpm",
        cv: int | BaseCrossValidator | BaseShuffleSplit | Iterable[tuple[ArrayLike, ArrayLike]] | None = 5,
        ensemble: bool | Literal["auto"] = "auto",
        n_jobs: int | None = None,
        random_state: RandomStateLike = None,
    ):
        self.estimator = estimator
        self.method = method
        self.cv = cv
        self.ensemble = ensemble
        self.n_jobs = n_jobs
        self.random_state = random_state

    # ---- helpers ------------------------------------------------------------------------
    def _get_estimator(self) -> Any:
        return LogisticRegression() if self.estimator is None else self.estimator

    def _calibrator(self, score_kind: str, seeds: np.random.Generator | None = None) -> Calibrator:
        """A new calibrator of ``method`` for ``score_kind`` scores, seeded by the next draw of
        ``seeds`` when it takes a ``random_state`` (as scikit-learn's ensembles seed theirs)."""
        from bayescal._registry import make_calibrator

        if isinstance(self.method, str):
            cal = make_calibrator(self.method)
        elif isinstance(self.method, Calibrator):
            cal = clone(self.method)
        else:
            raise ValueError(
                f"method={self.method!r} must be a registered calibrator name "
                "(bayescal.calibrators()) or a bayescal calibrator instance."
            )
        if cal.feature_aware:
            raise ValueError(
                f"method={self.method!r} is feature-aware; CalibratedClassifier calibrates the "
                "estimator's scores alone: choose a score-only calibrator."
            )
        if score_kind != cal.score_kind:
            if "score_kind" not in cal.get_params():
                raise ValueError(
                    f"The estimator gives {score_kind!r} scores but {type(cal).__name__} only takes "
                    f"{cal.score_kind!r} scores."
                )
            cal.set_params(score_kind=score_kind)
        if seeds is not None and "random_state" in cal.get_params():
            cal.set_params(random_state=int(seeds.integers(2**32)))
        return cal

    def _resolve_ensemble(self, estimator: Any) -> bool:
        if self.ensemble == "auto":
            probe = self._calibrator("probability")
            return not (isinstance(estimator, FrozenEstimator) or isinstance(probe, BayesianCalibrator))
        if isinstance(self.ensemble, (bool, np.bool_)):
            return bool(self.ensemble)
        raise ValueError(f"ensemble={self.ensemble!r} must be True, False or 'auto'.")

    # ---- fitting --------------------------------------------------------------------------
    def fit(
        self,
        X: ArrayLike | spmatrix | sparray,
        y: ArrayLike,
        sample_weight: ArrayLike | None = None,
        **fit_params: Any,
    ) -> "CalibratedClassifier":
        """Cross-fit the estimator and fit the calibrator(s) on its out-of-fold scores.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Anything the estimator accepts.
        y : array-like of shape (n_samples,)
            Two classes.
        sample_weight : array-like of shape (n_samples,), optional
            Passed to the calibrator (its held-out part) and, as in scikit-learn, to the
            estimator's ``fit`` when it accepts ``sample_weight`` (a warning otherwise); with
            metadata routing enabled, routed as requested.
        **fit_params
            Passed to the estimator's ``fit``; with metadata routing enabled, routed as
            requested, so ``groups`` reaches a splitter that requests it (``GroupKFold``).
            Without routing, ``groups`` is refused unless the estimator's ``fit`` takes it:
            enable routing or pass the splits as ``cv``.

        Returns
        -------
        self
        """
        X, y = indexable(X, y)
        y = column_or_1d(y, warn=True)
        check_labels_present(np.asarray(y), "y")
        check_classification_targets(y)
        y_type = type_of_target(y, input_name="y", raise_unknown=True)
        if y_type != "binary" or np.unique(np.asarray(y)).size != 2:
            n = np.unique(np.asarray(y)).size
            raise ValueError(
                f"Only binary classification is supported. The type of the target is {y_type} with {n} "
                f"class{'' if n == 1 else 'es'}: CalibratedClassifier needs labels of exactly two classes."
            )
        estimator = self._get_estimator()
        ensemble = self._resolve_ensemble(estimator)
        prefit = isinstance(estimator, FrozenEstimator)
        encoder = LabelEncoder().fit(y)
        classes = encoder.classes_
        y01 = encoder.transform(y)
        if prefit:
            _check_estimator_classes(estimator, classes, prefit=True)
        if sample_weight is not None:
            sample_weight = _check_sample_weight(sample_weight, X)
        if _routing_enabled():
            routed = process_routing(self, "fit", sample_weight=sample_weight, **fit_params)
        else:
            supports = signature(estimator.fit).parameters
            if "groups" in fit_params and "groups" not in supports:
                raise ValueError(
                    f"groups= is not a parameter of {type(estimator).__name__}.fit, and without metadata routing "
                    "it does not reach the splitter: enable routing (sklearn.set_config(enable_metadata_routing="
                    "True); a GroupKFold cv requests groups), or pass the splits themselves, "
                    "cv=list(GroupKFold(n_splits).split(X, y, groups))."
                )
            if sample_weight is not None and "sample_weight" not in supports:
                warn(
                    f"{type(estimator).__name__} does not accept sample_weight: the weights are used by "
                    "the calibrator only."
                )
            fit_kwargs = dict(fit_params)
            if sample_weight is not None and "sample_weight" in supports:
                fit_kwargs["sample_weight"] = sample_weight
            routed = Bunch(estimator=Bunch(fit=fit_kwargs), splitter=Bunch(split={}))
        n_folds = self.cv if isinstance(self.cv, int) else getattr(self.cv, "n_splits", None)
        if n_folds and np.bincount(y01).min() < n_folds:
            raise ValueError(
                f"cv={n_folds} folds need at least {n_folds} rows of each class, but a class has "
                f"{np.bincount(y01).min()}: lower cv or pass more data."
            )
        if isinstance(self.cv, LeaveOneOut):
            raise ValueError("LeaveOneOut leaves one class out of every test fold: use a stratified splitter.")
        cv = check_cv(self.cv, y, classifier=True)
        splits = list(cv.split(X, y, **routed.splitter.split))
        _check_splits(splits, len(y01), prefit=prefit, ensemble=ensemble)
        for i, (train, test) in enumerate(splits):
            # the estimator is fitted on each training part (unless prefit); with ensemble=True a
            # calibrator is fitted on each held-out part
            for part, rows, used in (("training", train, not prefit), ("held-out", test, ensemble)):
                counts = np.bincount(y01[rows], minlength=2)
                if used and counts.min() == 0:
                    raise ValueError(
                        f"cv split {i} has no rows of class {classes.tolist()[int(np.argmin(counts))]!r} in its {part} "
                        f"part (y has {np.bincount(y01).tolist()} rows of classes {classes.tolist()}): use a "
                        "stratified splitter (cv=StratifiedKFold(n_splits)) or shuffle the rows "
                        "(e.g. cv=KFold(n_splits, shuffle=True, random_state=0))."
                    )

        seeds = None if self.random_state is None else random_generator(self.random_state)
        calibrated = []
        if ensemble:
            for train, test in splits:
                est = clone(estimator).fit(
                    _safe_indexing(X, train),
                    _safe_indexing(y, train),
                    **_check_method_params(X, params=routed.estimator.fit, indices=train),
                )
                if not prefit:  # a prefit estimator's classes were checked once above
                    _check_estimator_classes(est, classes, prefit=False)
                scores, kind = _response(est, _safe_indexing(X, test))
                cal = self._calibrator(kind, seeds).fit(
                    scores, y01[test], None if sample_weight is None else _safe_indexing(sample_weight, test)
                )
                calibrated.append(Bunch(estimator=est, calibrator=cal))
        else:
            est = clone(estimator)
            method = _check_response_method(est, _RESPONSE_METHODS).__name__
            est.fit(X, y, **routed.estimator.fit)
            if not prefit:
                _check_estimator_classes(est, classes, prefit=False)
            oof = cross_val_predict(
                clone(estimator), X, y, cv=splits, method=method, n_jobs=self.n_jobs, params=routed.estimator.fit
            )
            if method == "predict_proba":
                oof = np.asarray(oof)[:, 1]  # columns in the order of classes
            kind = "decision" if method == "decision_function" else "probability"
            cal = self._calibrator(kind, seeds).fit(np.asarray(oof, dtype=np.float64).reshape(-1), y01, sample_weight)
            calibrated.append(Bunch(estimator=est, calibrator=cal))

        # every fitted attribute is set here, after all fits succeeded: a fit that raises leaves
        # the object as it was
        self.classes_ = classes
        self.calibrated_classifiers_ = calibrated
        self.ensemble_ = ensemble
        self.score_kind_ = calibrated[0].calibrator.score_kind
        first = calibrated[0].estimator
        for attr in ("n_features_in_", "feature_names_in_"):
            if hasattr(first, attr):
                setattr(self, attr, getattr(first, attr))
            elif attr in vars(self):
                delattr(self, attr)
        return self

    # ---- prediction -----------------------------------------------------------------------
    def _scores(self, pair: Bunch, X: Any) -> np.ndarray:
        return _response(pair.estimator, X)[0]

    def _venn_abers_merge(self, X: Any) -> tuple[np.ndarray, np.ndarray] | None:
        """The folds' Venn-Abers pairs at ``X`` merged as in cross Venn-Abers (``merge_pairs``); None
        unless every calibrator is Venn-Abers and there are several."""
        pairs = self.calibrated_classifiers_
        if len(pairs) < 2 or not all(pair.calibrator.gives_venn_abers_pairs for pair in pairs):
            return None
        p0, p1 = [], []
        for pair in pairs:
            # each fold's pair straight from its calibrator (Venn-Abers, or one prior-shifted)
            found = pair.calibrator._pairs(pair.calibrator._working(self._scores(pair, X)))
            p0.append(found[0])
            p1.append(found[1])
        return merge_pairs(np.stack(p0), np.stack(p1))

    def predict_proba(self, X: ArrayLike | spmatrix | sparray) -> np.ndarray:
        r"""Calibrated probabilities, shape ``(n, 2)``: the mean over the calibrated classifiers.

        :math:`p(x) = \frac1K \sum_k q_k(s_k(x))`, with :math:`s_k` the scores of the
        :math:`k`-th fitted estimator and :math:`q_k` its calibrator's map (:math:`K = 1` for
        ``ensemble=False``). For a Bayesian calibrator :math:`q_k` is the posterior-mean map,
        so this is the posterior mean of P(y = 1 | x).

        When every calibrator is a :class:`~bayescal.baselines.venn_abers.VennAbers` and
        :math:`K > 1` (cross Venn-Abers, Vovk, Petej & Fedorova 2015), the folds' pairs
        :math:`[p_{0,k}, p_{1,k}]` at :math:`s_k(x)` are merged for the log-loss instead:
        :math:`p(x) = G(p_1) / (G(1 - p_0) + G(p_1))`, :math:`G` the geometric mean over
        the folds.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Anything the estimator accepts; its scores are what the calibrators map.

        Returns
        -------
        ndarray of shape (n_samples, 2)
            Columns P(y = ``classes_[0]``), P(y = ``classes_[1]``).
        """
        check_is_fitted(self)
        merged = self._venn_abers_merge(X)
        if merged is not None:
            p = merged_probability(*merged)
        else:
            p = np.mean(
                [pair.calibrator.predict_proba(self._scores(pair, X))[:, 1] for pair in self.calibrated_classifiers_],
                axis=0,
            )
        return np.column_stack([1.0 - p, p])

    def predict(self, X: ArrayLike | spmatrix | sparray) -> np.ndarray:
        """The class with the larger calibrated probability (the negative class on a tie).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Anything the estimator accepts; its scores are what the calibrators map.

        Returns
        -------
        ndarray of shape (n_samples,)
            Labels from ``classes_``: ``classes_[1]`` where :meth:`predict_proba` gives it
            more than 0.5.
        """
        check_is_fitted(self)
        return self.classes_[(self.predict_proba(X)[:, 1] > 0.5).astype(int)]

    def predict_posterior(self, X: ArrayLike | spmatrix | sparray) -> xr.DataArray:
        """Posterior draws of P(y = 1 | x) per row, dims ``(chain, draw, obs_id)``.

        With ``ensemble=True`` draw ``d`` is the mean over the calibrated classifiers of
        their draw ``d`` (see the class docstring); a point-estimate calibrator gives one draw
        (for cross Venn-Abers, the merged probability of :meth:`predict_proba`).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Anything the estimator accepts; its scores are what the calibrators map.

        Returns
        -------
        xarray.DataArray
            Named ``p``, dims ``(chain, draw, obs_id)``.
        """
        check_is_fitted(self)
        merged = self._venn_abers_merge(X)
        if merged is not None:
            p = merged_probability(*merged)
            return xr.DataArray(
                p[None, None, :],
                dims=("chain", "draw", "obs_id"),
                coords={"chain": [0], "draw": [0], "obs_id": np.arange(p.size)},
                name="p",
            )
        draws = [pair.calibrator.predict_posterior(self._scores(pair, X)) for pair in self.calibrated_classifiers_]
        out = draws[0].copy(data=np.mean([d.values for d in draws], axis=0))
        out.name = "p"
        return out

    def predict_interval(self, X: ArrayLike | spmatrix | sparray, ci_prob: float | None = 0.95) -> xr.DataArray:
        """Pointwise interval of P(y = 1 | x) per row, dims ``(obs_id, ci_bound)``.

        With posterior draws (Bayesian calibrators, or a Beta prior of :meth:`with_class_prior`):
        the equal-tailed ``ci_prob`` interval of :meth:`predict_posterior`. Point estimates:
        the mean over the calibrated classifiers of their calibrators' own intervals (the
        prediction itself, attr ``degenerate=1``). Venn-Abers: the ``[p0, p1]`` pair, merged over
        several folds as in cross Venn-Abers into :math:`[1 - G(1 - p_0), G(p_1)]`, :math:`G`
        the geometric mean over the folds.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Anything the estimator accepts; its scores are what the calibrators map.
        ci_prob : float, default 0.95
            Probability of the interval, in (0, 1); None also means 0.95
            (:data:`bayescal.base.DEFAULT_CI_PROB`). Not used by Venn-Abers.

        Returns
        -------
        xarray.DataArray
            Named ``p_interval``, dims ``(obs_id, ci_bound)`` with ``ci_bound = ["lower",
            "upper"]``; attrs ``ci_kind``, ``ci_prob`` (when it applies) and ``degenerate``.
        """
        check_is_fitted(self)
        ci_prob = check_ci_prob(ci_prob)
        merged = self._venn_abers_merge(X)
        if merged is not None:
            return pair_interval(*merged)
        draws = self.predict_posterior(X)
        if draws.sizes["chain"] * draws.sizes["draw"] > 1:
            flat = draws.values.reshape(-1, draws.shape[-1])
            q = np.quantile(flat, [(1.0 - ci_prob) / 2.0, (1.0 + ci_prob) / 2.0], axis=0).T
            return xr.DataArray(
                q,
                dims=("obs_id", "ci_bound"),
                coords={"obs_id": np.arange(q.shape[0]), "ci_bound": ["lower", "upper"]},
                name="p_interval",
                attrs={"ci_kind": "eti", "ci_prob": ci_prob, "degenerate": 0},
            )
        parts = [
            pair.calibrator.predict_interval(self._scores(pair, X), ci_prob) for pair in self.calibrated_classifiers_
        ]
        return parts[0].copy(data=np.mean([p.values for p in parts], axis=0))

    def with_class_prior(
        self, prior: float | tuple[float, float], *, n_prior_draws: int = 1000, random_state: RandomStateLike = None
    ) -> "CalibratedClassifier":
        r"""This fitted classifier with every calibrator shifted to the deployment prevalence ``prior``.

        See :meth:`bayescal.base.Calibrator.with_class_prior` (a number in (0, 1), or
        ``(a, b)`` for a Beta distribution). Each calibrator is given the same
        ``random_state``: with an int seed they all draw the same prevalences, so draw ``d``
        of the averaged posterior shares one prevalence (with ``None`` or a Generator their
        draws differ). The estimators are shared with this object, not copied.

        Parameters
        ----------
        prior : float in (0, 1) or tuple (a, b)
            The deployment prevalence :math:`\pi'`, or the parameters of its Beta
            distribution.
        n_prior_draws : int, default 1000
            With a Beta prior, at least this many draws of each shifted map.
        random_state : None, int or numpy Generator, default None
            Seeds the draws of :math:`\pi'` (Beta prior only); pass an int for prevalence
            draws shared by all calibrators.

        Returns
        -------
        CalibratedClassifier
            A new fitted classifier whose calibrators are the shifted ones; this one is left
            untouched.
        """
        check_is_fitted(self)
        shifted = copy.copy(self)
        shifted.calibrated_classifiers_ = [
            Bunch(
                estimator=pair.estimator,
                calibrator=pair.calibrator.with_class_prior(
                    prior, n_prior_draws=n_prior_draws, random_state=random_state
                ),
            )
            for pair in self.calibrated_classifiers_
        ]
        return shifted

    # ---- scikit-learn plumbing ------------------------------------------------------------
    def get_metadata_routing(self) -> MetadataRouter:
        """Metadata routing: ``sample_weight`` to the calibrators, the estimator's ``fit``
        parameters as it requests them, the splitter's ``split`` parameters."""
        return (
            MetadataRouter(owner=self)
            .add_self_request(self)
            .add(estimator=self._get_estimator(), method_mapping=MethodMapping().add(caller="fit", callee="fit"))
            .add(splitter=self.cv, method_mapping=MethodMapping().add(caller="fit", callee="split"))
        )

    def __sklearn_tags__(self):
        from sklearn.utils import get_tags

        tags = super().__sklearn_tags__()
        inner = get_tags(self._get_estimator())
        tags.input_tags.sparse = inner.input_tags.sparse
        tags.input_tags.allow_nan = inner.input_tags.allow_nan
        tags.classifier_tags.multi_class = False
        return tags
