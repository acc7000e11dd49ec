"""Declared fitted state: what a calibrator's fitted attributes may hold.

Every calibrator class declares its fitted attributes in a class attribute
``_fitted_schema`` (a ``dict`` from attribute name to :class:`Fitted`); the declarations of
the base classes are merged in (:func:`fitted_schema`). :mod:`bayescal.io` checks a file
against the declaration of the class it names before it reads any data (names, kinds,
dtypes, shapes and sizes, from the HDF5 metadata) and every value after (finite, in range,
ordered, summing to one), so a damaged or forged file is refused with a ``ValueError``
instead of building a calibrator that predicts NaN or a wrong map. ``save`` runs the same
checks, so what is saved loads.

Shapes are tuples whose entries are integers or dimension names; a name may carry an
offset (``"k-1"``, ``"k+1"``), and every use of a name within one calibrator must agree
(e.g. isotonic ``knots_`` and ``values_`` both ``("k",)``). In a list of arrays
(``kind="array_list"``) a name is bound per element, and ``length`` names the list's length.
Cross-attribute conditions the declaration cannot state go in the class's
``_check_fitted`` method, which raises ``ValueError``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "Fitted",
    "array",
    "array_list",
    "scalar",
    "labels",
    "mapping",
    "posterior",
    "fitted_schema",
    "check_value",
    "check_state",
    "int_param",
    "DimBinder",
    "PLAIN_NUMBERS",
    "MAX_ELEMENTS",
    "MAX_TOTAL_BYTES",
    "TINY",
]

#: the most elements one stored variable may declare (2**25 float64 values: 256 MiB)
MAX_ELEMENTS = 2**25
#: the most bytes all stored variables of one file may declare together
MAX_TOTAL_BYTES = 384 * 2**20

#: the smallest positive normal float: a lower bound that refuses zero (scales, steps)
TINY = float(np.finfo(np.float64).tiny)

_KINDS = ("array", "array_list", "scalar", "labels", "json", "posterior")

PLAIN_NUMBERS = (bool, int, float, np.bool_, np.integer, np.floating)
"""Scalars an object array may hold and a file stores as numbers (Python's and numpy's)."""
_NAME = re.compile(r"^[a-zA-Z][a-zA-Z0-9_]*_$")
_DIM = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)([+-]\d+)?$")


@dataclass(frozen=True)
class Fitted:
    """Declaration of one fitted attribute.

    Parameters
    ----------
    kind : {"array", "array_list", "scalar", "labels", "json", "posterior"}
        ``array``: a numpy array; ``array_list``: a list of numpy arrays; ``scalar``: a
        number or string; ``labels``: the two class labels (``classes_``); ``json``: a
        dict, list or scalar of plain data (diagnostics); ``posterior``: an
        ``xarray.DataTree`` with a ``posterior`` group (checked by
        :meth:`BayesianCalibrator._check_posterior <bayescal.base.BayesianCalibrator._check_posterior>`).
    dtype : str
        Allowed numpy kinds: any of ``"f"`` (float), ``"i"`` (integer), ``"b"`` (bool),
        ``"U"`` (string).
    shape : tuple
        Integers or dimension names (see the module docstring); ``ndim = len(shape)``.
    low, high : float, optional
        Bounds on every (non-NaN) value, inclusive unless ``open``.
    open : bool
        The bounds themselves are refused (a class prior lies strictly between 0 and 1).
    finite : bool
        Refuse infinite values (NaN is refused unless ``allow_nan``).
    allow_nan : bool
        Accept NaN (an attribute documented as "NaN when undefined").
    order : {None, "increasing", "nondecreasing"}
        Along the last axis.
    sums_to_one : bool
        Values sum to 1 (within 1e-6) along the last axis.
    choices : tuple, optional
        Allowed values of a string scalar or of every element.
    dim : str, optional
        For an integer ``scalar``: the value must equal the size of this dimension.
    length : str, optional
        For ``array_list``: the dimension name of the list's length.
    max_size : int or callable, optional
        The most elements the attribute (each array of a list) may declare; a callable
        receives the calibrator's parameters. Defaults to :data:`MAX_ELEMENTS`.
    optional : bool
        The attribute may be absent (set only in some configurations).
    """

    kind: str
    dtype: str = "f"
    shape: tuple = ()
    low: float | None = None
    high: float | None = None
    open: bool = False
    finite: bool = True
    allow_nan: bool = False
    order: str | None = None
    sums_to_one: bool = False
    choices: tuple | None = None
    dim: str | None = None
    length: str | None = None
    max_size: int | Callable[[Mapping[str, Any]], int] | None = None
    optional: bool = False

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise ValueError(f"Fitted(kind={self.kind!r}) must be one of {_KINDS}.")

    def size_bound(self, params: Mapping[str, Any]) -> int:
        """The most elements this attribute may declare, given the calibrator's parameters."""
        bound = self.max_size(params) if callable(self.max_size) else self.max_size
        try:
            bound = int(bound) if bound is not None else MAX_ELEMENTS
        except (TypeError, ValueError):  # a parameter of the wrong type: the parameter checks report it
            bound = MAX_ELEMENTS
        return min(max(bound, 0), MAX_ELEMENTS)


