"""Save and load fitted calibrators as netCDF (HDF5) files: no pickle, no code execution.

Format (``FORMAT_VERSION`` = 1): one ``xarray.DataTree`` written with h5netcdf.

* root attrs: ``bayescal_format``, ``bayescal_version``, ``calibrator`` (registry name),
  ``params`` (JSON of ``get_params()``), ``state`` (JSON: for every fitted attribute its kind
  and, for small values, the value itself), ``content_hash`` (SHA-256 of every other attribute
  of every node and variable, and of every variable's name, dimensions, dtype, shape and
  values);
* root data variables ``<attr>`` for each fitted ``numpy`` array (booleans stored as uint8);
  ``<attr>__<i>`` for each member of a list of arrays;
* child nodes named after fitted ``xarray`` attributes (``idata_`` of Bayesian calibrators
  keeps its groups: ``idata_/posterior``, ...).

Only the fitted attributes a calibrator class declares in ``_fitted_schema``
(:mod:`bayescal._schema`) are saved and loaded. After loading,
``Calibrator._restore()`` rebuilds anything derived.

What loading checks, in this order, before it builds anything:

1. the HDF5 structure, from metadata only: no soft or external links, no external storage,
   no virtual datasets, only numeric and string datasets, no variable larger than its
   declared bound (:data:`bayescal._schema.MAX_ELEMENTS`, or one derived from the
   calibrator's parameters) and at most :data:`bayescal._schema.MAX_TOTAL_BYTES` in all, so
   a small file declaring a huge variable allocates nothing;
2. the ``calibrator`` attribute names a registered calibrator (a string); the ``state``
   lists only that class's declared fitted attributes, with the kinds, dtypes and shapes
   it declares (shapes read from the metadata, before any data);
3. the content hash;
4. the parameters, rebuilt through the class's own checks (``_check_params``, the checks
   ``fit`` runs); every fitted value against its declaration (finite, in range, knots and
   edges ordered, probabilities in [0, 1], scales > 0, weights summing to 1), the class's
   cross-checks (``_check_fitted``) and, for a Bayesian calibrator, its posterior
   (``_check_posterior``); finally the calibrated probabilities at probe scores must be
   finite and in [0, 1].

Any failure is a ``ValueError`` that names the file and the problem.

What the content hash protects against, and what it does not: it detects accidental
damage (a truncated copy, flipped bits, an attribute edited by hand). It is an unkeyed
SHA-256 stored in the file itself, so anyone who edits a file can recompute it: it is not a
signature and does not prove who wrote the file. Against a deliberately forged file the
protection is the checks above: loading never runs code from the file, never reads other
files, never allocates more than the bounds, and never builds a calibrator whose values are
out of range; but a forged file with plausible values gives a plausible but wrong
calibrator. Load models only from sources you trust, or keep a hash of the file elsewhere
(e.g. ``sha256sum``) and compare it before loading.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import xarray as xr

from bayescal._version import __version__

if TYPE_CHECKING:
    from bayescal.base import Calibrator

__all__ = ["FORMAT_VERSION", "atomic_write", "load", "save"]

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
    if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":  # numbers (e.g. Cs): loads as a list
        return value.tolist()
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
    raise ValueError(
        f"{what} holds a {type(value).__name__}, which bayescal files cannot store: "
        "use numbers, strings, lists, tuples or dicts."
    )


def _parameter_for_file(name: str, value: Any, owner: str) -> Any:
    """A constructor parameter as JSON data (:func:`_jsonable`); a refusal names the parameter."""
    if isinstance(value, (np.random.Generator, np.random.RandomState)):
        raise ValueError(
            f"{owner}'s parameter {name}= holds a {type(value).__name__}, which bayescal files cannot store: "
            f"fit with an integer seed ({name}=0) or None to save the calibrator."
        )
    return _jsonable(value, f"{owner}'s parameter {name}=")


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
    (``"object:str"``: they load as an object array again, as scikit-learn keeps text labels
    read from pandas); object arrays of numbers (e.g. labels read as Python ints, or numpy's) as their
    numeric array (``"object:<dtype>"``, booleans ``"object:bool"`` as uint8), so that they load as
    the same numbers (Python's), not as text. Refused, as the loader could not give them back:
    object arrays mixing number types, other objects, bytes, dates and text holding NUL.
    """
    dtype = arr.dtype
    if dtype.kind == "b":
        return arr.astype(np.uint8), "bool"
    if dtype.kind == "O":
        values = arr.ravel().tolist()
        if all(isinstance(v, str) for v in values):
            _check_no_nul(values, what)
            return arr.astype(str), "object:str"
        from bayescal._schema import PLAIN_NUMBERS

        if all(isinstance(v, PLAIN_NUMBERS) for v in values):
            kinds = sorted({type(v.item() if isinstance(v, np.generic) else v).__name__ for v in values})
            if len(kinds) > 1:  # one numeric array would turn them all into one type
                raise ValueError(
                    f"{what} mixes {' and '.join(kinds)} values, which bayescal files cannot store exactly: "
                    "give the labels one type (e.g. y.astype(int) or y.astype(str)) and fit again."
                )
            numeric = np.array(values).reshape(arr.shape)  # numpy scalars load as Python numbers
            if numeric.dtype.kind == "b":  # stored as bytes, as a boolean array is
                return numeric.astype(np.uint8), "object:bool"
            return numeric, f"object:{numeric.dtype.str}"
        kinds = sorted({type(v).__name__ for v in values})
        raise ValueError(
            f"{what} is an object array of {kinds}, which bayescal files cannot store exactly: use numbers or strings."
        )
    if dtype.kind == "U":
        _check_no_nul(arr.ravel().tolist(), what)
    elif dtype.kind not in "iuf":  # bytes, dates, time spans, ...: the loader reads none of them
        raise ValueError(
            f"{what} has dtype {dtype} ({dtype.kind!r}), which bayescal files cannot store: give the labels "
            "as numbers, booleans or text (e.g. y.astype(str)) and fit again."
        )
    return arr, dtype.str


