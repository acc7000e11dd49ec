"""The input contract of every public entry point, checked on generated (often hostile) input.

Entry points are found, not listed: every calibrator of ``bayescal._registry.REGISTRY`` (fit,
``predict_proba``, ``calibration_map``), every function of ``bayescal.metrics.__all__``,
``bayescal.decision.__all__`` and ``bayescal.diagnostics.__all__`` (called with arguments
picked by parameter name from a generated pool), ``ScoreSummary.from_arrays`` and
``bayescal.io.load``. A new public function or calibrator joins by being exported or
registered.

For each call the contract is:

1. the call returns a result whose probabilities are finite, in [0, 1], with the rows of
   ``predict_proba`` summing to 1 (numbers in any result are finite), **or** it raises a
   ``ValueError`` (``FileNotFoundError`` for a missing file) from bayescal's own code (the
   last frame of the traceback is in the package) whose message names one of the call's
   arguments;
2. the inputs are unchanged (compared with copies taken before the call);
3. equivalent inputs give equal results: a list, a numpy array, a pandas Series, an xarray
   DataArray, a read-only array and a strided view of the same numbers.

The default run uses a small number of examples (profile ``contract``; the DPM with
draws=50, tune=50, n_components=4 and fewer examples); ``pytest -m slow`` runs the long
profile (``contract-long``) on the same properties.
"""

from __future__ import annotations

import copy
import inspect
import re
import traceback
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bayescal
from bayescal import decision, diagnostics, metrics
from bayescal._registry import REGISTRY, get_calibrator_class
from bayescal.data import ScoreSummary

PACKAGE = str(Path(bayescal.__file__).resolve().parent)

settings.register_profile(
    "contract",
    max_examples=12,
    deadline=None,
    derandomize=True,
    print_blob=True,
    suppress_health_check=list(HealthCheck),
)
settings.register_profile(
    "contract-long",
    max_examples=150,
    deadline=None,
    derandomize=True,
    print_blob=True,
    suppress_health_check=list(HealthCheck),
)
SHORT = settings.get_profile("contract")
LONG = settings.get_profile("contract-long")

TINY = {"dpm": {"draws": 50, "tune": 50, "n_components": 4}, "mbct": {"min_samples_leaf": 5}}


def make(name: str, **params):
    cls = get_calibrator_class(name)
    seeded = {"random_state": 0} if "random_state" in cls().get_params() else {}
    return cls(**{**seeded, **TINY.get(name, {}), **params})


# ----------------------------------------------------------------------------- the contract


def _frames_in_package(exc: BaseException) -> bool:
    last = traceback.extract_tb(exc.__traceback__)[-1]
    return str(Path(last.filename).resolve()).startswith(PACKAGE)


def _names_an_argument(message: str, names) -> bool:
    return any(re.search(rf"(?<![A-Za-z0-9_]){re.escape(n)}(?![A-Za-z0-9_])", message) for n in names)


