"""Input checking shared by every entry point.

Every public function and estimator funnels user input through these helpers, so a bad
input produces the same clear ``ValueError`` wherever it enters: the message names the
argument, the problem and the fix. Inputs are never modified: each helper returns a new
array.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = [
    "check_integer",
    "check_scores",
    "check_probabilities",
    "check_labels",
    "check_sample_weight",
    "check_consistent_length",
    "check_min_samples",
    "check_score_kind",
    "check_features",
    "check_number",
    "check_ci_prob",
    "resolve_random_state",
    "DEFAULT_CI_PROB",
]

#: Probability of every credible, consistency and decision interval when ``ci_prob=None``:
#: the one default of the package (re-exported as :data:`bayescal.base.DEFAULT_CI_PROB`).
DEFAULT_CI_PROB: float = 0.95

SCORE_KINDS = ("probability", "decision")


def _as_1d_float(values: Any, name: str) -> np.ndarray:
    """Convert a list / numpy array / pandas Series / (n, 1) array to a new 1-D float64 array."""
    if values is None:
        raise ValueError(f"{name} is None: pass a 1-D array of numbers.")
    if hasattr(values, "tocsr") or hasattr(values, "todense"):
        raise ValueError(f"{name} is a sparse matrix: sparse input is not supported; pass a dense 1-D array.")
    if hasattr(values, "to_numpy") and not isinstance(values, np.ndarray):
        values = values.to_numpy()
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
    if arr.dtype.kind not in "iuf":
        try:
            arr = arr.astype(np.float64)
        except (TypeError, ValueError):
            raise ValueError(
                f"{name} has dtype {arr.dtype} with non-numeric values: pass a 1-D array of numbers."
            ) from None
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


def check_scores(scores: Any, *, score_kind: str = "decision", name: str = "scores") -> np.ndarray:
    """Return scores as a new finite 1-D float64 array.

    Parameters
    ----------
    scores : array-like of shape (n,) or (n, 1)
    score_kind : {"probability", "decision"}
        With "probability" the values must lie in [0, 1].
    name : str
        Argument name used in error messages.
    """
    check_score_kind(score_kind)
    arr = _as_1d_float(scores, name)
    lo, hi = arr.min(), arr.max()  # two reductions: NaN and inf propagate into them
    if not (np.isfinite(lo) and np.isfinite(hi)):
        bad = ~np.isfinite(arr)
        idx = np.flatnonzero(bad)
        kind = "NaN" if np.isnan(arr[idx[0]]) else "infinite"
        raise ValueError(
            f"{name} has {bad.sum()} {'NaN or infinite' if bad.sum() > 1 else kind} value(s) "
            f"(first at index {idx[0]}): remove or impute them before calibrating."
        )
    if score_kind == "probability" and (lo < 0.0 or hi > 1.0):
        out = (arr < 0.0) | (arr > 1.0)
        raise ValueError(
            f"{name} has {out.sum()} value(s) outside [0, 1] (min {lo:.4g}, max {hi:.4g}) "
            "but score_kind='probability': pass probabilities, or set score_kind='decision' "
            "for raw margins such as SVM decision values or logits."
        )
    return arr


def check_probabilities(y_prob: Any, *, name: str = "y_prob") -> np.ndarray:
    """Return predicted probabilities as a new 1-D float64 array in [0, 1]."""
    return check_scores(y_prob, score_kind="probability", name=name)


def _distinct_values(arr: np.ndarray) -> np.ndarray:
    """Sorted distinct values; for numeric labels with at most two values, by min and max
    (three passes instead of a sort or hash: 0.6 s -> 0.03 s for 10^7 labels)."""
    if arr.dtype.kind in "biuf":
        lo, hi = arr.min(), arr.max()
        if lo == hi:
            return arr[:1].copy()
        if ((arr == lo) | (arr == hi)).all():
            return np.array([lo, hi], dtype=arr.dtype)
    return np.unique(arr)


def check_labels(
    y: Any, *, pos_label: Any = None, name: str = "y", require_both: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(y01, classes)``: labels as a new int8 array of 0/1 and the two original classes.

    Accepts {0, 1}, booleans, or any two distinct values. ``pos_label`` names the positive
    class; by default it is the greater of the two sorted values, as in scikit-learn
    (1 for {0, 1} and {-1, 1}, True for booleans, "yes" for {"no", "yes"}). ``classes`` is
    ordered ``[negative, positive]``.
    """
    if y is None:
        raise ValueError(f"{name} is None: pass the true binary labels.")
    if hasattr(y, "to_numpy") and not isinstance(y, np.ndarray):
        y = y.to_numpy()
    arr = np.asarray(y)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise ValueError(f"{name} has shape {arr.shape}: pass one label per sample, shape (n,).")
    if arr.size == 0:
        raise ValueError(f"{name} is empty: pass at least one label.")
    if arr.dtype.kind == "c":
        raise ValueError(f"{name} has complex values: pass binary labels such as 0/1.")
    if arr.dtype.kind == "f" and not np.isfinite(arr).all():
        raise ValueError(f"{name} has NaN or infinite values: remove those samples.")
    if arr.dtype.kind == "O":
        if any(v is None or (isinstance(v, float) and not np.isfinite(v)) for v in arr):
            raise ValueError(f"{name} has missing values (None or NaN): remove those samples.")
    try:
        classes = _distinct_values(arr)
    except TypeError:
        raise ValueError(f"{name} mixes value types that cannot be compared: pass binary labels such as 0/1.") from None
    if classes.size > 2:
        shown = ", ".join(map(repr, classes[:5].tolist())) + (", ..." if classes.size > 5 else "")
        continuous = arr.dtype.kind == "f" and np.any(classes != np.round(classes))
        raise ValueError(
            (f"Unknown label type: continuous. {name} has non-integer values ({shown}): " if continuous
             else f"Only binary classification is supported. {name} has {classes.size} distinct values ({shown}): ")
            + "pass labels with exactly two values (e.g. 0/1), or binarise one class against the rest."
        )
    if classes.size == 1 and require_both:
        raise ValueError(
            f"{name} has a single class ({classes[0].item()!r}): calibration needs samples of both classes."
        )
    if pos_label is None:
        # scikit-learn's convention: the greater of the two sorted values is the positive class
        # ({0, 1}: 1; {False, True}: True; {-1, 1}: 1; {"no", "yes"}: "yes").
        pos_label = classes[-1] if classes.size == 2 else (1 if classes[0] != 1 else classes[0])
    elif pos_label not in classes.tolist() and (require_both or classes.size == 2):
        raise ValueError(f"pos_label={pos_label!r} is not one of the values in {name}: {classes.tolist()}.")
    y01 = (arr == pos_label).astype(np.int8)
    if classes.size == 2:
        neg = classes[classes != pos_label][0]
        ordered = np.array([neg, pos_label], dtype=classes.dtype)
    else:
        ordered = classes
    return y01, ordered