def _check_no_nul(values: list, what: str) -> None:
    """Refuse text holding a NUL character, which netCDF strings cannot hold."""
    if any("\x00" in v for v in values):
        raise ValueError(
            f"{what} holds text with a NUL character ('\\x00'), which bayescal files cannot store: "
            "remove it from the labels and fit again."
        )


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
    return json.dumps({str(k): _plain(v) for k, v in attrs.items() if k != "content_hash"}, sort_keys=True, default=str)


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
            h.update(
                f"{node.path}/{name}:{var.dims}:{_attrs_text(var.attrs)}:{values.dtype.kind}:{values.shape}".encode()
            )
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
            state[name] = {
                "kind": "dataarray" if isinstance(value, xr.DataArray) else "dataset",
                "name": getattr(value, "name", None) or "values",
            }
        else:
            state[name] = {"kind": "json", "value": _jsonable(value, f"Fitted attribute {name}")}
    tree = xr.DataTree(xr.Dataset(arrays))
    for name, child in children.items():
        tree[name] = child.copy()
    return tree, state


def _as_path(path: Any, name: str) -> Path:
    if not isinstance(path, (str, os.PathLike)) or (isinstance(path, str) and not path):
        raise ValueError(f"{name}={path!r} is not a file name: pass a str or pathlib.Path such as 'model.nc'.")
    return Path(path).expanduser()  # '~/model.nc' is in the home folder, not in a folder named '~'


def _umask() -> int:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except OSError:
        pass
    return 0o022