def array(dtype: str = "f", shape: tuple = ("n",), **kw: Any) -> Fitted:
    """A numpy array attribute."""
    return Fitted("array", dtype=dtype, shape=tuple(shape), **kw)


def array_list(dtype: str = "f", shape: tuple = ("n",), **kw: Any) -> Fitted:
    """A list of numpy arrays; dimension names are bound per element."""
    return Fitted("array_list", dtype=dtype, shape=tuple(shape), **kw)


def scalar(dtype: str = "f", **kw: Any) -> Fitted:
    """A number (``dtype`` "f", "i" or "b") or a string (``"U"``)."""
    return Fitted("scalar", dtype=dtype, shape=(), **kw)


def labels() -> Fitted:
    """The two class labels, ``classes_``: two distinct values, numbers, booleans or strings."""
    return Fitted("labels", dtype="fiubUO", shape=(2,))


def mapping(**kw: Any) -> Fitted:
    """Plain JSON data (e.g. diagnostics; numbers may be NaN or infinite, as a Pareto k of a
    failed tail fit is): only its types and its depth are checked."""
    return Fitted("json", **kw)


def posterior(**kw: Any) -> Fitted:
    """The posterior of a Bayesian calibrator, an ``xarray.DataTree``."""
    return Fitted("posterior", **kw)


def int_param(name: str) -> Callable[[Mapping[str, Any]], int]:
    """A size bound equal to the integer parameter ``name`` (the default bound when it is not an integer)."""

    def bound(params: Mapping[str, Any]) -> int:
        value = params.get(name)
        if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
            return int(value)
        return MAX_ELEMENTS

    bound.__name__ = f"int_param({name!r})"
    return bound


def fitted_schema(cls: type) -> dict[str, Fitted]:
    """The declared fitted attributes of ``cls``, merged over its base classes (subclass wins)."""
    merged: dict[str, Fitted] = {}
    for klass in reversed(cls.__mro__):
        own = vars(klass).get("_fitted_schema")
        if own:
            merged.update(own)
    for name in merged:
        if not _NAME.match(name) or hasattr(cls, name):
            raise ValueError(
                f"{cls.__name__} declares a fitted attribute {name!r}: fitted attribute names are "
                "letters, digits and underscores, start with a letter, end in '_', and do not shadow a method or class attribute."
            )
    return merged


