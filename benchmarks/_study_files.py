"""What the candidate studies share: their replicates (the coverage study's truths, N and seeds),
their rows appended to a CSV with the coverage study's columns, the table of those rows beside
the default calibrator's on the same seeds, and a markdown file stamped with the command of every
run that wrote rows."""

from __future__ import annotations

import argparse
import contextlib
import csv
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from dpm_coverage import (
    FIELDS,
    FORMER_DEFAULT,
    TRUTHS,
    _rows,
    _rule,
    _truth_label,
    band_scores,
    cell_summary,
    cells,
    data_points,
    region_grid,
    simulate,
)
from make_evidence import machine

RESULTS = Path(__file__).parent / "results"


@dataclass
class Replicate:
    """One (truth, N, seed) replicate of the coverage study: the scores ``s`` (of ``kind``), labels
    ``y``, the true map, and the points a band is scored at (:func:`dpm_coverage.region_grid` and
    :func:`dpm_coverage.data_points`; ``points`` is the two concatenated)."""

    truth: str
    n: int
    seed: int
    s: np.ndarray
    y: np.ndarray
    kind: str
    true_map: Callable
    grid: np.ndarray
    data_pts: np.ndarray

    @property
    def points(self) -> np.ndarray:
        return np.concatenate([self.grid, self.data_pts])


def replicate(truth: str, n: int, seed: int) -> Replicate:
    """The replicate ``(truth, n, seed)`` (:func:`dpm_coverage.simulate`)."""
    s, y, true_map, kind = simulate(truth, n, seed)
    grid = region_grid(s)
    return Replicate(truth, n, seed, s, y, kind, true_map, grid, data_points(s, grid, seed))


def scored_row(rep: Replicate, route: str, maps: np.ndarray, elapsed: float, **extra) -> dict:
    """The coverage study's row of map draws ``maps`` (draws, points) at ``rep.points``: the
    replicate, ``route``, the fit time, ``extra`` columns and the bands' scores
    (:func:`dpm_coverage.band_scores`, the posterior mean as the point estimate)."""
    m_grid, m_data = maps[:, : rep.grid.size], maps[:, rep.grid.size :]
    row = {"truth": rep.truth, "n": rep.n, "seed": rep.seed, "route": route, "time_s": elapsed} | extra
    row |= band_scores(m_grid, m_grid.mean(0), rep.true_map(rep.grid), m_data, rep.true_map(rep.data_pts))
    return row


@contextlib.contextmanager
def appending(path: Path, fields: list[str] = FIELDS) -> Iterator[Callable[[dict], None]]:
    """A function that appends one row (its ``fields``, by default the coverage study's
    :data:`FIELDS`) to the CSV ``path`` and flushes it, so an interrupted run keeps its rows. When the file is new its header is
    written, and the run lines of an earlier ``.md`` beside it (:func:`stamp_runs`), whose rows are
    gone, are dropped. A file written under other columns (before a column was added) is first
    rewritten under ``fields``, its rows keeping their values and the new columns empty, so that the
    rows appended now line up with its header."""
    new = not path.exists()
    if new:
        path.with_suffix(".md").unlink(missing_ok=True)
    else:
        with path.open() as fh:
            reader = csv.DictReader(fh)
            old = None if reader.fieldnames == fields else list(reader)
        if old is not None:
            with path.open("w", newline="") as fh:
                writer = csv.DictWriter(fh, fieldnames=fields)
                writer.writeheader()
                writer.writerows({k: r.get(k, "") for k in fields} for r in old)
    with path.open("a", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=fields)
        if new:
            writer.writeheader()

        def write(row: dict) -> None:
            writer.writerow({k: row.get(k, "") for k in fields})
            fh.flush()

        yield write


def stamp_runs(path: Path, title: str, intro: str, command: str | None, table: str) -> None:
    """Write ``path`` with the suffix ``.md``: ``title``, ``intro``, one line per run that wrote
    rows (those already in the file, then ``command`` with the date and machine unless it is
    None) and ``table``."""
    md = path.with_suffix(".md")
    runs = [ln for ln in md.read_text().splitlines() if ln.startswith("- ")] if md.exists() else []
    if command is not None:
        runs.append(f"- {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} ({machine()}): `{command}`")
    md.write_text(f"# {title}\n\n{intro}\n\n" + "\n".join(runs) + f"\n\n{table}\n")