def atomic_write(
    path: str | Path, write: Callable[[Path], None], *, overwrite: bool = False, flag: str = "overwrite=True"
) -> Path:
    """Write a file whole or not at all: ``write(tmp)`` fills a temporary file in the same
    folder, which is then renamed onto ``path``.

    An interrupted or failed write leaves ``path`` as it was (absent, or the earlier file)
    and no temporary file behind. Without ``overwrite`` an existing ``path`` is refused
    (``FileExistsError`` naming ``flag``), and the final step is a hard link that fails if
    the file appeared meanwhile, so a concurrent writer is never clobbered either. The new
    file gets the permissions of the file it replaces, or the umask's default for a new one.

    Parameters
    ----------
    path : str or path-like
        The file to write; its folder must exist.
    write : callable
        ``write(tmp)`` writes the whole content to the :class:`~pathlib.Path` ``tmp`` (an
        empty file in the folder of ``path``); an exception it raises propagates, and
        ``path`` is left as it was.
    overwrite : bool, default False
        Replace an existing ``path``; otherwise an existing file raises ``FileExistsError``.
    flag : str, default "overwrite=True"
        How the caller spells the override in its own API (e.g. ``"--force"`` for the command
        line), named in the ``FileExistsError`` message.

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    ValueError
        ``path`` is a folder, or its folder does not exist.
    FileExistsError
        ``path`` exists (or appeared during the write) and ``overwrite`` is False.
    """
    path = _as_path(path, "path")
    from bayescal._validation import check_bool

    check_bool(overwrite, "overwrite")  # "no" would be true, and replace the file
    if path.is_dir():
        raise ValueError(f"Cannot write {str(path)!r}: it is a folder; pass a file name such as 'model.nc'.")
    if not path.parent.is_dir():
        raise ValueError(f"Cannot write {str(path)!r}: the folder {str(path.parent)!r} does not exist.")
    if path.exists() and not overwrite:
        raise FileExistsError(f"{str(path)!r} already exists: pass {flag} to replace it, or choose another name.")
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial", dir=path.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        write(tmp)
        mode = path.stat().st_mode & 0o777 if path.exists() else 0o666 & ~_umask()
        os.chmod(tmp, mode)
        if overwrite:
            os.replace(tmp, path)
        else:
            try:
                os.link(tmp, path)
            except FileExistsError:
                raise FileExistsError(
                    f"{str(path)!r} already exists: pass {flag} to replace it, or choose another name."
                ) from None
            except OSError:  # a file system without hard links
                if path.exists():
                    raise FileExistsError(f"{str(path)!r} already exists: pass {flag} to replace it.") from None
                os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def _check_fitted_state(est: Any, what: str) -> None:
    """Every fitted attribute declared and valid, cross-checks and posterior included."""
    from bayescal._schema import check_state

    check_state(est, _fitted_attrs(est), what)
    try:
        est._check_fitted()
        if isinstance(getattr(est, "idata_", None), xr.DataTree):
            est._check_posterior(est.idata_)
    except ValueError as exc:
        raise ValueError(f"{what}: {exc}") from None


def save(est: Calibrator, path: str | Path, *, overwrite: bool = False) -> None:
    """Write a fitted calibrator to ``path`` (netCDF via h5netcdf).

    Parameters
    ----------
    est : Calibrator
        A fitted, registered calibrator.
    path : str or Path
        The file to write; its folder must exist.
    overwrite : bool, default False
        Replace an existing file. Without it an existing ``path`` raises ``FileExistsError``.

    Notes
    -----
    The fitted state is checked against the class's declaration first (what could not be
    loaded back is not written). The file is written under a temporary name in the same
    folder and renamed onto ``path``, so an interrupted save never leaves a truncated file
    in place of an earlier good one or of no file.
    """

    from bayescal._registry import registry_name
    from bayescal.base import Calibrator

    if not isinstance(est, Calibrator):
        hint = (
            "save each fitted calibrator (est.calibrated_classifiers_[i].calibrator), or the whole "
            "classifier with pickle or joblib.dump"
            if type(est).__name__ == "CalibratedClassifier"
            else "pass a fitted calibrator (bayescal.calibrators() lists them)"
        )
        raise ValueError(f"bayescal.save writes calibrators, and {type(est).__name__} is not one: {hint}.")
    est._check_fitted_params()
    est._check_params_of_fit()  # a parameter changed since the fit: the file would not match it
    name = registry_name(est)
    _check_fitted_state(est, f"Cannot save this {type(est).__name__}")
    params = json.dumps(
        {k: _parameter_for_file(k, v, type(est).__name__) for k, v in est.get_params(deep=False).items()},
        sort_keys=True,
    )
    tree, state = _tree(est)
    state_json = json.dumps(state, sort_keys=True)
    tree.attrs.update(
        {
            "bayescal_format": FORMAT_VERSION,
            "bayescal_version": __version__,
            "calibrator": name,
            "params": params,
            "state": state_json,
        }
    )
    tree.attrs["content_hash"] = _hash(tree)
    atomic_write(path, lambda tmp: tree.to_netcdf(tmp, engine=_ENGINE), overwrite=overwrite)


