"""Bad-input matrix (issue "Reliability", part 2): every public entry point x every bad input.

Entry points are generated, not listed by hand: ``fit``, ``predict_proba``, ``predict``,
``calibration_map``, ``credible_band`` (and for Bayesian ones ``predict_posterior`` and
``sample_posterior_predictive``) of every registered calibrator, every function of
:mod:`bayescal.metrics`, :mod:`bayescal.decision` and :mod:`bayescal.diagnostics` (from their
``__all__``), and the command line
(``bayescal.cli.main``). Each entry point declares its array arguments by *kind* (scores,
labels, weights, costs); every bad input of that kind is tried on each argument, one at a
time, with every other argument valid (also the settings ``ci_prob``, ``threshold``, costs and
counts such as ``n_thresholds``). Each call must raise ``ValueError`` whose message
names the argument (the CLI: exit code 2 and one line on stderr), and no input may be
modified. ``python tests/test_bad_input_matrix.py`` prints the matrix and its counts.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import numpy as np
import pytest
from _calibrators import build

import bayescal
from bayescal import decision, diagnostics, metrics
from bayescal._registry import get_calibrator_class

N = 60
_rng = np.random.default_rng(7)
S = _rng.random(N)
Y = (_rng.random(N) < S).astype(int)
Y[:2] = [0, 1]
W = _rng.integers(1, 4, N).astype(float)
XF = _rng.integers(0, 3, size=(N, 2))  # features of the feature-aware calibrators

# ---- bad inputs, by kind of argument ---------------------------------------------------------
# name -> (bad value, message fragment besides the argument's name or None)
SCORE_CASES: dict[str, Any] = {
    "nan": np.r_[S[:-1], np.nan],
    "inf": np.r_[S[:-1], np.inf],
    "above_1": np.r_[S[:-1], 1.5],
    "below_0": np.r_[S[:-1], -0.1],
    "two_columns": np.c_[S, S],
    "strings": np.array(["a"] * N),
    "object": np.array([object()] * N, dtype=object),
    "complex": S + 0j,
    "empty": np.array([], dtype=float),
    "scalar": np.float64(0.5),
    "none": None,
}
LABEL_CASES: dict[str, Any] = {
    "three_classes": np.r_[Y[:-1], 2],
    "continuous": np.linspace(0, 1, N),
    "nan": np.r_[Y[:-1].astype(float), np.nan],
    "two_columns": np.c_[Y, Y],
    "complex": Y + 0j,
    "object_none": np.array([*Y[:-1], None], dtype=object),
    "empty": np.array([], dtype=int),
    "none": None,
}
WEIGHT_CASES: dict[str, Any] = {
    "negative": -np.ones(N),
    "nan": np.r_[np.ones(N - 1), np.nan],
    "inf": np.r_[np.ones(N - 1), np.inf],
    "all_zero": np.zeros(N),
    "two_columns": np.c_[W, W],
    "strings": np.array(["a"] * N),
    "complex": W + 0j,
    "empty": np.array([], dtype=float),
}
COST_CASES: dict[str, Any] = {"nan": np.nan, "negative": -1.0, "inf": np.inf, "string": "one", "complex": 1 + 1j}
# cases for arguments that need both classes and a minimum number of samples (fits)
FIT_LABEL_CASES: dict[str, Any] = {"single_class": np.zeros(N, int)}
THRESHOLD_CASES: dict[str, Any] = {"nan": np.nan, "below_0": -0.1, "above_1": 1.5, "string": "half", "complex": 0.5j}
CI_PROB_CASES: dict[str, Any] = {"above_1": 2.0, "zero": 0.0, "nan": np.nan, "string": "x"}
COUNT_CASES: dict[str, Any] = {"zero": 0, "negative": -3, "fraction": 2.5, "string": "ten"}
# a grid of scores: like scores, except that None (the default grid) is legal
GRID_CASES = {k: v for k, v in SCORE_CASES.items() if k not in ("none", "scalar")}
CASES_BY_KIND = {
    "scores": SCORE_CASES,
    "labels": LABEL_CASES,
    "weights": WEIGHT_CASES,
    "cost": COST_CASES,
    "threshold": THRESHOLD_CASES,
    "grid": GRID_CASES,
    "ci_prob": CI_PROB_CASES,
    "count": COUNT_CASES,
}


@dataclass
class Entry:
    """A public entry point: how to call it and the kinds of its arguments."""

    name: str
    call: Callable[[dict], Any]
    args: dict[str, str]  # argument name -> kind
    valid: dict[str, Any]
    extra_cases: list[tuple[str, dict, str]] = field(default_factory=list)  # (case, overrides, named arg)

    def cases(self) -> list[tuple[str, dict, str]]:
        out = []
        for arg, kind in self.args.items():
            for case, value in CASES_BY_KIND[kind].items():
                out.append((f"{arg}={case}", {arg: value}, arg))
        arrays = [a for a, k in self.args.items() if k in ("scores", "labels", "weights")]
        if len(arrays) > 1:  # mismatched lengths: drop the last row of one argument
            first = arrays[0]
            out.append((f"{first}=one_short", {first: self.valid[first][:-1]}, first))
        return out + self.extra_cases


def _copy(v):
    return v.copy() if isinstance(v, np.ndarray) else v


# ---- calibrators -----------------------------------------------------------------------------
# fast settings: tests/_calibrators.py (build)


@cache
def fitted(name: str):
    est = build(name)
    return est.fit(S, Y, X=XF) if est.feature_aware else est.fit(S, Y)


def calibrator_entries() -> list[Entry]:
    entries = []
    for name in bayescal.calibrators():
        cls = get_calibrator_class(name)
        feat = cls.feature_aware

        def do_fit(a, name=name, feat=feat):
            kw = {"X": a["X"]} if feat or a["X"] is not None else {}
            return build(name).fit(a["scores"], a["y"], a["sample_weight"], **kw)

        def do_predict(a, name=name, feat=feat):
            kw = {"X": a["X"]} if feat or a["X"] is not None else {}
            return fitted(name).predict_proba(a["scores"], **kw)

        fit_args = {"scores": "scores", "y": "labels"}
        if cls.supports_weights:
            fit_args["sample_weight"] = "weights"
        k, m = cls._min_per_class, max(cls._min_samples, 2 * cls._min_per_class)
        # one sample short of the minimum (with a minimum of 2 that is a single sample, so the
        # message is about the single class in y)
        short = np.r_[np.zeros(max(m - 1 - k, 0), int), np.ones(min(k, m - 1), int)]
        extra = [
            ("y=single_class", {"y": np.zeros(N, int)}, "y"),
            (
                "too_few_samples",
                {"scores": S[: m - 1], "y": short, "sample_weight": None, "X": XF[: m - 1]},
                name_of(cls) if np.unique(short).size == 2 else "y",
            ),
        ]
        if k > 1:
            extra.append(
                ("too_few_of_one_class", {"y": np.r_[np.zeros(N - k + 1, int), np.ones(k - 1, int)]}, name_of(cls))
            )
        pred_extra = []
        if feat:
            extra += [
                ("X=none", {"X": None}, "X"),
                ("X=one_short", {"X": XF[:-1]}, "X"),
                ("X=nan", {"X": np.r_[XF[:-1], [[np.nan, 0]]]}, "X"),
                ("X=complex", {"X": XF + 0j}, "X"),
            ]
            pred_extra = [
                ("X=none", {"X": None}, "X"),
                ("X=one_short", {"X": XF[:-1]}, "X"),
                ("X=three_columns", {"X": np.c_[XF, XF[:, 0]]}, "X"),
            ]
        else:
            extra.append(("X=given", {"X": XF}, "X"))
            pred_extra.append(("X=given", {"X": XF}, "X"))
        valid = {"scores": S, "y": Y, "sample_weight": W if cls.supports_weights else None, "X": XF if feat else None}
        entries.append(Entry(f"{name}.fit", do_fit, fit_args, valid, extra))
        entries.append(
            Entry(
                f"{name}.predict_proba",
                do_predict,
                {"scores": "scores"},
                {"scores": S, "X": XF if feat else None},
                pred_extra,
            )
        )

        def do_label(a, name=name, feat=feat):
            kw = {"X": XF} if feat else {}
            return fitted(name).predict(a["scores"], a["threshold"], **kw)

        entries.append(
            Entry(
                f"{name}.predict",
                do_label,
                {"scores": "scores", "threshold": "threshold"},
                {"scores": S, "threshold": 0.3},
            )
        )
        if issubclass(cls, bayescal.BayesianCalibrator):
            for method in ("predict_posterior", "sample_posterior_predictive"):
                entries.append(
                    Entry(
                        f"{name}.{method}",
                        lambda a, name=name, m=method: getattr(fitted(name), m)(a["scores"]),
                        {"scores": "scores"},
                        {"scores": S},
                    )
                )
        if not feat:
            entries.append(
                Entry(
                    f"{name}.calibration_map",
                    lambda a, name=name: fitted(name).calibration_map(a["grid"]),
                    {"grid": "grid"},
                    {"grid": S},
                )
            )
            entries.append(
                Entry(
                    f"{name}.credible_band",
                    lambda a, name=name: fitted(name).credible_band(S, ci_prob=a["ci_prob"]),
                    {"ci_prob": "ci_prob"},
                    {"ci_prob": 0.9},
                )
            )
    return entries


def name_of(cls) -> str:
    """Too few samples is a property of the data, not one argument: the message names the method."""
    return cls.__name__


# ---- metrics, decision, diagnostics -----------------------------------------------------------
def _functions(module) -> list[tuple[str, Callable]]:
    return [(n, getattr(module, n)) for n in module.__all__ if inspect.isfunction(getattr(module, n))]


# fast settings for the resampling functions (the matrix checks input handling, not accuracy)
FAST_KW = {
    "mvce": {"n_shuffles": 5, "random_state": 0},
    "consistency_check": {"random_state": 0},
    "ppc_calibration": {"random_state": 0},
    "posterior_predictive_tree": {"random_state": 0},
    "score_density_check": {"random_state": 0},
    "calibration_error_posterior": {"grid_size": 101},
}
# functions that need a calibrator modelling the class score densities
NEEDS_DENSITIES = {"score_density_check"}
# label arguments other than y / y_true (decision.realized_cost's predicted labels)
LABEL_ARGS = {"y_true", "y", "y_pred"}
# integer settings (number of thresholds, bins, replicates) of the decision and diagnostics functions
# (valid value: the default, or a small one where the default is slow)
COUNT_ARGS = {"n_thresholds": None, "n_replicates": 20, "min_replicates": 20, "points_per_bin": None}
SCORE_ARGS = {"y_prob", "scores"}


def function_entries() -> list[Entry]:
    entries = []
    for module in (metrics, decision, diagnostics):
        for fname, fn in _functions(module):
            sig = inspect.signature(fn)
            params = sig.parameters
            args: dict[str, str] = {}
            valid: dict[str, Any] = {}
            for p in params:
                if p in SCORE_ARGS:
                    args[p], valid[p] = "scores", S
                elif p in LABEL_ARGS and not (p == "y_pred" and params[p].default is None):
                    args[p], valid[p] = "labels", (Y if p != "y_pred" else (S > 0.5).astype(int))
                elif p == "sample_weight":
                    args[p], valid[p] = "weights", W
                elif p in ("cost_fp", "cost_fn"):
                    args[p], valid[p] = "cost", 1.0
                elif p == "ci_prob":
                    args[p], valid[p] = "ci_prob", 0.9
                elif p in COUNT_ARGS:
                    args[p], valid[p] = "count", COUNT_ARGS[p] or params[p].default
            if not args:
                continue
            takes_cal = "calibrator" in params
            kw = FAST_KW.get(fname, {})

            def call(a, fn=fn, takes_cal=takes_cal, kw=kw, fname=fname):
                pre = (fitted("dpm" if fname in NEEDS_DENSITIES else "platt"),) if takes_cal else ()
                return fn(*pre, **a, **kw)

            extra = []
            if fname == "roc_auc":  # AUC needs both classes
                extra.append(("y_true=single_class", {"y_true": np.zeros(N, int)}, "y_true"))
            entries.append(Entry(f"{module.__name__.split('.')[-1]}.{fname}", call, args, valid, extra))
    return entries


ENTRIES = calibrator_entries() + function_entries()
MATRIX = [(e, case, over, named) for e in ENTRIES for case, over, named in e.cases()]

# The bugs this matrix found (string / complex settings reaching float() without the
# argument's name, unchecked ci_prob and n_thresholds in decision.py, realized_cost calling
# y_true 'y') were fixed in 1b14e3f; every case now passes.
MATRIX_IDS = [f"{e.name}-{c}" for e, c, _, _ in MATRIX]


@pytest.mark.parametrize("entry, case, overrides, named", MATRIX, ids=MATRIX_IDS)
def test_bad_input_raises_value_error_naming_the_argument(entry, case, overrides, named):
    kwargs = {**entry.valid, **overrides}
    before = {k: _copy(v) for k, v in kwargs.items()}
    with pytest.raises(ValueError) as info:
        entry.call(kwargs)
    message = str(info.value)
    assert named in message, f"{entry.name} with {case}: message does not name {named!r}: {message}"
    for k, v in kwargs.items():  # inputs left unmodified
        if isinstance(v, np.ndarray):
            assert v.dtype == before[k].dtype
            np.testing.assert_array_equal(v, before[k])


@pytest.mark.parametrize("entry", ENTRIES, ids=[e.name for e in ENTRIES])
def test_valid_input_is_accepted(entry):
    """The baseline every bad case departs from is itself legal (so each case tests one fault),
    and a successful call leaves its inputs unmodified too."""
    kwargs = dict(entry.valid)
    before = {k: _copy(v) for k, v in kwargs.items()}
    entry.call(kwargs)
    for k, v in kwargs.items():
        if isinstance(v, np.ndarray):
            np.testing.assert_array_equal(v, before[k])


# ---- the command line -------------------------------------------------------------------------
CLI_SCORE_CASES = {
    "nan": ("", "NaN"),
    "inf": ("inf", "infinite"),
    "above_1": ("1.5", r"outside \[0, 1\]"),
    "below_0": ("-0.1", r"outside \[0, 1\]"),
    "string": ("abc", "non-numeric"),
    "complex": ("1+2j", "non-numeric"),
}
CLI_LABEL_CASES = {"three_classes": ("2", "binary"), "continuous": ("0.5", "continuous"), "nan": ("", "NaN|missing")}


def _write_csv(path, s, y):
    lines = ["s,y"] + [f"{a},{b}" for a, b in zip(s, y)]
    path.write_text("\n".join(lines) + "\n")


def _cli_cases(tmp_path):
    """(case, argv, expected fragment): each CSV holds one bad value or a bad shape."""
    good = tmp_path / "good.csv"
    _write_csv(good, S, Y)
    out = []
    for case, (bad, frag) in CLI_SCORE_CASES.items():
        p = tmp_path / f"s_{case}.csv"
        _write_csv(p, [*S[:-1], bad], Y)
        out.append(
            (
                f"fit-scores={case}",
                ["fit", str(p), "--score", "s", "--label", "y", "--method", "platt"],
                "column .s.*" + frag,
            )
        )
        out.append(
            (
                f"apply-scores={case}",
                ["apply", str(tmp_path / "model.nc"), str(p), "--score", "s", "--out", str(tmp_path / "o.csv")],
                "column .s.*" + frag,
            )
        )
    for case, (bad, frag) in CLI_LABEL_CASES.items():
        p = tmp_path / f"y_{case}.csv"
        _write_csv(p, S, [*Y[:-1], bad])
        out.append(
            (f"fit-y={case}", ["fit", str(p), "--score", "s", "--label", "y", "--method", "platt"], "y.*" + frag)
        )
    single = tmp_path / "single.csv"
    _write_csv(single, S, np.zeros(N, int))
    out.append(
        (
            "fit-y=single_class",
            ["fit", str(single), "--score", "s", "--label", "y", "--method", "platt"],
            "single class",
        )
    )
    empty = tmp_path / "empty.csv"
    empty.write_text("s,y\n")
    out.append(("fit-empty", ["fit", str(empty), "--score", "s", "--label", "y", "--method", "platt"], "empty"))
    one = tmp_path / "one.csv"
    _write_csv(one, S[:1], Y[1:2])
    out.append(
        ("fit-too_few", ["fit", str(one), "--score", "s", "--label", "y", "--method", "platt"], "single class|at least")
    )
    out.append(("fit-missing_column", ["fit", str(good), "--score", "nope", "--label", "y"], "nope"))
    out.append(("fit-unknown_method", ["fit", str(good), "--score", "s", "--label", "y", "--method", "nope"], "nope"))
    out.append(
        ("fit-feature_aware", ["fit", str(good), "--score", "s", "--label", "y", "--method", "mbct"], "features")
    )
    out.append(("fit-no_file", ["fit", str(tmp_path / "absent.csv"), "--score", "s", "--label", "y"], "absent"))
    report = ["report", "--score", "s", "--label", "y", "--methods", "platt", "--out", str(tmp_path / "r.html")]
    out.append(("report-y=three_classes", [*report, str(tmp_path / "y_three_classes.csv")], "y.*binary"))
    out.append(("report-test_size=1.5", [*report, str(good), "--test-size", "1.5"], "test.size"))
    out.append(("report-cost_fp=-1", [*report, str(good), "--cost-fp", "-1"], "cost.fp"))
    out.append(
        (
            "report-methods=nope",
            [*report[:-4], "--methods", "nope", "--out", str(tmp_path / "r.html"), str(good)],
            "nope",
        )
    )
    out.append(
        (
            "apply-not_a_model",
            ["apply", str(good), str(good), "--score", "s", "--out", str(tmp_path / "o.csv")],
            "good.csv",
        )
    )
    return good, out


CLI_CASE_COUNT = len(CLI_SCORE_CASES) * 2 + len(CLI_LABEL_CASES) + 12


def test_cli_rejects_every_bad_input_with_exit_code_2_and_one_line(tmp_path, capsys):
    import re

    from bayescal.cli import main

    good, cases = _cli_cases(tmp_path)
    assert len(cases) == CLI_CASE_COUNT
    assert (
        main(
            ["fit", str(good), "--score", "s", "--label", "y", "--method", "platt", "--out", str(tmp_path / "model.nc")]
        )
        == 0
    )
    capsys.readouterr()
    for case, argv, fragment in cases:
        before = {p: p.read_bytes() for p in tmp_path.glob("*.csv")}
        assert main(argv) == 2, case
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0, f"{case}: not one line: {err}"
        assert err.startswith("bayescal: error:") and re.search(fragment, err), f"{case}: {err}"
        assert {p: p.read_bytes() for p in tmp_path.glob("*.csv")} == before, f"{case} modified an input file"


def test_cli_report_names_the_score_column(tmp_path, capsys):
    from bayescal.cli import main

    data = tmp_path / "d.csv"
    _write_csv(data, [*S[:-1], ""], Y)
    assert (
        main(
            [
                "report",
                str(data),
                "--score",
                "s",
                "--label",
                "y",
                "--methods",
                "platt",
                "--out",
                str(tmp_path / "r.html"),
            ]
        )
        == 2
    )
    err = capsys.readouterr().err.strip()
    assert "NaN" in err and ("'s'" in err or "scores" in err), err


def matrix_counts() -> dict[str, int]:
    counts: dict[str, int] = {}
    for e, *_ in MATRIX:
        counts[e.name] = counts.get(e.name, 0) + 1
    counts["cli.main"] = CLI_CASE_COUNT + 1
    return counts


if __name__ == "__main__":  # print the matrix for the report
    counts = matrix_counts()
    for name, n in counts.items():
        print(f"{name:<45} {n:>3}")
    print(f"{'total':<45} {sum(counts.values()):>3} cases over {len(counts)} entry points", file=sys.stdout)
