"""The command line on real CSV and Parquet files, including each bad-input case."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import bayescal
from bayescal.cli import main


@pytest.fixture
def files(tmp_path):
    rng = np.random.default_rng(3)
    s = rng.random(800)
    y = (rng.random(800) < s**2).astype(int)
    frame = pd.DataFrame({"score": s, "label": y, "word": np.where(y == 1, "yes", "no")})
    csv, parquet = tmp_path / "d.csv", tmp_path / "d.parquet"
    frame.to_csv(csv, index=False)
    frame.to_parquet(parquet)
    return frame, csv, parquet


def test_fit_then_apply_matches_the_library(files, tmp_path, capsys):
    frame, csv, parquet = files
    model, out = tmp_path / "m.nc", tmp_path / "out.parquet"
    assert (
        main(["fit", str(csv), "--score", "score", "--label", "label", "--method", "isotonic", "--out", str(model)])
        == 0
    )
    assert main(["apply", str(model), str(parquet), "--score", "score", "--out", str(out)]) == 0
    got = pd.read_parquet(out)["p_calibrated"].to_numpy()
    want = bayescal.make_calibrator("isotonic").fit(frame["score"], frame["label"]).predict_proba(frame["score"])[:, 1]
    np.testing.assert_allclose(got, want, atol=1e-12)


def test_glob_and_dask_route_agree_with_pandas(files, tmp_path):
    frame, _, _ = files
    frame.iloc[:400].to_csv(tmp_path / "part-1.csv", index=False)
    frame.iloc[400:].to_csv(tmp_path / "part-2.csv", index=False)
    a, b = tmp_path / "a.nc", tmp_path / "b.nc"
    common = ["--score", "score", "--label", "label", "--method", "platt"]
    assert main(["fit", str(tmp_path / "part-*.csv"), *common, "--out", str(a)]) == 0
    assert main(["fit", str(tmp_path / "part-*.csv"), *common, "--out", str(b), "--dask-above", "0"]) == 0
    q = np.linspace(0.05, 0.95, 7)
    np.testing.assert_allclose(bayescal.load(a).predict_proba(q), bayescal.load(b).predict_proba(q), atol=5e-3)


def test_pos_label_words(files, tmp_path):
    _, csv, _ = files
    model = tmp_path / "m.nc"
    assert (
        main(
            [
                "fit",
                str(csv),
                "--score",
                "score",
                "--label",
                "word",
                "--pos-label",
                "yes",
                "--method",
                "platt",
                "--out",
                str(model),
            ]
        )
        == 0
    )
    assert list(bayescal.load(model).classes_) == ["no", "yes"]


@pytest.mark.parametrize(
    ("column", "values", "pos_label", "positive"),
    [
        ("flag", (False, True), "False", False),
        ("flag", (False, True), "true", True),
        ("code", (0.0, 1.0), "1.0", 1.0),
        ("code", (0.0, 1.0), "0", 0.0),
        ("level", (1, 2), "1", 1),
    ],
)
def test_pos_label_is_read_by_the_label_column_type(tmp_path, column, values, pos_label, positive):
    """Boolean and float label columns take --pos-label as their own values (it was read as an
    integer or as text, so True and 1.0 were 'not one of the values in y')."""
    rng = np.random.default_rng(4)
    s = rng.random(400)
    y = rng.random(400) < s
    csv, model = tmp_path / "d.csv", tmp_path / "m.nc"
    pd.DataFrame({"score": s, column: np.where(y, values[1], values[0])}).to_csv(csv, index=False)
    args = ["fit", str(csv), "--score", "score", "--label", column, "--pos-label", pos_label, "--method", "platt"]
    assert main([*args, "--out", str(model)]) == 0
    fitted = bayescal.load(model)
    assert fitted.classes_[1] == positive
    # the positive class's probability rises with the score when it is the class the scores track
    p = fitted.predict_proba(np.array([0.1, 0.9]))[:, 1]
    assert (p[1] > p[0]) == (positive == values[1])


def test_a_pos_label_that_the_label_column_cannot_hold_is_refused(tmp_path, capsys):
    csv = tmp_path / "d.csv"
    pd.DataFrame({"score": [0.1, 0.4, 0.6, 0.9], "flag": [False, False, True, True]}).to_csv(csv, index=False)
    args = ["fit", str(csv), "--score", "score", "--label", "flag", "--pos-label", "yes", "--method", "platt"]
    assert main([*args, "--out", str(tmp_path / "m.nc")]) != 0
    assert "--pos-label true or false" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["fit", "{csv}", "--score", "nope", "--label", "label"], "missing column(s) ['nope']"),
        (["fit", "{dir}/absent.csv", "--score", "score", "--label", "label"], "no such file"),
        (["fit", "{dir}/none-*.csv", "--score", "score", "--label", "label"], "no file matches"),
        (["fit", "{txt}", "--score", "score", "--label", "label"], "unsupported file type"),
        (["fit", "{bad}", "--score", "score", "--label", "label"], "could not read"),
        (["fit", "{csv}", "--score", "score", "--label", "score"], "continuous"),
        (["fit", "{csv}", "--score", "score", "--label", "label", "--method", "nope"], "Unknown calibrator 'nope'"),
        (["fit", "{csv}", "--score", "word", "--label", "label", "--method", "platt"], "non-numeric"),
        (["apply", "{dir}/absent.nc", "{csv}", "--score", "score", "--out", "{dir}/o.csv"], "No file at"),
    ],
)
def test_bad_input_is_one_line_and_nonzero(files, tmp_path, capsys, argv, message):
    _, csv, _ = files
    (tmp_path / "t.txt").write_text("x")
    (tmp_path / "bad.parquet").write_bytes(b"not parquet")
    subs = {"csv": str(csv), "dir": str(tmp_path), "txt": str(tmp_path / "t.txt"), "bad": str(tmp_path / "bad.parquet")}
    code = main([a.format(**subs) for a in argv])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert err.startswith("bayescal: error:") and "\n" not in err and "Traceback" not in err
    assert any(m in err for m in message.split("|")), err


def test_debug_shows_the_traceback(files):
    _, csv, _ = files
    with pytest.raises(ValueError, match="missing column"):
        main(["--debug", "fit", str(csv), "--score", "nope", "--label", "label"])


def test_report_is_one_self_contained_page(files, tmp_path):
    _, csv, _ = files
    out = tmp_path / "report.html"
    assert (
        main(
            [
                "report",
                str(csv),
                "--score",
                "score",
                "--label",
                "label",
                "--methods",
                "isotonic",
                "platt",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    page = out.read_text()
    assert page.count("data:image/png;base64,") == 3  # reliability, PPC, decision regions
    assert "<td>uncalibrated</td>" in page and "<td>isotonic</td>" in page and "<td>platt</td>" in page
    assert "src='http" not in page and 'src="http' not in page


def test_report_of_decision_values(files, tmp_path):
    # raw margins are no probabilities: the report draws the calibrators' maps over their range
    frame, _, _ = files
    margins = tmp_path / "m.csv"
    s = frame["score"].clip(0.01, 0.99)
    frame.assign(margin=np.log(s / (1 - s))).to_csv(margins, index=False)
    out = tmp_path / "report.html"
    args = ["report", str(margins), "--score", "margin", "--label", "label", "--score-kind", "decision"]
    assert main([*args, "--methods", "platt", "isotonic", "--out", str(out)]) == 0
    page = out.read_text()
    assert page.count("data:image/png;base64,") == 3 and "<td>platt</td>" in page
    assert "<td>uncalibrated</td>" not in page  # margins have no calibration error of their own


def test_parquet_index_is_kept_as_a_column(files, tmp_path):
    # a frame written with its id as the pandas index: apply keeps it, as it keeps every column
    frame, csv, _ = files
    indexed = tmp_path / "indexed.parquet"
    frame.assign(id=np.arange(len(frame)) * 7).set_index("id").to_parquet(indexed)
    model, out = tmp_path / "m.nc", tmp_path / "o.parquet"
    assert (
        main(["fit", str(csv), "--score", "score", "--label", "label", "--method", "platt", "--out", str(model)]) == 0
    )
    assert main(["apply", str(model), str(indexed), "--score", "score", "--out", str(out)]) == 0
    written = pd.read_parquet(out)
    assert list(written.columns) == ["id", "score", "label", "word", "p_calibrated"]
    np.testing.assert_array_equal(written["id"], np.arange(len(frame)) * 7)
    # read with Dask (above --dask-above) the same file fits as well
    fit = ["fit", str(indexed), "--score", "score", "--label", "label", "--method", "platt"]
    assert main([*fit, "--dask-above", "0", "--out", str(tmp_path / "m2.nc")]) == 0


def test_demo_does_not_replace_files_without_force(tmp_path, monkeypatch, capsys):
    from bayescal.cli import run_demo

    monkeypatch.setattr(bayescal, "calibrators", lambda: ["platt"])
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "metrics.csv").write_text("my own results")
    assert main(["demo", "--out", str(mine)]) == 2
    assert "already exists: pass --force" in capsys.readouterr().err
    assert (mine / "metrics.csv").read_text() == "my own results" and not (mine / "reliability.png").exists()
    run_demo(mine, force=True, verbose=False)
    assert (mine / "metrics.csv").read_text().startswith("calibrator,")


def test_report_rejects_a_feature_aware_method(files, tmp_path, capsys):
    _, csv, _ = files
    code = main(
        [
            "report",
            str(csv),
            "--score",
            "score",
            "--label",
            "label",
            "--methods",
            "mbct",
            "--out",
            str(tmp_path / "r.html"),
        ]
    )
    assert code == 2 and "needs features" in capsys.readouterr().err


def test_progress_reports_each_step_on_stderr(files, tmp_path, capsys):
    _, csv, _ = files
    model = tmp_path / "m.nc"
    assert (
        main(
            [
                "--progress",
                "always",
                "fit",
                str(csv),
                "--score",
                "score",
                "--label",
                "label",
                "--method",
                "isotonic",
                "--out",
                str(model),
            ]
        )
        == 0
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert [line.split("]")[0] for line in err] == ["[1/3", "[2/3", "[3/3"]
    assert "fitting isotonic" in err[1] and all(line.endswith(" s") for line in err)
    assert (
        main(
            ["--progress", "never", "apply", str(model), str(csv), "--score", "score", "--out", str(tmp_path / "o.csv")]
        )
        == 0
    )
    assert capsys.readouterr().err == ""


def test_progress_marks_the_failed_step(files, capsys):
    _, csv, _ = files
    code = main(["--progress", "always", "fit", str(csv), "--score", "score", "--label", "score"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err[-2].endswith("failed") and err[-1].startswith("bayescal: error:")


# ---- no lost files (issue 16, item 1) ----------------------------------------------------------
def _fit_args(data, out, *extra):
    return ["fit", str(data), "--score", "score", "--label", "label", "--method", "platt", "--out", str(out), *extra]


def test_fit_never_writes_over_its_input_even_with_force(files, tmp_path, capsys):
    _, csv, _ = files
    before = csv.read_bytes()
    (tmp_path / "sub").mkdir()
    (tmp_path / "alias.csv").symlink_to(csv)
    import os

    os.link(csv, tmp_path / "hard.csv")
    for out in (csv, tmp_path / "sub" / ".." / "d.csv", tmp_path / "alias.csv", tmp_path / "hard.csv"):
        for force in ([], ["--force"]):
            assert main(_fit_args(csv, out, *force)) == 2
            err = capsys.readouterr().err
            assert "never writes over its input" in err, err
    assert csv.read_bytes() == before


def test_apply_never_writes_over_its_input_or_model(files, tmp_path, capsys):
    _, csv, _ = files
    model = tmp_path / "m.nc"
    assert main(_fit_args(csv, model)) == 0
    before, model_before = csv.read_bytes(), model.read_bytes()
    for out in (csv, model):
        assert main(["apply", str(model), str(csv), "--score", "score", "--out", str(out), "--force"]) == 2
        assert "never writes over its input" in capsys.readouterr().err
    assert csv.read_bytes() == before and model.read_bytes() == model_before


def test_existing_outputs_need_force(files, tmp_path, capsys):
    frame, csv, _ = files
    model, out = tmp_path / "m.nc", tmp_path / "o.csv"
    assert main(_fit_args(csv, model)) == 0
    first = model.read_bytes()
    flipped = tmp_path / "flipped.csv"
    frame.assign(label=1 - frame["label"]).to_csv(flipped, index=False)
    assert main(_fit_args(flipped, model)) == 2
    assert "already exists: pass --force" in capsys.readouterr().err
    assert model.read_bytes() == first
    assert main(_fit_args(flipped, model, "--force")) == 0
    assert bayescal.load(model).predict_proba([0.9])[0, 1] < 0.5  # the flipped labels' model replaced it
    out.write_text("keep me")
    assert main(["apply", str(model), str(csv), "--score", "score", "--out", str(out)]) == 2
    assert "already exists: pass --force" in capsys.readouterr().err and out.read_text() == "keep me"
    assert main(["apply", str(model), str(csv), "--score", "score", "--out", str(out), "--force"]) == 0
    assert "p_calibrated" in pd.read_csv(out).columns
    report = tmp_path / "r.html"
    report.write_text("keep me")
    assert (
        main(["report", str(csv), "--score", "score", "--label", "label", "--methods", "platt", "--out", str(report)])
        == 2
    )
    assert report.read_text() == "keep me"


def test_an_interrupted_write_leaves_no_file(files, tmp_path, monkeypatch, capsys):
    _, csv, _ = files
    model = tmp_path / "m.nc"
    assert main(_fit_args(csv, model)) == 0
    good = model.read_bytes()

    def crash(self, path, *args, **kwargs):
        with open(path, "wb") as f:
            f.write(b"half a file")
        raise OSError("No space left on device")

    monkeypatch.setattr(pd.DataFrame, "to_csv", crash)
    out = tmp_path / "o.csv"
    assert main(["apply", str(model), str(csv), "--score", "score", "--out", str(out)]) == 2
    assert "No space left" in capsys.readouterr().err
    import xarray as xr

    monkeypatch.setattr(xr.DataTree, "to_netcdf", crash)
    assert main(_fit_args(csv, model, "--force")) == 2
    assert model.read_bytes() == good
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.csv", "d.parquet", "m.nc"]


def test_a_folder_given_as_data_is_called_a_folder(files, tmp_path, capsys):
    assert main(["fit", str(tmp_path), "--score", "score", "--label", "label"]) == 2
    err = capsys.readouterr().err
    assert "is a folder" in err and "*.csv" in err and "no such file" not in err


# ---- a command line fit for production (issue 17, item 5) --------------------------------------
def test_same_seed_same_model(files, tmp_path):
    _, csv, _ = files
    small = ["--param", "draws=40", "--param", "tune=40", "--param", "n_components=4"]
    a, b, c = tmp_path / "a.nc", tmp_path / "b.nc", tmp_path / "c.nc"
    for out, seed in ((a, "0"), (b, "0"), (c, "1")):
        assert (
            main(
                [
                    "fit",
                    str(csv),
                    "--score",
                    "score",
                    "--label",
                    "label",
                    "--method",
                    "dpm",
                    "--seed",
                    seed,
                    *small,
                    "--out",
                    str(out),
                ]
            )
            == 0
        )
    q = np.linspace(0.01, 0.99, 25)
    pa, pb, pc = (bayescal.load(m).predict_proba(q)[:, 1] for m in (a, b, c))
    np.testing.assert_array_equal(pa, pb)
    assert not np.array_equal(pa, pc)
    assert bayescal.load(a).get_params()["draws"] == 40


def test_params_are_parsed_and_checked(files, tmp_path, capsys):
    _, csv, _ = files
    model = tmp_path / "m.nc"
    assert (
        main(
            [
                "fit",
                str(csv),
                "--score",
                "score",
                "--label",
                "label",
                "--method",
                "histogram",
                "--param",
                "n_bins=5",
                "--param",
                "strategy=uniform",
                "--out",
                str(model),
            ]
        )
        == 0
    )
    params = bayescal.load(model).get_params()
    assert params["n_bins"] == 5 and isinstance(params["n_bins"], int) and params["strategy"] == "uniform"
    assert (
        main(
            [
                "fit",
                str(csv),
                "--score",
                "score",
                "--label",
                "label",
                "--method",
                "histogram",
                "--param",
                "bins=5",
                "--out",
                str(tmp_path / "x.nc"),
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "no parameter 'bins'" in err and "'n_bins'" in err and "'strategy'" in err
    assert (
        main(
            [
                "fit",
                str(csv),
                "--score",
                "score",
                "--label",
                "label",
                "--method",
                "histogram",
                "--param",
                "n_bins",
                "--out",
                str(tmp_path / "x.nc"),
            ]
        )
        == 2
    )
    assert "NAME=VALUE" in capsys.readouterr().err
    assert not (tmp_path / "x.nc").exists()


def test_text_labels_need_pos_label_and_every_command_names_the_positive_class(files, tmp_path, capsys):
    frame, _, _ = files
    words = tmp_path / "w.csv"
    frame.assign(label=np.where(frame["label"] == 1, "fraud", "ok")).to_csv(words, index=False)
    model = tmp_path / "m.nc"
    assert main(_fit_args(words, model)) == 2
    err = capsys.readouterr().err
    assert "--pos-label" in err and "'fraud'" in err and "'ok'" in err
    assert main(_fit_args(words, model, "--pos-label", "fraud")) == 0
    assert "positive class: 'fraud'" in capsys.readouterr().out
    assert list(bayescal.load(model).classes_) == ["ok", "fraud"]
    assert main(["apply", str(model), str(words), "--score", "score", "--out", str(tmp_path / "o.csv")]) == 0
    assert "positive class: 'fraud'" in capsys.readouterr().out
    assert (
        main(
            [
                "report",
                str(words),
                "--score",
                "score",
                "--label",
                "label",
                "--methods",
                "platt",
                "--pos-label",
                "fraud",
                "--out",
                str(tmp_path / "r.html"),
            ]
        )
        == 0
    )
    assert "positive class: 'fraud'" in capsys.readouterr().out
    numeric = tmp_path / "m2.nc"
    assert main(_fit_args(files[1], numeric)) == 0
    assert "positive class: 1" in capsys.readouterr().out


def test_apply_keeps_every_column_and_adds_a_band(files, tmp_path):
    frame, csv, _ = files
    model, out = tmp_path / "m.nc", tmp_path / "o.parquet"
    assert (
        main(
            [
                "fit",
                str(csv),
                "--score",
                "score",
                "--label",
                "label",
                "--method",
                "dpm",
                "--seed",
                "0",
                "--param",
                "draws=40",
                "--param",
                "tune=40",
                "--param",
                "n_components=4",
                "--out",
                str(model),
            ]
        )
        == 0
    )
    assert main(["apply", str(model), str(csv), "--score", "score", "--band", "0.9", "--out", str(out)]) == 0
    got = pd.read_parquet(out)
    assert list(got.columns) == ["score", "label", "word", "p_calibrated", "p_lower", "p_upper"]
    pd.testing.assert_frame_equal(got[["score", "label", "word"]], frame)
    assert (got["p_lower"] <= got["p_calibrated"] + 1e-12).all() and (
        got["p_calibrated"] <= got["p_upper"] + 1e-12
    ).all()
    assert (got["p_upper"] - got["p_lower"]).mean() > 0.01
    draws = bayescal.load(model).predict_posterior(frame["score"].to_numpy()[:5]).values.reshape(-1, 5)
    np.testing.assert_allclose(got["p_lower"][:5], np.quantile(draws, 0.05, axis=0), atol=1e-12)


def test_stdin_and_stdout(files, tmp_path, monkeypatch, capsys):
    import io

    frame, csv, _ = files
    model = tmp_path / "m.nc"
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(csv.read_bytes())))
    assert main(["fit", "-", "--score", "score", "--label", "label", "--method", "isotonic", "--out", str(model)]) == 0
    capsys.readouterr()
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(csv.read_bytes())))
    assert main(["apply", str(model), "-", "--score", "score", "--out", "-"]) == 0
    captured = capsys.readouterr()
    got = pd.read_csv(io.StringIO(captured.out))
    want = bayescal.make_calibrator("isotonic").fit(frame["score"], frame["label"]).predict_proba(frame["score"])[:, 1]
    np.testing.assert_allclose(got["p_calibrated"], want, atol=1e-12)
    assert "positive class: 1" in captured.err  # messages go to stderr when the data go to stdout


def test_version_and_defaults_in_help(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0 and capsys.readouterr().out.strip() == f"bayescal {bayescal.__version__}"
    with pytest.raises(SystemExit):
        main(["fit", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "(default: dpm)" in text and "(default: model.nc)" in text and "(default: probability)" in text


# ---- the demo tells the truth (issue 17, item 6) -------------------------------------------------
def test_demo_names_its_ece_and_explains_the_monotone_failure(tmp_path, monkeypatch, capsys):
    from bayescal.cli import run_demo

    monkeypatch.setattr(bayescal, "calibrators", lambda: ["isotonic", "platt", "kde"])
    table = run_demo(tmp_path / "demo")
    text = capsys.readouterr().out
    assert {"uncalibrated", "isotonic", "platt", "kde"} == set(table)  # whatever the registry lists
    assert "ece_papers" in text and "ece_eqmass" in text and "ties ordered by label" in text
    assert "not\nmonotone" in text and "density" in text
    iso = table["isotonic"]
    assert iso["ece_eqmass"] < iso["ece_papers"]  # the papers' grouping splits isotonic's tied predictions
    assert table["kde"]["brier"] < iso["brier"]  # a density ratio follows the U-shaped map; isotonic cannot
    assert (tmp_path / "demo" / "metrics.csv").read_text().startswith("calibrator,ece_papers,ece_eqmass")


def _platt_model(files, tmp_path):
    _, csv, _ = files
    model = tmp_path / "m.nc"
    assert main(_fit_args(csv, model)) == 0
    return model


def _error(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert err.startswith("bayescal: error:") and "Traceback" not in err, err
    return err


def test_apply_refuses_a_column_name_that_the_band_or_nothing_would_take(files, tmp_path, capsys):
    """--column p_upper with --band would be overwritten by the band's upper bound, and an empty
    --column makes a nameless column: both refused before anything is read or written."""
    _, csv, _ = files
    model = _platt_model(files, tmp_path)
    out = tmp_path / "o.csv"
    for column in ("p_upper", "p_lower"):
        assert (
            main(
                [
                    "apply",
                    str(model),
                    str(csv),
                    "--score",
                    "score",
                    "--column",
                    column,
                    "--band",
                    "0.5",
                    "--out",
                    str(out),
                ]
            )
            == 2
        )
        assert "--band writes p_lower and p_upper" in _error(capsys)
    assert main(["apply", str(model), str(csv), "--score", "score", "--column", " ", "--out", str(out)]) == 2
    assert "--column is empty" in _error(capsys)
    assert not out.exists()


def test_apply_keeps_the_input_columns_as_written(files, tmp_path):
    """Columns passed through are the text of the CSV: a zip code keeps its leading zero, the
    country code NA (Namibia) and an empty cell stay what they were; the scores are numbers."""
    model = _platt_model(files, tmp_path)
    data = tmp_path / "keep.csv"
    data.write_text("zip,country,note,score\n02134,NA,,0.25\n10001,US,x,0.75\n")
    out = tmp_path / "o.csv"
    assert main(["apply", str(model), str(data), "--score", "score", "--out", str(out)]) == 0
    lines = out.read_text().splitlines()
    assert lines[0] == "zip,country,note,score,p_calibrated"
    assert lines[1].startswith("02134,NA,,0.25,") and lines[2].startswith("10001,US,x,0.75,")
    want = bayescal.load(model).predict_proba(np.array([0.25, 0.75]))[:, 1]
    np.testing.assert_allclose(pd.read_csv(out)["p_calibrated"].to_numpy(), want, rtol=1e-12)


def test_apply_names_a_score_that_is_no_number_or_out_of_range(files, tmp_path, capsys):
    model = _platt_model(files, tmp_path)
    bad = tmp_path / "bad.csv"
    bad.write_text("id,score\n1,0.5\n2,oops\n")
    assert main(["apply", str(model), str(bad), "--score", "score", "--out", str(tmp_path / "o.csv")]) == 2
    assert "column 'score' has non-numeric text ('oops' in data row 2)" in _error(capsys)
    bad.write_text("id,score\n1,0.5\n2,\n")
    assert main(["apply", str(model), str(bad), "--score", "score", "--out", str(tmp_path / "o.csv")]) == 2
    assert "column 'score' has 1 NaN" in _error(capsys)
    bad.write_text("id,score\n1,0.5\n2,3.5\n")
    assert main(["apply", str(model), str(bad), "--score", "score", "--out", str(tmp_path / "o.csv")]) == 2
    err = _error(capsys)
    assert "column 'score' has 1 value(s) outside [0, 1]" in err and "fitted on probabilities" in err
    assert "score_kind=" not in err


def test_a_file_whose_name_looks_like_a_glob_is_read_as_written(files, tmp_path):
    """run[1].csv is that file, not the glob that matches run1.csv."""
    frame, _, _ = files
    model = _platt_model(files, tmp_path)
    frame.iloc[:10].to_csv(tmp_path / "run[1].csv", index=False)
    frame.iloc[10:13].to_csv(tmp_path / "run1.csv", index=False)
    out = tmp_path / "o.csv"
    assert main(["apply", str(model), str(tmp_path / "run[1].csv"), "--score", "score", "--out", str(out)]) == 0
    assert len(pd.read_csv(out)) == 10


def test_apply_names_the_file_that_lacks_the_score_column(files, tmp_path, capsys):
    frame, csv, _ = files
    model = _platt_model(files, tmp_path)
    other = tmp_path / "other.csv"
    frame.rename(columns={"score": "Score"}).to_csv(other, index=False)
    assert main(["apply", str(model), str(csv), str(other), "--score", "score", "--out", str(tmp_path / "o.csv")]) == 2
    err = _error(capsys)
    assert str(other) in err and "missing column(s) ['score']" in err


def test_cheap_checks_come_before_the_fits(files, tmp_path, capsys, monkeypatch):
    """An output in a folder that does not exist, a negative cost or a test share outside (0, 1)
    is refused before any calibrator is fitted."""
    from bayescal.baselines.platt import PlattScaling

    _, csv, _ = files

    def no_fit(*args, **kwargs):
        raise AssertionError("fitted before the arguments were checked")

    monkeypatch.setattr(PlattScaling, "fit", no_fit)
    assert main(_fit_args(csv, tmp_path / "nodir" / "m.nc")) == 2
    assert "the folder" in _error(capsys) and not (tmp_path / "nodir").exists()
    report = ["report", str(csv), "--score", "score", "--label", "label", "--methods", "platt", "--out"]
    for extra, message in (
        (["--cost-fp", "-1"], "--cost-fp -1: a cost is a finite number >= 0"),
        (["--cost-fn", "nan"], "--cost-fn nan"),
        (["--cost-fp", "0", "--cost-fn", "0"], "both 0"),
        (["--test-size", "0"], "--test-size 0"),
        (["--test-size", "1.5"], "--test-size 1.5"),
    ):
        assert main([*report, str(tmp_path / "r.html"), *extra]) == 2
        assert message in _error(capsys)


def test_fit_names_the_columns_and_the_option_in_its_errors(files, tmp_path, capsys):
    _, _, _ = files
    data = tmp_path / "range.csv"
    pd.DataFrame({"score": [0.2, 2.0, 0.7, 0.9], "label": [0, 1, 0, 1]}).to_csv(data, index=False)
    assert main(_fit_args(data, tmp_path / "m.nc")) == 2
    err = _error(capsys)
    assert "column 'score'" in err and "--score-kind decision" in err and "score_kind=" not in err
    pd.DataFrame({"score": [0.2, 0.4, 0.7, 0.9], "label": [0, 1, None, 1]}).to_csv(data, index=False)
    assert main(_fit_args(data, tmp_path / "m.nc")) == 2
    assert "column 'label'" in _error(capsys)


def test_an_interrupted_demo_leaves_no_file_behind(tmp_path, monkeypatch):
    """The figure is drawn before either file is written: an interruption while drawing leaves
    nothing that would make the next run ask for --force."""
    from bayescal import cli

    monkeypatch.setattr(bayescal, "calibrators", lambda: ["platt"])

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "_demo_figure", interrupted)
    with pytest.raises(KeyboardInterrupt):
        cli.run_demo(tmp_path / "demo", verbose=False)
    assert list((tmp_path / "demo").iterdir()) == []


def test_apply_refuses_a_model_that_needs_features(tmp_path, capsys):
    rng = np.random.default_rng(0)
    s = rng.random(400)
    X = rng.normal(size=(400, 2))
    y = (rng.random(400) < s).astype(int)
    model = tmp_path / "mbct.nc"
    bayescal.make_calibrator("mbct").fit(s, y, X=X).save(model)
    data = tmp_path / "d.csv"
    pd.DataFrame({"score": s}).to_csv(data, index=False)
    assert main(["apply", str(model), str(data), "--score", "score", "--out", str(tmp_path / "o.csv")]) == 2
    err = _error(capsys)
    assert "needs the features" in err and "applies score-only calibrators" in err


# ---- review of the command line (audit_cli findings 1-9) ----------------------------------------
def _sorted_scores_file(path, *, tail=300, extra: str = ""):
    """A CSV sorted by score, as many are: 70,000 rows whose scores are written as integers (0 or
    1: more than Dask's 256 kB sample), then ``tail`` rows of fractional scores, then ``extra``;
    an unused column holds numbers and then text."""
    rng = np.random.default_rng(5)
    s = rng.random(tail)
    y = (rng.random(tail) < s).astype(int)
    lines = ["zip,score,label"] + ["1,0,0", "1,1,1"] * 35_000
    lines += [f"A{i},{si!r},{yi}" for i, (si, yi) in enumerate(zip(s.tolist(), y.tolist()))]
    path.write_text("\n".join(lines) + "\n" + extra)
    return path


@pytest.fixture
def small_dask_blocks(monkeypatch):
    from bayescal import cli

    monkeypatch.setattr(cli, "DASK_CSV_BLOCKSIZE", 100_000)  # several partitions from a small file


def test_dask_route_reads_a_file_whose_first_scores_are_integers(tmp_path, small_dask_blocks, capsys):
    """Dask guessed the score column to be int64 from its first 256 kB and failed on the first
    fractional score (a 17-line table of dtypes); the pandas route fitted the file. Only the score
    and label columns are read, the scores as float64, the labels typed as pandas types them."""
    data = _sorted_scores_file(tmp_path / "sorted.csv")
    fits = {}
    for route, extra in (("pandas", []), ("dask", ["--dask-above", "0"])):
        out = tmp_path / f"{route}.nc"
        assert main(_fit_args(data, out, *extra)) == 0, capsys.readouterr().err
        fits[route] = bayescal.load(out)
    assert list(fits["dask"].classes_) == list(fits["pandas"].classes_) == [0, 1]
    assert fits["dask"].classes_.dtype.kind == fits["pandas"].classes_.dtype.kind == "i"
    q = np.linspace(0.05, 0.95, 7)
    np.testing.assert_allclose(fits["dask"].predict_proba(q), fits["pandas"].predict_proba(q), atol=5e-3)


@pytest.mark.parametrize(
    ("values", "pos_label", "classes"),
    [(("0", "1"), "0", [1, 0]), (("False", "True"), "false", [True, False]), (("no", "yes"), "no", ["yes", "no"])],
)
def test_dask_route_types_labels_as_pandas_does(tmp_path, small_dask_blocks, capsys, values, pos_label, classes):
    """The same labels give the same classes, with --pos-label read by the column's type, and
    text labels are refused without --pos-label with the same message, on both routes."""
    rng = np.random.default_rng(6)
    s = rng.random(12_000)
    y = rng.random(12_000) < s
    data = tmp_path / "d.csv"
    pd.DataFrame({"score": s, "label": np.where(y, values[1], values[0])}).to_csv(data, index=False)
    errors = []
    for route, extra in (("pandas", []), ("dask", ["--dask-above", "0"])):
        if values[0] == "no":
            assert main(_fit_args(data, tmp_path / f"{route}-x.nc", *extra)) == 2
            errors.append(_error(capsys))
        out = tmp_path / f"{route}.nc"
        assert main(_fit_args(data, out, "--pos-label", pos_label, *extra)) == 0, capsys.readouterr().err
        fitted = bayescal.load(out)
        assert fitted.classes_.tolist() == classes and type(fitted.classes_.tolist()[0]) is type(classes[0])
    assert len(set(errors)) <= 1 and all("--pos-label" in e for e in errors)


def test_dask_route_names_a_missing_label_as_the_pandas_route_does(tmp_path, small_dask_blocks, capsys):
    """Missing labels after Dask's sample gave its dtype table; now the one line of the pandas
    route, with the count over the whole data and the first row."""
    data = _sorted_scores_file(tmp_path / "gaps.csv", extra="B1,0.5,\nB2,0.25,\n")
    lines = data.read_text().splitlines()
    lines[40_000] = lines[40_000].rsplit(",", 1)[0] + ","  # one more, in an earlier partition
    data.write_text("\n".join(lines) + "\n")
    errors = []
    for extra in ([], ["--dask-above", "0"]):
        assert main(_fit_args(data, tmp_path / "m.nc", *extra)) == 2
        errors.append(_error(capsys))
    assert errors[0] == errors[1], errors
    assert "column 'label' has NaN or infinite values (3, first at index 39999)" in errors[1]


def test_a_multi_line_error_is_printed_as_one_line(files, monkeypatch, capsys):
    from bayescal import cli

    table = "Mismatched dtypes found in `pd.read_csv`.\n\n+--------+\n| Column |\n+--------+"

    def fails(args):
        raise ValueError(table)

    monkeypatch.setattr(cli, "run_fit", fails)
    argv = ["fit", str(files[1]), "--score", "score", "--label", "label"]
    assert main(argv) == 2
    err = _error(capsys)
    assert "\n" not in err and err.startswith("bayescal: error: Mismatched dtypes found") and "--debug" in err
    with pytest.raises(ValueError) as raised:
        main(["--debug", *argv])
    assert str(raised.value) == table


def _categorical_labels(tmp_path, frame, words=("ok", "fraud")):
    data = tmp_path / "cat.parquet"
    frame.assign(label=pd.Categorical(np.where(frame["label"] == 1, words[1], words[0]))).to_parquet(data)
    return data


def test_categorical_text_labels_need_pos_label_as_text_labels_do(files, tmp_path, capsys):
    """Dictionary-encoded (categorical) text labels were fitted with the greater word as the
    positive class, without a word; they follow the rule of text labels in fit (both routes)
    and report, and --pos-label is read by the categories' type."""
    frame, _, _ = files
    data = _categorical_labels(tmp_path, frame)
    text = tmp_path / "text.csv"
    frame.assign(label=np.where(frame["label"] == 1, "fraud", "ok")).to_csv(text, index=False)
    assert main(_fit_args(text, tmp_path / "t.nc")) == 2
    want = _error(capsys)
    report = ["report", str(data), "--score", "score", "--label", "label", "--methods", "platt"]
    for argv in (
        _fit_args(data, tmp_path / "m.nc"),
        _fit_args(data, tmp_path / "m.nc", "--dask-above", "0"),
        [*report, "--out", str(tmp_path / "r.html")],
    ):
        assert main(argv) == 2
        assert _error(capsys) == want
    for extra in ([], ["--dask-above", "0"]):
        out = tmp_path / f"m{len(extra)}.nc"
        assert main(_fit_args(data, out, "--pos-label", "fraud", *extra)) == 0
        assert list(bayescal.load(out).classes_) == ["ok", "fraud"]
    assert main([*report, "--pos-label", "fraud", "--out", str(tmp_path / "r.html")]) == 0
    assert "positive class: 'fraud'" in capsys.readouterr().out
    codes = tmp_path / "codes.parquet"  # categories that are numbers: --pos-label is a number
    frame.assign(label=pd.Categorical(frame["label"])).to_parquet(codes)
    for extra in ([], ["--dask-above", "0"]):
        out = tmp_path / f"c{len(extra)}.nc"
        assert main(_fit_args(codes, out, "--pos-label", "0", *extra)) == 0
        assert bayescal.load(out).classes_.tolist() == [1, 0]


def test_tilde_is_the_home_folder_in_every_path(files, tmp_path, monkeypatch, capsys):
    """The shell leaves ~ alone after = and in quotes: ~/x made a folder named ~ (demo) or was
    'no such file'; every path of every command, and bayescal.save / load, expand it."""
    frame, csv, _ = files
    home, cwd = tmp_path / "home", tmp_path / "cwd"
    home.mkdir()
    cwd.mkdir()
    (home / "d.csv").write_bytes(csv.read_bytes())
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(cwd)
    monkeypatch.setattr(bayescal, "calibrators", lambda: ["platt"])
    common = ["--score", "score", "--label", "label"]
    assert main(["fit", "~/d.csv", *common, "--method", "platt", "--out=~/m.nc"]) == 0
    assert main(["apply", "~/m.nc", "~/d.csv", "--score", "score", "--out=~/o.csv"]) == 0
    assert main(["report", "~/d.csv", *common, "--methods", "platt", "--out=~/r.html"]) == 0
    assert main(["demo", "--out=~/demo"]) == 0
    est = bayescal.make_calibrator("platt").fit(frame["score"], frame["label"])
    est.save("~/api.nc")
    np.testing.assert_allclose(bayescal.load("~/api.nc").predict_proba([0.3]), est.predict_proba([0.3]))
    assert sorted(p.name for p in home.iterdir()) == ["api.nc", "d.csv", "demo", "m.nc", "o.csv", "r.html"]
    assert sorted(p.name for p in (home / "demo").iterdir()) == ["metrics.csv", "reliability.png"]
    assert list(cwd.iterdir()) == []  # no folder named ~
    capsys.readouterr()
    assert main(["fit", "~/d.csv", *common, "--method", "platt", "--out=~no-such-user-x/m.nc"]) == 2
    err = _error(capsys)
    assert "no user's home folder" in err and "create it" not in err


def test_apply_refuses_dates_and_time_spans_as_scores(files, tmp_path, capsys):
    """apply read a time-span column as nanoseconds and calibrated it; fit refused it by name."""
    _, csv, _ = files
    decision = tmp_path / "m.nc"
    assert main(_fit_args(csv, decision, "--score-kind", "decision")) == 0
    capsys.readouterr()
    for column in (pd.to_timedelta([-2, 0, 3], unit="ns"), pd.to_datetime(["2024-01-01", "2024-01-02", "2024-01-03"])):
        data = tmp_path / "dates.parquet"
        pd.DataFrame({"score": column}).to_parquet(data)
        out = tmp_path / "o.csv"
        assert main(["apply", str(decision), str(data), "--score", "score", "--out", str(out)]) == 2
        assert "column 'score' has non-numeric values, text, dates or time spans" in _error(capsys)
        assert not out.exists()


def test_a_file_named_twice_is_refused(files, tmp_path, monkeypatch, capsys):
    """A file given twice (by a glob and by name, as ./x and x, by a link) was read twice, its
    rows counting twice in the fit (and written twice by apply)."""
    frame, _, _ = files
    monkeypatch.chdir(tmp_path)
    frame.to_csv("part-1.csv", index=False)
    frame.to_csv("part-2.csv", index=False)
    (tmp_path / "link.csv").symlink_to(tmp_path / "part-1.csv")
    model = tmp_path / "m.nc"
    assert main(_fit_args("part-2.csv", model)) == 0
    capsys.readouterr()
    for data in (
        ["part-*.csv", "part-1.csv"],
        ["./part-1.csv", "part-1.csv"],
        ["part-1.csv"] * 2,
        ["part-1.csv", "link.csv"],
    ):
        assert main(["fit", *data, "--score", "score", "--label", "label", "--method", "platt", "--out", "x.nc"]) == 2
        err = _error(capsys)
        assert "given twice" in err and ("part-1.csv" in err or "link.csv" in err), err
        assert main(["apply", str(model), *data, "--score", "score", "--out", "o.csv"]) == 2
        assert "given twice" in _error(capsys)
    assert not (tmp_path / "x.nc").exists() and not (tmp_path / "o.csv").exists()


def test_report_checks_every_method_before_reading_the_data(files, tmp_path, monkeypatch, capsys):
    """An unknown or feature-aware name after the first was found only after reading the data
    and fitting the methods before it; a name given twice was fitted twice."""
    from bayescal import cli

    def no_read(*args, **kwargs):
        raise AssertionError("read the data before checking --methods")

    monkeypatch.setattr(cli, "read_table", no_read)
    _, csv, _ = files
    report = ["report", str(csv), "--score", "score", "--label", "label", "--out", str(tmp_path / "r.html")]
    for methods, message in (
        (["isotonic", "mbct"], "method 'mbct' needs features"),
        (["isotonic", "nope"], "Unknown calibrator 'nope'"),
        (["platt", "isotonic", "platt"], "--methods platt is given twice"),
    ):
        assert main([*report, "--methods", *methods]) == 2
        assert message in _error(capsys)
    with pytest.raises(SystemExit):
        main(["report", "--help"])
    assert "each once" in " ".join(capsys.readouterr().out.split())


def test_fit_and_report_name_the_score_cell_that_is_no_number(tmp_path, capsys):
    data = tmp_path / "oops.csv"
    data.write_text("id,score\n1,0.5\n2,oops\n3,0.25\n")
    for argv in (
        ["fit", str(data), "--score", "score", "--label", "id", "--method", "platt", "--out", str(tmp_path / "m.nc")],
        [
            "report",
            str(data),
            "--score",
            "score",
            "--label",
            "id",
            "--methods",
            "platt",
            "--out",
            str(tmp_path / "r.html"),
        ],
    ):
        assert main(argv) == 2
        assert "column 'score' has non-numeric text ('oops' in data row 2): fix or drop those rows" in _error(capsys)


def test_apply_refuses_files_whose_columns_differ(files, tmp_path, capsys):
    """pandas took the union of the columns and padded each file with empty cells."""
    model = _platt_model(files, tmp_path)
    capsys.readouterr()
    p1, p2 = tmp_path / "p1.csv", tmp_path / "p2.csv"
    p1.write_text("id,score\n1,0.25\n")
    p2.write_text("score,other\n0.75,z\n")
    out = tmp_path / "o.csv"
    assert main(["apply", str(model), str(p1), str(p2), "--score", "score", "--out", str(out)]) == 2
    err = _error(capsys)
    assert f"{p2} has columns ['score', 'other'] where {p1} has ['id', 'score']" in err
    assert not out.exists()
    p2.write_text("score,id\n0.75,2\n")  # the same columns in another order are matched by name
    assert main(["apply", str(model), str(p1), str(p2), "--score", "score", "--out", str(out)]) == 0
    assert pd.read_csv(out)["id"].tolist() == [1, 2]


def test_seed_and_pos_label_errors_name_the_options(files, tmp_path, capsys):
    _, csv, _ = files
    report = ["report", str(csv), "--score", "score", "--label", "label", "--methods", "platt"]
    for argv in (
        _fit_args(csv, tmp_path / "m.nc", "--seed", "-1"),
        _fit_args(csv, tmp_path / "m.nc", "--seed", str(2**64)),
        [*report, "--seed", "-1", "--out", str(tmp_path / "r.html")],
        [*report, "--seed", str(2**64), "--out", str(tmp_path / "r.html")],
        ["demo", "--seed", "-1", "--out", str(tmp_path / "demo")],
    ):
        assert main(argv) == 2
        err = _error(capsys)
        assert "--seed" in err and "from 0 to 2**64 - 1" in err and "random_state" not in err, err
    for argv in (
        _fit_args(csv, tmp_path / "m.nc", "--pos-label", "2"),
        _fit_args(csv, tmp_path / "m.nc", "--pos-label", "2", "--dask-above", "0"),
        [*report, "--pos-label", "2", "--out", str(tmp_path / "r.html")],
    ):
        assert main(argv) == 2
        err = _error(capsys)
        assert "--pos-label 2: column 'label' has no label 2; its labels are 0, 1" in err and "pos_label=" not in err


def test_report_takes_the_seeds_fit_takes(files, tmp_path, capsys):
    """report passed --seed to scikit-learn's split, which refuses seeds from 2**32 on; fit takes
    seeds up to 2**64 - 1."""
    _, csv, _ = files
    for seed in (str(2**32), str(2**64 - 1)):
        assert main(_fit_args(csv, tmp_path / f"m{seed}.nc", "--seed", seed)) == 0
        out = tmp_path / f"r{seed}.html"
        argv = ["report", str(csv), "--score", "score", "--label", "label", "--methods", "isotonic", "--seed", seed]
        assert main([*argv, "--out", str(out)]) == 0, capsys.readouterr().err
        assert f"split seed {seed}" in out.read_text()
