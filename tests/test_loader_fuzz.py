"""Fuzzing the loader with mutated reference files from ``models/``.

Every reference file is damaged in many ways: bytes flipped at seeded random offsets,
truncated at random lengths, and, with the content hash recomputed so that only the
loader's own checks stand in the way, variables given another shape or dtype, renamed,
filled with NaN, or declared huge. The contract for each mutation:

* loading raises ``ValueError`` (never another exception type, never a crash), or
* the mutation touched nothing the model is built from (a flipped byte in padding or in
  bookkeeping HDF5 ignores, or a posterior variable the map never reads, such as the DPM's
  concentration ``alpha``): the load succeeds and predicts exactly the stored ``p1``;
  a load that predicts anything else, let alone NaN, fails the test; every mutation of a
  variable outside the posterior must be refused;
* the Python memory allocated while loading stays under :data:`PEAK_BYTES` (tracemalloc,
  which numpy reports to), also for a small file declaring a 2**28-element variable.

The default run uses a few mutations per file; ``-m slow`` runs many more.
"""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import h5py
import numpy as np
import pytest
import xarray as xr
from _paths import MODELS

import bayescal
from bayescal import io

NAMES = bayescal.calibrators()
PEAK_BYTES = 100 * 2**20


def _expected(name: str) -> dict:
    return json.loads((MODELS / f"{name}.expected.json").read_text())


def _load_checked(path: Path, name: str, *, trace: bool = False) -> str:
    """Load ``path``; 'refused' on ValueError, 'same' when the model predicts exactly the
    reference. Anything else fails, as does (with ``trace``) a peak allocation beyond PEAK_BYTES."""
    if trace:
        tracemalloc.start()
    try:
        try:
            est = bayescal.load(path)
        except ValueError:
            outcome = "refused"
        else:
            exp = _expected(name)
            kw = {"X": np.array(exp["X"])} if exp.get("X") is not None else {}
            p1 = est.predict_proba(np.array(exp["scores"]), **kw)[:, 1]
            assert np.isfinite(p1).all(), f"{path.name}: a mutated {name} file loaded and predicts NaN"
            np.testing.assert_allclose(
                p1, exp["p1"], rtol=0, atol=1e-12, err_msg=f"a mutated {name} file loaded as a different model"
            )
            outcome = "same"
        peak = tracemalloc.get_traced_memory()[1] if trace else 0
    finally:
        if trace:
            tracemalloc.stop()
    assert peak < PEAK_BYTES, f"loading a mutated {name} file allocated {peak / 2**20:.0f} MiB"
    return outcome


# ---- byte-level damage ------------------------------------------------------------------------
def _flip_cases(n_per_file: int, seed: int) -> list[tuple[str, int, int]]:
    rng = np.random.default_rng(seed)
    cases = []
    for name in NAMES:
        size = (MODELS / f"{name}.nc").stat().st_size
        for offset in rng.integers(0, size, n_per_file):
            cases.append((name, int(offset), int(1 << rng.integers(0, 8))))
    return cases


def _run_flips(cases, tmp_path: Path, *, trace: bool) -> dict[str, int]:
    counts = {"refused": 0, "same": 0}
    for name, offset, bit in cases:
        raw = bytearray((MODELS / f"{name}.nc").read_bytes())
        raw[offset] ^= bit
        path = tmp_path / f"{name}-flip.nc"
        path.write_bytes(bytes(raw))
        counts[_load_checked(path, name, trace=trace)] += 1
    return counts


def _data_offsets(name: str) -> list[tuple[int, int]]:
    """(offset, size) of every dataset's stored bytes: a flip there changes the model's numbers."""
    spans = []
    with h5py.File(MODELS / f"{name}.nc", "r") as f:

        def visit(_, obj):
            if isinstance(obj, h5py.Dataset) and obj.id.get_offset() is not None and obj.id.get_storage_size() > 0:
                spans.append((obj.id.get_offset(), obj.id.get_storage_size()))

        f.visititems(visit)
    return spans


def test_bit_flips_anywhere_are_refused_or_change_nothing(tmp_path):
    """Two flips per file (memory traced under ``-m slow``, where there are 40 per file)."""
    counts = _run_flips(_flip_cases(2, seed=1), tmp_path, trace=False)
    assert counts["refused"] > 0