def check_sample_weight(sample_weight: Any, n: int, *, name: str = "sample_weight") -> np.ndarray:
    """Return weights as a new float64 array of length ``n`` (ones when ``None``)."""
    if sample_weight is None:
        return np.ones(n, dtype=np.float64)
    if np.isscalar(sample_weight):
        w = np.full(n, float(sample_weight))
    else:
        w = _as_1d_float(sample_weight, name)
    if w.shape[0] != n:
        raise ValueError(f"{name} has {w.shape[0]} values but there are {n} samples: pass one weight per sample.")
    if not np.isfinite(w).all():
        raise ValueError(f"{name} has NaN or infinite values: pass finite non-negative weights.")
    if (w < 0).any():
        raise ValueError(f"{name} has {(w < 0).sum()} negative value(s): weights must be non-negative.")
    if w.sum() <= 0:
        raise ValueError(f"{name} sums to zero: at least one sample needs a positive weight.")
    return w


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
            f"{method} needs at least {minimum} samples but got {n:g}: pass more calibration data "
            "or use a simpler calibrator (e.g. 'platt')."
        )
    if min(n0, n1) < per_class:
        raise ValueError(
            f"{method} needs at least {per_class} samples of each class but got {n0:g} negatives and "
            f"{n1:g} positives: pass more calibration data."
        )


