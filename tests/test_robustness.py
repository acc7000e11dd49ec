"""Inputs an adversarial user would try: each gives the right answer or a ValueError that names
the argument, never a silent wrong answer or a trace from deep inside numpy.

One test (or parametrised group) per failure mode: label codings of summed summaries, decision
labels other than 0/1, in-memory xarray input, fits on a ScoreSummary against fits on rows,
weights at the ends of the float range and weights that leave a class empty, masked arrays,
huge decision values, degenerate data for beta calibration, ScoreSummary parameters, and
the messages of the remaining entry points.
"""

from __future__ import annotations

import dataclasses
import inspect
import time
import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from _calibrators import build, simulated
from scipy.stats import beta as beta_dist

import bayescal
from bayescal import decision, metrics
from bayescal._registry import REGISTRY, get_calibrator_class
from bayescal.data import ScoreSummary

ONE_D = [n for n in sorted(REGISTRY) if not get_calibrator_class(n).feature_aware]
WEIGHTED_1D = [n for n in ONE_D if get_calibrator_class(n).supports_weights]


def _fast(name):
    return pytest.param(name, marks=pytest.mark.slow) if name == "dpm" else name


@pytest.fixture(scope="module")
def data():
    s, y, _ = simulated(400, 3)
    return s, y


# ---------------------------------------------------------------- summaries with other label codings


@pytest.mark.parametrize(
    "other",
    [
        {"y": lambda y: y + 1},
        {"y": lambda y: np.where(y == 1, "b", "a")},
        {"y": lambda y: y, "pos_label": 0},
    ],
)
def test_summaries_with_different_label_codings_do_not_add(data, other):
    s, y = data
    a = ScoreSummary.from_arrays(s, y, n_bins=64, lo=-8, hi=8)
    b = ScoreSummary.from_arrays(s, other["y"](y), n_bins=64, lo=-8, hi=8, pos_label=other.get("pos_label"))
    with pytest.raises(ValueError, match=r"code their labels differently.*\[0, 1\] vs"):
        a + b
    same = ScoreSummary.from_arrays(s[:200], y[:200], n_bins=64, lo=-8, hi=8)
    np.testing.assert_allclose(
        (same + ScoreSummary.from_arrays(s[200:], y[200:], n_bins=64, lo=-8, hi=8)).counts, a.counts
    )


# ---------------------------------------------------------------- decision labels


def test_realized_cost_codes_true_and_predicted_labels_alike():
    assert decision.realized_cost([1, 2, 2, 1, 2], [1, 2, 2, 1, 2]) == 0.0  # perfect predictions cost nothing
    assert decision.realized_cost(["a", "b", "b"], ["a", "b", "a"], cost_fn=3.0, pos_label="b") == pytest.approx(1.0)
    with pytest.raises(ValueError, match="text labels.*pos_label="):  # which word is positive sets the costs
        decision.realized_cost(["a", "b", "b"], ["a", "b", "a"], cost_fn=3.0)
    assert decision.realized_cost([1, 2, 2], [2, 2, 2], cost_fp=2.0) == pytest.approx(2 / 3)  # 2 is positive
    assert decision.realized_cost([1, 2, 2], [1, 1, 2], pos_label=1, cost_fp=5.0) == pytest.approx(5 / 3)
    with pytest.raises(ValueError, match="y_true and y_pred together has 3 distinct values"):
        decision.realized_cost([0, 1, 1], [2, 2, 2])
    with pytest.raises(ValueError, match="y_true and y_pred code the classes differently"):
        decision.realized_cost(["a", "b"], [0, 1])


