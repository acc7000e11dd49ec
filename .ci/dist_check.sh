#!/usr/bin/env bash
# Build the wheel and the sdist, install the wheel into a clean virtual environment (its
# runtime dependencies from the package index, nothing from the source tree), and run a
# smoke fit there, outside the checkout. Usage: bash .ci/dist_check.sh [PYTHON]
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${1:-.venv/bin/python}
OUT=build/dist-check
rm -rf "$OUT" && mkdir -p "$OUT"
start=$SECONDS

"$PY" -m build --sdist --wheel --outdir "$OUT/dist" . >"$OUT/build.log" 2>&1 || { cat "$OUT/build.log"; exit 1; }
wheel=$(ls "$OUT"/dist/bayescal-*.whl)
sdist=$(ls "$OUT"/dist/bayescal-*.tar.gz)
echo "built $(basename "$wheel") and $(basename "$sdist")"

# what must ship: the typing marker in the wheel; licence, changelog and tests in the sdist
"$PY" - "$wheel" "$sdist" <<'PYEOF'
import sys, tarfile, zipfile
wheel, sdist = sys.argv[1:]
names = zipfile.ZipFile(wheel).namelist()
missing = [f for f in ("bayescal/py.typed", "bayescal/base.py", "bayescal/bayesian/dpm.py") if f not in names]
if not any(n.endswith("licenses/LICENSE") or n.endswith("/LICENSE") for n in names):
    missing.append("LICENSE (wheel metadata)")
members = tarfile.open(sdist).getnames()
for f in ("LICENSE", "README.md", "pyproject.toml", "bayescal/py.typed"):
    if not any(m.endswith("/" + f) for m in members):
        missing.append(f"{f} (sdist)")
if missing:
    sys.exit(f"dist-check: missing from the distributions: {missing}")
print(f"wheel: {len(names)} files; sdist: {len(members)} members; py.typed and LICENSE present")
PYEOF

"$PY" -m venv "$OUT/venv"
"$OUT/venv/bin/python" -m pip install --quiet --upgrade pip
"$OUT/venv/bin/python" -m pip install --quiet "$wheel"
# run from outside the checkout so that the installed wheel, not the source tree, is imported
cd "$OUT"
venv/bin/python - <<'PYEOF'
import sys
import numpy as np
import bayescal
from bayescal.datasets import simulate_scores

assert "site-packages" in bayescal.__file__, bayescal.__file__
assert not any(m in sys.modules for m in ("pymc", "matplotlib", "dask")), "import bayescal must stay light"
d = simulate_scores("beta_skewed", 400, random_state=0)
for name in ("platt", "isotonic", "dpm"):
    params = {"draws": 100, "tune": 100, "n_components": 6} if name == "dpm" else {}
    cal = bayescal.make_calibrator(name, **params).fit(d.scores, d.y)
    p = cal.predict_proba(d.scores)[:, 1]
    band = cal.credible_band(11)
    assert np.all((p >= 0) & (p <= 1)) and band.sizes == {"score": 11, "ci_bound": 2}
    print(f"{name}: ECE {bayescal.metrics.ece(d.y, p):.4f}, band {band.attrs['ci_prob']:.0%}")
print(f"bayescal {bayescal.__version__} from the wheel: smoke fit ok")
PYEOF
venv/bin/bayescal --help >/dev/null
echo "dist-check passed in $((SECONDS - start)) s"
