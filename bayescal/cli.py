"""Command line: ``bayescal demo | fit | apply | report``.

* ``bayescal demo [--out DIR] [--force]``: what ``make demo`` runs;
* ``bayescal fit DATA... --score COL --label COL [--method dpm] [--seed N] [--param NAME=VALUE ...]
  [--pos-label L] [--out model.nc]``: fit a calibrator on CSV or Parquet files (globs
  allowed; ``-`` reads CSV from stdin); above ``--dask-above`` bytes the files are read with
  Dask (only the two columns; the labels typed as pandas types them) and reduced to a
  :class:`~bayescal.data.ScoreSummary` first;
* ``bayescal apply MODEL DATA --score COL --out OUT [--band 0.95]``: keep every input
  column, add the calibrated probability ``p_calibrated`` (and ``p_lower`` / ``p_upper``,
  the equal-tailed posterior interval, with ``--band``), and write CSV or Parquet (by the
  extension of OUT; ``-`` writes CSV to stdout). CSV to CSV keeps every cell as written
  (``02134`` keeps its zero, ``NA`` stays ``NA``); to Parquet, CSV columns are typed by pandas;
  a file whose name looks like a glob (``run[1].csv``) is read as that file when it exists;
  several files must have the same columns;
* ``bayescal report DATA... --score COL --label COL [--methods dpm isotonic platt] --out report.html``:
  fit on one part, evaluate on the rest; metrics before/after, reliability diagram with
  bands, posterior predictive check and decision regions on one self-contained HTML page.

Every command says which class is the positive one. ``~`` is expanded in every path (also
where the shell leaves it, as in ``--out=~/model.nc``); a file named twice (``x.csv ./x.csv``,
or by a glob and by name) is refused, as its rows would count twice. No command writes over one of its
inputs; an existing output is replaced only with ``--force``; outputs are written under a
temporary name and renamed, so an interrupted run leaves no half-written file.

Errors are one line naming the problem, with exit code 2 (``--debug`` shows the traceback).
Each command reports its steps on stderr (``[2/4] fitting dpm ... 1.3 s``, and Dask's
progress bar while a large table is reduced) when stderr is a terminal, or always with
``--progress always``; ``--progress never`` silences them.
"""

from __future__ import annotations

import argparse
import contextlib
import glob
import io
import json
import os
import re
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import dask.dataframe as dd
    import numpy as np
    import pandas as pd

__all__ = ["main", "run_demo"]

DEMO_METRICS = ("ece_papers", "ece_eqmass", "mce_papers", "brier", "log_loss", "auc")
DEMO_ECE_NOTE = (
    "ECE = class-1 expected calibration error, sum_b (n_b/N) |positive rate_b - mean p_b|, over 10 groups of the\n"
    "test predictions. ece_papers: the grouping of Naeini et al.'s code (sort by p, ties ordered by label, 10\n"
    "equal-count groups), which splits runs of tied predictions by label and so inflates the ECE of step maps;\n"
    "ece_eqmass: 10 equal-mass bins that keep tied predictions together. mce_papers: the largest group's gap."
)
DEMO_WHY_NOTE = (
    "Why isotonic and Platt fail here: the linear SVM's score is linear in (x1, x2), so the ring's points (y=1)\n"
    "lie at both ends of the score range and the disc's (y=0) in the middle: P(y=1 | score) is U-shaped, not\n"
    "monotone. A monotone map (isotonic, Platt, beta) can only flatten it towards the base rate: calibrated on\n"
    "average (isotonic's small ece_eqmass) but uninformative (see Brier, log loss, AUC); isotonic's large\n"
    "ece_papers comes from its long runs of tied predictions. The DPM models each class's score density and\n"
    "takes their ratio (Bayes' rule), so its map can fall and rise again."
)