def test_expected_profit_reads_labels_in_the_calibrators_coding(data):
    s, y = data
    cal = build("platt").fit(s, y + 1)  # classes [1, 2]
    cal01 = build("platt").fit(s, y)
    as_fit = decision.expected_profit(cal, s, y_pred=y + 1)
    assert float(as_fit["mean"]) == pytest.approx(float(decision.expected_profit(cal01, s, y_pred=y)["mean"]))
    # with accuracy as the profit, the optimal rule is predict()'s 0.5 threshold
    predicted = decision.expected_profit(cal, s, y_pred=cal.predict(s), benefit_tn=1.0)
    assert float(predicted["mean"]) == pytest.approx(float(decision.expected_profit(cal, s, benefit_tn=1.0)["mean"]))
    with pytest.raises(ValueError, match=r"y_pred has the value 0.*classes \[1, 2\]"):
        decision.expected_profit(cal, s, y_pred=y)


# ---------------------------------------------------------------- xarray input


@pytest.mark.parametrize("name", [_fast(n) for n in ONE_D])
def test_in_memory_xarray_input_fits_and_predicts_like_numpy(data, name):
    s, y = data
    ref = build(name).fit(s, y).predict_proba(s)
    got = (
        build(name)
        .fit(xr.DataArray(s, dims="obs"), xr.DataArray(y, dims="obs"))
        .predict_proba(xr.DataArray(s, dims="obs"))
    )
    np.testing.assert_allclose(got, ref, atol=1e-12)


def test_xarray_input_to_metrics_decision_and_summary(data):
    s, y = data
    cal = build("platt").fit(s, y)
    X, Y = xr.DataArray(s), xr.DataArray(y)
    assert metrics.ece(Y, X) == metrics.ece(y, s)
    assert float(decision.expected_profit(cal, X)["mean"]) == float(decision.expected_profit(cal, s)["mean"])
    np.testing.assert_array_equal(ScoreSummary.from_arrays(X, Y).counts, ScoreSummary.from_arrays(s, y).counts)


def test_dask_backed_xarray_goes_the_dask_route(data):
    da = pytest.importorskip("dask.array")
    s, y = data
    X = xr.DataArray(da.from_array(s, chunks=100), dims="obs")
    Y = xr.DataArray(da.from_array(y, chunks=100), dims="obs")
    cal = build("isotonic").fit(X, Y)
    ref = build("isotonic").fit(ScoreSummary.from_arrays(s, y))
    np.testing.assert_allclose(cal.predict_proba(s), ref.predict_proba(s))
    out = cal.predict_proba(X)
    np.testing.assert_allclose(np.asarray(out), ref.predict_proba(s))


# ---------------------------------------------------------------- summary fits agree with row fits


@pytest.mark.parametrize("name", [_fast(n) for n in WEIGHTED_1D])
def test_fit_on_a_summary_agrees_with_the_fit_on_rows(name):
    """N = 2*10^4, Beta(5,2) positives vs Beta(2,5) negatives, pi = 0.4: the summary fit is as close
    to the true map as the row fit, and the two maps are close on average (BBQ was 0.047 from the
    truth on the summary against 0.004 on rows, scaling-binning moved whole bins to one side)."""
    rng = np.random.default_rng(0)
    n, pi = 20_000, 0.4
    y = (rng.random(n) < pi).astype(int)
    s = np.where(y == 1, rng.beta(5, 2, n), rng.beta(2, 5, n))
    grid = np.linspace(0.02, 0.98, 97)
    f1, f0 = beta_dist.pdf(grid, 5, 2), beta_dist.pdf(grid, 2, 5)
    truth = pi * f1 / (pi * f1 + (1 - pi) * f0)
    rows = build(name).fit(s, y).predict_proba(grid)[:, 1]
    summ = build(name).fit(ScoreSummary.from_arrays(s, y)).predict_proba(grid)[:, 1]
    err_rows, err_summ = np.abs(rows - truth).mean(), np.abs(summ - truth).mean()
    assert err_summ <= err_rows + 0.003, (err_rows, err_summ)
    assert np.abs(rows - summ).mean() <= 0.01


# ---------------------------------------------------------------- weights


