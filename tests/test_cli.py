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
    assert main(["fit", str(csv), "--score", "score", "--label", "label", "--method", "isotonic", "--out", str(model)]) == 0
    assert main(["apply", str(model), str(parquet), "--score", "score", "--out", str(out)]) == 0
    got = pd.read_parquet(out)["p_calibrated"].to_numpy()
    want = bayescal.make_calibrator("isotonic").fit(frame["score"], frame["label"]).predict_proba(frame["score"])[:, 1]
    np.testing.assert_allclose(got, want, atol=1e-12)


def test_glob_and_dask_route_agree_with_pandas(files, tmp_path):
    frame, csv, _ = files
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
    assert main(["fit", str(csv), "--score", "score", "--label", "word", "--pos-label", "yes",
                 "--method", "platt", "--out", str(model)]) == 0
    assert list(bayescal.load(model).classes_) == ["no", "yes"]


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
    assert main(["report", str(csv), "--score", "score", "--label", "label", "--methods", "isotonic", "platt",
                 "--out", str(out)]) == 0
    page = out.read_text()
    assert page.count("data:image/png;base64,") == 3  # reliability, PPC, decision regions
    assert "<td>uncalibrated</td>" in page and "<td>isotonic</td>" in page and "<td>platt</td>" in page
    assert "src='http" not in page and 'src="http' not in page


def test_report_rejects_a_feature_aware_method(files, tmp_path, capsys):
    _, csv, _ = files
    code = main(["report", str(csv), "--score", "score", "--label", "label", "--methods", "mbct",
                 "--out", str(tmp_path / "r.html")])
    assert code == 2 and "needs features" in capsys.readouterr().err


def test_progress_reports_each_step_on_stderr(files, tmp_path, capsys):
    _, csv, _ = files
    model = tmp_path / "m.nc"
    assert main(["--progress", "always", "fit", str(csv), "--score", "score", "--label", "label",
                 "--method", "isotonic", "--out", str(model)]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert [line.split("]")[0] for line in err] == ["[1/3", "[2/3", "[3/3"]
    assert "fitting isotonic" in err[1] and all(line.endswith(" s") for line in err)
    assert main(["--progress", "never", "apply", str(model), str(csv), "--score", "score",
                 "--out", str(tmp_path / "o.csv")]) == 0
    assert capsys.readouterr().err == ""


def test_progress_marks_the_failed_step(files, capsys):
    _, csv, _ = files
    code = main(["--progress", "always", "fit", str(csv), "--score", "score", "--label", "score"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err[-2].endswith("failed") and err[-1].startswith("bayescal: error:")