class Progress:
    """A command's steps on stderr, one line each: ``[2/4] fitting dpm ... 1.3 s``.

    Disabled, it only runs the steps. ``dask()`` wraps a Dask computation in Dask's own
    progress bar when enabled.
    """

    def __init__(self, total: int, enabled: bool = False):
        self.total, self.enabled, self.done = total, enabled, 0

    @contextlib.contextmanager
    def step(self, label: str) -> Iterator[None]:
        self.done += 1
        if self.enabled:
            print(f"[{self.done}/{self.total}] {label} ...", end="", file=sys.stderr, flush=True)
        t0 = time.perf_counter()
        try:
            yield
        except BaseException:
            if self.enabled:
                print(" failed", file=sys.stderr, flush=True)
            raise
        if self.enabled:
            print(f" {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)

    def dask(self) -> contextlib.AbstractContextManager:
        if not self.enabled:
            return contextlib.nullcontext()
        from dask.diagnostics import ProgressBar

        print(file=sys.stderr)  # Dask's bar gets a line of its own
        return ProgressBar(out=sys.stderr)


def _metric_row(y, p) -> dict[str, float]:
    from bayescal import metrics

    return {
        "ece_papers": metrics.ece(y, p, strategy="papers"),
        "ece_eqmass": metrics.ece(y, p, strategy="quantile"),
        "mce_papers": metrics.mce(y, p, strategy="papers"),
        "brier": metrics.brier_score(y, p),
        "log_loss": metrics.log_loss(y, p),
        "auc": metrics.roc_auc(y, p),
    }


def run_demo(
    out: str | Path = "demo_output",
    *,
    random_state: int = 0,
    verbose: bool = True,
    progress: bool = False,
    force: bool = False,
) -> dict:
    """Fit every score-only calibrator on simulated data and report metrics before and after.

    Data: the simulated 2-D setting of Naeini, Cooper & Hauskrecht (2014), generated by
    :func:`bayescal.datasets.make_naeini2014`; a linear SVM (near chance on it) gives the
    scores, so calibration has much to repair. Calibrators are fitted on the train split and
    evaluated on the test split. Writes ``reliability.png`` and ``metrics.csv`` to ``out``;
    either file already there is replaced only with ``force`` (checked before any work).

    Returns the metrics table as ``{label: {metric: value}}``; ``progress`` reports each
    step on stderr.
    """
    import matplotlib

    matplotlib.use("Agg")
    import bayescal
    from bayescal._registry import get_calibrator_class
    from bayescal.datasets import make_naeini2014, svm_scores
    from bayescal.io import atomic_write

    out = Path(out).expanduser()
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} is a file: give a folder for metrics.csv and reliability.png")
    out.mkdir(parents=True, exist_ok=True)
    for name in ("metrics.csv", "reliability.png"):
        _check_output(str(out / name), [], force)
    names = [n for n in bayescal.calibrators() if not get_calibrator_class(n).feature_aware]
    steps = Progress(len(names) + 2, progress)
    with steps.step("simulating the data and fitting the SVM"):
        data = make_naeini2014(n_samples=2000, random_state=random_state)
        train, test = data[data["split"] == "train"], data[data["split"] == "test"]
        s_train, s_test = svm_scores(train, test, kernel="linear")
        y_train, y_test = train["y"].to_numpy(), test["y"].to_numpy()

    table = {"uncalibrated": _metric_row(y_test, s_test)}
    times = {"uncalibrated": 0.0}
    fitted = {}
    for name in names:
        cls = get_calibrator_class(name)
        accepted = cls().get_params()
        params = {"random_state": random_state} if "random_state" in accepted else {}
        t0 = time.perf_counter()
        with steps.step(f"fitting {name}"):
            est = cls(**params).fit(s_train, y_train)
        times[name] = time.perf_counter() - t0
        fitted[name] = est
        table[name] = _metric_row(y_test, est.predict_proba(s_test)[:, 1])

    lines = [f"{'calibrator':<16}" + "".join(f"{m:>12}" for m in DEMO_METRICS) + f"{'fit s':>8}"]
    for label, row in table.items():
        lines.append(f"{label:<16}" + "".join(f"{row[m]:>12.4f}" for m in DEMO_METRICS) + f"{times[label]:>8.2f}")
    text = "\n".join(lines)
    csv_text = (
        "calibrator,"
        + ",".join(DEMO_METRICS)
        + ",fit_seconds\n"
        + "\n".join(
            f"{k}," + ",".join(f"{v[m]:.6f}" for m in DEMO_METRICS) + f",{times[k]:.3f}" for k, v in table.items()
        )
        + "\n"
    )
    with steps.step("drawing the reliability diagram"):
        figure = _demo_figure(fitted, s_test, y_test)
    # both files at the end, so an interrupted run leaves none behind to block the next one
    atomic_write(out / "metrics.csv", lambda path: path.write_text(csv_text), overwrite=force)
    atomic_write(out / "reliability.png", lambda path: figure.savefig(path, dpi=120, format="png"), overwrite=force)
    if verbose:
        print("Test-split metrics; the positive class is y = 1 (the ring).")
        print(text)
        print(DEMO_ECE_NOTE)
        print(DEMO_WHY_NOTE)
        print(f"Wrote {out / 'metrics.csv'} and {out / 'reliability.png'}")
    return table


STDIO = "-"
DASK_CSV_BLOCKSIZE: int | str = "default"  # bytes of CSV per Dask partition ("default": Dask's choice)


def _user_path(text: str) -> str:
    """A path as the user wrote it, with ``~`` and ``~user`` expanded (the shell leaves ``--out=~/x``,
    quoted names and names passed by other programs alone); ``-`` (stdin / stdout) as it is."""
    return text if text == STDIO else os.path.expanduser(text)


def _expand(patterns: list[str]) -> list[Path | str]:
    """The files named by ``patterns`` (``~`` and globs expanded); ``-`` stands for stdin (CSV).
    A file named twice (by two patterns, ``./x.csv`` and ``x.csv``, a link) is refused: its rows
    would count twice."""
    paths: list[Path | str] = []
    seen: dict[tuple[int, int] | str, tuple[str, str]] = {}  # a file's identity -> (its name, the pattern naming it)
    for given in patterns:
        if given == STDIO:
            if STDIO in paths:
                raise ValueError("'-' (stdin) is given twice: stdin can be read once")
            paths.append(STDIO)
            continue
        pattern = _user_path(given)
        # a file of that very name (run[1].csv) is read as written, not as a glob
        globbed = any(ch in pattern for ch in "*?[") and not Path(pattern).exists()
        found = sorted(glob.glob(pattern)) if globbed else [pattern]
        if not found:
            raise ValueError(f"no file matches {given!r}")
        for f in found:
            path = Path(f)
            if path.is_dir():
                raise ValueError(
                    f"{f} is a folder, not a data file: pass CSV or Parquet files, or a glob "
                    f"such as {os.path.join(f, '*.csv')!r}"
                )
            if not path.is_file():
                raise ValueError(f"no such file: {f}")
            if path.suffix.lower() not in (".csv", ".parquet", ".pq"):
                raise ValueError(f"{f}: unsupported file type {path.suffix!r}; use .csv or .parquet")
            info = path.stat()  # device and inode: one file under two names (a link) too
            key = (info.st_dev, info.st_ino) if info.st_ino else os.path.realpath(path)
            if key in seen:
                first, first_pattern = seen[key]
                if first_pattern != given:
                    how = f" ({first_pattern!r} and {given!r} both name it)"
                else:
                    how = f" ({first!r} and {f!r} are one file)" if first != f else ""
                raise ValueError(f"{f} is given twice{how}: its rows would count twice; name each file once")
            seen[key] = (f, given)
            paths.append(path)
    return paths