@pytest.mark.parametrize("name", [_fast(n) for n in WEIGHTED_1D])
def test_huge_equal_weights_give_the_unit_weight_answer(data, name):
    s, y = data
    ref = build(name).fit(s, y).predict_proba(s)
    with pytest.warns(UserWarning, match="divided by their largest value"):
        big = build(name).fit(s, y, sample_weight=np.full(s.size, 1e308))
    np.testing.assert_allclose(big.predict_proba(s), ref, atol=1e-9)


def test_metrics_and_costs_with_huge_weights_equal_the_unweighted_ones(data):
    s, y = data
    w = np.full(s.size, 1e308)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in metrics.__all__:
            fn = getattr(metrics, name)
            if not callable(fn) or name[0].isupper():
                continue
            kw = {"random_state": 0} if "random_state" in inspect.signature(fn).parameters else {}
            try:
                ref = fn(y, s, sample_weight=np.ones(s.size), **kw)
            except TypeError:
                continue
            got = fn(y, s, sample_weight=w, **kw)
            np.testing.assert_allclose(_numbers(got), _numbers(ref), rtol=1e-9, atol=1e-12, err_msg=name)
    assert decision.realized_cost(y, 1 - y, sample_weight=w) == 1.0


def _numbers(result) -> np.ndarray:
    """Every number in a metric's result (a float, a dataclass of floats or an xarray Dataset)."""
    if isinstance(result, xr.Dataset):
        return np.concatenate([np.ravel(result[v].values).astype(float) for v in sorted(result.data_vars)])
    if dataclasses.is_dataclass(result):
        return np.array([float(v) for v in dataclasses.asdict(result).values() if not isinstance(v, str)])
    return np.atleast_1d(np.asarray(result, dtype=float))


@pytest.mark.parametrize("name", sorted(REGISTRY))
@pytest.mark.parametrize("zero_class", [0, 1])
def test_a_class_with_zero_total_weight_is_refused(data, name, zero_class):
    s, y = data
    w = np.where(y == zero_class, 0.0, 1.0)
    kw = {"X": np.zeros((s.size, 1))} if get_calibrator_class(name).feature_aware else {}
    word = "positive" if zero_class == 1 else "negative"
    with pytest.raises(ValueError, match=f"sample_weight gives the {word} class .* zero total weight"):
        build(name).fit(s, y, sample_weight=w, **kw)


def test_dask_weights_all_zero_or_one_class_get_a_message(data):
    da = pytest.importorskip("dask.array")
    s, y = data
    S, Y = da.from_array(s, chunks=100), da.from_array(y, chunks=100)
    with pytest.raises(ValueError, match="sample_weight sums to zero over the whole Dask data"):
        build("platt").fit(S, Y, da.from_array(np.zeros(s.size), chunks=100))
    with pytest.raises(ValueError, match="positive class .* zero total weight"):
        build("platt").fit(S, Y, da.from_array(np.where(y == 1, 0.0, 1.0), chunks=100))


def test_sample_weight_that_is_not_numbers(data):
    s, y = data
    with pytest.raises(ValueError, match="sample_weight='heavy' is a string"):
        build("platt").fit(s, y, sample_weight="heavy")
    with pytest.raises(ValueError, match="sample_weight"):
        build("platt").fit(s, y, sample_weight=np.array(["1"] * (s.size - 1) + ["x"]))


# ---------------------------------------------------------------- masked arrays


@pytest.mark.parametrize("argument", ["scores", "y", "sample_weight"])
def test_masked_entries_are_refused_and_an_empty_mask_is_read(data, argument):
    s, y = data
    args = {"scores": s, "y": y, "sample_weight": np.ones(s.size)}
    mask = np.zeros(s.size, dtype=bool)
    mask[7] = True
    masked = dict(args, **{argument: np.ma.masked_array(args[argument], mask=mask)})
    with pytest.raises(ValueError, match=f"{argument} is a masked array with 1 masked value.*index 7"):
        build("isotonic").fit(masked["scores"], masked["y"], masked["sample_weight"])
    unmasked = dict(args, **{argument: np.ma.masked_array(args[argument], mask=np.zeros(s.size, dtype=bool))})
    np.testing.assert_array_equal(
        build("isotonic").fit(**unmasked).predict_proba(s), build("isotonic").fit(**args).predict_proba(s)
    )
    with pytest.raises(ValueError, match="masked"):
        metrics.ece(masked["y"], masked["scores"], sample_weight=masked["sample_weight"])