def check_features(X: Any, n: int, *, name: str = "X") -> np.ndarray:
    """Return features as a new 2-D array with ``n`` rows (numeric or categorical values).

    A 1-D input is taken as a single feature column. Missing values are rejected.
    """
    if X is None:
        raise ValueError(f"{name} is None: this calibrator needs the features, shape (n, d).")
    if hasattr(X, "to_numpy") and not isinstance(X, np.ndarray):
        X = X.to_numpy()
    arr = np.asarray(X)
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
    if arr.dtype.kind == "O" and any(v is None or (isinstance(v, float) and v != v) for v in arr.ravel()):
        raise ValueError(f"{name} has missing values (None or NaN): impute or drop them.")
    return np.array(arr, copy=True)


def check_integer(value: Any, name: str, minimum: int = 1) -> int:
    """``value`` as an int of at least ``minimum`` (a Python or numpy integer, not a bool or float), or a ValueError naming it."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name}={value!r} must be an integer of at least {minimum}.")
    return int(value)


def check_number(value: Any, name: str, *, low: float | None = None, high: float | None = None,
                 inclusive: bool = True, integer: bool = False) -> float:
    """Return ``value`` as a finite float (or int) within the given bounds, or raise a ValueError naming it."""
    if isinstance(value, (str, bytes, complex, np.complexfloating)) or isinstance(value, bool):
        raise ValueError(f"{name}={value!r} must be a real number.")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name}={value!r} must be a real number.") from None
    if not np.isfinite(number):
        raise ValueError(f"{name}={value!r} must be finite.")
    if integer:
        if not number.is_integer():
            raise ValueError(f"{name}={value!r} must be a whole number.")
        number = int(number)
    below = low is not None and (number < low if inclusive else number <= low)
    above = high is not None and (number > high if inclusive else number >= high)
    if below or above:
        lo = "-inf" if low is None else f"{low:g}"
        hi = "inf" if high is None else f"{high:g}"
        interval = f"[{lo}, {hi}]" if inclusive else f"({lo}, {hi})"
        raise ValueError(f"{name}={value!r} must lie in {interval}.")
    return number


def check_ci_prob(ci_prob: Any) -> float:
    """``ci_prob`` as a float strictly between 0 and 1; ``None`` gives :data:`DEFAULT_CI_PROB` (0.95)."""
    if ci_prob is None:
        return DEFAULT_CI_PROB
    return check_number(ci_prob, "ci_prob", low=0.0, high=1.0, inclusive=False)


def resolve_random_state(random_state: Any, random_seed: Any = None, where: str = "this function", *,
                         stacklevel: int = 3) -> Any:
    """The randomness to use, accepting the deprecated name ``random_seed`` for one release.

    Parameters
    ----------
    random_state : None, int or numpy.random.Generator
        The value passed under the current name (scikit-learn's convention).
    random_seed : None, int or numpy.random.Generator, optional
        The value passed under the old name; when given, a ``DeprecationWarning`` says to
        use ``random_state``.
    where : str
        The function or class named in the warning and in the error.
    stacklevel : int, default 3
        Passed to :func:`warnings.warn`: 3 attributes the warning to the caller of the
        function that calls this helper (the user's line).

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
        return random_state
    if random_state is not None:
        raise ValueError(f"{where}: pass random_state only; random_seed is its deprecated old name.")
    import warnings

    warnings.warn(f"{where}: random_seed is deprecated and will be removed in the next release; "
                  "use random_state.", DeprecationWarning, stacklevel=stacklevel)
    return random_seed