def call(fn, names, *args, **kwargs):
    """Call ``fn``; a ValueError must come from bayescal and name one of ``names``. Returns
    ``(ok, result)``."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return True, fn(*args, **kwargs)
    except (ValueError, FileNotFoundError) as exc:
        assert _frames_in_package(exc), f"{type(exc).__name__} raised outside bayescal: {traceback.format_exc()}"
        assert _names_an_argument(str(exc), names), f"message names none of {sorted(names)}: {exc}"
        return False, None


def all_finite(result) -> bool:
    """Every number in a result (array, DataArray, Dataset, DataTree, dataclass, tuple) is finite."""
    if result is None or isinstance(result, (str, bytes, bool)):
        return True
    if isinstance(result, xr.DataTree):
        return all(all_finite(node.dataset) for node in result.subtree)
    if isinstance(result, xr.Dataset):
        return all(all_finite(result[v]) for v in result.data_vars)
    if isinstance(result, xr.DataArray):
        return all_finite(result.values)
    if isinstance(result, (list, tuple)):
        return all(all_finite(v) for v in result)
    if hasattr(result, "__dataclass_fields__"):
        return all(all_finite(getattr(result, f)) for f in result.__dataclass_fields__)
    arr = np.asarray(result)
    if arr.dtype.kind in "fc":
        return bool(np.isfinite(arr).all())
    return True


def check_proba(proba: np.ndarray, n: int) -> None:
    proba = np.asarray(proba)
    assert proba.shape == (n, 2)
    assert np.isfinite(proba).all()
    assert (proba >= 0).all() and (proba <= 1).all()
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-12)


def snapshot(values):
    return [copy.deepcopy(v) for v in values]


def same(a, b) -> bool:
    if isinstance(a, (pd.Series, pd.DataFrame)):
        return a.equals(b)
    if isinstance(a, xr.DataArray):
        return a.identical(b)
    if isinstance(a, np.ma.MaskedArray):
        return np.array_equal(np.ma.getdata(a), np.ma.getdata(b), equal_nan=a.dtype.kind == "f") and np.array_equal(
            np.ma.getmaskarray(a), np.ma.getmaskarray(b)
        )
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
    if isinstance(a, (list, tuple)):  # tuples: a calibrator's named tuples of fitted arrays
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, bayescal.base.Calibrator):  # a calibrator passed in: its whole state
        return type(a) is type(b) and same(vars(a), vars(b))
    if isinstance(a, (xr.Dataset, xr.DataTree)):
        return a.identical(b)
    if isinstance(a, float) and np.isnan(a):
        return isinstance(b, float) and np.isnan(b)
    return a == b


def assert_unchanged(before, after) -> None:
    for a, b in zip(before, after):
        assert same(a, b), "an input was modified"


# ----------------------------------------------------------------------------- inputs


GOOD_PROBS = st.floats(0.0, 1.0, allow_nan=False)
HOSTILE = st.sampled_from([np.nan, np.inf, -np.inf, -0.5, 1.5, 1e298, -1e298, 0.0, 1.0])


@st.composite
def rows(draw, min_size: int = 2, max_size: int = 40):
    """(scores, labels, weights) as numpy arrays: legal half of the time, otherwise with one
    hostile part (labels, scores or weights)."""
    n = draw(st.integers(min_size, max_size))
    s = np.array(draw(st.lists(GOOD_PROBS, min_size=n, max_size=n)), dtype=np.float64)
    hostile = draw(st.sampled_from(["none", "none", "none", "labels", "scores", "weights"]))
    base = np.array(draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)))
    base[:2] = [0, 1]
    codings = ["half", "three", "one", "nan"] if hostile == "labels" else ["01", "01", "12", "bool", "str"]
    coding = draw(st.sampled_from(codings))
    y = {
        "01": base,
        "12": base + 1,
        "bool": base.astype(bool),
        "str": np.where(base == 1, "yes", "no"),
        "half": base * 0.5,
        "three": np.where(np.arange(n) == 0, 2, base),
        "one": np.zeros(n, dtype=int),
        "nan": np.where(np.arange(n) == n - 1, np.nan, base),
    }[coding]
    if hostile == "scores":
        s[draw(st.integers(0, n - 1))] = draw(HOSTILE)
    kinds = (
        ["zero-class", "zeros", "negative", "short", "nan"]
        if hostile == "weights"
        else ["none", "none", "ones", "random", "huge"]
    )
    kind = draw(st.sampled_from(kinds))
    w = {
        "none": None,
        "ones": np.ones(n),
        "random": np.array(draw(st.lists(st.floats(0, 5), min_size=n, max_size=n))),
        "huge": np.full(n, 1e308),
        "zero-class": np.where(base == 1, 0.0, 1.0),
        "zeros": np.zeros(n),
        "negative": -np.ones(n),
        "short": np.ones(max(n - 1, 1)),
        "nan": np.full(n, np.nan),
    }[kind]
    return s, y, w


def forms(values: np.ndarray) -> dict:
    """The same 1-D numbers as a list, numpy, pandas, xarray, a read-only array and a strided view."""
    ro = values.copy()
    ro.setflags(write=False)
    wide = np.repeat(values, 2)
    return {
        "list": values.tolist(),
        "numpy": values.copy(),
        "pandas": pd.Series(values),
        "xarray": xr.DataArray(values, dims="obs"),
        "readonly": ro,
        "strided": wide[::2],
    }


# ----------------------------------------------------------------------------- calibrators


NAMES = sorted(REGISTRY)


def _profile(name: str, base):
    return settings(base, max_examples=max(2, base.max_examples // 4)) if name == "dpm" else base


def _fit_names(name: str) -> set:
    cls = get_calibrator_class(name)
    return {"scores", "y", "sample_weight", "X", "pos_label"} | set(cls().get_params())


def _contract_for_calibrator(name: str, s, y, w) -> None:
    cls = get_calibrator_class(name)
    X = np.zeros((len(s), 1)) if cls.feature_aware else None
    args = [s, y, w, X]
    before = snapshot(args)
    kw = {"X": X} if X is not None else {}
    if w is not None and not cls.supports_weights:
        w = None
    ok, cal = call(make(name).fit, _fit_names(name), s, y, w, **kw)
    assert_unchanged(before, args)
    if not ok:
        return
    ok, proba = call(cal.predict_proba, {"scores", "X"}, s, **kw)
    assert ok, "predict_proba refused the scores fit accepted"
    check_proba(proba, len(s))
    grid = np.linspace(0.0, 1.0, 7)
    if not cls.feature_aware:
        cmap = cal.calibration_map(grid)
        assert np.isfinite(cmap.values).all() and ((cmap.values >= 0) & (cmap.values <= 1)).all()
    # equivalent forms of the same scores give the same answer
    for form, values in forms(np.asarray(s, dtype=np.float64)).items():
        got = cal.predict_proba(values, **kw)
        np.testing.assert_allclose(got, proba, rtol=0, atol=1e-12, err_msg=form)
    # hostile arguments after the fit: refused by name, or a valid answer
    for bad in (
        np.array([0.5, np.nan]),
        np.array([0.5, 1.5]),
        "0.5",
        np.array([[0.1, 0.2], [0.3, 0.4]]),
        np.ma.masked_array([0.2, 0.4], mask=[False, True]),
        np.array([], dtype=float),
    ):
        bad_kw = {"X": np.zeros((np.size(bad) if np.ndim(bad) == 1 else 2, 1))} if X is not None else {}
        ok, out = call(cal.predict_proba, {"scores", "X"}, bad, **bad_kw)
        if ok:
            check_proba(out, len(out))
    for threshold in (np.nan, 1.5, "high", 0.3):
        ok, out = call(cal.predict, {"threshold", "scores", "X"}, s, threshold, **kw)
        if ok:
            assert set(np.unique(out).tolist()) <= set(np.asarray(cal.classes_).tolist())
    if not cls.feature_aware:
        for grid in (0, -5, 10**12, 2.5, "x", np.array([np.nan]), True, 3):
            ok, out = call(cal.calibration_map, {"grid"}, grid)
            if ok:
                assert np.isfinite(out.values).all()


@pytest.mark.parametrize("name", NAMES)
def test_calibrators_keep_the_contract(name):
    @_profile(name, SHORT)
    @given(rows())
    def run(data):
        _contract_for_calibrator(name, *data)

    run()


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_calibrators_keep_the_contract_long(name):
    @_profile(name, LONG)
    @given(rows(max_size=200))
    def run(data):
        _contract_for_calibrator(name, *data)

    run()


@pytest.mark.parametrize("name", NAMES)
def test_equivalent_inputs_give_the_same_fit(name):
    """Fitting on the list, pandas, xarray, read-only and strided forms of the data gives the fit
    on numpy arrays."""
    rng = np.random.default_rng(1)
    n = 120
    y = (rng.random(n) < 0.4).astype(int)
    s = np.where(y == 1, rng.beta(5, 2, n), rng.beta(2, 5, n))
    w = rng.uniform(0.5, 2.0, n) if get_calibrator_class(name).supports_weights else None
    X = np.zeros((n, 1)) if get_calibrator_class(name).feature_aware else None
    kw = {"X": X} if X is not None else {}
    ref = make(name).fit(s, y, w, **kw).predict_proba(s, **kw)
    s_forms, y_forms = forms(s), forms(y)
    w_forms = forms(w) if w is not None else {k: None for k in s_forms}
    for form in s_forms:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = make(name).fit(s_forms[form], y_forms[form], w_forms[form], **kw).predict_proba(s, **kw)
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-10, err_msg=form)


# ----------------------------------------------------------------------------- metrics, decision, diagnostics


def _public_functions(module) -> list[str]:
    return [n for n in module.__all__ if inspect.isfunction(getattr(module, n))]


@pytest.fixture(scope="module")
def fitted():
    rng = np.random.default_rng(2)
    n = 150
    y = (rng.random(n) < 0.4).astype(int)
    s = np.where(y == 1, rng.beta(5, 2, n), rng.beta(2, 5, n))
    return {"isotonic": make("isotonic").fit(s, y), "kde": make("kde").fit(s, y)}


@st.composite
def pools(draw):
    """Arguments by parameter name: data from :func:`rows`, a hostile or sensible value for the
    common options."""
    s, y, w = draw(rows())
    number = st.sampled_from([1.0, 0.5, 0.0, -1.0, np.nan, np.inf, 3, 10**12, "a"])
    count = st.sampled_from([10, 1, 0, -5, 2.7, 10**12, "ten", 3])
    pool = {
        "y_true": y,
        "y": y,
        "y_prob": s,
        "scores": s,
        "sample_weight": w,
        "y_pred": draw(st.sampled_from([y, s, np.ones(len(s), dtype=int), np.asarray(y)[::-1].copy()])),
        "cost_fp": draw(number),
        "cost_fn": draw(number),
        "n_bins": draw(count),
        "strategy": draw(st.sampled_from(["quantile", "uniform", "papers", "bogus", None])),
        "grid": draw(st.sampled_from([None, 5, 0, -5, 10**12, np.linspace(0, 1, 5), "x"])),
        "ci_prob": draw(st.sampled_from([None, 0.9, 1.5, 0.0, np.nan])),
        "benefit_tp": draw(st.sampled_from([1.0, np.ones(3), np.nan, "big"])),
    }
    return pool


OPTIONAL_FROM_POOL = {
    "sample_weight",
    "cost_fp",
    "cost_fn",
    "n_bins",
    "strategy",
    "grid",
    "ci_prob",
    "benefit_tp",
    "y_pred",
}
SEEDED = {"random_state": 0}  # random_seed, the deprecated alias, keeps its default
SMALL = {"n_shuffles": 3, "min_replicates": 20, "n_replicates": 20, "grid_size": 51}


def _arguments(fn, pool, calibrator, draw_optional):
    """Positional and keyword arguments of ``fn`` from the pool.

    A required argument the pool does not generate fails the test, so a new entry point
    cannot silently escape the contract: add its argument to :func:`pools`."""
    args, kwargs = [], {}
    for p in inspect.signature(fn).parameters.values():
        if p.name == "calibrator":
            value = calibrator
        elif p.name in SEEDED:
            value = SEEDED[p.name]
        elif p.name in SMALL:
            value = SMALL[p.name]
        elif p.name in pool and (
            p.default is inspect.Parameter.empty or (p.name in OPTIONAL_FROM_POOL and draw_optional(p.name))
        ):
            value = pool[p.name]
        elif p.default is not inspect.Parameter.empty:
            continue
        else:
            pytest.fail(f"{fn.__name__} has a required argument {p.name!r} that pools() does not generate: add it.")
        if p.kind is inspect.Parameter.KEYWORD_ONLY:
            kwargs[p.name] = value
        else:
            args.append(value)
    return args, kwargs


FUNCTIONS = (
    [(metrics, n) for n in _public_functions(metrics)]
    + [(decision, n) for n in _public_functions(decision)]
    + [(diagnostics, n) for n in _public_functions(diagnostics)]
)


FUNCTION_IDS = [f"{m.__name__.split('.')[-1]}.{n}" for m, n in FUNCTIONS]


@pytest.mark.parametrize("module, name", FUNCTIONS, ids=FUNCTION_IDS)
def test_functions_keep_the_contract(module, name, fitted):
    _function_contract(module, name, fitted, SHORT)


@pytest.mark.slow
@pytest.mark.parametrize("module, name", FUNCTIONS, ids=FUNCTION_IDS)
def test_functions_keep_the_contract_long(module, name, fitted):
    _function_contract(module, name, fitted, LONG)


def _function_contract(module, name, fitted, profile) -> None:
    fn = getattr(module, name)

    @profile
    @given(pools(), st.sampled_from(sorted(fitted)), st.data())
    def run(pool, which, data):
        args, kwargs = _arguments(fn, pool, fitted[which], lambda n: data.draw(st.booleans(), label=n))
        names = set(inspect.signature(fn).parameters) | {"y", "scores"}
        before = snapshot(args + list(kwargs.values()))
        ok, result = call(fn, names, *args, **kwargs)
        assert_unchanged(before, args + list(kwargs.values()))
        if ok:
            assert all_finite(result), f"{name} returned non-finite numbers: {result!r}"[:500]

    run()


METRICS_YP = [
    n
    for n in _public_functions(metrics)
    if list(inspect.signature(getattr(metrics, n)).parameters)[:2] == ["y_true", "y_prob"]
]


@pytest.mark.parametrize("name", METRICS_YP)
def test_metrics_agree_over_equivalent_inputs(name):
    rng = np.random.default_rng(3)
    y = (rng.random(80) < 0.5).astype(int)
    p = rng.random(80)
    w = rng.uniform(0.5, 2.0, 80)
    fn = getattr(metrics, name)
    kw = {"random_state": 0} if "random_state" in inspect.signature(fn).parameters else {}
    ref = _flat(fn(y, p, sample_weight=w, **kw))
    for form, values in forms(p).items():
        got = _flat(fn(forms(y)[form], values, sample_weight=forms(w)[form], **kw))
        np.testing.assert_array_equal(got, ref, err_msg=form)


def _flat(result) -> np.ndarray:
    """The numbers of a metric's result, in a fixed order."""
    if isinstance(result, xr.Dataset):
        return np.concatenate([np.ravel(result[v].values).astype(float) for v in sorted(result.data_vars)])
    if hasattr(result, "__dataclass_fields__"):
        return np.array(
            [float(getattr(result, f)) for f in result.__dataclass_fields__ if not isinstance(getattr(result, f), str)]
        )
    return np.atleast_1d(np.asarray(result, dtype=float))