# ---------------------------------------------------------------- huge decision values


@pytest.mark.parametrize("name", [_fast(n) for n in ONE_D])
def test_decision_values_beyond_1e100_are_refused_by_name(data, name):
    s, y = data
    d = (s - 0.5) * 1e298
    with pytest.raises(ValueError, match=r"scores has decision values of magnitude up to .*e\+297.*rescale"):
        build(name, score_kind="decision").fit(d, y)


# ---------------------------------------------------------------- beta calibration, degenerate data


@pytest.mark.parametrize("where", ["random", "max", "min"])
def test_beta_with_a_single_positive_in_1e5_rows_is_fast_and_sane(where):
    rng = np.random.default_rng(0)
    s = rng.beta(2, 5, 100_000)
    y = np.zeros(s.size, dtype=int)
    y[{"random": 12345, "max": int(np.argmax(s)), "min": int(np.argmin(s))}[where]] = 1
    start = time.perf_counter()
    cal = build("beta").fit(s, y)
    assert time.perf_counter() - start < 5.0  # was 204 s; about 0.2 s on one core
    p = cal.predict_proba(s)[:, 1]
    assert np.isfinite(p).all()
    assert p.mean() == pytest.approx(1e-5, rel=0.05)  # the fit matches the class frequency


# ---------------------------------------------------------------- ScoreSummary parameters


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"hi": np.inf, "lo": -1.0}, "hi=inf must be finite"),
        ({"lo": np.nan}, "lo=nan must be finite"),
        ({"n_bins": 2.7}, "n_bins=2.7 must be an integer"),
        ({"n_bins": 1}, "n_bins=1 must be an integer of at least 2"),
        ({"n_bins": 10**9}, "n_bins=1000000000 exceeds"),
        ({"lo": 1.0, "hi": 1.0}, "lo=1.0 must be below hi=1.0"),
        ({"lo": -0.1, "hi": 0.1}, r"lo=-0.1, hi=0.1 do not enclose the data.*run from"),
        ({"hi": -8.0}, r"^hi=-8 does not enclose the data.*widen hi "),  # names only what was given
        ({"lo": -1e308, "hi": 1e308}, r"too far apart to cut into bins"),
        ({"lo": "a"}, "lo='a' must be a real number"),
    ],
)
def test_summary_parameters_are_checked(data, kwargs, message):
    s, y = data
    with pytest.raises(ValueError, match=message):
        ScoreSummary.from_arrays(s, y, **kwargs)


def test_summaries_refuse_what_rows_could_not_hold(data):
    s, y = data
    edges, counts = np.linspace(-5, 5, 11), np.ones((2, 10))
    for atoms, kind in (([np.nan], "probability"), ([2.0], "probability"), ([0.0], "decision")):
        with pytest.raises(ValueError, match="atoms"):
            ScoreSummary(edges, counts, np.array(atoms), np.ones((2, 1)), kind)
    with pytest.raises(ValueError, match="two different labels"):
        ScoreSummary(edges, counts, np.empty(0), np.empty((2, 0)), "decision", np.array([1, 1]))
    # decision values far from 0 relative to their spread: no float grid of 1,024 bins between them
    with pytest.raises(ValueError, match=r"cannot be 1024 distinct bins.*Centre and scale the decision values"):
        ScoreSummary.from_arrays(np.log(s / (1 - s)) + 1e15, y, score_kind="decision")


def test_dask_summary_announces_probabilities_merged_by_the_logit_clip(data):
    da = pytest.importorskip("dask.array")
    s, y = data
    s, y = s.copy(), y.copy()
    s[:3], y[:3] = 1e-20, 0
    s[250:252], y[250:252] = 1e-15, 1  # both classes below the clip, in different chunks
    with pytest.warns(UserWarning, match=r"5 probability score\(s\) of both classes"):
        ScoreSummary.from_dask(da.from_array(s, chunks=100), da.from_array(y, chunks=100))
    y[250:252] = 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ScoreSummary.from_dask(da.from_array(s, chunks=100), da.from_array(y, chunks=100))