def _columns_of_index(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with a pandas index that its Parquet file stored (an ``id`` column made the
    index, say) turned back into columns, so that outputs keep every input column; the default
    index (unnamed 0, 1, 2, ...) is no data and is dropped."""
    import pandas as pd

    default = isinstance(frame.index, pd.RangeIndex) and frame.index.name is None
    return frame if default else frame.reset_index()


def read_table(
    patterns: list[str],
    columns: list[str] | None,
    *,
    dask_above: float = float("inf"),
    as_text: bool = False,
    require: tuple[str, ...] = (),
    numbers: tuple[str, ...] = (),
) -> pd.DataFrame | dd.DataFrame:
    """Read ``columns`` (every column when ``None``) from CSV / Parquet files or stdin
    (pandas, or a Dask dataframe when the files are large).

    With ``as_text`` CSV cells are kept as the text they are (no type guessing: ``02134`` keeps
    its zero, ``NA`` stays ``NA``), for columns passed through to a CSV file; otherwise pandas
    infers each column's type from the whole file (not chunk by chunk, which can give one column
    two types). Every file must hold ``columns`` and ``require``; when every column is kept
    (``columns=None``), the files must have the same columns.

    Dask reads only ``columns`` of a CSV file, and guesses no type from its first blocks (which
    later blocks may contradict): ``numbers`` (the scores) as float64, the other columns typed
    as pandas types a whole column (:func:`_typed_like_pandas`)."""
    import pandas as pd

    wanted = None if columns is None else list(dict.fromkeys(columns))
    text = {"dtype": str, "keep_default_na": False} if as_text else {"low_memory": False}
    paths = _expand(patterns)
    use_dask = STDIO not in paths and sum(p.stat().st_size for p in paths) > dask_above
    frames, from_csv = [], []
    first: tuple[str, list] | None = None  # the first file's name and columns
    for path in paths:
        name = "stdin" if path == STDIO else str(path)
        is_csv = path == STDIO or path.suffix.lower() == ".csv"
        try:
            if use_dask:
                import dask.dataframe as dd

                if is_csv:
                    found = list(pd.read_csv(path, nrows=0).columns)
                    keep = [c for c in (wanted or found) if c in found]
                    types = {c: "float64" if c in numbers else str for c in keep}
                    frame = dd.read_csv(str(path), usecols=keep, dtype=types, blocksize=DASK_CSV_BLOCKSIZE)
                else:  # index=False: a pandas index stored in the file is read as the column it was
                    frame = dd.read_parquet(str(path), index=False)
                    found = list(frame.columns)
            elif path == STDIO:
                frame = pd.read_csv(sys.stdin.buffer if hasattr(sys.stdin, "buffer") else sys.stdin, **text)
                found = list(frame.columns)
            else:
                frame = pd.read_csv(path, **text) if is_csv else _columns_of_index(pd.read_parquet(path))
                found = list(frame.columns)
        except Exception as exc:
            cell = _not_a_number(exc)
            if cell is not None and len(numbers) == 1:
                raise _no_number(numbers[0], f"{cell} in {name}") from None
            raise ValueError(
                f"could not read {name}: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
            ) from None
        missing = [c for c in dict.fromkeys([*(wanted or []), *require]) if c not in found]
        if missing:
            raise ValueError(f"{name}: missing column(s) {missing}; available: {found}")
        if wanted is None and first is not None and set(found) != set(first[1]):
            # pandas would pad each file's missing columns with empty cells
            raise ValueError(
                f"{name} has columns {found} where {first[0]} has {first[1]}: give files with the same "
                "columns (or apply the model to each file on its own)"
            )
        first = first or (name, found)
        frames.append(frame if wanted is None else frame[wanted])
        from_csv.append(is_csv)
    if use_dask:
        import dask.dataframe as dd

        try:  # a pass over the files: Dask reads the cells it had not read for their type
            typed = _typed_like_pandas(frames, from_csv, numbers)
        except ValueError as exc:
            cell = _not_a_number(exc)
            if cell is None or len(numbers) != 1:
                raise
            raise _no_number(numbers[0], cell) from None
        return dd.concat(typed)
    return pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0].reset_index(drop=True)


def _no_number(column: str, cell: str) -> ValueError:
    """The error for a cell of the score ``column`` that is no number (Dask names no row)."""
    return ValueError(f"column {column!r} has non-numeric text ({cell}): fix or drop those rows")


def _not_a_number(exc: BaseException) -> str | None:
    """The cell (as pandas quotes it) that a CSV reader told to read a column as float64 could not
    read, or None when ``exc`` is about something else; Dask wraps pandas' message in its own."""
    found = re.search(r"could not convert string to float: (.*)", str(exc))
    return found.group(1).strip() if found else None


def _typed_like_pandas(frames: list, from_csv: list[bool], numbers: tuple[str, ...]) -> list:
    """Dask frames of CSV files, read as text but for ``numbers``, with each text column typed as
    pandas types a whole column (0/1 as int64, 0/1 and an empty cell as float64, true/false as
    bool, words as text), over all the files together: one pass finds each column's distinct
    cells, which pandas then types as it would the column; each partition is mapped through them."""
    import io

    import dask
    import pandas as pd

    names = list(dict.fromkeys(c for f, csv in zip(frames, from_csv) if csv for c in f.columns if c not in numbers))
    if not names:
        return frames
    cells = dask.compute({c: [f[c].unique() for f, csv in zip(frames, from_csv) if csv] for c in names})[0]
    typed = {}
    for c, parts in cells.items():
        values = pd.concat(parts)
        words = list(dict.fromkeys(v for v in values.tolist() if not pd.isna(v)))
        gap = bool(values.isna().any())  # an empty cell, or a missing-value word such as NA
        buf = io.StringIO()  # two columns: a one-column file would drop the empty cell's blank line
        pd.DataFrame({"row": range(len(words) + gap), "cell": words + [""] * gap}).to_csv(buf, index=False)
        parsed = pd.read_csv(io.StringIO(buf.getvalue()), low_memory=False)["cell"]
        typed[c] = (dict(zip(words, parsed.to_numpy()[: len(words)].tolist())), parsed.dtype)
    out = []
    for frame, csv in zip(frames, from_csv):
        if csv:
            frame = frame.assign(
                **{
                    c: frame[c].map_partitions(_looked_up, lookup, dtype, meta=pd.Series([], dtype=dtype, name=c))
                    for c, (lookup, dtype) in typed.items()
                }
            )
        out.append(frame)
    return out


def _looked_up(part: pd.Series, lookup: dict, dtype: Any) -> pd.Series:
    """One partition's text cells as the values pandas gave them (a missing cell as NaN)."""
    return part.map(lookup).astype(dtype)