def test_decision_and_diagnostics_arguments_are_read_through_the_same_checks(fitted):
    """A string where a calibrator belongs, for every function that takes one."""
    for module, name in FUNCTIONS:
        fn = getattr(module, name)
        if "calibrator" in inspect.signature(fn).parameters:
            with pytest.raises(ValueError, match="calibrator='isotonic' is not a bayescal calibrator"):
                fn(
                    "isotonic",
                    *(
                        [np.array([0.2, 0.8])]
                        * (
                            len(
                                [
                                    p
                                    for p in inspect.signature(fn).parameters.values()
                                    if p.default is inspect.Parameter.empty
                                ]
                            )
                            - 1
                        )
                    ),
                )


# ----------------------------------------------------------------------------- ScoreSummary


@SHORT
@given(
    rows(),
    st.sampled_from([16, 2, 1, 2.7, 10**9, "x"]),
    st.sampled_from([None, -30.0, -0.1, np.nan, np.inf]),
    st.sampled_from([None, 30.0, 0.1, -31.0, np.inf]),
)
def test_score_summary_keeps_the_contract(data, n_bins, lo, hi):
    s, y, w = data
    before = snapshot([s, y, w])
    ok, summary = call(
        ScoreSummary.from_arrays,
        {"scores", "y", "sample_weight", "n_bins", "lo", "hi", "pos_label"},
        s,
        y,
        w,
        n_bins=n_bins,
        lo=lo,
        hi=hi,
    )
    assert_unchanged(before, [s, y, w])
    if ok:
        assert np.isfinite(summary.counts).all() and np.isfinite(summary.edges).all()
        assert summary.n_bins == n_bins
        np.testing.assert_allclose(summary.total.sum(), 1.0 * len(s) if w is None else summary.total.sum())
        if np.count_nonzero(summary.total) < 2:
            with pytest.raises(ValueError, match="single class"):  # a summary of one class's weight
                make("isotonic").fit(summary)
            return
        proba = make("isotonic").fit(summary).predict_proba(s)
        check_proba(proba, len(s))


