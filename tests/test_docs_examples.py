"""The Python examples of the user-facing documentation run.

What is checked
---------------
Every fenced code block whose info string is ``python`` in ``README.md``,
``docs/getting_started.md``, ``docs/user_guide/*.md`` and ``docs/examples/*.md`` is run.
The blocks of one file run in order, in one shared namespace (a later block may use the
names an earlier one defined, as a reader following the page would), as one test case per
file, with the file's path as the case's id. Only files that hold at least one ``python``
block get a case. Other info strings (``sh``, ``text``, MyST's ``{code-cell}``, which the
documentation build executes itself) are not run. ``docs/evidence/`` and
``docs/architecture.md`` are not collected: their blocks are not examples to run.

The blocks run in a fresh temporary working directory, so a file an example writes never
lands in the repository, with matplotlib on the Agg backend (every figure is closed after
the file's blocks) and one BLAS and OpenMP thread (on a loaded machine threaded numerical
code can run a hundred times slower). A failing block's traceback names the Markdown file
and the line of the block's code in it.

Only that a block runs is checked: the values its comments show are not compared.

The skip rule
-------------
A block that is deliberately not runnable (it reads the user's own files, connects to a
cluster, or fits for minutes) is marked in the Markdown by an HTML comment on the line
immediately before its opening fence, which neither GitHub nor the documentation site
renders::

    <!-- docs-test: skip (reads your own Parquet files) -->
    ```python
    df = dd.read_parquet("scores/*.parquet")
    ```

The text in parentheses, the reason, is optional (``<!-- docs-test: skip -->``). A skipped
block is not run; the blocks after it still are, so a skipped block must not define names a
later, runnable block needs. A ``docs-test`` comment anywhere else (not directly before a
``python`` fence, or misspelt) fails the test, so a marker cannot silently stop applying.
Prefer making a block runnable, for instance with the simulated data of
:mod:`bayescal.datasets`, over marking it skipped.
"""

from __future__ import annotations

import re
import textwrap
from typing import NamedTuple

import pytest
from _paths import ROOT
from threadpoolctl import threadpool_limits

DOC_FILES = [
    ROOT / "README.md",
    ROOT / "docs" / "getting_started.md",
    *sorted((ROOT / "docs" / "user_guide").glob("*.md")),
    *sorted((ROOT / "docs" / "examples").glob("*.md")),
]

# an opening fence: three or more backticks or tildes, then the info string (indented in a list item)
FENCE = re.compile(r"^\s*(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
SKIP_MARKER = re.compile(r"^<!-- docs-test: skip( \(.+\))? -->$")


class Block(NamedTuple):
    """One ``python`` block of a Markdown file."""

    code: str
    first_line: int  # the file's line number (from 1) of the block's first line of code
    skip: bool  # marked <!-- docs-test: skip -->


def is_python_fence(line):
    opening = FENCE.match(line)
    return opening is not None and opening["info"].split()[:1] == ["python"]


def python_blocks(path):
    """The ``python`` fenced blocks of the Markdown file ``path``, in order.

    Raises ValueError for a ``docs-test`` marker that is misspelt or not on the line right
    before a ``python`` fence.
    """
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if "docs-test" in line:
            next_line = lines[i + 1] if i + 1 < len(lines) else ""
            if not SKIP_MARKER.match(line.strip()) or not is_python_fence(next_line):
                raise ValueError(
                    f"{path}:{i + 1}: a docs-test marker must read '<!-- docs-test: skip -->' (or "
                    "'<!-- docs-test: skip (reason) -->') on the line right before a ```python fence"
                )
        opening = FENCE.match(line)
        if not opening:
            i += 1
            continue
        # the block ends at the closing fence: the same character, at least as many, nothing after
        fence = opening["fence"]
        closing = re.compile(rf"^\s*{re.escape(fence[0])}{{{len(fence)},}}\s*$")
        end = i + 1
        while end < len(lines) and not closing.match(lines[end]):
            end += 1
        if is_python_fence(line):
            skip = i > 0 and SKIP_MARKER.match(lines[i - 1].strip()) is not None
            code = textwrap.dedent("\n".join(lines[i + 1 : end]))
            blocks.append(Block(code, i + 2, skip))
        i = end + 1
    return blocks


CASES = [path for path in DOC_FILES if python_blocks(path)]


def test_the_docs_have_python_examples():
    assert {path.name for path in CASES} >= {"README.md", "getting_started.md"}


@pytest.mark.parametrize("path", CASES, ids=[str(path.relative_to(ROOT)) for path in CASES])
def test_docs_examples_run(path, tmp_path, monkeypatch):
    monkeypatch.setenv("MPLBACKEND", "Agg")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    blocks = python_blocks(path)
    if all(block.skip for block in blocks):
        pytest.skip(f"all {len(blocks)} python blocks of {path.name} are marked docs-test: skip")
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "__docs_example__"}
    try:
        # One BLAS and OpenMP thread: when other processes keep the cores busy, threaded numerical
        # code waits for descheduled threads (the README's HistGradientBoostingClassifier ran 100
        # times slower). The limit reaches only the libraries loaded before it: importing
        # scikit-learn loads its OpenMP runtime and numpy's and scipy's BLAS.
        import sklearn  # noqa: F401

        with threadpool_limits(limits=1):
            for block in blocks:
                if block.skip:
                    continue
                # padded so that the code's line numbers are the Markdown file's: tracebacks show its lines
                source = "\n" * (block.first_line - 1) + block.code
                exec(compile(source, str(path), "exec"), namespace)
    finally:
        plt.close("all")