class DimBinder:
    """Binds dimension names to sizes and reports the first disagreement."""

    def __init__(self, what: str):
        self.what = what
        self.sizes: dict[str, int] = {}

    def bind(self, spec: Any, size: int, where: str, scope: str = "") -> None:
        if isinstance(spec, (int, np.integer)):
            if size != int(spec):
                raise ValueError(f"{self.what}: {where} has size {size} where {int(spec)} is required.")
            return
        m = _DIM.match(str(spec))
        if m is None:  # pragma: no cover - a declaration error
            raise ValueError(f"bad dimension spec {spec!r}")
        name, offset = m.group(1) + scope, int(m.group(2) or 0)
        base = size - offset
        if base < 0:
            raise ValueError(f"{self.what}: {where} has size {size}, too small for {spec!r}.")
        known = self.sizes.setdefault(name, base)
        if known != base:
            raise ValueError(
                f"{self.what}: {where} has size {size}, inconsistent with the other attributes "
                f"({spec!r} = {known + offset})."
            )

    def bind_shape(self, field: Fitted, shape: tuple, where: str, scope: str = "") -> None:
        if len(shape) != len(field.shape):
            raise ValueError(f"{self.what}: {where} has {len(shape)} dimensions where {len(field.shape)} are required.")
        for spec, size in zip(field.shape, shape):
            self.bind(spec, int(size), where, scope)


def _kind_ok(arr: np.ndarray, dtype: str) -> bool:
    kind = "i" if arr.dtype.kind == "u" else arr.dtype.kind
    return kind in dtype


def _check_array_values(arr: np.ndarray, field: Fitted, where: str) -> None:
    if not _kind_ok(arr, field.dtype):
        raise ValueError(f"{where} has dtype {arr.dtype} where one of kinds {field.dtype!r} is required.")
    if arr.dtype.kind == "f":
        nan = np.isnan(arr)
        if nan.any() and not field.allow_nan:
            raise ValueError(f"{where} holds NaN.")
        if field.finite and np.isinf(arr).any():
            raise ValueError(f"{where} holds an infinite value.")
        vals = arr[~nan]
    else:
        vals = arr
    if vals.dtype.kind in "fiu" and vals.size:
        bound = "(exclusive) " if field.open else ""
        if field.low is not None and (vals.min() <= field.low if field.open else vals.min() < field.low):
            raise ValueError(f"{where} holds {vals.min().item()!r}, below its {bound}lower bound {field.low}.")
        if field.high is not None and (vals.max() >= field.high if field.open else vals.max() > field.high):
            raise ValueError(f"{where} holds {vals.max().item()!r}, above its {bound}upper bound {field.high}.")
    if field.choices is not None and arr.size and not np.isin(arr, np.array(field.choices)).all():
        raise ValueError(f"{where} holds values outside {list(field.choices)}.")
    if field.order and arr.ndim and arr.shape[-1] > 1:
        step = np.diff(arr.astype(np.float64), axis=-1)
        bad = (step <= 0) if field.order == "increasing" else (step < 0)
        if bad.any():
            raise ValueError(f"{where} is not {field.order} (knots or edges out of order).")
    if field.sums_to_one and arr.size:
        total = arr.astype(np.float64).sum(axis=-1)
        if not np.allclose(total, 1.0, rtol=0, atol=1e-6):
            raise ValueError(f"{where} does not sum to 1 (sums to {float(np.ravel(total)[0])!r}).")


def _json_numbers_ok(value: Any, where: str, depth: int = 0) -> None:
    if depth > 20:
        raise ValueError(f"{where} is nested too deeply.")
    if isinstance(value, dict):
        for k, v in value.items():
            _json_numbers_ok(v, f"{where}[{k!r}]", depth + 1)
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _json_numbers_ok(v, f"{where}[{i}]", depth + 1)
    elif not (value is None or isinstance(value, (bool, int, float, str))):
        raise ValueError(f"{where} holds a {type(value).__name__}, not plain data.")