# ----------------------------------------------------------------------------- load


@pytest.fixture(scope="module")
def saved_model(tmp_path_factory):
    rng = np.random.default_rng(4)
    y = (rng.random(200) < 0.5).astype(int)
    s = np.where(y == 1, rng.beta(5, 2, 200), rng.beta(2, 5, 200))
    path = tmp_path_factory.mktemp("model") / "platt.nc"
    make("platt").fit(s, y).save(path)
    return path.read_bytes()


@SHORT
@given(
    st.sampled_from(["flip", "truncate", "missing", "directory", "garbage"]), st.integers(0, 10**9), st.integers(0, 7)
)
def test_load_keeps_the_contract(saved_model, tmp_path_factory, mutation, position, bit):
    folder = tmp_path_factory.mktemp("load")
    path = folder / "model.nc"
    content = bytearray(saved_model)
    if mutation == "flip":
        content[position % len(content)] ^= 1 << bit
    elif mutation == "truncate":
        content = content[: position % len(content)]
    elif mutation == "garbage":
        content = bytearray(np.random.default_rng(position).bytes(300))
    if mutation == "directory":
        path = folder
    elif mutation != "missing":
        path.write_bytes(bytes(content))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cal = bayescal.io.load(path)
    except (ValueError, FileNotFoundError, IsADirectoryError) as exc:
        assert _frames_in_package(exc), traceback.format_exc()
        assert _names_an_argument(str(exc), {"path", str(path), path.name}) or "file" in str(exc), str(exc)
        return
    check_proba(cal.predict_proba(np.linspace(0, 1, 11)), 11)