# ---- loading --------------------------------------------------------------------------------
#: attributes that make xarray transform the stored values as it decodes them
_DECODING_ATTRS = {
    "scale_factor",
    "add_offset",
    "units",
    "calendar",
    "_Unsigned",
    "missing_value",
    "dtype",
    "compress",
    "valid_min",
    "valid_max",
    "valid_range",
}
_MAX_ATTR_BYTES = 16 * 2**20


def _scan(path: Path, where: str) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    """Every dataset's shape and dtype from the HDF5 metadata, refusing links, external or
    virtual storage, non-numeric data, decoding attributes and declared sizes beyond the
    bounds. No dataset is read."""
    import h5py

    from bayescal._schema import MAX_ELEMENTS, MAX_TOTAL_BYTES

    found: dict[str, tuple[tuple[int, ...], np.dtype]] = {}
    total = 0
    seen: set = set()

    def check_attrs(obj, at: str) -> None:
        for key in obj.attrs:
            if key in _DECODING_ATTRS:
                raise ValueError(
                    f"{where}: {at} has the attribute {key!r}, which bayescal files never use "
                    "(it would change the values as they are read)."
                )
            size = obj.attrs.get_id(key).get_storage_size()
            if size > _MAX_ATTR_BYTES:
                raise ValueError(f"{where}: the attribute {key!r} of {at} declares {size} bytes.")

    def walk(group, prefix: str) -> None:
        nonlocal total
        check_attrs(group, prefix or "/")
        for key in group:
            at = f"{prefix}/{key}"
            link = group.get(key, getlink=True)
            if not isinstance(link, h5py.HardLink):
                raise ValueError(f"{where}: {at} is a {type(link).__name__}; bayescal files hold no links.")
            obj = group[key]
            address = obj.id.__hash__()
            if address in seen:
                raise ValueError(f"{where}: {at} is linked twice.")
            seen.add(address)
            if isinstance(obj, h5py.Group):
                walk(obj, at)
                continue
            if not isinstance(obj, h5py.Dataset):  # pragma: no cover - committed datatypes
                raise ValueError(f"{where}: {at} is not a group or a dataset.")
            if obj.is_virtual:
                raise ValueError(f"{where}: {at} is a virtual dataset; bayescal files hold their data themselves.")
            if obj.external:
                raise ValueError(
                    f"{where}: {at} keeps its data in external files; bayescal files hold their data themselves."
                )
            dtype = obj.dtype
            if not (dtype.kind in "iufb" or h5py.check_string_dtype(dtype) is not None):
                raise ValueError(f"{where}: {at} has dtype {dtype}, not numbers or strings.")
            shape = tuple(int(n) for n in (obj.shape or ()))
            size = int(np.prod(shape, dtype=np.float64))
            if size > MAX_ELEMENTS:
                raise ValueError(
                    f"{where}: {at} declares {size} elements, more than a bayescal file holds "
                    f"({MAX_ELEMENTS}); it was not read."
                )
            is_phony_dim = obj.attrs.get("CLASS") == b"DIMENSION_SCALE" and obj.id.get_storage_size() == 0
            if not is_phony_dim:
                total += size * max(dtype.itemsize, 8)
            if total > MAX_TOTAL_BYTES:
                raise ValueError(f"{where} declares more than {MAX_TOTAL_BYTES} bytes of data; it was not read.")
            check_attrs(obj, at)
            found[at] = (shape, dtype)

    try:
        with h5py.File(path, "r") as f:
            walk(f, "")
    except ValueError:
        raise
    except Exception as exc:  # noqa: BLE001 - whatever HDF5 fails on, the file is unreadable
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ValueError(f"{where} could not be read as a bayescal file (truncated or not netCDF): {first}") from None
    return found


def _root_attrs(path: Path, where: str) -> dict[str, Any]:
    import h5py

    try:
        with h5py.File(path, "r") as f:
            raw = {k: f.attrs[k] for k in f.attrs}
    except Exception as exc:  # noqa: BLE001
        raise ValueError(f"{where}: its attributes could not be read ({type(exc).__name__}).") from None
    # netCDF stores numbers as one-element arrays; anything longer stays a list (and is refused where a
    # scalar is needed)
    return {k: _plain(v.reshape(())[()] if isinstance(v, np.ndarray) and v.size == 1 else v) for k, v in raw.items()}


