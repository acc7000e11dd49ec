"""Save and load fitted calibrators as netCDF (HDF5) files: no pickle, no code execution.

Format (``FORMAT_VERSION`` = 1): one ``xarray.DataTree`` written with h5netcdf.

* root attrs: ``bayescal_format``, ``bayescal_version``, ``calibrator`` (registry name),
  ``params`` (JSON of ``get_params()``), ``state`` (JSON: for every fitted attribute its kind
  and, for small values, the value itself), ``content_hash`` (SHA-256 of every other attribute
  of every node and variable, and of every variable's name, dimensions, dtype, shape and
  values; checked on load so a truncated or edited file is rejected);
* root data variables ``<attr>`` for each fitted ``numpy`` array (booleans stored as uint8);
  ``<attr>__<i>`` for each member of a list of arrays;
* child nodes named after fitted ``xarray`` attributes (``idata_`` of Bayesian calibrators
  keeps its groups: ``idata_/posterior``, ...).

A fitted attribute is any instance attribute whose name ends in ``_`` and does not start
with ``_``; calibrators keep their fitted state in arrays, scalars, strings, lists of those,
or xarray objects, so this one mechanism serves all of them. After loading,
``Calibrator._restore()`` rebuilds anything derived.

Loading never executes code: the file holds only numbers, strings and JSON text; the class
is looked up by name in the registry and built from its JSON parameters. Any damage
(truncation, edited bytes or attributes, a missing or unknown entry, a newer format) is
reported as a ``ValueError`` that names the file.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from bayescal._version import __version__

__all__ = ["FORMAT_VERSION", "load", "save"]

FORMAT_VERSION = 1
_ENGINE = "h5netcdf"


def _fitted_attrs(est: Any) -> dict[str, Any]:
    return {k: v for k, v in vars(est).items() if k.endswith("_") and not k.startswith("_")}


def _jsonable(value: Any, what: str) -> Any:
    """``value`` as JSON data that :func:`_from_json` turns back into an equal value.

    Dicts whose keys are not all strings become ``{"__items__": [[key, value], ...]}`` and
    tuples ``{"__tuple__": [...]}``, so that e.g. per-class priors ``{0: ..., 1: ...}`` load
    with integer keys, not as ``{"0": ..., "1": ...}``.
    """
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, tuple):
        return {"__tuple__": [_jsonable(v, what) for v in value]}
    if isinstance(value, list):
        return [_jsonable(v, what) for v in value]
    if isinstance(value, dict):
        if all(isinstance(k, str) for k in value):
            return {k: _jsonable(v, what) for k, v in value.items()}
        return {"__items__": [[_jsonable(k, what), _jsonable(v, what)] for k, v in value.items()]}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise ValueError(f"{what} holds a {type(value).__name__}, which bayescal files cannot store: "
                     "use numbers, strings, lists, tuples or dicts.")


def _decode(obj: dict) -> Any:
    if set(obj) == {"__tuple__"}:
        return tuple(obj["__tuple__"])
    if set(obj) == {"__items__"}:
        return dict(obj["__items__"])
    return obj


def _from_json(text: str) -> Any:
    """Parse JSON written by :func:`save` (plain data only: no code runs)."""
    return json.loads(text, object_hook=_decode)


def _array_for_file(arr: np.ndarray, what: str) -> tuple[np.ndarray, str]:
    """The array as stored, and the dtype tag that restores it exactly.

    Booleans are stored as uint8 (tag ``"bool"``); object arrays of strings as strings
    (``"str"``); object arrays of numbers (e.g. labels read as Python ints) as their numeric
    array (``"object:<dtype>"``), so that they load as the same Python numbers, not as text.
    """
    dtype = arr.dtype
    if dtype.kind == "b":
        return arr.astype(np.uint8), "bool"
    if dtype.kind == "O":
        values = arr.ravel().tolist()
        if all(isinstance(v, str) for v in values):
            return arr.astype(str), "str"
        if all(isinstance(v, (bool, int, float)) for v in values):
            numeric = np.array(values).reshape(arr.shape)
            return numeric, f"object:{numeric.dtype.str}"
        kinds = sorted({type(v).__name__ for v in values})
        raise ValueError(f"{what} is an object array of {kinds}, which bayescal files cannot store exactly: "
                         "use numbers or strings.")
    return arr, dtype.str


def _plain(value: Any) -> Any:
    """An attribute value as plain JSON types (files return numpy scalars and arrays)."""
    if isinstance(value, np.ndarray):
        return [_plain(v) for v in value.tolist()]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _attrs_text(attrs: dict) -> str:
    return json.dumps({str(k): _plain(v) for k, v in attrs.items() if k != "content_hash"}, sort_keys=True,
                      default=str)


def _hash(tree: xr.DataTree) -> str:
    """SHA-256 over every node's attributes (except ``content_hash``) and every variable's
    name, dimensions, attributes, dtype kind, shape and values (little-endian bytes)."""
    h = hashlib.sha256()
    for node in sorted(tree.subtree, key=lambda n: n.path):
        h.update(f"node {node.path} {_attrs_text(node.attrs)}".encode())
        ds = node.to_dataset(inherit=False)
        for name in sorted(ds.variables):
            var = ds.variables[name]
            values = np.asarray(var.values)
            h.update(f"{node.path}/{name}:{var.dims}:{_attrs_text(var.attrs)}:{values.dtype.kind}:{values.shape}".encode())
            if values.dtype.kind in "OUS":
                h.update("\x1f".join(map(str, values.ravel().tolist())).encode())
            else:
                h.update(np.ascontiguousarray(values.astype(values.dtype.newbyteorder("<"))).tobytes())
    return h.hexdigest()


def _tree(est: Any) -> tuple[xr.DataTree, dict[str, Any]]:
    arrays: dict[str, Any] = {}
    children: dict[str, xr.DataTree] = {}
    state: dict[str, Any] = {}
    for name, value in _fitted_attrs(est).items():
        if isinstance(value, np.ndarray):
            arr, dt = _array_for_file(value, f"Fitted attribute {name}")
            arrays[name] = (tuple(f"{name}__d{i}" for i in range(arr.ndim)), arr)
            state[name] = {"kind": "array", "dtype": dt}
        elif isinstance(value, list) and value and all(isinstance(v, np.ndarray) for v in value):
            dts = []
            for i, v in enumerate(value):
                arr, dt = _array_for_file(v, f"Fitted attribute {name}[{i}]")
                arrays[f"{name}__{i}"] = (tuple(f"{name}__{i}__d{j}" for j in range(arr.ndim)), arr)
                dts.append(dt)
            state[name] = {"kind": "array_list", "dtypes": dts}
        elif isinstance(value, xr.DataTree):
            children[name] = value
            state[name] = {"kind": "datatree"}
        elif isinstance(value, (xr.Dataset, xr.DataArray)):
            ds = value.to_dataset(name=value.name or "values") if isinstance(value, xr.DataArray) else value
            children[name] = xr.DataTree(ds)
            state[name] = {"kind": "dataarray" if isinstance(value, xr.DataArray) else "dataset",
                           "name": getattr(value, "name", None) or "values"}
        else:
            state[name] = {"kind": "json", "value": _jsonable(value, f"Fitted attribute {name}")}
    tree = xr.DataTree(xr.Dataset(arrays))
    for name, child in children.items():
        tree[name] = child.copy()
    return tree, state


def save(est: Any, path: str | Path) -> None:
    """Write a fitted calibrator to ``path`` (netCDF via h5netcdf).

    Parameters
    ----------
    est : Calibrator
        A fitted calibrator from the registry.
    path : str or path-like
        The file to write; its folder must exist.

    Notes
    -----
    The parameters and fitted state are stored in the file's attributes and arrays, with a
    format version and a content hash that :func:`load` checks. The file is written beside ``path`` under a temporary name and then renamed onto it, so
    an interrupted save never leaves a truncated file in place of an earlier good one.
    """
    from sklearn.utils.validation import check_is_fitted

    from bayescal._registry import registry_name

    check_is_fitted(est)
    params = json.dumps(_jsonable(est.get_params(deep=False), f"A parameter of {type(est).__name__}"), sort_keys=True)
    tree, state = _tree(est)
    state_json = json.dumps(state, sort_keys=True)
    tree.attrs.update({
        "bayescal_format": FORMAT_VERSION,
        "bayescal_version": __version__,
        "calibrator": registry_name(est),
        "params": params,
        "state": state_json,
    })
    tree.attrs["content_hash"] = _hash(tree)
    path = Path(path)
    if not path.parent.is_dir():
        raise ValueError(f"Cannot save to {str(path)!r}: the folder {str(path.parent)!r} does not exist.")
    if path.is_dir():
        raise ValueError(f"Cannot save to {str(path)!r}: it is a folder; pass a file name such as 'model.nc'.")
    partial = path.with_name(f".{path.name}.partial")
    try:
        tree.to_netcdf(partial, engine=_ENGINE)
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)


def _restore_array(arr: np.ndarray, dt: str) -> np.ndarray:
    if dt == "bool":
        return arr.astype(bool)
    if dt == "str":
        return arr.astype(str)
    if dt.startswith("object:"):
        return np.array(arr.astype(np.dtype(dt.removeprefix("object:"))).tolist(), dtype=object).reshape(arr.shape)
    return arr.astype(np.dtype(dt))


def load(path: str | Path, *, expected: type | None = None) -> Any:
    """Read a calibrator written by :func:`save`, checking its format version and content hash.

    Parameters
    ----------
    path : str or path-like
        A file written by :func:`save`.
    expected : type, optional
        The calibrator class (or a base class of it) the file must hold.

    Returns
    -------
    Calibrator
        The fitted calibrator, ready to predict.

    Raises
    ------
    ValueError
        When ``path`` is not a file, cannot be read as netCDF (e.g. truncated), is not a
        bayescal file, has a newer format version, fails its content hash (edited values or
        attributes), names an unknown calibrator, does not hold ``expected``, or holds
        entries this version cannot rebuild.
    """
    from bayescal._registry import get_calibrator_class

    path = Path(path)
    where = repr(str(path))
    if not path.is_file():
        raise ValueError(f"No file at {where}: pass the path of a file written by save().")
    try:
        with xr.open_datatree(path, engine=_ENGINE) as opened:
            tree = opened.load().copy()
    except Exception as exc:  # noqa: BLE001 - whatever the reader fails on, the file is unreadable
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ValueError(f"{where} could not be read as a bayescal file (truncated or not netCDF): {first}") from None
    attrs = tree.attrs
    if "bayescal_format" not in attrs:
        raise ValueError(f"{where} is not a bayescal file (no 'bayescal_format' attribute).")
    try:
        fmt = int(_plain(attrs["bayescal_format"]))
    except (TypeError, ValueError):
        raise ValueError(f"{where} has an unreadable format version {attrs['bayescal_format']!r}: the file is damaged.") from None
    if fmt > FORMAT_VERSION:
        raise ValueError(
            f"{where} has format version {fmt}, newer than this bayescal ({__version__}) reads "
            f"(up to {FORMAT_VERSION}): upgrade bayescal."
        )
    try:
        params_json, state_json, digest = attrs["params"], attrs["state"], attrs["content_hash"]
        name = attrs["calibrator"]
    except KeyError as exc:
        raise ValueError(f"{where} is missing the attribute {exc}: the file is damaged.") from None
    if _hash(tree) != digest:
        raise ValueError(f"{where} failed its content check: the file was modified or damaged.")
    cls = get_calibrator_class(name)
    if expected is not None and not issubclass(cls, expected):
        raise ValueError(f"{where} holds a {cls.__name__}, not a {expected.__name__}.")
    try:
        est = cls(**_from_json(params_json))
        _set_state(est, tree, _from_json(state_json))
        est._restore()
    except (TypeError, KeyError, AttributeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{where} holds a {cls.__name__} this bayescal ({__version__}) cannot rebuild "
                         f"({type(exc).__name__}: {exc}); it was written by bayescal "
                         f"{attrs.get('bayescal_version', '?')}.") from None
    return est


def _set_state(est: Any, tree: xr.DataTree, state: dict) -> None:
    """Set every fitted attribute recorded in ``state`` from the file's tree."""
    root = tree.to_dataset(inherit=False)
    for attr, info in state.items():
        kind = info["kind"]
        if kind == "array":
            value = _restore_array(root[attr].values, info["dtype"])
        elif kind == "array_list":
            value = [_restore_array(root[f"{attr}__{i}"].values, dt) for i, dt in enumerate(info["dtypes"])]
        elif kind == "datatree":
            value = tree[attr].copy()
            value.orphan()
        elif kind == "dataset":
            value = tree[attr].to_dataset(inherit=False)
        elif kind == "dataarray":
            value = tree[attr].to_dataset(inherit=False)[info["name"]]
        elif kind == "json":
            value = info["value"]
        else:
            raise KeyError(f"unknown kind {kind!r} of fitted attribute {attr!r}")
        setattr(est, attr, value)