# ---------------------------------------------------------------- messages


@pytest.mark.parametrize(
    "grid, message",
    [
        (0, "grid=0 must be an integer"),
        (-5, "grid=-5 must be"),
        (10**12, "grid=1000000000000 points is more than"),
        (2.5, "grid=2.5 must be an integer"),
    ],
)
def test_calibration_map_grid_size_is_checked(data, grid, message):
    s, y = data
    with pytest.raises(ValueError, match=message):
        build("platt").fit(s, y).calibration_map(grid)


def test_messages_name_the_argument(data):
    s, y = data
    cal = build("platt").fit(s, y)
    with pytest.raises(ValueError, match=r"benefit_fp has shape \(3,\) but there are 400 scores"):
        decision.expected_profit(cal, s, benefit_fp=np.ones(3))
    with pytest.raises(ValueError, match=r"calibrator='isotonic' is not a bayescal calibrator.*make_calibrator"):
        decision.decision_regions("isotonic")
    with pytest.raises(ValueError, match="calibrator=.* is not a bayescal calibrator"):
        bayescal.diagnostics.ppc_calibration(object(), s, y)
    with pytest.raises(ValueError, match="strategy='bogus' is not one of"):
        metrics.brier_decomposition(y, s, n_bins=None, strategy="bogus")


def test_pandas_labels_with_missing_values_say_missing(data):
    s, y = data
    yb = pd.Series(y.astype(bool), dtype="boolean")
    yb[3] = pd.NA
    with pytest.raises(ValueError, match=r"y has 1 missing value\(s\).*index 3"):
        build("platt").fit(s, yb)
    sf = pd.Series(s, dtype="Float64")
    sf[5] = pd.NA
    with pytest.raises(ValueError, match=r"scores has 1 (missing|NaN) value\(s\).*index 5"):
        build("platt").fit(sf, y)


def test_dask_nan_message_gives_the_row_of_the_whole_data(data):
    da = pytest.importorskip("dask.array")
    s, y = data
    bad = s.copy()
    bad[250] = np.nan
    with pytest.raises(ValueError, match=r"scores has 1 NaN value\(s\) \(first at index 250\)"):
        build("platt").fit(da.from_array(bad, chunks=100), da.from_array(y, chunks=100))


def test_dask_messages_name_rows_and_shapes_of_the_whole_data(data):
    # a chunk checked alone knows only its own rows and shape: each message names the whole's
    da = pytest.importorskip("dask.array")
    dd = pytest.importorskip("dask.dataframe")
    s, y = data
    labels = y.astype(float)
    labels[250] = np.nan
    with pytest.raises(ValueError, match=r"y has NaN or infinite values \(1, first at index 250\)"):
        build("platt").fit(da.from_array(s, chunks=100), da.from_array(labels, chunks=100))
    labels[[251, 390]] = np.nan  # the count is the whole data's, not the first chunk's
    with pytest.raises(ValueError, match=r"y has NaN or infinite values \(3, first at index 250\)"):
        build("platt").fit(da.from_array(s, chunks=100), da.from_array(labels, chunks=100))
    text = pd.Series(y.astype(object))
    text[[120, 390]] = None
    with pytest.raises(ValueError, match=r"y has 2 missing value\(s\) \(None, NaN or NA; first at index 120\)"):
        build("platt").fit(dd.from_pandas(pd.Series(s), npartitions=4), dd.from_pandas(text, npartitions=4))
    cal = build("platt").fit(s, y)
    bad = s.copy()
    bad[250] = np.nan
    with pytest.raises(ValueError, match=r"first at index 250\)"):
        cal.predict_proba(da.from_array(bad, chunks=100)).compute()
    with pytest.raises(ValueError, match=r"first at index label 250\)"):
        cal.predict_proba(dd.from_pandas(pd.Series(bad), npartitions=4)).compute()
    labelled = pd.Series(bad, index=np.arange(1000, 1000 + s.size))  # labels held as numpy integers
    with pytest.raises(ValueError, match=r"first at index label 1250\)"):
        cal.predict_proba(dd.from_pandas(labelled, npartitions=4)).compute()
    two = da.from_array(np.c_[s, 1 - s], chunks=(100, 2))  # both columns of predict_proba
    with pytest.raises(ValueError, match=r"scores has shape \(400, 2\)"):
        cal.predict_proba(two)
    with pytest.raises(ValueError, match=r"scores has shape \(400, 2\)"):
        build("platt").fit(two, da.from_array(y, chunks=100))