def _tag_kind(tag: Any, where: str) -> str:
    """The numpy kind an array with dtype tag ``tag`` is restored to ("O" for object labels)."""
    if tag == "bool":
        return "b"
    if tag == "str":
        return "U"
    if isinstance(tag, str) and tag.startswith("object:"):
        inner = tag.removeprefix("object:")
        if inner != "str" and _tag_kind(inner, where) not in "iufb":
            raise ValueError(f"{where}: dtype tag {tag!r} is not one bayescal writes.")
        return "O"
    try:
        kind = np.dtype(tag).kind
    except (TypeError, ValueError):
        raise ValueError(f"{where}: dtype tag {tag!r} is not one bayescal writes.") from None
    if kind not in "iufbU":
        raise ValueError(f"{where}: dtype tag {tag!r} is not one bayescal writes.")
    return kind


_STATE_KINDS = {
    "array": ("array", "labels", "scalar"),
    "array_list": ("array_list",),
    "json": ("scalar", "json"),
    "datatree": ("posterior",),
}


def _check_layout(cls: type, params: dict, state: Any, found: dict, where: str) -> None:
    """The file's state against ``cls``'s declaration, from metadata only (no data read)."""
    import h5py

    from bayescal._schema import DimBinder, fitted_schema

    schema = fitted_schema(cls)
    if not isinstance(state, dict) or not all(isinstance(v, dict) for v in state.values()):
        raise ValueError(f"{where}: its 'state' attribute is not a table of fitted attributes; the file is damaged.")
    undeclared = sorted(set(state) - set(schema))
    if undeclared:
        raise ValueError(
            f"{where} holds fitted attribute(s) {undeclared} that a {cls.__name__} does not have "
            f"(known: {sorted(schema)}); the file is damaged or forged."
        )
    missing = sorted(n for n, f in schema.items() if not f.optional and n not in state)
    if missing:
        raise ValueError(f"{where} lacks the fitted attribute(s) {missing} of a {cls.__name__}; the file is damaged.")
    dims = DimBinder(where)
    used: set[str] = set()
    for name, info in state.items():
        field = schema[name]
        kind = info.get("kind")
        if field.kind not in _STATE_KINDS.get(kind, ()):
            raise ValueError(
                f"{where}: fitted attribute {name} is stored as {kind!r}, but a {cls.__name__} keeps "
                f"it as {field.kind!r}; the file is damaged."
            )
        if kind == "array":
            entries = [(f"/{name}", info.get("dtype"), "")]
        elif kind == "array_list":
            tags = info.get("dtypes")
            if not isinstance(tags, list):
                raise ValueError(f"{where}: fitted attribute {name} has no dtype list; the file is damaged.")
            if field.length is not None:
                dims.bind(field.length, len(tags), f"fitted attribute {name} (its length)")
            entries = [(f"/{name}__{i}", tag, f"#{i}") for i, tag in enumerate(tags)]
        elif kind == "datatree":  # its content is checked by the class's _check_posterior
            used.update(k for k in found if k.startswith(f"/{name}/"))
            continue
        else:
            continue
        bound = field.size_bound(params)
        for key, tag, scope in entries:
            if key not in found:
                raise ValueError(
                    f"{where} lacks the variable {key.lstrip('/')!r} of fitted attribute {name}; the file is damaged."
                )
            if not isinstance(tag, str):
                raise ValueError(f"{where}: fitted attribute {name} has no dtype tag; the file is damaged.")
            shape, dtype = found[key]
            used.add(key)
            used.update(f"{key}__d{j}" for j in range(len(shape)))
            restored = _tag_kind(tag, f"{where}: fitted attribute {name}")
            stored = "U" if h5py.check_string_dtype(dtype) is not None else dtype.kind
            if tag in ("bool", "object:bool"):  # booleans are stored as bytes
                want = np.dtype(np.uint8)
            elif tag in ("str", "object:str") or restored == "U":
                want = None
            else:
                want = np.dtype(tag.removeprefix("object:"))
            if (want is None) != (stored == "U") or (
                want is not None and dtype.newbyteorder("=") != want.newbyteorder("=")
            ):
                raise ValueError(
                    f"{where}: fitted attribute {name} is stored as {dtype} but tagged {tag!r}; the file is damaged."
                )
            if restored != "O" and restored not in field.dtype.replace("i", "iu") and field.kind != "labels":
                raise ValueError(
                    f"{where}: fitted attribute {name} has dtype {tag!r} where a {cls.__name__} keeps "
                    f"kinds {field.dtype!r}."
                )
            if int(np.prod(shape, dtype=np.float64)) > bound:
                raise ValueError(
                    f"{where}: fitted attribute {name} declares {int(np.prod(shape))} elements, more "
                    f"than the {bound} its parameters allow; it was not read."
                )
            dims.bind_shape(field, shape, f"fitted attribute {name}", scope)
    extra = sorted(k.lstrip("/") for k in found if k not in used)
    if extra:
        raise ValueError(
            f"{where} holds variable(s) {extra[:5]} that belong to no fitted attribute; the file is damaged or forged."
        )