def _same_file(a: Path, b: Path) -> bool:
    """Whether ``a`` and ``b`` are one file: the same resolved path, or (hard links) the same inode."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _check_output(out: str, inputs: list[str | Path], force: bool, flag: str = "--out") -> None:
    """Refuse an output that is one of the inputs (always) or that exists (unless ``force``)."""
    if out == STDIO:
        return
    target = Path(out)
    for given in inputs:
        if given == STDIO:
            continue
        if _same_file(target, Path(given)):
            raise ValueError(
                f"{flag} {out} is the input file {given}: bayescal never writes over its input; "
                "choose another output name"
            )
    if target.is_dir():
        raise ValueError(f"{flag} {out} is a folder: give a file name")
    if not target.parent.is_dir():
        top = target.parts[0] if target.parts else ""
        if top.startswith("~"):  # ~name of no user: never advise making a folder named ~...
            raise ValueError(f"{flag} {out}: {top!r} is no user's home folder; give an existing folder")
        raise ValueError(f"{flag} {out}: the folder {str(target.parent)!r} does not exist; create it first")
    if target.exists() and not force:
        raise FileExistsError(f"{flag} {out} already exists: pass --force to replace it, or choose another name")


def _inputs(patterns: list[str]) -> list[Path | str]:
    """The input files (for the no-overwrite check); unmatched patterns are reported when read."""
    try:
        return _expand(patterns)
    except ValueError:
        return [p for p in map(_user_path, patterns) if p == STDIO or Path(p).exists()]


def _write_output(out: str, write, force: bool) -> None:
    """Write through ``write(path)`` atomically, or to stdout for ``-``."""
    from bayescal.io import atomic_write

    if out == STDIO:
        write(STDIO)
        return
    atomic_write(out, write, overwrite=force, flag="--force")


def _parse_value(text: str) -> Any:
    """A ``--param`` value: a JSON literal (number, true/false/null, list, dict, quoted string) or else text."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        if text in ("True", "False", "None"):
            return {"True": True, "False": False, "None": None}[text]
        return text


def _calibrator_params(cls: type, args: argparse.Namespace) -> dict[str, Any]:
    """Parameters from ``--score-kind``, ``--seed`` and ``--param NAME=VALUE``, checked against the class."""
    accepted = cls().get_params()
    params: dict[str, Any] = {}
    if "score_kind" in accepted:
        params["score_kind"] = args.score_kind
    elif args.score_kind != "probability":
        raise ValueError(f"method {args.method!r} has no score_kind: it takes probability scores only")
    if args.seed is not None:
        if "random_state" in accepted:
            params["random_state"] = args.seed
    given: dict[str, Any] = {}
    for item in args.param or []:
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise ValueError(f"--param {item!r}: write NAME=VALUE, e.g. --param draws=500")
        if name not in accepted:
            raise ValueError(
                f"--param {name}: {args.method!r} has no parameter {name!r}; its parameters are {sorted(accepted)}"
            )
        if name in given:
            raise ValueError(f"--param {name} is given twice")
        if name in ("random_state", "random_seed") and args.seed is not None:
            raise ValueError(f"--param {name} and --seed both set the seed: pass one of them")
        if name == "score_kind":
            raise ValueError("--param score_kind: use --score-kind")
        given[name] = _parse_value(value)
    params.update(given)
    return params


def _positive_line(classes: Any) -> str:
    neg, pos = (c.item() if hasattr(c, "item") else c for c in classes)
    return f"positive class: {pos!r} (negative: {neg!r}); probabilities are P(label = {pos!r})"


def _check_string_labels(column: Any, dtype: Any, name: str) -> None:
    """Refuse text labels without ``--pos-label``: which word is positive is the user's to say.
    ``dtype`` is the type of the labels (a categorical column's: its categories')."""
    import pandas as pd

    types = pd.api.types
    if not (types.is_object_dtype(dtype) or types.is_string_dtype(dtype)) or types.is_bool_dtype(dtype):
        return
    values = _label_values(column)
    if len(values) != 2 or not all(isinstance(v, str) for v in values):
        return  # not two text labels: the label checks say what is wrong, if anything
    shown = sorted(values)[:2]
    raise ValueError(
        f"the labels in column {name!r} are text ({', '.join(map(repr, shown))}): say which is the "
        f"positive class with --pos-label, e.g. --pos-label {shown[-1] if shown else 'yes'}"
    )


def _label_values(column: Any) -> list:
    """The distinct values of a label column (pandas or Dask; missing values left out)."""
    values = column.dropna().unique()
    values = values.compute() if hasattr(values, "compute") else values
    return [v.item() if hasattr(v, "item") else v for v in values]


@contextlib.contextmanager
def _pos_label_named(text: str | None, pos_label: Any, column: Any, name: str) -> Iterator[None]:
    """Say ``--pos-label`` where the label checks say ``pos_label=``: a --pos-label that is none
    of the labels is refused with the labels there are."""
    try:
        yield
    except ValueError as exc:
        if text is None or not str(exc).startswith(f"pos_label={pos_label!r} is not one of the values"):
            raise
        try:
            shown = sorted(_label_values(column))
        except TypeError:  # labels of types that do not compare
            shown = _label_values(column)
        raise ValueError(
            f"--pos-label {text}: column {name!r} has no label {pos_label!r}; its labels are "
            f"{', '.join(map(repr, shown[:5]))}{', ...' if len(shown) > 5 else ''}"
        ) from None


def _check_seed(seed: int | None) -> None:
    """``--seed`` is one the calibrators accept (fit, report and demo take the same range)."""
    if seed is not None and not 0 <= seed < 2**64:
        raise ValueError(f"--seed {seed}: a seed is a whole number from 0 to 2**64 - 1, e.g. --seed 0")


def _dask_fit_error(exc: Exception, score: str, label: str) -> Exception:
    """An error of a fit on Dask columns in the words of the in-memory route: the columns and the
    option by name; anything else as it is."""
    text = str(exc)
    cell = _not_a_number(exc)
    if cell is not None:
        return _no_number(score, cell)
    text = re.sub(r"\by has ", f"column {label!r} has ", text)
    if text.startswith("scores has "):
        text = f"column {score!r}{text[len('scores') :]}".replace(
            " but score_kind='probability': pass probabilities, or set score_kind='decision' for raw margins "
            "such as SVM decision values or logits.",
            ": pass --score-kind decision for raw margins such as SVM decision values or logits",
        )
    return exc if text == str(exc) else ValueError(text)