def check_value(name: str, value: Any, field: Fitted, dims: DimBinder) -> None:
    """Check one fitted value against its declaration; ``ValueError`` names the attribute."""
    where = f"fitted attribute {name}"
    if field.kind == "array":
        if not isinstance(value, np.ndarray):
            raise ValueError(f"{where} is a {type(value).__name__}, not an array.")
        dims.bind_shape(field, value.shape, where)
        _check_array_values(value, field, where)
    elif field.kind == "array_list":
        if not isinstance(value, list) or not all(isinstance(v, np.ndarray) for v in value):
            raise ValueError(f"{where} is not a list of arrays.")
        if field.length:
            dims.bind(field.length, len(value), f"{where} (its length)")
        for i, v in enumerate(value):
            dims.bind_shape(field, v.shape, f"{where}[{i}]", scope=f"#{i}")
            _check_array_values(v, field, f"{where}[{i}]")
    elif field.kind == "labels":
        arr = np.asarray(value)
        if not isinstance(value, np.ndarray) or arr.shape != (2,):
            raise ValueError(f"{where} must hold the two class labels (shape (2,)).")
        if arr.dtype.kind == "f" and not np.isfinite(arr).all():
            raise ValueError(f"{where} holds a label that is not finite.")
        if arr.dtype.kind == "O" and not all(isinstance(v, (*PLAIN_NUMBERS, str)) for v in arr.tolist()):
            raise ValueError(f"{where} holds labels that are not numbers or strings.")
        if arr[0] == arr[1]:
            raise ValueError(f"{where} holds the same label twice.")
    elif field.kind == "scalar":
        if isinstance(value, np.ndarray) and value.ndim == 0:
            value = value.item()
        if field.dtype == "U":
            if not isinstance(value, str):
                raise ValueError(f"{where} is a {type(value).__name__}, not a string.")
        elif isinstance(value, bool) and "b" not in field.dtype:
            raise ValueError(f"{where} is a bool where a number is required.")
        elif not isinstance(value, (int, float)) or (isinstance(value, float) and "f" not in field.dtype):
            raise ValueError(f"{where} is a {type(value).__name__} where a {field.dtype!r} number is required.")
        _check_array_values(np.asarray(value), field, where)
        if field.dim is not None:
            dims.bind(field.dim, int(value), where)
    elif field.kind == "json":
        _json_numbers_ok(value, where)
    elif field.kind == "posterior":
        import xarray as xr

        if not isinstance(value, xr.DataTree):
            raise ValueError(f"{where} is a {type(value).__name__}, not an xarray.DataTree.")


def check_state(est: Any, state: Mapping[str, Any], what: str) -> None:
    """Check every fitted attribute in ``state`` (name -> value) against ``type(est)``'s declaration.

    Refuses undeclared names and missing required ones, then checks each value; the class's
    ``_check_fitted`` cross-checks are left to the caller (they need the attributes set).
    """
    schema = fitted_schema(type(est))
    undeclared = sorted(set(state) - set(schema))
    if undeclared:
        raise ValueError(
            f"{what}: {type(est).__name__} has no declared fitted attribute "
            f"{', '.join(map(repr, undeclared))}; known: {sorted(schema)}. A calibrator class declares "
            "every fitted attribute it keeps in its _fitted_schema (see bayescal._schema)."
        )
    missing = sorted(n for n, f in schema.items() if not f.optional and n not in state)
    if missing:
        raise ValueError(f"{what}: the fitted attribute(s) {missing} of {type(est).__name__} are missing.")
    dims = DimBinder(what)
    params = est.get_params(deep=False)
    for name, value in state.items():
        field = schema[name]
        if field.kind in ("array", "array_list"):
            arrays = value if isinstance(value, list) else [value]
            for arr in arrays:
                if isinstance(arr, np.ndarray) and arr.size > field.size_bound(params):
                    raise ValueError(
                        f"{what}: fitted attribute {name} has {arr.size} elements, more than the "
                        f"{field.size_bound(params)} its parameters allow."
                    )
        try:
            check_value(name, value, field, dims)
        except ValueError as exc:
            raise ValueError(f"{what}: {exc}") from None
