"""Input checking shared by every entry point.

Every public function and estimator funnels user input through these helpers, so a bad
input produces the same clear ``ValueError`` wherever it enters: the message names the
argument, the problem and the fix. Inputs are never modified: each helper returns a new
array.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from bayescal._warnings import warn

__all__ = [
    "is_dask_collection",
    "RowValueError",
    "MAX_ABS_DECISION",
    "check_integer",
    "check_bool",
    "check_scores",
    "check_probabilities",
    "check_labels",
    "check_pos_label",
    "check_labels_present",
    "distinct_labels",
    "whole_data_error",
    "check_sample_weight",
    "check_class_weights",
    "check_consistent_length",
    "check_min_samples",
    "check_score_kind",
    "check_features",
    "check_number",
    "check_ci_prob",
    "resolve_random_state",
    "DEFAULT_CI_PROB",
    "check_calibrator",
    "check_labels_as",
    "check_scored_labels",
    "random_generator",
]

#: Probability of every credible, consistency and decision interval when ``ci_prob=None``:
#: the one default of the package (re-exported as :data:`bayescal.base.DEFAULT_CI_PROB`).
DEFAULT_CI_PROB: float = 0.95

SCORE_KINDS = ("probability", "decision")

MAX_ABS_DECISION = 1e100
"""Largest decision-value magnitude accepted for fitting: the fits square and multiply scores,
and beyond this no float arithmetic on them is safe (no classifier produces such margins)."""

_WEIGHT_TOTAL_MAX = 1e15
"""Weights summing to more than this are rescaled to a largest weight of 1 (see check_sample_weight)."""
_WEIGHT_MAX_TINY = 1e-100
"""Weights whose largest value is below this are rescaled to a largest weight of 1."""


class RowValueError(ValueError):
    """A ValueError about rows of an input, which a caller holding only a chunk of the data can
    restate for the whole: ``template`` names the first such row as ``{index}``, and may use
    the fields ``count`` (how many rows), ``low`` / ``high`` (the smallest and largest value
    seen) and ``what`` (a pair of words, for one row and for several). :meth:`fold` adds the
    errors of several chunks up; ``argument`` names the input and ``stage`` orders the checks
    of one input, as they run on the whole (the first failing is the one reported)."""

    def __init__(
        self,
        template: str,
        index: int,
        *,
        argument: str = "",
        stage: int = 0,
        count: int | None = None,
        low: float | None = None,
        high: float | None = None,
        what: tuple[str, str] | None = None,
    ):
        self.template, self.index, self.argument, self.stage = template, int(index), argument, int(stage)
        given = {"count": count, "low": low, "high": high, "what": what}
        self.fields = {k: v for k, v in given.items() if v is not None}
        super().__init__(self.text(self.index))

    def text(self, index: Any) -> str:
        """The message with ``index`` for the first row (a number, or words such as an index label)."""
        fields = dict(self.fields)
        if "what" in fields:
            fields["what"] = fields["what"][0 if fields.get("count", 1) == 1 else 1]
        return self.template.format(index=index, **fields)

    def moved(self, offset: int) -> "RowValueError":
        """The same error for a chunk that starts at row ``offset`` of the whole data."""
        return RowValueError(
            self.template, self.index + offset, argument=self.argument, stage=self.stage, **self.fields
        )

    def rank(self, order: tuple[str, ...]) -> tuple[int, int]:
        """When this check runs on the whole data, the inputs checked in ``order``."""
        return (order.index(self.argument) if self.argument in order else len(order), self.stage)

    @staticmethod
    def fold(
        errors: list["RowValueError"],
        order: tuple[str, ...] = (),
        low: float | None = None,
        high: float | None = None,
    ) -> "RowValueError":
        """The whole data's error from those of its chunks (each :meth:`moved` to its chunk's
        rows): the errors of the check that runs first (inputs checked in ``order``), their
        counts added, the first row, the smallest low and largest high, also over ``low`` /
        ``high`` (those of the chunks that passed)."""
        first_check = min(e.rank(order) for e in errors)
        errors = [e for e in errors if e.rank(order) == first_check]
        first = min(errors, key=lambda e: e.index)
        fields = dict(first.fields)
        if "count" in fields:
            fields["count"] = sum(e.fields["count"] for e in errors)
        if "low" in fields:
            fields["low"] = min([e.fields["low"] for e in errors] + ([] if low is None else [low]))
        if "high" in fields:
            fields["high"] = max([e.fields["high"] for e in errors] + ([] if high is None else [high]))
        return RowValueError(first.template, first.index, argument=first.argument, stage=first.stage, **fields)

    def __reduce__(self):
        return (_row_value_error, (self.template, self.index, self.argument, self.stage, self.fields))


def whole_data_error(
    chunks: list[tuple[int, RowValueError | None, tuple[float, float] | None]], order: tuple[str, ...]
) -> RowValueError | None:
    """The error the checks give on the whole data, from its chunks' ``(rows, error or None,
    (min, max) of the scores of a chunk that passed)`` in row order (:meth:`RowValueError.fold`,
    the inputs checked in ``order``), or None when no chunk failed."""
    offsets = np.cumsum([0] + [n for n, _, _ in chunks])
    failed = [error.moved(int(at)) for (_, error, _), at in zip(chunks, offsets) if error is not None]
    if not failed:
        return None
    passed = [span for _, error, span in chunks if error is None and span is not None]
    return RowValueError.fold(
        failed, order, low=min((lo for lo, _ in passed), default=None), high=max((hi for _, hi in passed), default=None)
    )


def _literal(text: str) -> str:
    """``text`` for a :class:`RowValueError` template, its braces doubled (a column named ``a{b}``)."""
    return text.replace("{", "{{").replace("}", "}}")


def _row_value_error(template: str, index: int, argument: str, stage: int, fields: dict) -> RowValueError:
    """Rebuild a pickled :class:`RowValueError` (Dask sends a chunk's error between processes)."""
    return RowValueError(template, index, argument=argument, stage=stage, **fields)


def is_dask_collection(value: Any) -> bool:
    """Whether ``value`` is a Dask collection holding a graph (Dask array, dataframe, series, or an
    xarray object backed by one). An in-memory xarray object is not (its ``__dask_graph__`` is None);
    nothing is imported: when Dask is not loaded no input can be a Dask collection."""
    if "dask" not in sys.modules:
        return False
    import dask

    return bool(dask.is_dask_collection(value))


def _missing_mask(arr: np.ndarray) -> np.ndarray:
    """Missing entries of an object array: None, float NaN and pandas' NA / NaT."""
    if "pandas" in sys.modules:
        import pandas as pd

        return np.asarray(pd.isna(arr), dtype=bool)
    return np.array([v is None or (isinstance(v, float) and v != v) for v in arr.ravel()], dtype=bool).reshape(
        arr.shape
    )


def _refuse_masked(values: Any, name: str) -> Any:
    """A masked array with masked entries is refused (its mask is never silently dropped or
    ignored); one with nothing masked is read as its data."""
    if isinstance(values, np.ma.MaskedArray):
        mask = np.ma.getmaskarray(values)
        if mask.any():
            raise ValueError(
                f"{name} is a masked array with {int(mask.sum())} masked value(s) (first at index "
                f"{int(np.flatnonzero(mask.ravel())[0])}): bayescal does not guess what a masked row means. "
                f"Drop those rows from every argument (e.g. keep = ~{name}.mask) or fill them ({name}.filled(value))."
            )
        return np.ma.getdata(values)
    return values


def _from_pandas(values: Any, name: str) -> Any:
    """A pandas / xarray object as a numpy array (nullable pandas dtypes with NA as object arrays)."""
    if hasattr(values, "to_numpy") and not isinstance(values, np.ndarray):
        return values.to_numpy()
    return values


def _as_1d_float(values: Any, name: str) -> np.ndarray:
    """Convert a list / numpy array / pandas Series / (n, 1) array to a new 1-D float64 array."""
    if values is None:
        raise ValueError(f"{name} is None: pass a 1-D array of numbers.")
    if hasattr(values, "tocsr") or hasattr(values, "todense"):
        raise ValueError(f"{name} is a sparse matrix: sparse input is not supported; pass a dense 1-D array.")
    values = _refuse_masked(_from_pandas(values, name), name)
    if isinstance(values, (str, bytes)):
        raise ValueError(f"{name} is a string: pass a 1-D array of numbers.")
    try:
        arr = np.asarray(values)
    except Exception as exc:  # ragged lists and the like
        raise ValueError(f"{name} could not be read as an array ({exc}): pass a 1-D array of numbers.") from None
    if arr.dtype.kind == "c":
        raise ValueError(f"{name} has complex values (Complex data not supported): pass real numbers.")
    if arr.dtype.kind == "b":
        arr = arr.astype(np.float64)
    if arr.dtype.kind == "O" and arr.ndim >= 1 and arr.size:
        missing = _missing_mask(arr)
        if missing.any():
            raise RowValueError(
                f"{_literal(name)} has {{count}} missing value(s) (None, NaN or NA; first at index {{index}}): "
                "remove or impute them.",
                np.flatnonzero(missing.ravel())[0],
                argument=name,
                count=int(missing.sum()),
            )
    if arr.dtype.kind in "USMm" or (
        arr.dtype.kind == "O" and any(isinstance(v, (str, bytes, np.datetime64, np.timedelta64)) for v in arr.ravel())
    ):  # float() would read text as numbers and dates as day counts
        raise ValueError(
            f"{name} has non-numeric values, text, dates or time spans (dtype {arr.dtype}): pass a 1-D array "
            "of numbers (convert the column first, e.g. with pandas.to_numeric)."
        )
    if arr.dtype.kind not in "iuf":
        try:
            arr = arr.astype(np.float64)
        except (TypeError, ValueError):
            raise ValueError(
                f"{name} has dtype {arr.dtype} with non-numeric values: pass a 1-D array of numbers."
            ) from None
        except OverflowError:  # Python integers beyond the float range
            raise ValueError(f"{name} has values too large for a float: pass scores within +-1e100.") from None
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim == 0:
        raise ValueError(f"{name} is a scalar: pass a 1-D array of shape (n,) or (n, 1).")
    if arr.ndim == 2 and arr.shape[1] == 0:
        raise ValueError(
            f"{name} has 0 feature(s) (shape={arr.shape}) while a minimum of 1 is required: pass one score per sample."
        )
    if arr.ndim != 1:
        raise ValueError(
            f"{name} has shape {arr.shape}: pass one score per sample, shape (n,) or (n, 1). "
            "For scikit-learn's predict_proba output use its column for the positive class, e.g. proba[:, 1]."
        )
    if arr.size == 0:
        raise ValueError(f"{name} is empty: pass at least one value.")
    return np.array(arr, dtype=np.float64, copy=True)


def check_score_kind(score_kind: str) -> str:
    """Check the ``score_kind`` parameter."""
    if score_kind not in SCORE_KINDS:
        raise ValueError(
            f"score_kind={score_kind!r} is not one of {SCORE_KINDS}: use 'probability' for scores in [0, 1] "
            "or 'decision' for raw margins such as SVM decision values or logits."
        )
    return score_kind


def check_scores(
    scores: Any, *, score_kind: str = "decision", name: str = "scores", max_abs: float | None = None, offset: int = 0
) -> np.ndarray:
    """Return scores as a new finite 1-D float64 array.

    Parameters
    ----------
    scores : array-like of shape (n,) or (n, 1)
        A list, numpy array, pandas Series or xarray DataArray. A masked array with masked
        entries is refused (drop or fill those rows first).
    score_kind : {"probability", "decision"}
        With "probability" the values must lie in [0, 1].
    name : str
        Argument name used in error messages.
    max_abs : float, optional
        Largest magnitude accepted for decision values (fitting passes
        :data:`MAX_ABS_DECISION`); ``None`` accepts any finite value.
    offset : int
        Added to the row index reported in messages (the position of a chunk in the whole data).
    """
    check_score_kind(score_kind)
    arr = _as_1d_float(scores, name)
    lo, hi = arr.min(), arr.max()  # two reductions: NaN and inf propagate into them
    if not (np.isfinite(lo) and np.isfinite(hi)):
        idx = np.flatnonzero(~np.isfinite(arr))
        raise RowValueError(
            f"{_literal(name)} has {{count}} {{what}} value(s) (first at index {{index}}): remove or impute them "
            "before calibrating.",
            idx[0] + offset,
            argument=name,
            stage=1,
            count=idx.size,
            what=("NaN" if np.isnan(arr[idx[0]]) else "infinite", "NaN or infinite"),
        )
    if score_kind == "probability" and (lo < 0.0 or hi > 1.0):
        out = (arr < 0.0) | (arr > 1.0)
        raise RowValueError(
            f"{_literal(name)} has {{count}} value(s) outside [0, 1] (min {{low:.4g}}, max {{high:.4g}}) "
            "but score_kind='probability': pass probabilities, or set score_kind='decision' "
            "for raw margins such as SVM decision values or logits.",
            np.flatnonzero(out)[0] + offset,
            argument=name,
            stage=2,
            count=int(out.sum()),
            low=float(lo),
            high=float(hi),
        )
    if score_kind == "decision" and max_abs is not None and max(-lo, hi) > max_abs:
        idx = int(np.flatnonzero(np.abs(arr) > max_abs)[0])
        raise RowValueError(
            f"{_literal(name)} has decision values of magnitude up to {{high:.3g}} (first beyond {max_abs:.0e} at "
            "index {index}): rescale them (e.g. divide by their standard deviation) before calibrating.",
            idx + offset,
            argument=name,
            stage=3,
            high=float(max(-lo, hi)),
        )
    return arr


def check_probabilities(y_prob: Any, *, name: str = "y_prob") -> np.ndarray:
    """Return predicted probabilities as a new 1-D float64 array in [0, 1] (for the metrics and
    checks of raw predictions, which take no ``score_kind``: the message names a calibrator's)."""
    arr = check_scores(y_prob, score_kind="decision", name=name)
    lo, hi = arr.min(), arr.max()
    if lo < 0.0 or hi > 1.0:
        out = (arr < 0.0) | (arr > 1.0)
        raise ValueError(
            f"{name} has {out.sum()} value(s) outside [0, 1] (min {lo:.4g}, max {hi:.4g}): pass predicted "
            "probabilities of the positive class; raw margins such as SVM decision values or logits are "
            "turned into probabilities by a calibrator fitted with score_kind='decision'."
        )
    return arr


def distinct_labels(arr: np.ndarray, name: str = "y") -> np.ndarray:
    """Sorted distinct labels; for numeric labels with at most two values, by min and max
    (three passes instead of a sort or hash, which would dominate validation at 10^7 labels).
    Labels of types that do not compare (numbers mixed with text) are refused by ``name``."""
    if arr.dtype.kind in "biuf":
        lo, hi = arr.min(), arr.max()
        if lo == hi:
            return arr[:1].copy()
        if ((arr == lo) | (arr == hi)).all():
            return np.array([lo, hi], dtype=arr.dtype)
    try:
        return np.unique(arr)
    except TypeError:
        raise ValueError(f"{name} mixes value types that cannot be compared: pass binary labels such as 0/1.") from None


def check_labels_present(arr: np.ndarray, name: str = "y") -> None:
    """Refuse missing labels (NaN or infinite floats; NaT; None, NaN or NA in an object array)
    with a :class:`RowValueError` naming the first, so that a caller holding one chunk of the
    data can name its row in the whole."""
    what = _literal(name)
    if arr.dtype.kind == "f":
        bad = np.flatnonzero(~np.isfinite(arr))
        template = (
            f"{what} has NaN or infinite values ({{count}}, first at index {{index}}): "
            "remove those samples (a missing label cannot be used)."
        )
    elif arr.dtype.kind in "Mm":  # NaT != NaT: it would be a class read as negative
        bad = np.flatnonzero(np.isnat(arr))
        template = f"{what} has {{count}} missing value(s) (NaT; first at index {{index}}): remove those samples."
    elif arr.dtype.kind == "O":
        bad = np.flatnonzero(_missing_mask(arr))
        template = (
            f"{what} has {{count}} missing value(s) (None, NaN or NA; first at index {{index}}): remove those samples."
        )
    else:
        return
    if bad.size:
        raise RowValueError(template, bad[0], argument=name, count=bad.size)


def check_pos_label(pos_label: Any) -> None:
    """Refuse a ``pos_label`` that is not one value (an array of labels, say)."""
    if pos_label is not None and np.ndim(pos_label) != 0:
        raise ValueError(
            f"pos_label={pos_label!r} is not a single label: pass the one value of y that is the positive class."
        )


def check_labels(
    y: Any,
    *,
    pos_label: Any = None,
    name: str = "y",
    require_both: bool = True,
    purpose: str = "calibration",
) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(y01, classes)``: labels as a new int8 array of 0/1 and the two original classes.

    Accepts {0, 1}, booleans, or any two distinct values. ``pos_label`` names the positive
    class; by default it is the greater of the two sorted values, as in scikit-learn
    (1 for {0, 1} and {-1, 1}, True for booleans, "yes" for {"no", "yes"}). ``classes`` is
    ordered ``[negative, positive]``.

    Numeric labels with a non-integer value (such as {0, 0.5}) look like probabilities or
    targets rather than class labels, so they are refused unless ``pos_label`` says which
    value is the positive class. Missing values (None, NaN, pandas' NA) and masked entries
    are refused. With ``require_both``, labels of one class are refused; ``purpose`` names what
    needs both classes in that message ("calibration", "ROC AUC").
    """
    if y is None:
        raise ValueError(f"{name} is None: pass the true binary labels.")
    check_pos_label(pos_label)
    arr = np.asarray(_refuse_masked(_from_pandas(y, name), name))
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise ValueError(f"{name} has shape {arr.shape}: pass one label per sample, shape (n,).")
    if arr.size == 0:
        raise ValueError(f"{name} is empty: pass at least one label.")
    if arr.dtype.kind == "c":
        raise ValueError(f"{name} has complex values: pass binary labels such as 0/1.")
    check_labels_present(arr, name)
    classes = distinct_labels(arr, name)
    if classes.size > 2:
        shown = ", ".join(map(repr, classes[:5].tolist())) + (", ..." if classes.size > 5 else "")
        continuous = arr.dtype.kind == "f" and np.any(classes != np.round(classes))
        raise ValueError(
            (
                f"Unknown label type: continuous. {name} has non-integer values ({shown}): "
                if continuous
                else f"Only binary classification is supported. {name} has {classes.size} distinct values ({shown}): "
            )
            + "pass labels with exactly two values (e.g. 0/1), or binarise one class against the rest."
        )
    if classes.size == 1 and require_both:
        raise ValueError(
            f"{name} has a single class ({classes.tolist()[0]!r}): {purpose} needs samples of both classes."
        )
    if pos_label is None and arr.dtype.kind == "f" and np.any(classes != np.round(classes)):
        shown = ", ".join(repr(v) for v in classes.tolist())
        raise ValueError(
            f"{name} has non-integer values ({shown}): these look like probabilities or targets, not class "
            f"labels. Pass the true class labels (0/1, booleans or two class names), or set pos_label= to the value "
            "of the positive class."
        )
    if pos_label is None:
        # scikit-learn's convention: the greater of the two sorted values is the positive class
        # ({0, 1}: 1; {False, True}: True; {-1, 1}: 1; {"no", "yes"}: "yes").
        pos_label = classes[-1] if classes.size == 2 else (1 if classes[0] != 1 else classes[0])
    else:
        try:
            known = pos_label in classes.tolist()
        except Exception:  # an array or other value that does not compare to a label
            known = False
        if not known and (require_both or classes.size == 2):
            raise ValueError(f"pos_label={pos_label!r} is not one of the values in {name}: {classes.tolist()}.")
    y01 = (arr == pos_label).astype(np.int8)
    if classes.size == 2:
        neg = classes[classes != pos_label][0]
        ordered = np.array([neg, pos_label], dtype=classes.dtype)
    else:
        ordered = classes
    return y01, ordered


def check_sample_weight(
    sample_weight: Any, n: int, *, name: str = "sample_weight", relative: bool = False, rescale: bool = True
) -> np.ndarray:
    """Return weights as a new float64 array of length ``n`` (ones when ``None``).

    Weights are frequencies (an integer weight acts as that many repeated rows), so their
    scale is kept, except where float arithmetic would break: weights totalling more than
    :math:`10^{15}` (more than any real sample), or whose largest value is below
    :math:`10^{-100}`, are divided by their largest value (with a warning), so that sums,
    squares and products of weights stay finite; a weight of :math:`10^{308}` on every row
    then gives the same answer as unit weights. With ``relative=True`` (callers whose result
    depends only on the ratios of the weights, such as the metrics) they are always divided
    by their largest value, silently; with ``rescale=False`` (one chunk of data whose scale is
    decided over all chunks) never.
    """
    if sample_weight is None:
        return np.ones(n, dtype=np.float64)
    if isinstance(sample_weight, (str, bytes)):
        raise ValueError(
            f"{name}={sample_weight!r} is a string: pass one non-negative number per sample "
            "(or a single number for all)."
        )
    if np.isscalar(sample_weight):
        if isinstance(sample_weight, (complex, np.complexfloating)):
            raise ValueError(f"{name}={sample_weight!r} must be a real number.")
        try:
            w = np.full(n, float(sample_weight))
        except (TypeError, ValueError):
            raise ValueError(f"{name}={sample_weight!r} is not a number: pass non-negative weights.") from None
    else:
        w = _as_1d_float(sample_weight, name)
    if w.shape[0] != n:
        raise ValueError(f"{name} has {w.shape[0]} values but there are {n} samples: pass one weight per sample.")
    if not np.isfinite(w).all():
        raise ValueError(f"{name} has NaN or infinite values: pass finite non-negative weights.")
    if (w < 0).any():
        raise ValueError(f"{name} has {(w < 0).sum()} negative value(s): weights must be non-negative.")
    top = w.max()
    if top <= 0:
        raise ValueError(f"{name} sums to zero: at least one sample needs a positive weight.")
    if relative:
        return w / top
    if not rescale:
        return w
    relative_total = (w / top).sum()  # the total over the largest weight: no overflow
    if relative_total > _WEIGHT_TOTAL_MAX / top or top < _WEIGHT_MAX_TINY:
        warn(
            f"{name} totals {relative_total:.6g} x {top:.3g} (its largest value): outside the range where weights can act "
            "as counts, so they are divided by their largest value (only their ratios are used)."
        )
        w = w / top
    return w


def check_class_weights(
    y01: np.ndarray, w: np.ndarray, classes: Any = None, *, name: str = "sample_weight", purpose: str = "calibration"
) -> None:
    """Refuse weights that leave one class with zero total weight (a one-class fit is no calibration);
    ``purpose`` names what needs both classes in the message ("calibration", "ROC AUC")."""
    positive = w > 0
    n1 = np.count_nonzero(positive & (y01 == 1))
    weighted = (np.count_nonzero(positive) - n1, n1)  # rows with positive weight per class
    for label, word in ((0, "negative"), (1, "positive")):
        if not weighted[label] > 0:
            what = "" if classes is None or len(classes) < 2 else f" ({np.asarray(classes).tolist()[label]!r})"
            raise ValueError(
                f"{name} gives the {word} class{what} zero total weight: {purpose} needs weight on both classes. "
                "Give some samples of that class a positive weight."
            )


def check_consistent_length(**arrays: Any) -> int:
    """Check that all named arrays have the same length; return it."""
    lengths = {name: len(a) for name, a in arrays.items() if a is not None}
    if len(set(lengths.values())) > 1:
        desc = ", ".join(f"{k} has {v}" for k, v in lengths.items())
        raise ValueError(f"Mismatched lengths: {desc}. Pass one value per sample in each.")
    return next(iter(lengths.values()))


def check_min_samples(n0: float, n1: float, minimum: int, method: str, *, per_class: int = 1) -> None:
    """Check that there are at least ``minimum`` samples in all and ``per_class`` of each class."""
    n = n0 + n1
    if n < minimum:
        raise ValueError(
            f"{method} needs at least {minimum} samples but got {n:g} (scores and y): pass more calibration data "
            "or use a simpler calibrator (e.g. 'platt')."
        )
    if min(n0, n1) < per_class:
        raise ValueError(
            f"{method} needs at least {per_class} samples of each class but got {n0:g} negatives and "
            f"{n1:g} positives in y: pass more calibration data."
        )


def check_features(X: Any, n: int, *, name: str = "X") -> np.ndarray:
    """Return features as a new 2-D array with ``n`` rows (numeric or categorical values).

    A 1-D input is taken as a single feature column. Missing values are rejected.
    """
    if X is None:
        raise ValueError(f"{name} is None: this calibrator needs the features, shape (n, d).")
    if hasattr(X, "tocsr") or hasattr(X, "todense"):
        raise ValueError(f"{name} is a sparse matrix: sparse input is not supported; pass a dense 2-D array.")
    arr = np.asarray(_refuse_masked(_from_pandas(X, name), name))
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2:
        raise ValueError(f"{name} has shape {arr.shape}: pass a 2-D array of shape (n_samples, n_features).")
    if arr.shape[0] != n:
        raise ValueError(f"Mismatched lengths: {name} has {arr.shape[0]} rows but there are {n} scores.")
    if arr.shape[1] == 0:
        raise ValueError(f"{name} has no columns: pass at least one feature.")
    if arr.dtype.kind == "c":
        raise ValueError(f"{name} has complex values: pass real or categorical features.")
    if arr.dtype.kind == "f" and not np.isfinite(arr).all():
        raise ValueError(f"{name} has NaN or infinite values: impute or drop them.")
    if arr.dtype.kind == "O" and _missing_mask(arr).any():
        raise ValueError(f"{name} has missing values (None or NaN): impute or drop them.")
    return np.array(arr, copy=True)


def check_integer(value: Any, name: str, minimum: int = 1, maximum: int | None = None) -> int:
    """``value`` as an int of at least ``minimum`` (and at most ``maximum`` when given; a Python
    or numpy integer, not a bool or float), or a ValueError naming it."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name}={value!r} must be an integer of at least {minimum}.")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name}={value!r} must be an integer from {minimum} to {maximum}.")
    return int(value)