def run_fit(args: argparse.Namespace) -> None:
    from bayescal._registry import get_calibrator_class
    from bayescal._validation import check_labels, is_dask_collection

    _check_seed(args.seed)
    out = _user_path(args.out)
    cls = get_calibrator_class(args.method)
    if cls.feature_aware:
        raise ValueError(f"method {args.method!r} needs features; the command line fits score-only calibrators")
    if out == STDIO:
        raise ValueError("--out -: a model is a netCDF file; give a file name such as model.nc")
    params = _calibrator_params(cls, args)
    est = cls(**params)
    _check_output(out, _inputs(args.data), args.force)
    steps = Progress(3, _show_progress(args))
    with steps.step("reading " + ", ".join(args.data)):
        table = read_table(args.data, [args.score, args.label], dask_above=args.dask_above, numbers=(args.score,))
    labels = table[args.label]
    pos_label = _parse_label(args.pos_label, labels, args.label)
    on_dask = is_dask_collection(table)  # fit reduces Dask columns to a ScoreSummary itself
    what = (
        f"summarising the scores with Dask, fitting {args.method}"
        if on_dask
        else f"fitting {args.method} on {len(table)} rows"
    )
    with (
        steps.step(what),
        steps.dask() if on_dask else contextlib.nullcontext(),
        _pos_label_named(args.pos_label, pos_label, labels, args.label),
    ):
        if on_dask:
            try:
                est.fit(table[args.score], labels, pos_label=pos_label)
            except ValueError as exc:
                raise _dask_fit_error(exc, args.score, args.label) from None
        else:  # refused with the columns' names; the calibrator checks again
            scores = _column_scores(_numbers(table[args.score], args.score), est.score_kind, args.score)
            check_labels(labels.to_numpy(), pos_label=pos_label, name=f"column {args.label!r}")
            est.fit(scores, labels, pos_label=pos_label)
    with steps.step(f"saving {out}"):
        est.save(out, overwrite=args.force)
    seeded = {k: v for k, v in params.items() if k in ("random_state", "random_seed")}  # --param may use the old name
    seed_note = (
        f"seed {next(iter(seeded.values()))}"
        if seeded
        else ("no seed (pass --seed for a reproducible fit)" if "random_state" in est.get_params() else "deterministic")
    )
    print(f"fitted {args.method} ({seed_note}); wrote {out}")
    print(_positive_line(est.classes_))


def _numbers(column: pd.Series, name: str) -> np.ndarray:
    """The score column ``name`` as float64: numbers and booleans as they are; text (CSV read as
    text, or a column pandas could not read as numbers) with empty cells and pandas' missing-value
    words (``NA``, ``nan``, ...) as NaN (refused by the calibrator, naming the row) and other text
    that is no number refused here, naming its cell and row; dates, time spans and other types
    refused by :func:`~bayescal._validation.check_scores`, by name."""
    import numpy as np
    import pandas as pd

    from bayescal._validation import check_scores

    types = pd.api.types
    if types.is_numeric_dtype(column.dtype) or types.is_bool_dtype(column.dtype):
        return column.to_numpy(dtype=np.float64)  # Parquet keeps the column's type
    if not (types.is_object_dtype(column.dtype) or types.is_string_dtype(column.dtype)):
        # a date is no score (to_numpy(float64) would give nanoseconds); categoricals of numbers pass
        return check_scores(column.to_numpy(), name=f"column {name!r}")
    values = pd.to_numeric(column, errors="coerce").to_numpy(dtype=np.float64)
    text = column.astype(str).str.strip()
    missing = text.str.lower().isin(("", "na", "n/a", "nan", "-nan", "null", "none", "<na>", "#n/a"))
    bad = np.flatnonzero(np.isnan(values) & ~missing.to_numpy())
    if bad.size:
        raise ValueError(
            f"column {name!r} has non-numeric text ({column.iloc[bad[0]]!r} in data row {bad[0] + 1}): "
            "fix or drop those rows"
        )
    return values


def _column_scores(values: Any, score_kind: str, column: str, model: str | None = None) -> np.ndarray:
    """The scores of ``column`` as float64, refused in the command line's words: a missing or
    infinite value by its row, and values outside [0, 1] for probabilities with the option that
    fits raw margins (``--score-kind decision``) or, for a saved ``model``, the kind it was fitted on."""
    import numpy as np

    from bayescal._validation import check_scores

    arr = check_scores(values, score_kind="decision", name=f"column {column!r}")
    lo, hi = (float(arr.min()), float(arr.max())) if arr.size else (0.0, 1.0)
    if score_kind == "probability" and (lo < 0.0 or hi > 1.0):
        fix = (
            f"{model} was fitted on probabilities, so apply it to probabilities"
            if model is not None
            else "pass --score-kind decision for raw margins such as SVM decision values or logits"
        )
        raise ValueError(
            f"column {column!r} has {int(np.sum((arr < 0.0) | (arr > 1.0)))} value(s) outside [0, 1] "
            f"(min {lo:.4g}, max {hi:.4g}): {fix}"
        )
    return arr


def _show_progress(args: argparse.Namespace) -> bool:
    return args.progress == "always" or (args.progress == "auto" and sys.stderr.isatty())


