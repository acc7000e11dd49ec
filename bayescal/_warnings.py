"""Warnings attributed to the user's code, whatever the depth of the call that raises them."""

from __future__ import annotations

import os
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep
_HELD = threading.local()  # .caught: the list that holds this thread's warnings, or None


def warn(message: str, category: type[Warning] = UserWarning) -> None:
    """:func:`warnings.warn` attributed to the first frame outside bayescal (Python's
    ``skip_file_prefixes``): the user's line, in a script, a notebook cell or a test, so that the
    warning names the call it is about and a :class:`DeprecationWarning` is shown by default.
    A fixed ``stacklevel`` cannot do that, since the same warning is raised at different depths
    on different paths (a metric called directly or by a calibrator's ``fit``).

    Inside :func:`held` the warning is kept for the thread that started the work instead:
    a worker thread's stack holds no user frame."""
    caught = getattr(_HELD, "caught", None)
    if caught is not None:
        caught.append((message, category))
        return
    warnings.warn(message, category, skip_file_prefixes=(_PACKAGE,))


@contextmanager
def held() -> Iterator[list[tuple[str, type[Warning]]]]:
    """Within the block, this thread's :func:`warn` calls append ``(message, category)`` to the
    yielded list instead of warning; a worker thread returns the list, and the thread that
    started it passes each to :func:`warn` (:func:`bayescal._threads.map_in_threads`)."""
    previous = getattr(_HELD, "caught", None)
    caught: list[tuple[str, type[Warning]]] = []
    _HELD.caught = caught
    try:
        yield caught
    finally:
        _HELD.caught = previous
