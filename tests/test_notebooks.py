"""Every notebook in notebooks/ runs top to bottom (nbclient, the venv's python3 kernel).

Executed in memory: outputs are never written back into the repository. The notebooks are
kept without outputs in git, which the last test checks.
"""

from __future__ import annotations

import time

import nbclient
import nbformat
import pytest
from _paths import NOTEBOOKS as NOTEBOOK_DIR

NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
BUDGET_SECONDS = 120  # the bound per notebook on 2 cores
TIMEOUT_SECONDS = 600  # per cell: a loaded machine can be slow, the budget assertion is the check


def test_the_four_notebooks_exist():
    assert {p.stem for p in NOTEBOOKS} >= {"quickstart", "naeini2014", "decisions", "uncertainty"}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(path, monkeypatch):
    monkeypatch.setenv("MPLBACKEND", "Agg")  # the kernel inherits it: no figure rendering needed
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        nb, timeout=TIMEOUT_SECONDS, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOK_DIR)}}
    )
    t0 = time.perf_counter()
    client.execute()  # raises CellExecutionError with the failing cell's traceback
    elapsed = time.perf_counter() - t0
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors
    assert elapsed < BUDGET_SECONDS * 1.5, (
        f"{path.name} took {elapsed:.0f} s (budget {BUDGET_SECONDS} s on 2 free cores)"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_is_stored_without_outputs(path):
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, f"{path.name}: strip the outputs"