def _parse_label(value: str | None, column: Any, name: str) -> Any:
    """``--pos-label``'s text as a value of the label column ``name``: read by the column's type
    (true / false for a boolean column, a number for a numeric one, the text itself otherwise; a
    categorical column by the type of its categories); without it, text labels are refused
    (:func:`_check_string_labels`)."""
    import pandas as pd

    from bayescal._validation import is_dask_collection

    dtype = column.dtype
    if isinstance(dtype, pd.CategoricalDtype):  # Parquet's dictionary-encoded columns
        if is_dask_collection(column) and not column.cat.known:
            dtype = column.cat.as_known().dtype  # Dask reads them with unknown categories: one pass
        dtype = dtype.categories.dtype
    if value is None:
        _check_string_labels(column, dtype, name)
        return None
    if pd.api.types.is_bool_dtype(dtype):
        words = {"true": True, "1": True, "false": False, "0": False}
        if value.strip().lower() not in words:
            raise ValueError(f"--pos-label {value!r}: column {name!r} holds booleans; pass --pos-label true or false")
        return words[value.strip().lower()]
    if pd.api.types.is_numeric_dtype(dtype):
        number = pd.to_numeric(value, errors="coerce")
        if pd.isna(number):
            raise ValueError(f"--pos-label {value!r}: column {name!r} holds numbers; pass one of its values, e.g. 1")
        return int(number) if pd.api.types.is_integer_dtype(dtype) and float(number).is_integer() else float(number)
    return value


def _posterior_band(est: Any, scores: Any, prob: float, chunk: int = 20_000) -> tuple[Any, Any]:
    """Equal-tailed ``prob`` interval of the posterior of P(y=1) at each score, in chunks of rows."""
    import numpy as np

    lo_q, hi_q = (1.0 - prob) / 2.0, 1.0 - (1.0 - prob) / 2.0
    lower, upper = np.empty(len(scores)), np.empty(len(scores))
    for start in range(0, len(scores), chunk):
        draws = est.predict_posterior(scores[start : start + chunk]).values
        flat = draws.reshape(-1, draws.shape[-1])
        lower[start : start + chunk], upper[start : start + chunk] = np.quantile(flat, [lo_q, hi_q], axis=0)
    return lower, upper


def run_apply(args: argparse.Namespace) -> None:
    import bayescal

    out, model = _user_path(args.out), _user_path(args.model)
    _check_output(out, [model, *_inputs(args.data)], args.force)
    if out != STDIO and Path(out).suffix.lower() not in (".csv", ".parquet", ".pq"):
        raise ValueError(f"--out {out}: use a .csv or .parquet file name, or - for CSV on stdout")
    to_csv = out == STDIO or Path(out).suffix.lower() == ".csv"
    if args.band is not None and not 0.0 < args.band < 1.0:
        raise ValueError(f"--band {args.band}: give the interval's probability, between 0 and 1 (e.g. 0.95)")
    report = sys.stderr if out == STDIO else sys.stdout
    steps = Progress(4, _show_progress(args))
    if not args.column.strip():
        raise ValueError("--column is empty: give the name of the new column, e.g. p_calibrated")
    if args.band is not None and args.column in ("p_lower", "p_upper"):
        raise ValueError(f"--column {args.column}: --band writes p_lower and p_upper; choose another name")
    with steps.step(f"loading {model}"):
        est = bayescal.load(model)
    if est.feature_aware:
        raise ValueError(
            f"{model} holds {type(est).__name__}, which needs the features as well as the scores; "
            "the command line applies score-only calibrators (use the Python API)"
        )
    with steps.step("reading " + ", ".join(args.data)):
        # to CSV the input's cells are written back as they were; to Parquet, typed
        table = read_table(args.data, None, as_text=to_csv, require=(args.score,))
    added = [args.column] + (["p_lower", "p_upper"] if args.band is not None else [])
    clash = [c for c in added if c in table.columns]
    if clash:
        raise ValueError(f"the input already has column(s) {clash}: pass --column another name, or drop them")
    scores = _column_scores(_numbers(table[args.score], args.score), est.score_kind, args.score, model)
    with steps.step(f"calibrating {len(table)} scores"):
        table[args.column] = est.predict_proba(scores)[:, 1]
        if args.band is not None:
            table["p_lower"], table["p_upper"] = _posterior_band(est, scores, args.band)

    def write(path):
        if path == STDIO:
            buf = io.StringIO()
            table.to_csv(buf, index=False)
            sys.stdout.write(buf.getvalue())
            sys.stdout.flush()
        elif Path(out).suffix.lower() == ".csv":
            table.to_csv(path, index=False)
        else:
            table.to_parquet(path, index=False)

    with steps.step(f"writing {'stdout' if out == STDIO else out}"):
        _write_output(out, write, args.force)
    band = f", {args.band:g} interval in p_lower/p_upper" if args.band is not None else ""
    print(
        f"wrote {len(table)} rows with every input column plus {args.column!r}{band} to "
        f"{'stdout' if out == STDIO else out}",
        file=report,
    )
    print(_positive_line(est.classes_), file=report)