def replicate_arguments(
    ap: argparse.ArgumentParser, out: Path, n: tuple[int, ...] = (300, 1000), seeds: int = 8
) -> None:
    """Add the replicates' options to ``ap``: ``--truths``, ``--n``, ``--seeds``, ``--first-seed``
    and ``--out`` (the CSV, by default ``out``)."""
    ap.add_argument("--truths", nargs="+", default=["plateau", "monotone"], choices=list(TRUTHS))
    ap.add_argument("--n", nargs="+", type=int, default=list(n))
    ap.add_argument("--seeds", type=int, default=seeds)
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=out)


def study_parser(doc: str, script: str, n: tuple[int, ...] = (300, 1000), seeds: int = 8) -> argparse.ArgumentParser:
    """The command line of ``benchmarks/<script>``: its docstring ``doc`` as the description and the
    replicates' options (:func:`replicate_arguments`), with ``--out`` by default the CSV of the
    script's name in ``benchmarks/results``. A study adds its own options to it."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    replicate_arguments(ap, RESULTS / f"{Path(script).stem}.csv", n, seeds)
    return ap


def run_study(
    args: argparse.Namespace,
    script: str,
    title: str,
    run: Callable[[str, int, int], dict],
    table: Callable[[Path], str],
    fields: list[str] = FIELDS,
    options: tuple[str, ...] = (),
) -> None:
    """Run a study from its parsed command line (:func:`study_parser`): append ``run(truth, n,
    seed)`` for every replicate (:func:`run_replicates`), then stamp the command that reruns it,
    with the study's ``options`` (:func:`command_line`), and its ``table`` under ``title``
    (:func:`finish_study`)."""
    run_replicates(args, run, fields)
    finish_study(args, title, command_line(script, args, options), table)


def run_replicates(args: argparse.Namespace, run: Callable[[str, int, int], dict], fields: list[str] = FIELDS) -> None:
    """Append ``run(truth, n, seed)`` to ``args.out`` for every truth, N and seed of ``args``
    (:func:`replicate_arguments`), printing a line per row."""
    with appending(args.out, fields) as write:
        for truth in args.truths:
            for n in args.n:
                for seed in range(args.first_seed, args.first_seed + args.seeds):
                    row = run(truth, n, seed)
                    write(row)
                    print(f"{row['route']} {truth} {n} {seed}: cov95 {row['cov95']:.3f} mae {row['mae']:.4f} "
                          f"{row['time_s']:.2f} s", flush=True)  # fmt: skip


def register_route(name: str, fit: Callable, both_families: bool = True) -> None:
    """Make ``inference=name`` fit each class with ``fit`` in this process (a study's research route,
    not one of the package's), for both component families when ``both_families``."""
    from bayescal.bayesian import routes

    routes.ROUTES[name] = fit
    if both_families and name not in routes.BETA_ROUTES:
        routes.BETA_ROUTES = (*routes.BETA_ROUTES, name)


def command_line(script: str, args: argparse.Namespace, options: tuple[str, ...] = ()) -> str:
    """The command that reruns ``args`` of ``benchmarks/<script>``: the replicates' options and
    ``options`` (a flag, an option whose value is a bool, only when it is set)."""
    parts = [f"python benchmarks/{script} --truths {' '.join(args.truths)} --n {' '.join(map(str, args.n))}"]
    parts.append(f"--seeds {args.seeds} --first-seed {args.first_seed}")
    for name in options:
        value, flag = getattr(args, name), f"--{name.replace('_', '-')}"
        if value is True:
            parts.append(flag)
        elif value is not False:
            parts.append(f"{flag} {value}")
    return " ".join(parts)


def _converged(c: dict, sel: list[dict]) -> str:
    from bayescal.bayesian.convergence import meets_target

    return f"{sum(bool(meets_target(r)) for r in sel)}/{len(sel)}"


CONVERGENCE_COLUMNS = (
    ("R-hat max", lambda c, sel: f"{c['rhat_max']:.3f}"),
    ("ESS bulk min", lambda c, sel: f"{c['ess_bulk_min']:.0f}"),
    ("converged", _converged),
)
"""Columns of :func:`paired_table` for a study with chains: the map's worst R-hat and lowest bulk
ESS over the data region (means over seeds) and the fits meeting R-hat <= 1.01 and ESS >= 400."""


def paired_table(path: Path, own: tuple[tuple[str, Callable[[dict, list[dict]], str]], ...] = ()) -> str:
    """A markdown table of a study's rows in the CSV ``path``, one line per (variant, truth, N):
    the means over seeds of the bands' coverage (standard error of the 95 % one), the 95 %
    coverage at the data points, the MAE and the width; the study's ``own`` columns (a header
    and a function of the cell's summary, :func:`dpm_coverage.cell_summary`, and rows); the fit
    time; then the rows of ``dpm_coverage.csv`` on the same seeds of the default calibrator of
    the time these studies ran (:data:`dpm_coverage.FORMER_DEFAULT`, before 2026-12-03) (95 /
    80 / 50 % coverage, MAE, width), the KDE and Platt calibrators' MAE there, and the seeds so
    paired (``-`` where the coverage study has no such rows)."""
    default = {
        (r["truth"], int(r["n"]), int(r["seed"])): r
        for r in _rows(RESULTS / "dpm_coverage.csv")
        if r["route"] == FORMER_DEFAULT
    }
    head = (
        "| variant | truth | N | seeds | 95 % cov (se) | 80 % | 50 % | 95 % data-weighted | MAE | width | "
        + "".join(f"{name} | " for name, _ in own)
        + "time s | DPM 95 % cov | DPM 80 % | DPM 50 % | DPM MAE | DPM width | MAE KDE | MAE Platt | seeds paired |"
    )
    lines = [head, _rule(head)]
    for (variant, truth, n), sel in cells(_rows(path)):
        c = cell_summary(sel)
        paired = [default[(truth, n, int(r["seed"]))] for r in sel if (truth, n, int(r["seed"])) in default]
        d = cell_summary(paired) if paired else {}

        def get(name, fmt, src=d):
            return format(src[name], fmt) if name in src else "-"

        others = d.get("others", {})
        lines.append(
            f"| {variant} | {_truth_label(truth)} | {n} | {c['seeds']} "
            f"| {c['cov95']:.3f} ({c['cov95_se']:.3f}) | {c['cov80']:.3f} | {c['cov50']:.3f} | {c['cov95_data']:.3f} "
            f"| {c['mae']:.4f} | {c['width']:.3f} | "
            + "".join(f"{column(c, sel)} | " for _, column in own)
            + f"{c['time_s']:.2f} | {get('cov95', '.3f')} | {get('cov80', '.3f')} | {get('cov50', '.3f')} "
            f"| {get('mae', '.4f')} | {get('width', '.3f')} | {get('kde', '.4f', others)} "
            f"| {get('platt', '.4f', others)} | {len(paired)} |"
        )
    return "\n".join(lines)


PAIRED_INTRO = (
    "Rows of `{name}`, written by these runs (each appends its rows); the DPM columns are the "
    "rows of `dpm_coverage.csv` on the same seeds of the default calibrator of the time these studies ran "
    f"(before 2026-12-03, `{FORMER_DEFAULT}`: its priors' bandwidth from the standard deviation):"
)
"""The run list's heading of a study whose table is :func:`paired_table`'s (``{name}``: the CSV)."""


def finish_study(
    args: argparse.Namespace, title: str, command: str, table: Callable[[Path], str], intro: str = PAIRED_INTRO
) -> None:
    """Stamp the run (``command``, unless ``--seeds 0`` wrote no rows) and the ``table`` of all rows
    of ``args.out`` into its ``.md`` (:func:`stamp_runs`) under ``title`` and ``intro`` (its
    ``{name}`` the CSV's name), and print the table."""
    text = table(args.out)
    stamp_runs(args.out, title, intro.format(name=args.out.name), command if args.seeds > 0 else None, text)
    print(text)