def _probe_scores(est: Any) -> np.ndarray:
    lo, hi = (float(v) for v in est.score_range_)
    if est.score_kind == "probability":
        return np.unique(np.r_[np.linspace(0.0, 1.0, 65), lo, hi, 1e-12, 1 - 1e-12])
    span = max(hi - lo, 1.0)
    return np.unique(np.r_[np.linspace(lo, hi, 65), lo - span, hi + span, -1e6, 1e6])


def load(path: str | Path, *, expected: type[Calibrator] | None = None) -> Calibrator:
    """Read a calibrator written by :func:`save`, validating the file before building anything.

    See the module docstring for the checks, in order, and for what the content hash does
    and does not protect against.

    Parameters
    ----------
    path : str or Path
        A file written by :func:`save`.
    expected : type, optional
        The file must hold this class or a subclass.

    Returns
    -------
    Calibrator

    Raises
    ------
    ValueError
        When ``path`` is not a file, cannot be read as netCDF (e.g. truncated), is not a
        bayescal file, has a newer format version, holds links, external or virtual
        storage, or variables beyond the size bounds, names an unregistered calibrator or
        undeclared fitted attributes, fails its content hash (edited values or attributes),
        holds invalid parameters or values (NaN, out of range, unordered knots, weights
        not summing to 1), or does not hold ``expected``.
    """
    from bayescal._registry import get_calibrator_class
    from bayescal._schema import check_state
    from bayescal._validation import check_score_kind
    from bayescal.base import Calibrator
    from bayescal.data import to_working

    path = _as_path(path, "path")
    where = repr(str(path))
    if expected is not None and not (isinstance(expected, type) and issubclass(expected, Calibrator)):
        raise ValueError(
            f"expected={expected!r:.60} is not a calibrator class: pass one, e.g. "
            "expected=bayescal.PlattScaling, or None."
        )
    if path.is_dir():
        raise ValueError(f"{where} is a folder: pass the path of a file written by save().")
    if not path.is_file():
        raise ValueError(f"No file at {where}: pass the path of a file written by save().")
    found = _scan(path, where)
    attrs = _root_attrs(path, where)
    if "bayescal_format" not in attrs:
        raise ValueError(f"{where} is not a bayescal file (no 'bayescal_format' attribute).")
    raw = attrs["bayescal_format"]
    try:
        fmt = int(raw)
        whole = float(raw) == fmt and fmt >= 1  # 1.7, 0 and -3 were never format versions
    except (TypeError, ValueError, OverflowError):
        whole = False
    if not whole:
        raise ValueError(f"{where} has an unreadable format version {raw!r}: the file is damaged.") from None
    if fmt > FORMAT_VERSION:
        raise ValueError(
            f"{where} has format version {fmt}, newer than this bayescal ({__version__}) reads "
            f"(up to {FORMAT_VERSION}): upgrade bayescal."
        )
    for key in ("params", "state", "content_hash", "calibrator"):
        if key not in attrs:
            raise ValueError(f"{where} is missing the attribute {key!r}: the file is damaged.")
        if not isinstance(attrs[key], str):
            raise ValueError(
                f"{where}: the attribute {key!r} is a {type(attrs[key]).__name__}, not a string; the file is damaged."
            )
    try:
        cls = get_calibrator_class(attrs["calibrator"])
    except ValueError as exc:
        raise ValueError(f"{where} holds a calibrator this bayescal does not have. {exc}") from None
    if expected is not None and not issubclass(cls, expected):
        raise ValueError(f"{where} holds a {cls.__name__}, not a {expected.__name__}.")
    try:
        params, state = _from_json(attrs["params"]), _from_json(attrs["state"])
    except (json.JSONDecodeError, TypeError, ValueError) as exc:
        raise ValueError(f"{where}: its parameters or state are not valid JSON ({exc}); the file is damaged.") from None
    if not isinstance(params, dict) or not all(isinstance(k, str) for k in params):
        raise ValueError(f"{where}: its parameters are not a table of names; the file is damaged.")
    _check_layout(cls, params, state, found, where)

    try:
        with xr.open_datatree(path, engine=_ENGINE) as opened:
            tree = opened.load().copy()
    except Exception as exc:  # noqa: BLE001 - whatever the reader fails on, the file is unreadable
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ValueError(f"{where} could not be read as a bayescal file (truncated or not netCDF): {first}") from None
    if _hash(tree) != attrs["content_hash"]:
        raise ValueError(f"{where} failed its content check: the file was modified or damaged.")

    try:
        est = cls(**params)
    except TypeError as exc:
        raise ValueError(
            f"{where} holds a {cls.__name__} this bayescal ({__version__}) cannot rebuild "
            f"({type(exc).__name__}: {exc}); it was written by bayescal "
            f"{attrs.get('bayescal_version', '?')}."
        ) from None
    try:
        if "score_kind" in params:
            check_score_kind(est.score_kind)
        if hasattr(est, "_check_params"):
            est._check_params()
        values = _read_state(tree, state)
        check_state(est, values, where)
        for name, value in values.items():
            setattr(est, name, value)
        est._record_fitted_params()  # the file's parameters are those of its fit (save refuses others)
        est._check_fitted()
        if isinstance(getattr(est, "idata_", None), xr.DataTree):
            est._check_posterior(est.idata_)
        est._restore()
        if not est.feature_aware:
            p = est._calibrate(to_working(_probe_scores(est), est.score_kind))
            if not (np.isfinite(p).all() and (p >= -1e-9).all() and (p <= 1 + 1e-9).all()):
                raise ValueError("its calibration map is not a probability everywhere (NaN or outside [0, 1])")
    except ValueError as exc:
        msg = str(exc)
        raise ValueError(msg if msg.startswith(where) else f"{where} holds an invalid {cls.__name__}: {msg}") from None
    except Exception as exc:  # noqa: BLE001 - a state that passed the checks but still cannot be rebuilt
        raise ValueError(
            f"{where} holds a {cls.__name__} this bayescal ({__version__}) cannot rebuild "
            f"({type(exc).__name__}: {exc}); it was written by bayescal "
            f"{attrs.get('bayescal_version', '?')}."
        ) from None
    return est