def _demo_figure(
    fitted: dict,
    scores,
    y,
    *,
    title: str = "Linear SVM on the Naeini et al. (2014) simulated data",
    score_label: str = "linear-SVM score (logistic of the decision value)",
    score_kind: str = "probability",
):
    """Left: calibration maps with bands against the raw score, over the binned raw frequencies
    and each class's scores. Right: reliability of the calibrated probabilities, with
    consistency bands. Raw decision values (``score_kind="decision"``) are no probabilities, so
    they get neither a raw-frequency curve nor a reliability curve of their own."""
    import matplotlib.pyplot as plt
    import numpy as np

    from bayescal.plotting import ReliabilityDisplay

    fig = plt.figure(figsize=(12, 7))
    grid = fig.add_gridspec(2, 2, height_ratios=[3, 1])
    ax_map = fig.add_subplot(grid[0, 0])
    ax_hist = fig.add_subplot(grid[1, 0], sharex=ax_map)
    ax_rel = fig.add_subplot(grid[:, 1])
    shown = {k: fitted[k] for k in ("dpm", "isotonic", "platt") if k in fitted} or dict(list(fitted.items())[:3])
    raw = score_kind == "probability"
    ReliabilityDisplay.from_calibrators(
        {"raw scores": None, **shown} if raw else shown,
        scores,
        y,
        points=False,
        n_consistency=0,
        ci_prob=0.95,
        ax=ax_map,
    )
    ax_map.set_title("Calibration maps P(y=1 | score), 95% credible band")
    bins = np.linspace(0, 1, 41) if raw else np.linspace(scores.min(), scores.max(), 41)
    for c in (0, 1):
        ax_hist.hist(scores[y == c], bins=bins, alpha=0.6, label=f"class {c}")
    ax_hist.set_xlabel(score_label)
    ax_hist.set_ylabel("count")
    ax_hist.legend(fontsize=8)
    ReliabilityDisplay.from_calibrators(
        {"uncalibrated": None, **shown} if raw else shown, scores, y, maps=False, ci_prob=0.95, ax=ax_rel
    )
    ax_rel.set_title("Calibrated probabilities on the test split (bars: consistency band)")
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def _png_base64(fig) -> str:
    import base64
    import io

    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def run_report(args: argparse.Namespace) -> None:
    """Fit the chosen calibrators on one part of the data, evaluate on the rest, write HTML."""
    import html

    import matplotlib

    matplotlib.use("Agg")
    import numpy as np
    from sklearn.model_selection import train_test_split

    from bayescal._registry import get_calibrator_class
    from bayescal._validation import check_labels
    from bayescal.plotting import DecisionDisplay, PPCDisplay

    if not 0.0 < args.test_size < 1.0:
        raise ValueError(f"--test-size {args.test_size:g}: give the share of rows held out, between 0 and 1 (e.g. 0.5)")
    for flag, cost in (("--cost-fp", args.cost_fp), ("--cost-fn", args.cost_fn)):
        if not 0.0 <= cost < float("inf"):
            raise ValueError(f"{flag} {cost:g}: a cost is a finite number >= 0")
    if args.cost_fp == 0.0 and args.cost_fn == 0.0:
        raise ValueError("--cost-fp and --cost-fn are both 0: at least one error must cost something")
    _check_seed(args.seed)
    methods = {}  # every name checked before the data are read or anything is fitted
    for name in args.methods:
        if name in methods:
            raise ValueError(f"--methods {name} is given twice: name each calibrator once")
        methods[name] = get_calibrator_class(name)
        if methods[name].feature_aware:
            raise ValueError(f"method {name!r} needs features; the report compares score-only calibrators")
    out = _user_path(args.out)
    _check_output(out, _inputs(args.data), args.force)
    steps = Progress(len(methods) + 3, _show_progress(args))
    with steps.step("reading " + ", ".join(args.data)):
        table = read_table(args.data, [args.score, args.label])
    scores = _column_scores(_numbers(table[args.score], args.score), args.score_kind, args.score)
    labels = table[args.label]
    pos_label = _parse_label(args.pos_label, labels, args.label)
    with _pos_label_named(args.pos_label, pos_label, labels, args.label):
        y01, classes = check_labels(labels.to_numpy(), pos_label=pos_label, name=f"column {args.label!r}")
    # scikit-learn's split takes seeds below 2**32; a greater --seed gives it one derived from it
    split_seed = args.seed if args.seed < 2**32 else int(np.random.SeedSequence(args.seed).generate_state(1)[0])
    s_cal, s_test, y_cal, y_test = train_test_split(
        scores, y01, test_size=args.test_size, stratify=y01, random_state=split_seed
    )
    fitted, rows = {}, {}
    if args.score_kind == "probability":
        rows["uncalibrated"] = _metric_row(y_test, np.clip(s_test, 0, 1))
    for name, cls in methods.items():
        accepted = cls().get_params()
        params = {k: v for k, v in (("score_kind", args.score_kind), ("random_state", args.seed)) if k in accepted}
        with steps.step(f"fitting {name}"):
            fitted[name] = cls(**params).fit(s_cal, y_cal)
        rows[name] = _metric_row(y_test, fitted[name].predict_proba(s_test)[:, 1])
    with steps.step("drawing the reliability diagram, posterior predictive check and decision regions"):
        figures = {
            "Reliability": _demo_figure(
                fitted,
                s_test,
                y_test,
                title=f"{args.score} on the test part",
                score_label=args.score,
                score_kind=args.score_kind,
            )
        }
        figures["Posterior predictive check"] = PPCDisplay.from_calibrators(fitted, s_test, y_test).figure_
        figures["Decision regions"] = DecisionDisplay.from_calibrators(
            fitted, cost_fp=args.cost_fp, cost_fn=args.cost_fn
        ).figure_
    head = "".join(f"<th>{m}</th>" for m in DEMO_METRICS)
    body = "".join(
        f"<tr><td>{html.escape(k)}</td>" + "".join(f"<td>{v[m]:.4f}</td>" for m in DEMO_METRICS) + "</tr>"
        for k, v in rows.items()
    )
    imgs = "".join(
        f"<h2>{html.escape(t)}</h2><img alt='{html.escape(t)}' src='data:image/png;base64,{_png_base64(f)}'>"
        for t, f in figures.items()
    )
    page = (
        f"<!doctype html><html><head><meta charset='utf-8'><title>bayescal report</title>"
        "<style>body{font-family:sans-serif;max-width:1100px;margin:auto}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}img{max-width:100%}</style></head><body>"
        f"<h1>Calibration report: {html.escape(args.score)} vs {html.escape(args.label)}</h1>"
        f"<p>{len(y_cal)} rows to fit the calibrators, {len(y_test)} to evaluate them (split seed {args.seed}); "
        f"positive class {html.escape(str(classes[1]))}.</p><p>{html.escape(DEMO_ECE_NOTE)}</p>"
        f"<table><tr><th>calibrator</th>{head}</tr>{body}</table>{imgs}</body></html>"
    )
    with steps.step(f"writing {out}"):
        _write_output(
            out,
            lambda path: sys.stdout.write(page) if path == STDIO else Path(path).write_text(page, encoding="utf-8"),
            args.force,
        )
    print(f"wrote {'stdout' if out == STDIO else out}", file=sys.stderr if out == STDIO else sys.stdout)
    print(_positive_line(classes), file=sys.stderr if out == STDIO else sys.stdout)


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows each option's default, except where there is none (required options, unset flags)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.required or action.default is None or action.default is False:
            return action.help
        return super()._get_help_string(action)


POS_LABEL_HELP = (
    "the positive label, read by the label column's type (true / false, a number, or text; default: 1, "
    "True, or the greater value; required for text labels)"
)