def test_dask_arrays_of_unknown_chunk_sizes_fit_chunk_by_chunk(data):
    # a Dask mask leaves chunk sizes unknown; the arrays taken by one mask pair chunk by chunk
    da = pytest.importorskip("dask.array")
    s, y = data
    keep = s > 0.3
    mask = da.from_array(keep, chunks=100)
    S, Y = da.from_array(s, chunks=100)[mask], da.from_array(y, chunks=100)[mask]
    assert np.isnan(S.shape[0])
    lazy = build("isotonic").fit(S, Y)
    direct = build("isotonic").fit(ScoreSummary.from_dask(S.compute_chunk_sizes(), Y.compute_chunk_sizes()))
    np.testing.assert_array_equal(lazy.predict_proba(s), direct.predict_proba(s))
    np.testing.assert_allclose(lazy.predict_proba(S).compute(), lazy.predict_proba(s[keep]))


def test_non_integer_numeric_labels_need_pos_label(data):
    s, y = data
    with pytest.raises(ValueError, match=r"y has non-integer values \(0.0, 0.5\).*pos_label="):
        build("platt").fit(s, y * 0.5)
    cal = build("platt").fit(s, y * 0.5, pos_label=0.5)
    np.testing.assert_allclose(cal.predict_proba(s), build("platt").fit(s, y).predict_proba(s))
    with pytest.raises(ValueError, match=r"y_true has non-integer values"):
        metrics.brier_score(y * 0.5, s)
    # integers other than 0/1 keep the documented rule: the greater value is positive
    np.testing.assert_array_equal(build("platt").fit(s, 2 * y - 1).classes_, [-1, 1])


@pytest.mark.parametrize("name", ["platt", "scaling_binning"])
@pytest.mark.parametrize("scale", [1e50, 1e-50])
def test_logistic_steps_do_not_depend_on_the_scale_of_decision_values(data, name, scale):
    """Platt's curve (and scaling-binning's first step) on t * scale is the curve on t: before, a
    ridge on the unscaled slope and an ill-conditioned Hessian gave scaling-binning a constant map."""
    s, y = data
    d = s - 0.5
    ref = build(name, score_kind="decision").fit(d, y).predict_proba(d)
    got = build(name, score_kind="decision").fit(d * scale, y).predict_proba(d * scale)
    np.testing.assert_allclose(got, ref, atol=1e-6)


def test_beta_on_huge_decision_values_is_not_constant(data):
    s, y = data
    d = (s - 0.5) * 1e50
    p = build("beta", score_kind="decision").fit(d, y).predict_proba(d)[:, 1]
    assert np.isfinite(p).all() and p[y == 1].mean() > p[y == 0].mean() + 0.3


def test_dask_weights_of_1e308_give_the_unit_weight_answer(data):
    da = pytest.importorskip("dask.array")
    s, y = data
    S, Y = da.from_array(s, chunks=100), da.from_array(y, chunks=100)
    ref = build("isotonic").fit(S, Y, da.ones(s.size, chunks=100)).predict_proba(s)
    with pytest.warns(UserWarning, match="divided by their largest value"):
        big = build("isotonic").fit(S, Y, da.from_array(np.full(s.size, 1e308), chunks=100))
    np.testing.assert_allclose(big.predict_proba(s), ref)


