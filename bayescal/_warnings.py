"""Warnings attributed to the user's code, whatever the depth of the call that raises them."""

from __future__ import annotations

import os
import warnings

_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def warn(message: str, category: type[Warning] = UserWarning) -> None:
    """:func:`warnings.warn` attributed to the first frame outside bayescal (Python's
    ``skip_file_prefixes``): the user's line, in a script, a notebook cell or a test, so that the
    warning names the call it is about and a :class:`DeprecationWarning` is shown by default.
    A fixed ``stacklevel`` cannot do that, since the same warning is raised at different depths
    on different paths (a metric called directly or by a calibrator's ``fit``)."""
    warnings.warn(message, category, skip_file_prefixes=(_PACKAGE,))
