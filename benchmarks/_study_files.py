"""The output files of the candidate studies: rows appended to a CSV with the coverage study's
columns, and beside it a markdown file stamped with the command of every run that wrote rows."""

from __future__ import annotations

import contextlib
import csv
import os
import platform
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from dpm_coverage import FIELDS


@contextlib.contextmanager
def appending(path: Path, fields: list[str] = FIELDS) -> Iterator[Callable[[dict], None]]:
    """A function that appends one row (its ``fields``, by default the coverage study's
    :data:`FIELDS`) to the CSV ``path`` and flushes it, so an interrupted run keeps its rows. When the file is new its header is
    written, and the run lines of an earlier ``.md`` beside it (:func:`stamp_runs`), whose rows are
    gone, are dropped."""
    new = not path.exists()
    if new:
        path.with_suffix(".md").unlink(missing_ok=True)
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
        runs.append(
            f"- {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} ({platform.system()} {platform.machine()}, "
            f"{os.cpu_count()} cores, Python {platform.python_version()}): `{command}`"
        )
    md.write_text(f"# {title}\n\n{intro}\n\n" + "\n".join(runs) + f"\n\n{table}\n")