@pytest.mark.parametrize("name", NAMES)
def test_bit_flips_in_stored_values_are_always_refused(name, tmp_path):
    rng = np.random.default_rng(2)
    spans = _data_offsets(name)
    raw0 = (MODELS / f"{name}.nc").read_bytes()
    for k in range(2):
        offset, size = spans[int(rng.integers(len(spans)))]
        raw = bytearray(raw0)
        raw[offset + int(rng.integers(size))] ^= 1 << int(rng.integers(8))
        path = tmp_path / f"{name}-{k}.nc"
        path.write_bytes(bytes(raw))
        assert _load_checked(path, name) == "refused"


@pytest.mark.parametrize("name", NAMES)
def test_truncated_files_are_refused(name, tmp_path):
    raw = (MODELS / f"{name}.nc").read_bytes()
    rng = np.random.default_rng(3)
    for cut in [0, len(raw) // 2, len(raw) - 1, *rng.integers(1, len(raw), 1)]:
        path = tmp_path / f"{name}-cut.nc"
        path.write_bytes(raw[: int(cut)])
        assert _load_checked(path, name) == "refused", f"{name} cut at {cut} of {len(raw)} bytes"


# ---- structural damage with the hash recomputed ----------------------------------------------
def _tree(name: str) -> xr.DataTree:
    with xr.open_datatree(MODELS / f"{name}.nc", engine="h5netcdf") as opened:
        return opened.load().copy()


def _write(tree: xr.DataTree, path: Path) -> Path:
    tree.attrs["content_hash"] = io._hash(tree)
    tree.to_netcdf(path, engine="h5netcdf")
    return path


def _variables(tree: xr.DataTree) -> list[tuple[str, str]]:
    """(group path, variable name) of every data variable the model is built from."""
    out = [("/", v) for v in tree.to_dataset(inherit=False).data_vars]
    if "idata_" in tree.children:
        out += [("/idata_/posterior", v) for v in tree["idata_/posterior"].to_dataset(inherit=False).data_vars]
    return out


def _replace(tree: xr.DataTree, group: str, var: str, new) -> None:
    node = tree if group == "/" else tree[group]
    ds = node.to_dataset(inherit=False)
    if new is None:
        ds = ds.drop_vars(var)
    else:
        ds[var] = new
    node.dataset = ds


def _rename(tree: xr.DataTree, group: str, var: str) -> None:
    node = tree if group == "/" else tree[group]
    node.dataset = node.to_dataset(inherit=False).rename_vars({var: var + "x"})


def _mutations(tree: xr.DataTree, rng: np.random.Generator):
    """(label, function editing a tree in place) for every variable: NaN, shapes, dtype, renaming."""
    for group, var in _variables(tree):
        node = tree if group == "/" else tree[group]
        da = node.to_dataset(inherit=False)[var]
        values = da.values
        if values.dtype.kind == "f" and values.size:
            idx = int(rng.integers(values.size))

            def nan(t, group=group, var=var, da=da, idx=idx):
                v = da.values.copy()
                v.reshape(-1)[idx] = np.nan
                _replace(t, group, var, (da.dims, v))

            yield f"NaN in {group}{var}", nan

            def to_int(t, group=group, var=var, da=da):
                _replace(t, group, var, (da.dims, np.round(da.values).astype(np.int64)))

            yield f"{group}{var} as integers", to_int

            def to_str(t, group=group, var=var, da=da):
                _replace(t, group, var, (da.dims, da.values.astype(str)))

            yield f"{group}{var} as strings", to_str
        if values.ndim and values.shape[-1] > 1:

            def shorter(t, group=group, var=var, da=da):
                # a root variable has dimensions of its own: keep their names, so only the size tells
                dims = da.dims if group == "/" else (*da.dims[:-1], f"{da.dims[-1]}_short")
                _replace(t, group, var, (dims, da.values[..., :-1]))

            yield f"{group}{var} one shorter", shorter

        def extra_axis(t, group=group, var=var, da=da):
            _replace(t, group, var, (("extra", *da.dims), da.values[None]))

        yield f"{group}{var} with an extra axis", extra_axis
        yield f"{group}{var} renamed", lambda t, group=group, var=var: _rename(t, group, var)
        yield f"{group}{var} removed", lambda t, group=group, var=var: _replace(t, group, var, None)


def _attribute_mutations(tree: xr.DataTree):
    name = tree.attrs["calibrator"]
    other = "platt" if name != "platt" else "isotonic"
    yield "another calibrator's name", lambda t: t.attrs.__setitem__("calibrator", other)
    yield "calibrator as an array", lambda t: t.attrs.__setitem__("calibrator", np.array([1, 2]))
    yield "format as text", lambda t: t.attrs.__setitem__("bayescal_format", "one")
    yield "state not JSON", lambda t: t.attrs.__setitem__("state", "{not json")
    yield "params a list", lambda t: t.attrs.__setitem__("params", "[1, 2]")

    def state_entry(entry, info):
        def edit(t):
            state = json.loads(t.attrs["state"])
            state[entry] = info
            t.attrs["state"] = json.dumps(state)

        return edit

    def retag(tag):
        def edit(t):
            state = json.loads(t.attrs["state"])
            first = next(k for k, v in sorted(state.items()) if v["kind"] == "array")
            state[first] = {"kind": "array"} if tag is None else {"kind": "array", "dtype": tag}
            t.attrs["state"] = json.dumps(state)

        return edit

    yield "dtype tag object", retag("|O")
    yield "dtype tag missing", retag(None)
    yield "dtype tag of another width", retag("<f4")
    yield "dtype tag junk", retag("float64; rm -rf /")
    yield "state names __dict__", state_entry("__dict__", {"kind": "json", "value": {}})
    yield "state names fit", state_entry("fit", {"kind": "json", "value": 1})
    yield "state kind unknown", state_entry("classes_", {"kind": "pickle"})


def _structural_cases(name: str, seed: int):
    rng = np.random.default_rng(seed)
    tree = _tree(name)
    return [*_mutations(tree, rng), *_attribute_mutations(tree)]


def _check_structural(name: str, tmp_path: Path, keep: int | None, seed: int) -> None:
    cases = _structural_cases(name, seed)
    if keep is not None:
        rng = np.random.default_rng(seed)
        cases = [cases[i] for i in sorted(rng.choice(len(cases), size=min(keep, len(cases)), replace=False))]
    for label, edit in cases:
        tree = _tree(name)
        edit(tree)
        path = _write(tree, tmp_path / f"{name}-mutated.nc")
        outcome = _load_checked(path, name)  # a load that predicts anything but the reference fails here
        # a posterior variable the map never reads (the DPM's concentration alpha) may be damaged harmlessly
        assert outcome == "refused" or label.startswith(("/idata_/posterior", "NaN in /idata_/posterior")), (
            f"{name}: {label} was accepted"
        )


@pytest.mark.parametrize("name", NAMES)
def test_structural_mutations_with_a_recomputed_hash_are_refused(name, tmp_path):
    """A seeded sample of the mutations of each file (all of them under ``-m slow``)."""
    _check_structural(name, tmp_path, keep=2, seed=4)


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_every_structural_mutation_is_refused(name, tmp_path):
    _check_structural(name, tmp_path, keep=None, seed=4)


@pytest.mark.parametrize(
    "name, label",
    [
        ("kde", "/density_ one shorter"),  # the grid no longer spans the score range
        ("spline", "/cv_scores_ one shorter"),  # not the n_knots x Cs grid of its parameters
        ("spline", "NaN in /cv_scores_"),  # a row is scored for every C or for none
        ("venn_abers", "/values___0 one shorter"),  # a table's probabilities outnumber its values by one
    ],
)
def test_cross_attribute_damage_is_refused(name, label, tmp_path):
    """Damage that each attribute's own declaration allows but the attributes together do not."""
    edit = dict(_structural_cases(name, 4))[label]
    tree = _tree(name)
    edit(tree)
    assert _load_checked(_write(tree, tmp_path / f"{name}-mutated.nc"), name) == "refused"


@pytest.mark.parametrize("name", NAMES)
def test_a_huge_declared_variable_is_refused_without_allocating(name, tmp_path):
    """A stored variable (chosen with a seed) replaced by an unwritten 2**28-element dataset."""
    source = MODELS / f"{name}.nc"
    with h5py.File(source, "r") as f:
        targets = [k for k in f if isinstance(f[k], h5py.Dataset) and "DIMENSION_LIST" in f[k].attrs]
    targets = [targets[int(np.random.default_rng(5).integers(len(targets)))]]
    for key in targets:
        path = tmp_path / f"{name}-huge.nc"
        path.write_bytes(source.read_bytes())
        with h5py.File(path, "r+") as f:
            dtype = f[key].dtype
            del f[key]
            f.create_dataset(key, shape=(2**28,), dtype=dtype, chunks=(4096,))
        assert path.stat().st_size < 1_000_000
        assert _load_checked(path, name, trace=True) == "refused"


@pytest.mark.slow
def test_many_bit_flips(tmp_path):
    counts = _run_flips(_flip_cases(40, seed=11), tmp_path, trace=True)
    assert counts["refused"] > counts["same"]
