"""Type aliases of the public API (for annotations; importing this module costs nothing).

``ArrayLike`` is numpy's: anything :func:`numpy.asarray` accepts (lists, numpy arrays,
pandas Series, xarray objects); ``RandomStateLike`` is scikit-learn's convention for
randomness: an int seed, a :class:`numpy.random.Generator`, or ``None`` for fresh entropy.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["ArrayLike", "RandomStateLike"]

type RandomStateLike = int | np.random.Generator | None