def _build_parser() -> argparse.ArgumentParser:
    from bayescal._registry import calibrators
    from bayescal._version import __version__

    fmt = _HelpFormatter
    parser = argparse.ArgumentParser(
        prog="bayescal", description="Bayesian calibration of binary classifiers.", formatter_class=fmt
    )
    parser.add_argument("--version", action="version", version=f"bayescal {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    parser.add_argument(
        "--progress",
        choices=["auto", "always", "never"],
        default="auto",
        help="report each step on stderr (auto: when stderr is a terminal)",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser(
        "demo", help="fit every calibrator on simulated data; print metrics; write a diagram", formatter_class=fmt
    )
    demo.add_argument("--out", default="demo_output", help="folder for reliability.png and metrics.csv")
    demo.add_argument(
        "--seed", type=int, default=0, help="random seed of the simulated data and the fits (0 to 2**64 - 1)"
    )
    demo.add_argument("--force", action="store_true", help="replace metrics.csv and reliability.png in --out if there")

    fit = sub.add_parser("fit", help="fit a calibrator on CSV/Parquet files and save it", formatter_class=fmt)
    fit.add_argument("data", nargs="+", help="CSV or Parquet files (globs allowed; - reads CSV from stdin)")
    fit.add_argument("--score", required=True, help="column of classifier scores")
    fit.add_argument("--label", required=True, help="column of true binary labels")
    fit.add_argument("--method", default="dpm", help=f"calibrator name: {', '.join(calibrators())}")
    fit.add_argument(
        "--score-kind",
        default="probability",
        choices=["probability", "decision"],
        help="probability scores in [0, 1], or raw decision values (margins, logits)",
    )
    fit.add_argument(
        "--pos-label",
        default=None,
        help=POS_LABEL_HELP,
    )
    fit.add_argument(
        "--seed",
        type=int,
        default=None,
        help="seed of the calibrator's randomness (its random_state), 0 to 2**64 - 1; the same seed gives "
        "the same model (default: none, so runs of a randomised calibrator may differ)",
    )
    fit.add_argument(
        "--param",
        action="append",
        default=None,
        metavar="NAME=VALUE",
        help='a calibrator parameter, repeatable; VALUE is read as JSON (500, 0.1, true, "text") or else as text',
    )
    fit.add_argument("--out", default="model.nc", help="where to save the fitted calibrator (netCDF)")
    fit.add_argument("--force", action="store_true", help="replace --out if it exists")
    fit.add_argument(
        "--dask-above",
        type=float,
        default=1e9,
        help="read with Dask and fit on a ScoreSummary when the files exceed this many bytes",
    )

    apply = sub.add_parser(
        "apply", help="add calibrated probabilities to every row of CSV/Parquet files", formatter_class=fmt
    )
    apply.add_argument("model", help="a file written by 'bayescal fit' or Calibrator.save")
    apply.add_argument("data", nargs="+", help="CSV or Parquet files (globs allowed; - reads CSV from stdin)")
    apply.add_argument("--score", required=True, help="column of classifier scores")
    apply.add_argument("--out", required=True, help="output .csv or .parquet (- writes CSV to stdout)")
    apply.add_argument("--column", default="p_calibrated", help="name of the added column")
    apply.add_argument(
        "--band",
        type=float,
        default=None,
        metavar="PROB",
        help="also add p_lower and p_upper, the equal-tailed PROB interval of the posterior "
        "(e.g. 0.95; a point-estimate calibrator gives lower = upper)",
    )
    apply.add_argument("--force", action="store_true", help="replace --out if it exists")

    report = sub.add_parser(
        "report", help="metrics, reliability diagram, PPC and decisions as one HTML page", formatter_class=fmt
    )
    report.add_argument("data", nargs="+", help="CSV or Parquet files (globs allowed; - reads CSV from stdin)")
    report.add_argument("--score", required=True, help="column of classifier scores")
    report.add_argument("--label", required=True, help="column of true binary labels")
    report.add_argument(
        "--methods",
        nargs="+",
        default=["dpm", "isotonic", "platt"],
        help="score-only calibrator names, each once (a name given twice is refused)",
    )
    report.add_argument(
        "--score-kind",
        default="probability",
        choices=["probability", "decision"],
        help="probability scores in [0, 1], or raw decision values",
    )
    report.add_argument(
        "--pos-label",
        default=None,
        help=POS_LABEL_HELP,
    )
    report.add_argument("--test-size", type=float, default=0.5, help="share of rows held out for evaluation")
    report.add_argument("--cost-fp", type=float, default=1.0, help="cost of a false positive (decision regions)")
    report.add_argument("--cost-fn", type=float, default=1.0, help="cost of a false negative (decision regions)")
    report.add_argument(
        "--seed", type=int, default=0, help="seed of the split and the Bayesian fits (0 to 2**64 - 1, as for fit)"
    )
    report.add_argument("--out", default="report.html", help="the HTML file to write (- for stdout)")
    report.add_argument("--force", action="store_true", help="replace --out if it exists")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the ``bayescal`` command with ``argv`` (the process's arguments when None).

    Returns
    -------
    int
        The exit status: 0 on success, 2 when the command fails (one line on stderr says why;
        ``--debug`` raises with the traceback instead). Arguments that argparse refuses exit
        with status 2 from argparse itself.
    """
    parser = _build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "demo":
            _check_seed(args.seed)
            run_demo(args.out, random_state=args.seed, progress=_show_progress(args), force=args.force)
        elif args.command == "fit":
            run_fit(args)
        elif args.command == "apply":
            run_apply(args)
        elif args.command == "report":
            run_report(args)
        return 0
    except Exception as exc:  # one line for users; the traceback with --debug
        if args.debug:
            raise
        print(f"bayescal: error: {_one_line(exc)}", file=sys.stderr)
        return 2


def _one_line(exc: BaseException) -> str:
    """An error's message as one line: its first line, saying that ``--debug`` shows the rest
    (another library's message can run to a table of many lines)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    if not lines:
        return type(exc).__name__
    return lines[0] + (" (bayescal --debug ... shows the whole message)" if len(lines) > 1 else "")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