def test_dask_mbct_refuses_a_class_with_zero_weight(data):
    da = pytest.importorskip("dask.array")
    s, y = data
    X = np.zeros((s.size, 1))
    args = [da.from_array(v, chunks=100) for v in (s, y, np.where(y == 1, 0.0, 1.0))]
    with pytest.raises(ValueError, match="positive class .* zero total weight"):
        build("mbct").fit(*args, X=da.from_array(X, chunks=(100, 1)))


def test_dask_dataframe_with_an_empty_partition(data):
    dd = pytest.importorskip("dask.dataframe")
    s, y = data
    df = dd.from_pandas(pd.DataFrame({"s": s, "y": y}), npartitions=4)
    df = df[df["s"] < 2.0]  # keeps every row
    emptied = df.map_partitions(lambda part: part.iloc[:0] if len(part) and part.index[0] == 0 else part)
    kept = pd.concat([p for p in (part.compute() for part in emptied.to_delayed())])
    cal = build("isotonic").fit(emptied["s"], emptied["y"])
    ref = build("isotonic").fit(ScoreSummary.from_arrays(kept["s"].to_numpy(), kept["y"].to_numpy()))
    np.testing.assert_allclose(cal.predict_proba(s), ref.predict_proba(s))


# scaling-binning's random split draws per row, so dropping rows changes the split itself
@pytest.mark.parametrize("name", [_fast(n) for n in WEIGHTED_1D if n != "scaling_binning"])
def test_rows_of_negligible_relative_weight_act_as_dropped(data, name):
    """Weights of 1e-124 next to weights of 1 (ENIR's group sums by differences of cumulative sums
    lost such a row, then divided by zero)."""
    s, y = data
    w = np.ones(s.size)
    w[::7] = 1e-124
    kept = w == 1.0
    got = build(name).fit(s, y, sample_weight=w).predict_proba(s)
    ref = build(name).fit(s[kept], y[kept]).predict_proba(s)
    check = np.abs(got - ref).mean()
    assert np.isfinite(got).all() and check < 0.02, check


def test_enir_with_a_class_of_tiny_total_weight_fits():
    """A negative of weight 5.9e-220 at score 1 beside a positive of weight 1 (found by the contract
    suite): the likelihood of every model rounded to 0, leaving no model to average."""
    s = np.zeros(32)
    s[8] = 1.0
    y = np.zeros(32, dtype=int)
    y[[1, 22]] = 1
    w = np.zeros(32)
    w[8], w[22] = 5.91071604e-220, 1.0
    p = build("enir").fit(s, y, sample_weight=w).predict_proba(np.array([0.0, 1.0]))
    assert np.isfinite(p).all()


def test_roc_auc_refuses_weights_that_empty_a_class():
    with pytest.raises(ValueError, match="sample_weight gives the positive class .*zero total weight"):
        metrics.roc_auc([0, 1, 0, 0], [0.1, 0.2, 0.3, 0.4], sample_weight=[1.0, 0.0, 1.0, 1.0])


def test_dask_summary_refuses_a_grid_narrower_than_the_data(data):
    da = pytest.importorskip("dask.array")
    s, y = data
    with pytest.raises(ValueError, match="lo=-0.1, hi=0.1 do not enclose the data"):
        ScoreSummary.from_dask(da.from_array(s, chunks=100), da.from_array(y, chunks=100), lo=-0.1, hi=0.1)


@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_dask_mbct_refuses_weights_beyond_the_exact_range(data):
    """Each partition used to be rescaled by its own largest weight (with a warning): partitions
    then weighed against each other wrongly. Now the scale is checked over all partitions, and the
    refusal comes without an overflow warning from numpy (the partitions' sums of 1e308)."""
    da = pytest.importorskip("dask.array")
    s, y = data
    w = np.ones(s.size)
    w[:100] = 1e308
    args = [da.from_array(v, chunks=100) for v in (s, y, w)]
    with pytest.raises(ValueError, match="sample_weight has largest value 1e\\+308.*divide them by their largest"):
        build("mbct").fit(*args, X=da.from_array(np.zeros((s.size, 1)), chunks=(100, 1)))