def check_bool(value: Any, name: str) -> bool:
    """``value`` as a bool (a Python or numpy bool: 1 == True, but 1 or "no" is no answer to a
    yes-or-no option), or a ValueError naming it."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name}={value!r:.40} must be True or False.")
    return bool(value)


def check_number(
    value: Any,
    name: str,
    *,
    low: float | None = None,
    high: float | None = None,
    inclusive: bool = True,
    integer: bool = False,
) -> float:
    """Return ``value`` as a finite float (or int) within the given bounds, or raise a ValueError naming it."""
    if isinstance(value, (str, bytes, complex, np.complexfloating, bool, np.bool_)):
        raise ValueError(f"{name}={value!r} must be a real number.")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name}={value!r} must be a real number.") from None
    except OverflowError:
        raise ValueError(f"{name} must be finite: got an integer beyond the float range.") from None
    if not np.isfinite(number):
        raise ValueError(f"{name}={value!r} must be finite.")
    if integer:
        if not number.is_integer():
            raise ValueError(f"{name}={value!r} must be a whole number.")
        number = int(number)
    below = low is not None and (number < low if inclusive else number <= low)
    above = high is not None and (number > high if inclusive else number >= high)
    if below or above:
        lo = "(-inf" if low is None else ("[" if inclusive else "(") + f"{low:g}"
        hi = "inf)" if high is None else f"{high:g}" + ("]" if inclusive else ")")
        interval = f"{lo}, {hi}"  # an infinite end is never included: values must be finite
        raise ValueError(f"{name}={value!r} must lie in {interval}.")
    return number


def check_ci_prob(ci_prob: Any) -> float:
    """``ci_prob`` as a float strictly between 0 and 1; ``None`` gives :data:`DEFAULT_CI_PROB` (0.95)."""
    if ci_prob is None:
        return DEFAULT_CI_PROB
    return check_number(ci_prob, "ci_prob", low=0.0, high=1.0, inclusive=False)


def resolve_random_state(random_state: Any, random_seed: Any = None, where: str = "this function") -> Any:
    """The randomness to use, accepting the deprecated name ``random_seed`` for one release.

    Parameters
    ----------
    random_state : None, int or numpy.random.Generator
        The value passed under the current name (scikit-learn's convention).
    random_seed : None, int or numpy.random.Generator, optional
        The value passed under the old name; when given, a ``DeprecationWarning`` says to
        use ``random_state``.
    where : str
        The function or class named in the warning (attributed to the user's line) and in the error.

    Returns
    -------
    None, int or numpy.random.Generator
        ``random_state``, or ``random_seed`` when only the old name was used.

    Raises
    ------
    ValueError
        When both names are given.
    """
    if random_seed is None:
        return _check_seed(random_state, "random_state")
    if random_state is not None:
        raise ValueError(f"{where}: pass random_state only; random_seed is its deprecated old name.")
    warn(
        f"{where}: random_seed is deprecated and will be removed in the next release; use random_state.",
        DeprecationWarning,
    )
    return _check_seed(random_seed, "random_seed")


def random_generator(random_state: Any, random_seed: Any = None, where: str = "this function") -> np.random.Generator:
    """The numpy Generator of ``random_state`` (:func:`resolve_random_state`: checked, the deprecated
    ``random_seed`` accepted)."""
    return np.random.default_rng(resolve_random_state(random_state, random_seed, where))


def _check_seed(value: Any, name: str) -> Any:
    """None, a non-negative integer or a Generator as it is; a legacy ``numpy.random.RandomState``
    (scikit-learn's idiom) as an integer seed drawn from it; anything else refused by name."""
    if value is None or isinstance(value, np.random.Generator):
        return value
    if isinstance(value, np.random.RandomState):
        return int(value.randint(np.iinfo(np.int32).max))
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)) and 0 <= value < 2**64:
        return int(value)
    raise ValueError(
        f"{name}={value!r} is not a seed: pass None, an integer in [0, 2**64) or a numpy.random.Generator "
        "(e.g. np.random.default_rng(0))."
    )


def check_calibrator(calibrator: Any, name: str = "calibrator", *, scores_only: str | None = None) -> Any:
    """``calibrator`` if it is a bayescal calibrator, else a ValueError saying what to pass (using an
    unfitted one raises scikit-learn's ``NotFittedError`` where it is used). ``scores_only``, the
    name of a function that reads the calibrator's map of scores alone, refuses a feature-aware
    calibrator (its probabilities need features that function does not take)."""
    from bayescal.base import Calibrator

    if not isinstance(calibrator, Calibrator):
        hint = (
            f" (to build one by name: bayescal.make_calibrator({calibrator!r}).fit(scores, y))"
            if isinstance(calibrator, str)
            else ""
        )
        raise ValueError(f"{name}={calibrator!r:.80} is not a bayescal calibrator: pass a fitted calibrator{hint}.")
    if scores_only is not None and calibrator.feature_aware:
        raise ValueError(
            f"{scores_only} reads a calibration map of scores alone, and {type(calibrator).__name__} depends on "
            "features as well: use a calibrator of scores alone, or work from calibrator.predict_proba(scores, X=X)."
        )
    return calibrator


def check_scored_labels(
    y: Any, *, pos_label: Any = None, name: str = "y_true", require_both: bool = False, purpose: str = "calibration"
) -> np.ndarray:
    """Labels scored against probabilities of the positive class: a new int8 array, 1 where ``y``
    is ``pos_label`` (:func:`check_labels`; ``require_both`` and ``purpose`` as there).

    Without ``pos_label``, text labels and labels of one value other than -1, 0 and 1 are
    refused, as scikit-learn's metrics refuse them: which is positive is the user's to say (the
    greater of two words, or a lone 2, is not evidently it), and a wrong guess inverts a metric
    or a diagram silently."""
    y01, classes = check_labels(y, name=name, require_both=require_both, pos_label=pos_label, purpose=purpose)
    if pos_label is None:
        values = classes.tolist()
        if any(isinstance(v, str) for v in values):
            raise ValueError(
                f"{name} holds text labels ({', '.join(map(repr, values))}): say which is the positive class "
                f"with pos_label=, e.g. pos_label={values[-1]!r} (the probabilities are those of that class)."
            )
        if len(values) == 1 and values[0] not in (-1, 0, 1):
            raise ValueError(
                f"{name} has the single value {values[0]!r}: it cannot say whether that is the positive class; "
                "pass pos_label= (the positive class's value)."
            )
    return y01


def check_labels_as(y: Any, classes: Any, *, name: str = "y") -> np.ndarray:
    """Labels coded by a fitted calibrator's ``classes`` (``[negative, positive]``): a new int8 array,
    1 where ``y`` equals ``classes[1]``. A value that is not one of the classes (a 2 for classes
    [0, 1], a string for numeric classes) is refused, so no label is silently read as negative."""
    classes = np.asarray(classes)
    if y is None:
        raise ValueError(f"{name} is None: pass one label per sample.")
    arr = np.asarray(_refuse_masked(_from_pandas(y, name), name))
    arr = arr[:, 0] if arr.ndim == 2 and arr.shape[1] == 1 else arr
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} has shape {arr.shape}: pass one label per sample, shape (n,).")
    if arr.dtype.kind == "c":
        raise ValueError(f"{name} has complex values: pass labels coded as in fit.")
    missing = (
        _missing_mask(arr)
        if arr.dtype.kind == "O"
        else (~np.isfinite(arr) if arr.dtype.kind == "f" else np.zeros(arr.shape, dtype=bool))
    )
    if missing.any():
        raise ValueError(
            f"{name} has {int(missing.sum())} missing or non-finite value(s) (first at index "
            f"{int(np.flatnonzero(missing)[0])}): remove those samples."
        )
    text = isinstance(np.asarray(classes).tolist()[0], str)
    same_kind = np.array([isinstance(v, str) == text for v in arr.tolist()], dtype=bool)
    known = same_kind & np.isin(arr.astype(object) if text else arr, classes.astype(object) if text else classes)
    if not known.all():
        bad = arr[~known][0]
        bad = bad.item() if isinstance(bad, np.generic) else bad
        raise ValueError(
            f"{name} has the value {bad!r}, which is not one of the calibrator's classes "
            f"{classes.tolist()}: pass labels coded as in fit (as calibrator.predict returns them)."
        )
    return (arr == classes[1]).astype(np.int8)