def _restore_array(arr: np.ndarray, dt: str) -> np.ndarray:
    if dt == "bool":
        return arr.astype(bool)
    if dt == "str":  # object arrays of strings as bayescal 0.1.0 tagged them
        return arr.astype(str)
    if dt == "object:str":
        return np.array(arr.astype(str).tolist(), dtype=object).reshape(arr.shape)
    if dt.startswith("object:"):
        inner = dt.removeprefix("object:")
        return np.array(arr.astype(bool if inner == "bool" else np.dtype(inner)).tolist(), dtype=object).reshape(
            arr.shape
        )
    return arr.astype(np.dtype(dt))


def _read_state(tree: xr.DataTree, state: dict) -> dict[str, Any]:
    """Every fitted attribute recorded in ``state``, read from the file's tree (not yet checked)."""
    root = tree.to_dataset(inherit=False)
    values: dict[str, Any] = {}
    for attr, info in state.items():
        kind = info["kind"]
        if kind == "array":
            value = _restore_array(root[attr].values, info["dtype"])
        elif kind == "array_list":
            value = [_restore_array(root[f"{attr}__{i}"].values, dt) for i, dt in enumerate(info["dtypes"])]
        elif kind == "datatree":
            if attr not in tree.children:
                raise ValueError(f"the group {attr!r} of fitted attribute {attr} is missing")
            value = tree[attr].copy()
            value.orphan()
        elif kind == "json":
            value = info.get("value")
        else:  # pragma: no cover - refused by _check_layout
            raise ValueError(f"unknown kind {kind!r} of fitted attribute {attr!r}")
        values[attr] = value
    return values