def test_probabilities_merged_by_the_logit_clip_are_announced():
    """Naive-Bayes-like scores of both classes far below 1e-12 all take the clip's logit: a warning
    says so and names the fix (the log-odds as decision values), which tells them apart; merged
    scores of one class (a classifier's most confident ones) hide no label and pass silently."""
    from scipy.special import expit

    rng = np.random.default_rng(0)
    y = (rng.random(600) < 0.5).astype(int)
    t = np.where(y == 1, rng.normal(-24, 4, 600), rng.normal(-32, 4, 600))
    with pytest.warns(
        UserWarning, match=r"probability score\(s\) of both classes lie strictly within 1e-12.*score_kind='decision'"
    ):
        merged = build("platt").fit(expit(t), y)
    assert np.ptp(merged.predict_proba(expit(np.array([-36.0, -28.0])))[:, 1]) == 0.0
    kept = build("platt", score_kind="decision").fit(t, y)
    assert np.diff(kept.predict_proba(np.array([-36.0, -28.0]))[:, 1])[0] > 0.2
    with warnings.catch_warnings():  # exact 0 and 1, and merged scores of one class, hide no label
        warnings.simplefilter("error")
        build("platt").fit(np.r_[0.0, 1.0, rng.random(50)], np.r_[0, 1, rng.integers(0, 2, 50)])
        build("platt").fit(np.r_[1e-20, 1e-15, 0.0, rng.random(50)], np.r_[0, 0, 0, rng.integers(0, 2, 50)])


def _corrupt(s, y, case):
    """Scores, labels, weights and score kind with a problem spread over several chunks of 100."""
    s, y, w, kind = s.copy(), y.copy(), None, "probability"
    if case == "nan":
        s[[150, 250, 350]] = np.nan
    elif case == "inf":
        s[350] = np.inf
    elif case == "none":
        s = s.astype(object)
        s[[250, 260, 350]] = None
    elif case == "outside":
        s[[5, 300]] = [1.5, -0.2]
    elif case == "above":
        s[200] = 1.5
    elif case == "weights":
        w = np.ones(s.size, dtype=object)
        w[[250, 300]] = None
    elif case == "labels":
        y = y.astype(float)
        y[[120, 320]] = np.nan
    elif case == "scores-before-labels":
        y = y.astype(float)
        y[120] = np.nan
        s[390] = np.nan
    return s, y, w, kind


@pytest.mark.parametrize(
    "case", ["nan", "inf", "none", "outside", "above", "weights", "labels", "scores-before-labels"]
)
def test_dask_chunks_give_the_message_of_the_whole_data(data, case):
    """Counts, first rows and ranges in the messages are the whole data's, as in memory, however
    the problem rows are spread over the chunks; the check that runs first in memory is reported."""
    da = pytest.importorskip("dask.array")
    s, y, w, kind = _corrupt(*data, case)
    with pytest.raises(ValueError) as in_memory:
        ScoreSummary.from_arrays(s, y, w, score_kind=kind)
    chunked = [da.from_array(v, chunks=100) for v in (s, y)] + [None if w is None else da.from_array(w, chunks=100)]
    with pytest.raises(ValueError) as on_dask:
        ScoreSummary.from_dask(*chunked, score_kind=kind)
    assert str(on_dask.value) == str(in_memory.value)
    X = np.zeros((s.size, 1))  # MBCT reads its Dask data partition by partition too
    with pytest.raises(ValueError) as mbct_in_memory:
        build("mbct").fit(s, y, w, X=X)
    with pytest.raises(ValueError) as mbct_on_dask:
        build("mbct").fit(*chunked, X=da.from_array(X, chunks=(100, 1)))
    assert str(mbct_on_dask.value) == str(mbct_in_memory.value) == str(in_memory.value)
