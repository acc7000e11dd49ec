"""Write the evidence pages of the documentation (docs/evidence/*.md) from the studies' outputs.

The pages are generated, never typed by hand: each is rewritten from the output file of
its study when that file exists, with the date the file was written, the machine this
script runs on and the command that regenerates it. A page whose output file is absent
is left as it is (the committed version says when and how it was measured), and so is the
coverage page when the study's output lacks some of its rows or seeds (a study run in parts),
unless ``--allow-fewer-rows``. The outputs are kept in git (``benchmarks/results/``), so a
page can be rebuilt, and a study extended, from a fresh clone.

===========================  ===================================================  =============================
page                         read from                                            written by
===========================  ===================================================  =============================
docs/evidence/coverage.md    benchmarks/results/dpm_coverage.csv and              benchmarks/dpm_coverage.py,
                             band_scaling_study.md, when present                  benchmarks/band_scaling_study.py
docs/evidence/speed.md       benchmarks/results/dpm_speed.md (its stdout)         benchmarks/dpm_speed.py
                             and dpm_speed_load.md (``--load``), when present
docs/evidence/realdata.md    benchmarks/results/dpm_realdata.json                 benchmarks/dpm_realdata.py
docs/evidence/candidates.md  benchmarks/results/student_t_study.csv and .md, and  benchmarks/student_t_study.py,
                             skew_normal_study.md, logspline_study.md,            benchmarks/skew_normal_study.py,
                             logistic_experts_study.md, polya_tree_study.md,      benchmarks/logspline_study.py,
                             change_point_study.md and gp_map_study.md, when      benchmarks/logistic_experts_study.py,
                             present                                              benchmarks/polya_tree_study.py,
                                                                                  benchmarks/change_point_study.py,
                                                                                  benchmarks/gp_map_study.py
docs/evidence/random_truths  benchmarks/results/random_truths.csv                 benchmarks/random_truths_study.py
.md
docs/evidence/vi.md          benchmarks/results/vi_study.csv, and vi_select.csv,  benchmarks/vi_study.py,
                             vi_beta.csv, vi_bootstrap.csv, dpm_speed_vi.md,      benchmarks/dpm_coverage.py,
                             dpm_speed_vi_gibbs.md and posterior_geometry.md,     benchmarks/dpm_speed.py,
                             when present (:mod:`_vi_page`)                       benchmarks/posterior_geometry.py
===========================  ===================================================  =============================

Usage::

    python benchmarks/dpm_coverage.py --seeds 30                 # or --truths/--n for a part
    python benchmarks/dpm_speed.py | tee benchmarks/results/dpm_speed.md
    python benchmarks/dpm_speed.py --load | tee benchmarks/results/dpm_speed_load.md
    python benchmarks/dpm_realdata.py
    python benchmarks/make_evidence.py --readme README.md        # then commit docs/evidence/ and README.md
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
EVIDENCE = HERE.parent / "docs" / "evidence"
REFERENCE = HERE.parent.parent / "shared" / "reference"
"""The seed authors' reference data, beside the checkout (scripts that read it take --reference)."""


def machine() -> str:
    """A one-line description of this machine (the studies' timings depend on it)."""
    try:
        import psutil

        mem = f", {psutil.virtual_memory().total / 2**30:.0f} GiB"
    except ImportError:  # pragma: no cover - psutil is a runtime dependency
        mem = ""
    return (
        f"{platform.system()} {platform.machine()}{processor()}, {os.cpu_count()} cores{mem}, "
        f"Python {platform.python_version()}"
    )


def processor() -> str:
    """The processor's model and its widest vector instructions (``", AMD EPYC, AVX2"``) where
    ``/proc/cpuinfo`` tells them, else empty: the compiled kernels' sums, and so the sampler's
    draws, most of all those of the Hamiltonian moves, can depend on the vector width
    (``bayescal.bayesian.gibbs``)."""
    try:
        with open("/proc/cpuinfo") as fh:
            info = {key.strip(): value for key, _, value in (line.partition(":") for line in fh)}
    except OSError:
        return ""
    model = info.get("model name", "").strip()
    flags = set(info.get("flags", "").split())
    simd = next((name for flag, name in SIMD_LEVELS if flag in flags), "")
    return "".join(f", {part}" for part in (model, simd) if part)


SIMD_LEVELS = (("avx512f", "AVX-512"), ("avx2", "AVX2"), ("avx", "AVX"), ("sse4_2", "SSE4.2"))
"""Vector instruction sets by ``/proc/cpuinfo`` flag, widest first (:func:`processor`)."""


def written(source: Path) -> dt.datetime:
    """When ``source`` was written: the date of the commit that last changed it when the file is
    committed and unchanged since (a checkout sets the modification time to the checkout's), else
    its modification time."""
    import subprocess

    def git(*args: str) -> str:
        try:
            run = subprocess.run(["git", *args], cwd=source.parent, capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.SubprocessError):
            return ""
        return run.stdout.strip() if run.returncode == 0 else ""

    if git("ls-files", "--error-unmatch", source.name) and not git("status", "--porcelain", "--", source.name):
        committed = git("log", "-1", "--format=%cI", "--", source.name)
        if committed:
            return dt.datetime.fromisoformat(committed).astimezone(dt.UTC)
    return dt.datetime.fromtimestamp(source.stat().st_mtime, dt.UTC)


def stamp(source: Path, command: str, measured_on: str | None = None) -> str:
    """The line under a page's heading: its source, when that was written (and, for timings, on which
    machine: ``measured_on``), where the page was built, and the commands that regenerate it."""
    when = written(source).strftime("%Y-%m-%d %H:%M UTC")
    if measured_on is not None:
        when += f" on {measured_on}"
    shown = source.relative_to(HERE.parent) if source.is_relative_to(HERE.parent) else source
    return (
        f"*Generated by `benchmarks/make_evidence.py` from `{shown}` "
        f"(written {when}; page built on {machine()}). Regenerate: `{command}`.*\n"
    )


MACHINE_LINE = "machine: "
"""How ``dpm_speed.py`` starts the line naming the machine it timed on (:func:`machine`)."""


def measured_on(source: Path) -> str:
    """The machine a timing file (``dpm_speed.py``'s output) was measured on, from its
    :data:`MACHINE_LINE`; files written before it recorded one say so."""
    for line in source.read_text().splitlines():
        if line.startswith(MACHINE_LINE):
            return line.removeprefix(MACHINE_LINE).strip()
    return "a machine it does not record"


def coverage_page(source: Path) -> str:
    sys.path.insert(0, str(HERE))
    from dpm_coverage import FORMER_DEFAULT, paired, summarise

    from bayescal.bayesian.dpm import SELECT_AVERAGE_UNITS

    return (
        "# Coverage of the credible band\n\n"
        "How often the DPM calibrator's bands contain the true map on simulated truths whose map is "
        "known (see `benchmarks/dpm_coverage.py` for the truths; those marked held out were never used "
        "to choose settings). Columns: pointwise coverage of the 95 % / 80 % / 50 % equal-tailed bands "
        "over 200 points of the data region (mean over seeds; standard error of the 95 % one in "
        "brackets), the 95 % coverage at the observed scores (data-weighted), the 95 % coverage over "
        "the grid points where the true map is strictly between 0 and 1 (the skewed truth's map is "
        "exactly 0 below 1.5, where no positive score exists: a mixture's map draws are positive "
        "everywhere, so no equal-tailed band contains 0 there; in brackets the largest distance from "
        "such a 0 to the band over the cell's seeds), the mean absolute error "
        "of the posterior-mean map beside the KDE calibrator's and the best other registered "
        "calibrator's, the mean 95 % band width, the map's worst split R-hat and lowest bulk / tail "
        "ESS over the data region (Vehtari et al. 2021), the share of fits meeting R-hat <= 1.01 and "
        "bulk and tail ESS >= 400 there (converged), the share of fits whose map is made of Beta components "
        '(Beta kept: the family `components="select"` kept, "both" for `components="auto"`, which averages '
        'the two; over the rows that record it, "of k" when only k '
        "of the cell's rows do: rows written before 2026-11-29 do not), and the fit time (seconds, on a shared "
        "machine, with the code that wrote the rows; `speed.md` has the current code's times). The bar: 95 % coverage 0.92-0.98, 50 % and 80 % within 0.07 of their level, MAE no "
        "larger than the KDE calibrator's, R-hat <= 1.01, ESS >= 400. Route `gibbs` is the default "
        "calibrator: the concentration of each class's mixture held near 1 by its prior (Gamma(1000, 1000), "
        "the default since 2026-12-02; `bayescal.bayesian.priors` says why), above 2,048 scores in a class "
        "the scores compressed into 512 bins (`n_bins=512`, the default since 2026-12-02; 1,024 before), and "
        '`components="select"` (for probability scores it fits Gaussian and Beta components, '
        "compares them on their chains' first draws by the leave-one-out log densities of the points and "
        f"runs on the chains of the family that predicts them better, and above {SELECT_AVERAGE_UNITS:,} scores in a class "
        'averages the two as `components="auto"` does (so at 10^6 and 10^7 its rows are those fits); for the '
        "decision-value truths heavy "
        "and skewed it is the Gaussian model; a class of more than 2,048 scores whose chains run without "
        "Hamiltonian moves, up to 20,000 scores, starts each chain from its own draw from the prior, the "
        "others from the KDE-informed values; the components' scale prior centred at Silverman's bandwidth from "
        "the robust spread min(sd, IQR / 1.349), the default since 2026-12-03). Every row written before "
        "2026-12-03 took that bandwidth from each class's standard deviation, which a few far scores inflate, "
        'and its label says so (`prior_spread="sd"`, a study option of `dpm_coverage.py` that refits it); below '
        f"a route is named without it: `{FORMER_DEFAULT}` is the former default, whose cells the new "
        "default refitted on the same seeds (the paired counts are in the section beside the default below), "
        "and the candidate studies of that time are paired with it. Every row written before 2026-12-02, and "
        "every row of a route "
        "other than `gibbs` and the few below that say otherwise, learnt the concentration under a Gamma(1, 1) "
        'prior, the default until then: their labels say so (`priors={"alpha_shape": 1.0, "alpha_rate": 1.0}`), '
        "and below a route is named without it. The rows of that former default are "
        '`gibbs (priors={"alpha_shape": 1.0, "alpha_rate": 1.0})`; the rows of the new default were first '
        'written as a candidate (`priors={"alpha_shape": 1000.0, "alpha_rate": 1000.0}`) on the seeds of the '
        "former default's cells, and relabelled `gibbs` when it became the default (CHANGELOG). "
        "`gibbs (gaussian)` fits Gaussian components only "
        '(`--option \'components="gaussian"\'`, the default before `"select"`); `gibbs (auto)` averages '
        'Gaussian and Beta components by their label scores (`components="auto"`, with fewer seeds, up to 10^5). '
        'Beta components alone (`components="beta"`, `gibbs (beta)`) are in the study only at 10^6, on the '
        "monotone and piles truths, with the default shape prior and with twice its log-scale spread "
        '(`priors={"ab_logsd": 2.0}`; rejected, CHANGELOG). '
        "At 10^6 the cells of truths other than monotone compare the DPM with the "
        "KDE calibrator only (`--others kde`), so there the best other calibrator is the KDE one. A route that names "
        "other parameters is the default calibrator with those set, on the same seeds: `n_components=8` at "
        "10^4 (a smaller truncation, whose fewer redundant components might mix faster: they do not) and "
        "`n_components=40` there (a larger one, on three truths: the plateau's band is no wider); "
        '`priors={"alpha_shape": a, "alpha_rate": b}` sets the prior of the mixtures\' concentration, '
        "Gamma(a, b): Gamma(2, 0.5) (mean 4, more components in use), Gamma(2, 2) (mean 1, no mass near 0) and "
        'Gamma(10, 10), on 16 seeds (candidates page, overview); `route_options={"thin": 20}` at 300 scores and '
        '`{"thin": 6}` at 10^3, with the held concentration, keep a half and a third to a half of the default\'s '
        "sweeps (seven design truths, 16 seeds). From 10^4 scores on, where a class is compressed, the default's "
        "rows were first written as a candidate (`n_bins=512`) on the seeds of the former default's cells and "
        "relabelled `gibbs` when it became the default; every row fitted there on the former 1,024 bins names "
        "them (`n_bins=1024`), so `gibbs (n_bins=1024)` is the former default and a route that names them is "
        "compared with it. `n_bins=256` at 10^5-10^7 compresses the scores into half the default's bins, and "
        '`route_options={"hmc_steps": 10}` (on 1,024 bins) runs Hamiltonian moves of half the default\'s leapfrog '
        "steps (cheaper samplers: `speed.md` times the default, `benchmarks/results/dpm_speed_options.md` these "
        "beside the former default; candidates page, overview); "
        '`route_options={"alpha_update": "collapsed"}` draws the concentration with the sticks integrated '
        'out (the same posterior; `bayescal.bayesian.gibbs`, "Concentration"); '
        '`route_options={"start": "dispersed"}` '
        "starts every class's chains from their own draws from the prior (over-dispersed starts, "
        '`benchmarks/start_study.py`), `route_options={"start": "prior"}` every class\'s from the KDE-informed '
        "values: the default up to 2026-11-28, whose rows at 10^4 (and of the boosted truth at 10^5) keep that "
        "label, as do the `gibbs (gaussian)` and `gibbs (auto)` rows at 10^4 fitted then; the rows of "
        "the former default there are the dispersed starts' rows where every class has more than 2,048 scores (the "
        "same fits, bit for bit) and new fits on the rare and boosted truths. A fit's draws depend in the "
        'last bits on the processor (`bayescal.bayesian.gibbs`, "Chains and randomness"), most of all from '
        "10^5 scores on, where the Hamiltonian moves run: every row there was fitted on one machine (Linux "
        "x86_64, Intel Xeon, AVX-512, 2 cores) except the dispersed starts' rows at 10^5 and the default's "
        "(`gibbs`), `n_bins=256` and `hmc_steps` rows (an AMD EPYC, AVX-512, 2 cores, 2026-12-02; their times are "
        "that machine's; the default's reproduce there, `--verify 2` on every such cell from 10^5 on, 50 of 50). The former "
        "default's rows there (`gibbs (n_bins=1024)`) were refitted on the Intel one with the code of 2026-12-02, "
        "so they reproduce there (`--verify 2` on every such cell, 46 of 46); on the AMD EPYC they give other "
        "draws of the same posterior (the monotone truth at 10^5, seeds 0 and 1: MAE 0.00134 and 0.00109 stored, "
        "0.00151 and 0.00116 refitted), while its rows at 10^3 and 10^4 reproduce there. Most rows up to 10^4 were written on an "
        "earlier machine; refitted on the Intel one most give the same numbers and a few another path, other draws of the same posterior "
        "(`python benchmarks/dpm_coverage.py --verify K` tells which rows reproduce; CHANGELOG, when each was "
        "refitted). The former default's rows there ran mostly two fits at a time, so their times are up to about 1.7 "
        "times an idle fit's.\n\n"
        + stamp(source, "python benchmarks/dpm_coverage.py && python benchmarks/make_evidence.py")
        + "\n"
        + summarise(source)
        + "\n\n## Beside the default on the same replicates\n\n"
        "Every other route of the table above against its base on the replicates both fitted (the same "
        "truth, N and seed). The base is `gibbs`, except for a route that sets other parameters under a former "
        'default\'s settings (`prior_spread="sd"`, `n_bins=1024`, or the learnt concentration '
        '`priors={"alpha_shape": 1.0, "alpha_rate": 1.0}` beside them), whose base is that former default, the '
        "same settings alone, so that each comparison changes one setting. First summed over the truths per route and N (on how many truths the "
        "route's mean MAE is lower, how many truths' 95 % coverage lies in 0.92-0.98 with each, how many "
        "fits' worst R-hat exceeds the convergence warning's threshold with each, and in how many fits "
        "the route's worst R-hat is above the base's), then per truth, with the standard error of the "
        "mean paired difference of the 95 % coverage. Chains that start apart show their disagreement "
        "in a higher R-hat, so a route that raises R-hat on the same data can be the more honest one "
        "(bands guide).\n\n"
        + paired(source)
        + "\n"
        + _study_section(
            source.with_name("band_scaling_study.md"),
            "Widening the band by one factor",
            "`benchmarks/band_scaling_study.py`: could one documented factor make the default's band honest? "
            "On the coverage study's replicates (8 seeds a cell), the default's equal-tailed bands scaled by a "
            "factor c about the draws' median on the log-odds scale (c = 1 is the band above, point for "
            "point); per cell, the 95 % band's coverage at c = 1, the factor c* at which it would cover 0.95, "
            "the 80 % and 50 % bands' coverage at c*, and every cell's coverage at one common factor, the "
            "median c* of the design cells. The factors the cells need lie on both sides of 1 (the "
            "overconfident classifier's band is too wide, the plateau's too narrow) and the median is 1, so "
            "no single factor moves the cells into the bar; and where the 95 % band is scaled to its level, "
            "the 80 % and 50 % ones still miss theirs in about a third of the cells, so the band's shape is "
            "off, not only its width. With 8 seeds a cell the standard errors are 0.01-0.09.",
        )
    )


def _speed_lines(source: Path) -> list[str]:
    """The lines of ``dpm_speed.py``'s output that its page shows: the table, the first fit in a
    fresh process and the fit either side of ``compress_above``."""
    table = [ln for ln in source.read_text().splitlines() if ln.startswith(("|", "first fit", "either side"))]
    if not any(ln.startswith("|") for ln in table):
        raise ValueError(f"{source} holds no table: write it with `python benchmarks/dpm_speed.py | tee {source}`.")
    return table


def speed_cells(lines: list[str]) -> tuple[list[str], list[list[str]]]:
    """The header cells and the rows' cells (one list per N) of the table among ``lines`` (:func:`_speed_lines`)."""
    rows = [[c.strip() for c in ln.split("|")[1:-1]] for ln in lines if ln.startswith("| ")]
    return rows[0], [r for r in rows if r[0][:1].isdigit()]


def first_fit(lines: list[str], which: str) -> str | None:
    """The time of the ``"first fit in"`` (a fresh process) or ``"first fit ever"`` (empty compile caches)
    line among ``lines``, as written ("1.9 s"), or None where the run did not measure it."""
    return next((ln.split(":")[-1].strip() for ln in lines if ln.startswith(which)), None)


def _speed_table(source: Path) -> str:
    return "\n".join(ln if ln.startswith("|") else ln + "\n" for ln in _speed_lines(source)) + "\n"


def speed_page(source: Path) -> str:
    loaded = source.with_name(source.stem + "_load.md")
    under_load = ""
    if loaded.is_file():
        under_load = (
            "\n## Under load\n\n"
            "The same timings while another process multiplies matrices with its BLAS threads on the same "
            "cores (`--load`), as when a second notebook fits a model beside the calibration; the DPM fit's "
            "column gives the fastest of the repeats and, in brackets, the slowest.\n\n"
            + stamp(
                loaded,
                f"python benchmarks/dpm_speed.py --load | tee benchmarks/results/{loaded.name} && "
                "python benchmarks/make_evidence.py",
                measured_on(loaded),
            )
            + "\n"
            + _speed_table(loaded)
        )
    from bayescal.bayesian.dpm import SELECT_AVERAGE_UNITS
    from bayescal.bayesian.gibbs import HMC_AUTO_UNITS

    return (
        "# Speed\n\n"
        'Wall time of a full default DPM fit (`components="select"`: both component families started and '
        f"compared on their first draws, the kept family's chains run on; above {SELECT_AVERAGE_UNITS:,} scores in a class, "
        "so from 10^6 on here, both run in full and averaged; both classes, posterior draws, "
        'map on the grid), of the same fit with one family (`components="gaussian"`) and with '
        '`components="auto"` (both families fitted in full, averaged), with the sampler\'s Hamiltonian moves '
        'on both classes (`route_options={"hmc_steps": 20}`; by default they run on classes of more than '
        f"{HMC_AUTO_UNITS:,} scores), of `predict_proba` on "
        "all N scores, of isotonic regression, and of scikit-learn's `BayesianGaussianMixture` (20 "
        "components, Dirichlet-process prior; a point fit without bands) on each class's logit scores; each "
        "the minimum over repeats. `BayesianGaussianMixture` is timed twice: with scikit-learn's defaults "
        "(at most 100 variational iterations; on these scores it stops there before its convergence test "
        "is met, warns `ConvergenceWarning` and leaves `converged_` False, as the column says) and run on "
        "until that test is met (the change of its lower bound, a sum over the class's scores, below "
        "`tol=1e-3`), with the iterations each class took. Above the table: the first fit in a fresh "
        "process (import + fit; the fastest of the repeats' processes, under load the slowest too; from the "
        "second on, the compiled kernels are read from their disk cache, as on a user's machine after the first "
        "fit ever), the first fit ever (one more fresh process whose compile caches, numba's and PyTensor's, point "
        "at empty folders, as after installing; in runs that measured it), and the default fit either side of "
        "`compress_above`, where the sampler "
        "turns from the raw scores to binned counts (one replicate, fitted without and with its last "
        "score).\n\n"
        + stamp(
            source,
            "python benchmarks/dpm_speed.py | tee benchmarks/results/dpm_speed.md && "
            "python benchmarks/make_evidence.py",
            measured_on(source),
        )
        + "\n"
        + _speed_table(source)
        + under_load
    )


def realdata_page(source: Path) -> str:
    import pandas as pd

    sys.path.insert(0, str(HERE))
    from dpm_realdata import summarise

    report = json.loads(source.read_text())
    config = report.get("config", {})
    rows = pd.DataFrame(report["rows"])
    text, _ = summarise(rows, tuple(config["calibrators"]))
    return (
        "# Real data\n\n"
        "Average rank (1 = best) on Brier score and log loss of the calibrators on real datasets x base "
        "classifiers x splits, among the DPM, beta calibration and isotonic regression (3) and among all; "
        "see `benchmarks/dpm_realdata.py` for the datasets and classifiers.\n\n"
        + stamp(source, "python benchmarks/dpm_realdata.py && python benchmarks/make_evidence.py")
        + f"\nCode: {config.get('git', 'unknown')}; wall time {config.get('wall_s', float('nan')):.0f} s.\n\n"
        + _markdown(text)
        + "\n"
        + _families_kept(rows)
    )


def _families_kept(rows) -> str:
    """The component families the DPM's map is made of, per base classifier, over the cells of the
    real-data rows (their ``family`` column; rows written before it existed show nothing)."""
    import pandas as pd

    dpm = rows[rows["calibrator"] == "dpm"] if "family" in rows else rows.iloc[:0]
    dpm = dpm[dpm["family"].notna()] if not dpm.empty else dpm
    if dpm.empty:
        return ""
    counts = pd.crosstab(dpm["classifier"], dpm["family"].str.replace("+", " and ", regex=False), margins=True)
    head = "| classifier | " + " | ".join(counts.columns) + " |"
    lines = [head, "|---" * (len(counts.columns) + 1) + "|"]
    lines += [f"| {name} | " + " | ".join(str(int(v)) for v in row) + " |" for name, row in counts.iterrows()]
    return (
        '\nThe component families the DPM\'s map is made of (`components="select"` keeps the Gaussian or the '
        "Beta one per fit), cells per base classifier:\n\n" + "\n".join(lines) + "\n"
    )


OVERVIEW = """## Overview

What each candidate changes and where its band or error fails the bar; the sections below and
the scripts' docstrings hold the measured tables. The default keeps the failures of its own
rows on `coverage.md` (the plateau's band below 0.92, chains that do not converge above N = 300).

| candidate | script | draws independent (no chains)? | where it fails |
|---|---|---|---|
| Beta components, alone, chosen per fit or averaged with Gaussian ones | `candidate_study.py`, `family_criterion_study.py` | no | chosen per fit it is the default (`components="select"`); Beta alone over-covers piled scores at 300; the plateau is not helped by any |
| a tail-compressed working scale | `candidate_study.py` | no | fixes the piles and the tails, but the overconfident classifier's error doubles and the plateau covers less |
| components shared by the two classes (hierarchical DP) | `shared_atoms_study.py` | no | ranks well on real data, but the U-shaped and plateau truths' bands are too narrow and the error is above the default's |
| Student-t components | `student_t_study.py` | no | the plateau is not helped; heavy-tailed scores over-cover at 10^4; chains mix no better |
| skew-normal components (a skewness per component, nesting the Gaussian one) | `skew_normal_study.py` | no | the band is the Gaussian components' within its standard error on most cells; piled scores under-cover less than with Gaussian components but far more than with the default's choice of Beta ones, as do the held-out mixed piles; the plateau is not helped; smooth truths over-cover at 10^4; chains mix no better, at 5-15 times the time |
| penalised-spline log-densities | `logspline_study.py` | yes | equal knots: honest on smooth maps, but the plateau's band too narrow and the error on piled, heavy-tailed and skewed scores many times the default's; quantile knots: the plateau honest, the error above the KDE calibrator's on every held-out truth |
| a mixture of logistic experts | `logistic_experts_study.py` | no | too narrow where the map is not logistic, too wide where it is |
| mixtures of Pólya trees | `polya_tree_study.py` | given the centring | rough draws over-cover smooth maps; the plateau under-covers below 10^4; error above the KDE calibrator's on heavy-tailed scores and the plateau |
| pieces of logistic lines with random breaks, a model of the map (product partition) | `change_point_study.py` | yes | honest at the plateau's kinks, but with lines as pieces under-covers maps that curve on the working scale and over-covers one-line maps; quadratic pieces still miss the bar on two thirds of the held-out cells; pooled with the DPM's posterior it trades under-coverage for over-coverage |
| a Gaussian process on the map's log-odds (logistic line plus Matérn deviation, hyperparameters on a grid) | `gp_map_study.py` | given the hyperparameters (Laplace) | over-covers the smooth truths (monotone, overconfident, rare: 95 % bands near 1.00, 50 % bands near 0.65) and under-covers piled scores at 300 / 10^3 and the U shape; inside the bar on far fewer design cells than the default |
| NUTS on the binned likelihood | `binned_likelihood_study.py` | no | mixes better per draw, at hundreds of times the default's time (trees of 256-512 gradients per draw); at 10^5 one monotone replicate reaches R-hat 1.010 and bulk ESS 647 in 15 minutes, the held-out bimodal one misses (1.022, 241) |
| one-component starts, twenty times the sweeps | `start_study.py` | no | lower error, but at 10^4 R-hat stays at 1.03-1.10 with five times the time, and the plateau still misses |
| merge-split moves of Gaussian components (Richardson & Green 1997, for the fixed truncation) | `start_study.py` | no | empty surplus components and lower the error, but at 10^4 the chains converge no better, at three times the time, and plain sweeps given that time do as well on the error and better on R-hat; with eight times the sweeps as well, still short of R-hat <= 1.01 |
| the exact component family with one spare: two Beta components on classes that are each one Beta density, two Gaussian ones on Gaussian classes (a diagnosis, not a model) | `start_study.py` | no | at 10^4 its chains converge no better than twenty components' (worst R-hat 1.15-1.51 with Beta components, 1.23 with Gaussian ones), so the chains' slow direction there is the components' redundancy, not the family or too few components; the two components of a one-Beta class trade its mass along a ridge the sweeps barely move on. Hamiltonian moves with the allocations summed out come closer (R-hat 1.04-1.09) but not to the bar |
| repulsive Beta components (a prior factor d^2 / (g + d^2) per pair, Petralia, Rao & Dunson 2012) | `repulsion_study.py` | no | at 10^4, with two components or twenty, the chains converge no better than without the factor: the components of a one-Beta class already stay apart and still trade its mass; coverage and error within their standard errors, at 1.8-6.7 times the time of the same (numpy) sweeps |
| the Hamiltonian moves from 10^3 scores on (`route_options={"hmc_steps": 20}`; by default they run above 20,000 scores a class) | `dpm_coverage.py --option` | no | on all seventeen truths (16 seeds) far more fits converge at 10^3 (121 of 272 against 29) and at 10^4 the error falls on sixteen truths and the fits above R-hat 1.2 from 77 to 13, but only 7 converge there, at about three times the fit's time (`speed.md`), which would break the one-second fit at 10^4. Shorter trajectories buy less in proportion: at 10^3 (the same 272 replicates) 5 and 10 leapfrog steps met the bar in 41 and 86 fits (median lowest bulk ESS 236 and 334, against 219 by default and 443 with 20 steps) in a median 1.5 and 2.0 s a fit (the rows' own times; `speed.md` times both with the current code), with coverage and error unchanged: the effective draws grow with the trajectory's gradients (10 and 20 steps about in proportion, 5 steps less), so no shorter trajectory buys the bar more cheaply |
| the Hamiltonian moves alone, no sweeps (four chains of 500 draws after a warm-up of 1,000 moves as Stan's, 20 leapfrog steps of a jittered size, the concentration held at its prior mean), with a diagonal or a dense mass | `hmc_only_study.py` | no | at 10^3 they met the bar in 4 of 20 fits with the diagonal mass against 11 for the calibrator's sweeps with the same moves (`hmc_steps=20`) on the same replicates, at about four times their time; at 10^4 neither converged (median worst R-hat 1.060 against 1.063, at 12 s against 2.7 s a fit), so the sweeps help the moves rather than hold them back. A dense mass (the covariance of the warm-up's positions) mixes worse than the diagonal one (a higher worst R-hat in 32 of 40 fits): the correlations a slowly mixing chain shows in a window do not describe the ridges it has not yet crossed. Slice-sampling updates of how two alike components share their weight, three after each move (`--ridge 3`), gave a lower worst R-hat in 2 of 12 fits at 10^4 (four truths, seeds 0-2), at twice the time: the direction along which such components trade mass is not, alone, the slow one |
| a Laplace approximation at each class's posterior mode (a Gaussian with the inverse negative Hessian of the log posterior as covariance, allocations summed out, the concentration at its prior mean; Bernstein-von Mises at large N) | `laplace_study.py` | yes | at 10^4-10^6 scores (three design truths, 3 seeds) the draws are independent (R-hat <= 1.005, bulk ESS >= 1,600 of 2,000) in 1.3-3.4 s a fit, but the error is 4-250 times the default's and the band 9-90 times as wide: the importance ratios' Pareto k-hat is 20-85 at 10^4, and from 10^5 on the search ends at a saddle, not a mode; the mode's own map has 1.1-3.4 times the default's error at 10^4 and 10^5 |
| parallel tempering over nested subsamples of each class's data (a ladder of rungs whose counts are binomial thinnings down to a few hundred units, the calibrator's sweeps on every rung, exchanges of adjacent rungs' states in the even-odd scheme of Syed et al. 2022; the top rung's draws kept) | `tempering_study.py` | no | at 10^4 (three design truths, 3 seeds, 16 rungs from 300 units) the exchanges are accepted at 0.15-0.6 and the chains mix better than the default's on the same replicates (worst R-hat 1.03-1.13 against 1.10-1.76, lowest bulk ESS 12-126 against 3-23), but no fit meets the bar, at 17-22 s a fit; longer Hamiltonian moves meet it in 17 of 26 fits at 10^4 (13 of 26 from chains started apart) in 12-22 s (`convergence_remedy.py`, 2026-12-03). At 10^5 (one replicate, 24 rungs from 1,000 units) the upper rungs exchange at 0.13-0.2 and the chains do not mix (R-hat 1.10, ESS 17) at 36 s a fit: the rungs needed grow with log N, each a chain of sweeps |
| a posterior bootstrap (each draw the mode of the Gaussian mixture's log posterior under Bayesian-bootstrap weights of the points, Newton & Raftery 1994, Fong, Lyddon & Holmes 2019), searched by compiled ECM from the full-data mode | `posterior_bootstrap.py` | yes | at 10^5 (four truths) and 10^6 (monotone), 3 seeds each, the draws are independent (R-hat <= 1.008, bulk ESS 718-849 of 1,000), but the 95 % band covers 0.78-0.87 and the 50 % band 0.33-0.41 on every cell, the error is 1.1-2.8 times the default's, and a fit takes 8-13 s; three times the iterations widen the band only to 0.86 at three times the time |
| fewer bins for the compressed scores (`n_bins=512`, the default since 2026-12-02, or `256`, instead of 1,024; a cheaper sampler on compressed scores) | `dpm_coverage.py --option` | no | adopted (512), but the same model on a coarser summary of the scores, so no fix for the chains (no fit converged either way). 512 bins beside 1,024 on every seed of the former default's cells from 10^4 scores on (`gibbs` against `gibbs (n_bins=1024)` on the coverage page; all seventeen truths at 10^4, 1,397 fits; thirteen at 10^5, 962; nine at 10^6, 398; the monotone one at 10^7, 36): the 95 % coverage within two standard errors of the paired difference on 36 of 40 cells, two of the others higher (the rare truth at 10^4, 0.963 against 0.957, se 0.003; the plateau at 10^5, 0.859 against 0.846, se 0.006) and two lower, both inside 0.92-0.98 (the held-out mixed piles at 10^5, 0.948 against 0.962, se 0.006; the held-out mid-confident truth at 10^6, 0.955 against 0.966, se 0.004); the error 0.98-1.06 times 1,024 bins' (median 1.00; the mid-confident truth at 10^5 0.00206 against 0.00194, se 0.00004), below the KDE calibrator's wherever 1,024 bins' is (the held-out weak truth at 10^4 and 10^5 is above it with either). On two truths added for the check before any fit of them (`subgroup`, `label_noise`; a rule for rejecting 512 bins written down first): at 10^4 and 10^5 (16-70 seeds a cell) the 95 % coverage is within two standard errors of the paired difference of 1,024 bins' on all four cells (subgroup 0.958 against 0.957 and 0.988 against 0.992, label noise 0.975 against 0.978 and 0.963 against 0.958) and the error 0.97-1.00 times 1,024 bins', so the rule kept 512; the subgroup truth at 10^5 over-covers with either. The time is 0.54-0.58 of 1,024 bins' in the same run (1.81 / 3.48 / 3.99 s against 3.26 / 6.02 / 7.40 s at 10^5 / 10^6 / 10^7, `benchmarks/results/dpm_speed_options.md`). Of the real datasets only the Default cells are compressed (2,500 calibration rows): there 512 bins move the DPM's Brier score by at most 0.00007 and its log loss by at most 0.001 (15 cells; `dpm_realdata.py --datasets Default --calibrators dpm beta isotonic --dpm-param n_bins=512`, `benchmarks/results/dpm_realdata_n_bins512.json`). 256 bins: 0.33-0.43 times 1,024 bins' time, but the mixed piles at 10^6 lose coverage (0.900 against 0.970, 50 % band 0.27 against 0.42) and the error is up to 1.25 times 1,024 bins' |
| shorter Hamiltonian moves from 10^5 scores on (`route_options={"hmc_steps": 10}`, half the default's leapfrog steps; on the former 1,024 bins) | `dpm_coverage.py --option` | no | on the same 23 cells the error is 0.96-1.52 times that of 1,024 bins with full moves (median 1.09) and no more fits converge, for 0.63-0.74 times the time: fewer bins buy more time at no cost in error |
| a warm-up twice as long at 10^5 scores (`tune=1000`; there the Hamiltonian moves run by default, from the posterior mode) | `dpm_coverage.py --option` | no | on three truths (8 seeds each) no fit converged either way: the median worst R-hat 1.19 against 1.16 by default, the median lowest bulk ESS 10 against 11; the error 7-12 % lower, coverage within the standard error of the paired difference; so at 10^5 the chains' disagreement is not a short warm-up's |
| a smaller truncation (8 components instead of 20) | `dpm_coverage.py --option n_components=8` | no | at 10^4 the chains mix no better (fewer redundant components do not speed them) and the plateau covers less; the error barely moves (`coverage.md`, its rows beside the default's on the same seeds) |
| many chains (eight of 125 kept draws), four times the warm-up, over-dispersed starts (each chain from a prior draw, `route_options={"start": "dispersed"}`) | `start_study.py` | no | at 10^4 the chains disagree more, not less (worst R-hat 1.14-1.34 against 1.12-1.20 from the shared KDE-informed start on the same replicates, six truths, 8 seeds), so two chains from one start understate their disagreement there; at 300 dispersed starts converge as often as the shared start (25 of 48); no fit at 10^3-10^4 converged; coverage unchanged. Dispersed starts lower the error at 10^4 on sixteen of the seventeen truths and are the default for compressed classes of 2,049-20,000 scores (no Hamiltonian moves); they cure no convergence |
| the concentration drawn with the sticks integrated out, then the sticks given it (`route_options={"alpha_update": "collapsed"}`; the same posterior, another path) | `dpm_coverage.py --option` | no | mixes no faster: on four design truths (16 seeds) 24 of 64 fits converged at 300 and none at 10^3, against 25 and none by default, so the concentration's tie to the empty components' sticks is not what slows the chains |
| a concentration prior of mean 4 (`priors={"alpha_shape": 2.0, "alpha_rate": 0.5}`: more components in use) | `dpm_coverage.py --option` | no | the plateau's band reaches the bar at 300 and 10^3 (0.938 and 0.921 against 0.892 and 0.882 on the same 16 seeds) and more fits converge at 300 (95 of 112 against 66, seven design truths), but the error rises on the smooth truths (monotone 1.11 / 1.20 / 1.09 times the default's at 300 / 10^3 / 10^4, the overconfident classifier 1.24 / 1.24 / 1.15), the rare class under-covers at 300 (0.860 against 0.916) and the plateau is unchanged at 10^4, where the twenty components are all in use; a truncation of 40 there (`n_components=40`, three truths) does not help it either (0.892 against 0.896) |
| the concentration held near 1 (a Gamma(1000, 1000) prior, standard deviation 0.03, instead of Gamma(1, 1); written `priors={"alpha_shape": 1000.0, "alpha_rate": 1000.0}` while a candidate) | `dpm_coverage.py --option` | no | the default since 2026-12-02, and not a cure: on the same replicates as the learnt concentration (`coverage.md`, "Beside the default on the same replicates", the rows of `priors={"alpha_shape": 1.0, "alpha_rate": 1.0}`: all seventeen truths at 300, 10^3 and 10^4 scores, every truth of the former default's cells at 10^5 and 10^6 and the monotone one at 10^7) it converges more often at 300 and 10^3 scores (the "fits converged" column: on most truths at 300 nine fits in ten), its error and band width stay within about a tenth of the learnt concentration's, and its 95 % coverage is on average a little lower up to 10^3 scores (about half a point at 300), by more than two standard errors of the paired difference on a few truths, the plateau among them (further below the bar); from 10^4 scores on no fit of either converges. Gamma(10, 10) (standard deviation 0.32; all seventeen truths at 300 and 10^3, 16 seeds) keeps most of the gain, with a coverage shift as small, but the plateau lower still at 10^3. With the held concentration the chains need fewer sweeps: keeping half as many at 300 scores (`route_options={"thin": 20}`) and a third to a half at 10^3 (`{"thin": 6}`), seven design truths, still converges more often than the learnt concentration, a lead towards the one-second fit (not yet timed by `dpm_speed.py`). On the real datasets (`dpm_realdata.py`) the ranks among the DPM, beta and isotonic calibrators on Brier score / log loss are {alpha_ranks}. The posterior of a learnt concentration is wide at these sizes (about 0.1-4) and moves with the number of components in use, which the sweeps change slowly; holding it still removes that slow direction |
"""
"""The candidates page's overview: one row per candidate study, its verdict in words (the numbers
are in its section or docstring, so the row does not go stale when a study is rerun)."""


def _average_ranks(report: dict) -> dict[str, dict]:
    """Each calibrator's row of average ranks in the real-data study's results (``dpm_realdata.py``'s JSON)."""
    return {row["calibrator"]: row for row in report["average"]}


def _checked_ranks(row: dict) -> str:
    """A calibrator's average ranks among the DPM, beta and isotonic calibrators: Brier score / log loss."""
    return f"{row['rank_brier_checked']:.2f} / {row['rank_log_loss_checked']:.2f}"


def _overview(results: Path) -> str:
    """:data:`OVERVIEW` with the real-data ranks of the default (the held concentration) and of the
    learnt concentration, read from the real-data study's results in ``results``."""

    def ranks(name: str) -> str:
        path = results / name
        if not path.is_file():
            return f"not in `{name}`"
        return _checked_ranks(_average_ranks(json.loads(path.read_text()))["dpm"])

    default, learnt = ranks("dpm_realdata.json"), ranks("dpm_realdata_alpha_learnt.json")
    return OVERVIEW.replace("{alpha_ranks}", f"{default} by default, against {learnt} with the learnt concentration")


def candidates_page(source: Path) -> str:
    """The page of candidate models for the class densities, from the studies that compare one with
    the default's Gaussian components on the coverage study's replicates."""
    sys.path.insert(0, str(HERE))
    from student_t_study import summarise

    runs = source.with_suffix(".md")  # the study's table, with the command of each run that wrote rows
    runs_text = runs.read_text() if runs.is_file() else ""
    skew_part = _study_section(
        source.with_name("skew_normal_study.md"),
        "Skew-normal components",
        "`benchmarks/skew_normal_study.py`: the calibrator's pipeline with each Gaussian component replaced "
        "by a skew-normal one (Azzalini 1985) of the same mean and standard deviation and a skewness "
        "direction delta ~ U(-1, 1), so that delta = 0 is the calibrator's component (the same priors, "
        "sticks, concentration and thinning; Metropolis steps for each component's mean, log standard "
        "deviation and skewness). Columns: the candidate's band coverage (standard error of the 95 % one), "
        "data-weighted coverage, MAE, width and fit time; the map's worst R-hat and lowest bulk ESS, the "
        "fits meeting R-hat <= 1.01 and ESS >= 400, the components' weight-averaged |delta|, and Gaussian "
        "components' 95 % coverage and MAE on the same seeds (the coverage study's rows of "
        "`components=\"gaussian\"`; the default's for decision values); then the default calibrator's "
        "coverage, MAE and width on the same seeds, the KDE and Platt calibrators' MAE there, and the "
        "seeds so paired.",
    )
    spline_part = _study_section(
        source.with_name("logspline_study.md"),
        "Penalised-spline log-densities",
        "`benchmarks/logspline_study.py`: each class's log density a cubic B-spline with a "
        "second-order random-walk prior on its coefficients (Bayesian P-splines), drawn independently "
        "from Laplace approximations over a grid of smoothing precisions, with equally spaced or "
        "quantile knots, penalising the coefficients' second differences or (`--penalty curvature`) the "
        "log density's integrated squared second derivative. Not a Dirichlet-process mixture: measured to "
        "see whether a model whose draws converge by construction would be worth its change of model. "
        "Columns: the candidate's band "
        "coverage (standard error of the 95 % one) and MAE; the default calibrator's 95 % coverage and "
        "MAE on the same seeds (its rows of the coverage study) and the KDE calibrator's MAE; the seeds so "
        "paired; the fit time in seconds. The run that wrote each table is stamped above it.",
    )
    experts_part = _study_section(
        source.with_name("logistic_experts_study.md"),
        "A Dirichlet-process mixture of logistic experts",
        "`benchmarks/logistic_experts_study.py`: one Dirichlet-process mixture of the pooled scores whose "
        "components each carry a logistic map of the working scale, shrunk towards one common line (the "
        "DP-GLM of Hannah, Blei & Powell 2011), so that the labels place the partition of the score axis "
        "and a logistic-linear map is one expert. Not class-conditional mixtures: measured to see whether "
        "letting the components carry the map would make the band honest at kinks. Columns: the "
        "candidate's band coverage (standard error of the 95 % one), data-weighted coverage, MAE, width, "
        "the map's worst R-hat and lowest bulk ESS, the fits meeting R-hat <= 1.01 and ESS >= 400 and "
        "the fit time (numpy sweeps on the rows, a study script); then the default calibrator's coverage, "
        "MAE and width on the same seeds (its rows of the coverage study), the KDE and Platt calibrators' "
        "MAE there, and the seeds so paired.",
    )
    polya_part = _study_section(
        source.with_name("polya_tree_study.md"),
        "Mixtures of Pólya trees",
        "`benchmarks/polya_tree_study.py`: each class's density a finite Pólya tree (node probabilities "
        "Beta(c j^2, c j^2) at level j) centred on a Beta law of the scores (a normal one for decision "
        "values, or for every score with `--base normal`), the centring's parameters and the precision c "
        "(one per tree, or one per node with `--precision node`) learned. Given the centring the posterior "
        "is conjugate, so its draws are independent: no chains to converge. Not a Dirichlet-process "
        "mixture: measured to see whether a model with exact draws would keep the band honest. Columns: "
        "the candidate's band coverage (standard error of the 95 % one), data-weighted coverage, MAE, "
        "width, the Kish effective number of the importance-weighted centrings (the smaller class's) and "
        "the fit time; then the default calibrator's coverage, MAE and width on the same seeds (its rows "
        "of the coverage study), the KDE calibrator's MAE there, and the seeds so paired.",
    )
    change_point_part = _study_section(
        source.with_name("change_point_study.md"),
        "A product-partition model of the map",
        "`benchmarks/change_point_study.py`: the map itself as contiguous pieces of the binned scores, each "
        "a logistic line (or with `--degree 2` a quadratic) of the working scale shrunk towards the common (Platt) line, with a break at each bin "
        "boundary with probability q; the partition's posterior is computed exactly by a recursion over the "
        "bins, so the draws are independent. Not class densities: measured to see whether breaks in the map "
        "would make the band honest at kinks. Columns: the candidate's band coverage (standard error of the "
        "95 % one), data-weighted coverage, MAE, width, the posterior mean number of pieces and the fit time; "
        "then the default calibrator's coverage, MAE and width on the same seeds (its rows of the coverage "
        "study), the KDE calibrator's MAE there, and the seeds so paired.",
    )
    gp_part = _study_section(
        source.with_name("gp_map_study.md"),
        "A Gaussian-process model of the map",
        "`benchmarks/gp_map_study.py`: the map's log-odds a Gaussian process on the working scale (a "
        "logistic line plus a Matérn-5/2 deviation whose length scale and amplitude are drawn from a grid "
        "by their Laplace marginal likelihoods) on up to 200 bins of equal count; given the grid point "
        "the posterior is the Laplace approximation's Gaussian, so the draws are independent. Columns: the "
        "candidate's band coverage (standard error of the 95 % one), data-weighted coverage, MAE, width, the "
        "posterior mean length scale (in standard deviations of the scores) and the fit time; then the "
        "default calibrator's coverage, MAE and width on the same seeds (its rows of the coverage study), "
        "the KDE calibrator's MAE there, and the seeds so paired.",
    )
    repulsion_part = _study_section(
        source.with_name("repulsion_study.md"),
        "Repulsive Beta components",
        "`benchmarks/repulsion_study.py`: Beta components whose prior has a factor "
        "d^2 / (g + d^2) per pair of components, d their distance in log shapes over the prior's "
        "standard deviation (Petralia, Rao & Dunson 2012), so that near-duplicate components are "
        "improbable; sampled by the calibrator's numpy sweeps with the components updated one after "
        "the other, beside the same sweeps without the factor, on truths whose classes are each one Beta "
        "density, with two components (the truth and one spare) and with twenty. It tests whether removing "
        "the components' redundancy lets the chains converge at 10^4 scores. Columns: each configuration's "
        "band coverage (standard error of the 95 % one), data-weighted coverage, MAE and width, the map's "
        "worst R-hat and lowest bulk ESS, the fits meeting R-hat <= 1.01 and ESS >= 400, the occupied "
        "components per class and kept draw, the fit time; then the default calibrator's coverage, MAE and "
        "width on the same seeds (its rows of the coverage study), the KDE and Platt calibrators' MAE "
        "there, and the seeds so paired.",
    )
    hmc_only_part = _study_section(
        source.with_name("hmc_only_study.md"),
        "Hamiltonian moves alone",
        "`benchmarks/hmc_only_study.py`: what the sampler's Hamiltonian moves (allocations summed out) "
        "need, alone, to meet R-hat <= 1.01 and ESS >= 400: chains of those moves with no sweeps, the "
        "concentration held at its prior mean, a warm-up as Stan's (step size by dual averaging, the mass "
        "from three growing windows of positions), a diagonal mass or a dense one (the posterior's "
        "correlations, such as two components trading mass), both component families fitted in full and one "
        'kept as `components="select"` keeps it. A class\'s fit costs chains x (warm-up + draws) x '
        "(steps + 1) gradients per family. Columns: each configuration's band coverage (standard error of "
        "the 95 % one), data-weighted coverage, MAE and width, the map's worst R-hat and lowest bulk ESS "
        "(over all its chains), the fits meeting R-hat <= 1.01 and ESS >= 400, the fit time; then the "
        "default calibrator's coverage, MAE and width on the same seeds (its rows of the coverage study), "
        "the KDE and Platt calibrators' MAE there, and the seeds so paired.",
    )
    laplace_part = _study_section(
        source.with_name("laplace_study.md"),
        "A Laplace approximation at the mode",
        "`benchmarks/laplace_study.py`: each class's mixture posterior (allocations summed out, the "
        "concentration at its prior mean) approximated by a Gaussian at its mode, found by L-BFGS from the "
        "sampler's mode start, with the inverse of the negative Hessian (central differences of the analytic "
        "gradient) as covariance over the sticks and the occupied components' parameters; independent draws. "
        "Rows with deviations x 0 put every draw at the mode, so their MAE is the mode's own map's. Columns: "
        + PAIRED_STUDY_COLUMNS,
    )
    tempering_part = _study_section(
        source.with_name("tempering_study.md"),
        "Parallel tempering over nested subsamples",
        "`benchmarks/tempering_study.py`: a ladder of chains per class whose rungs are the class's posterior "
        "given nested binomial thinnings of its counts, from a few hundred units at the bottom to all of them "
        "at the top (equal fractions between rungs), each rung running the calibrator's compiled sweeps from "
        "its own prior draw; after every sweep adjacent rungs propose to exchange states (even pairs after "
        "even sweeps, odd after odd), accepted on the log-likelihood of the units the upper rung has and the "
        "lower one lacks; the top rung's draws are kept, both component families fitted in full. Columns: "
        + PAIRED_STUDY_COLUMNS,
    )
    bootstrap_part = _study_section(
        source.with_name("posterior_bootstrap.md"),
        "A posterior bootstrap by compiled ECM",
        "`benchmarks/posterior_bootstrap.py`: each draw re-weights a class's points (or bins) by a Bayesian "
        "bootstrap (Gamma(count, 1) weights) and takes the mode of the Gaussian mixture's log posterior "
        "under those weights (the calibrator's component priors, no prior on the weights), found by a "
        "compiled expectation / conditional-maximisation search from the full-data mode; independent draws, "
        "split into two blocks for R-hat. Columns: " + PAIRED_STUDY_COLUMNS,
    )
    return (
        "# Candidate models for the Bayesian core\n\n"
        "Models measured against the calibrator's on the replicates of `benchmarks/dpm_coverage.py` "
        "(same truths, N and seeds; `coverage.md` describes the truths, the columns and the bar), to choose "
        "the class densities by evidence. None of them is the default: each fails the bar on more cells "
        "than the model it would replace. The overview lists every candidate study; the sections after it "
        "hold the tables of the Student-t, skew-normal, P-spline, logistic-experts, Pólya-tree, change-point, "
        "Gaussian-process and repulsive-components studies, of the Hamiltonian moves alone, of a Laplace "
        "approximation at the mode, of parallel tempering and of a posterior bootstrap, and the other "
        "scripts' docstrings and outputs in `benchmarks/results/` hold theirs. The variational candidates "
        "are on `vi.md`.\n\n"
        f"{_overview(source.parent)}\n"
        "## Student-t components\n\n"
        "`benchmarks/student_t_study.py`: the calibrator's pipeline with each Gaussian component replaced "
        "by a Student-t one with fixed degrees of freedom (the same priors, sampler moves and thinning), "
        'beside `components="gaussian"` fitted on the same replicates in the same run. Columns: coverage '
        "of the 95 / 80 / 50 % bands over the data region (standard error of the 95 % one), 95 % coverage "
        "at the observed scores, MAE of the posterior-mean map and of the KDE calibrator's, band width, "
        "the map's worst R-hat and lowest bulk ESS over the data region, the fits meeting R-hat <= 1.01 "
        "and ESS >= 400, and the fit time in seconds (the Student-t sampler is a study script, not tuned "
        "for speed).\n\n"
        + stamp(source, "python benchmarks/student_t_study.py && python benchmarks/make_evidence.py")
        + "\n"
        + "\n".join(ln for ln in runs_text.splitlines() if ln.startswith("- "))
        + "\n\n"
        + summarise(source)
        + "\n"
        + skew_part
        + spline_part
        + experts_part
        + polya_part
        + change_point_part
        + gp_part
        + repulsion_part
        + hmc_only_part
        + laplace_part
        + tempering_part
        + bootstrap_part
    )


PAIRED_STUDY_COLUMNS = (
    "the candidate's band coverage (standard error of the 95 % one), data-weighted coverage, MAE and "
    "width, the map's worst R-hat and lowest bulk ESS, the fits meeting R-hat <= 1.01 and ESS >= 400, the "
    "fit time; then the default calibrator's coverage, MAE and width on the same seeds (its rows of the "
    "coverage study), the KDE and Platt calibrators' MAE there, and the seeds so paired."
)
"""The columns of a study table written by ``_study_files.paired_table`` with its convergence columns, as
the candidates page describes them."""


def _study_section(path: Path, title: str, description: str) -> str:
    """A section of the candidates page from a study's markdown output ``path`` (its own title
    dropped; empty when the study has not been run)."""
    if not path.is_file():
        return ""
    body = path.read_text().split("\n", 1)[1].strip()
    return f"\n## {title}\n\n{description}\n\n{body}\n"


def _markdown(text: str) -> str:
    """The study's text summary for a page: its markdown tables as they are, the rest verbatim."""
    out, block = [], []
    for line in text.splitlines():
        if line.startswith("|"):
            if any(b.strip() for b in block):
                out += ["", "```text", *block, "```", ""]
            elif block:  # only blank lines between two tables: one blank line
                out.append("")
            block = []
            out.append(line)
        else:
            block.append(line)
    if any(b.strip() for b in block):
        out += ["", "```text", *block, "```"]
    return "\n".join(out)


def vi_page(source: Path) -> str:
    """The variational route's page (:mod:`_vi_page`) from ``vi_study.csv`` and its sibling outputs."""
    sys.path.insert(0, str(HERE))
    from _vi_page import vi_page as render

    return render(source)


def random_truths_page(source: Path) -> str:
    """The page of the coverage study on random truths (``random_truths_study.py``)."""
    sys.path.insert(0, str(HERE))
    from random_truths_study import overall_table, read_rows, summary

    options = source.with_name("random_truths_options.csv")
    candidates = ""
    if options.is_file():
        rows = read_rows(options)
        ns = {r["n"] for r in rows}
        beside = [r for r in read_rows(source) if r["n"] in ns] + rows
        candidates = (
            "\n## Other component settings on the same truths\n\n"
            'The default (`components="select"`: Gaussian or Beta components, chosen per fit by the '
            'leave-one-out log density of the scores) beside Beta components alone and `components="auto"` '
            "(both families averaged by their leave-one-out log scores of the labels) on the same truths, data "
            "and seeds (`--option`, rows in `benchmarks/results/random_truths_options.csv`). These runs were "
            "made after the default's results were seen, so they diagnose; they choose nothing.\n\n"
            + stamp(
                options,
                "python benchmarks/random_truths_study.py --n 300 1000 --reps 100 --option 'components=\"beta\"' "
                "--out benchmarks/results/random_truths_options.csv (and 'components=\"auto\"')",
            )
            + "\n"
            + overall_table(beside)
            + "\n"
        )
        realdata = {
            name: source.with_name(f"dpm_realdata{suffix}.json") for name, suffix in (("select", ""), ("auto", "_auto"))
        }
        if all(path.is_file() for path in realdata.values()):
            ranks = {
                name: _checked_ranks(_average_ranks(json.loads(path.read_text()))["dpm"])
                for name, path in realdata.items()
            }
            candidates += (
                "\nOn the real datasets (`dpm_realdata.py`; `--dpm-param components='\"auto\"'` wrote "
                "`benchmarks/results/dpm_realdata_auto.json`) the DPM's average ranks among the DPM, beta and "
                f'isotonic calibrators on Brier score / log loss are {ranks["auto"]} with `components="auto"` '
                f"against {ranks['select']} by default.\n"
            )
    candidates += _preregistered_section(source.with_name("random_truths_fresh.csv"))
    return (
        "# Coverage on random truths\n\n"
        "How the default DPM calibrator's bands cover true maps drawn at random from two families "
        "stated in advance, which nobody designed or tuned a setting on: class densities that are "
        "Gaussian mixtures on the logit scale (`logit_mixture`) and Beta mixtures on the probability "
        "scale, which pile scores at 0 and 1 (`beta_mixture`). One data set per truth; the mean over "
        "truths estimates the band's coverage on such truths. `benchmarks/random_truths_study.py` "
        "states the design, the columns and the findings; the last tables' columns were added after "
        "the first look (post hoc).\n\n"
        + stamp(
            source,
            "python benchmarks/random_truths_study.py --n 300 1000 --reps 100 && "
            "python benchmarks/random_truths_study.py --n 10000 --reps 50 && python benchmarks/make_evidence.py",
        )
        + "\n"
        + _markdown(summary(source))
        + "\n"
        + candidates
    )


def _beta_cells(report: dict) -> tuple[int, int] | None:
    """Cells of a real-data report whose DPM map holds Beta components, and the DPM's cells (None
    when its rows do not name the families)."""
    families = [r.get("family") for r in report["rows"] if r["calibrator"] == "dpm"]
    if not families or any(not isinstance(f, str) for f in families):
        return None
    return sum("beta" in f for f in families), len(families)


def _preregistered_section(fresh: Path) -> str:
    """The random-truths page's section on the candidates judged on fresh truths by a rule written
    before their first fit (``random_truths_study.PREREGISTERED``): the rule, both settings' tables
    on those truths, the paired table, the rule's checks (1)-(3) and the real-data ranks (4) from
    ``dpm_realdata_<name>.json`` beside the default's ``dpm_realdata.json``."""
    from random_truths_study import (
        PREREGISTERED,
        Check,
        overall_table,
        paired_table,
        preregistered_verdict,
        read_rows,
    )

    if not fresh.is_file():
        return ""
    rows = read_rows(fresh)
    out = [
        "\n## Candidates judged by a rule written first\n",
        "Each candidate below was fitted on fresh truths (seeds never fitted before) beside the default, "
        'and judged by a rule written down before its first fit. The tables also hold `components="auto"` '
        "refitted on seeds 100-199, a replication on fresh truths of its run above (no rule: it is an "
        "option the choosing guide recommends for bands on piled scores, not a candidate default).\n",
        stamp(
            fresh,
            "python benchmarks/random_truths_study.py --n 300 1000 --reps 100 --first-seed S --out "
            "benchmarks/results/random_truths_fresh.csv, with and without the candidate's --option, S the first "
            "seed its rule names",
        ),
        "",
        overall_table(rows),
        "",
        paired_table(rows),
    ]
    default_path = RESULTS / "dpm_realdata.json"
    default = json.loads(default_path.read_text()) if default_path.is_file() else None
    for entry in PREREGISTERED.values():
        if not any(r.get("options") == json.dumps(entry["option"], sort_keys=True) for r in rows):
            continue
        checks = preregistered_verdict(rows, entry["option"], entry["logit_check"])
        realdata = fresh.with_name(entry["realdata"])
        report = json.loads(realdata.read_text()) if realdata.is_file() and default is not None else None
        if report is not None:
            cand, base = (_average_ranks(r)["dpm"] for r in (report, default))
            worse = any(cand[k] > base[k] for k in ("rank_brier_checked", "rank_log_loss_checked"))
            checks.append(
                Check(
                    4,
                    f"real data, ranks among DPM / beta / isotonic on Brier score / log loss: {_checked_ranks(cand)} "
                    f"against {_checked_ranks(base)} (`{realdata.name}`)",
                    not worse,
                )
            )
        failed = [c.number for c in checks if not c.holds]
        verdict = (
            "Not adopted: " + ", ".join(f"({n})" for n in failed) + " failed."
            if failed
            else "Checks (1)-(4) hold; (5) decides."
        )
        if report is not None and any(n <= 3 for n in failed):
            verdict += " The real-data ranks (4) were measured after (1)-(3) were known, as a diagnosis."
        if report is not None:
            kept, kept_default = _beta_cells(report), _beta_cells(default)
            if kept and kept_default:
                verdict += (
                    " On the real datasets the candidate's map holds Beta components (alone or averaged with "
                    f"Gaussian ones) in {kept[0]} of {kept[1]} cells, the default's in {kept_default[0]}."
                )
        out += [
            f"\n### `{json.dumps(entry['option'], sort_keys=True)}`\n",
            f"Rule (written {entry['written']}): {entry['rule']}\n",
            "\n".join(f"- ({c.number}) {c.text}: {'holds' if c.holds else 'fails'}" for c in checks),
            "",
            verdict,
        ]
    return "\n".join(out) + "\n"


PAGES = {
    "coverage": (RESULTS / "dpm_coverage.csv", coverage_page),
    "random_truths": (RESULTS / "random_truths.csv", random_truths_page),
    "speed": (RESULTS / "dpm_speed.md", speed_page),
    "realdata": (RESULTS / "dpm_realdata.json", realdata_page),
    "candidates": (RESULTS / "student_t_study.csv", candidates_page),
    "vi": (RESULTS / "vi_study.csv", vi_page),
}
KEPT_CELLS = {"coverage": 3}
"""Pages whose first table's rows a rewrite must keep, by their leading cells (route, truth, N), with at
least as many seeds (the next cell): a study run in parts (``dpm_coverage.py --resume``) does not
shrink its page meanwhile, and one extended by more seeds rewrites it."""


def _row_seeds(text: str, cells: int) -> dict[tuple[str, ...], int]:
    """The leading ``cells`` cells of the rows of a page's first table (the study's own; the
    tables after it are derived from the same rows or from other studies), with the number in
    the cell after them (the seeds; 0 where it is not a number, as in the header and rule lines)."""
    out = {}
    for ln in text.splitlines():
        if ln.startswith("|"):
            c = [x.strip() for x in ln.split("|")[1:-1]]
            after = c[cells] if len(c) > cells else ""
            out[tuple(c[:cells])] = int(after) if after.isdigit() else 0
        elif out:
            break
    return out


def missing_rows(old: str, new: str, cells: int) -> list[tuple[str, ...]]:
    """Rows of the page ``old`` (by their leading ``cells`` cells) that ``new`` no longer has,
    or has with fewer seeds."""
    before, after = _row_seeds(old, cells), _row_seeds(new, cells)
    return sorted(key for key, seeds in before.items() if key not in after or after[key] < seeds)


README = HERE.parent / "README.md"
README_START = "<!-- numbers below: written by benchmarks/make_evidence.py from benchmarks/results; do not edit -->"
README_END = "<!-- end of the numbers written by benchmarks/make_evidence.py -->"
"""The markers of the README's block of measured numbers (:func:`readme_numbers`)."""

_POWERS = {10**k: f"10^{k}" for k in range(2, 9)}


def _n(n: int) -> str:
    return _POWERS.get(n, f"{n:,}")


def _realdata_numbers(source: Path) -> str:
    """The real-data line of the README's block: the DPM's average ranks among the DPM, beta and
    isotonic calibrators and among all of them."""
    report = json.loads(source.read_text())
    config = report.get("config", {})
    average = _average_ranks(report)
    dpm = average["dpm"]
    others = "; ".join(f"{name} {_checked_ranks(average[name])}" for name in ("beta", "isotonic") if name in average)
    place = [
        1 + sum(row[key] < dpm[key] for row in average.values()) for key in ("rank_brier_all", "rank_log_loss_all")
    ]
    return (
        f"- **Real data** ({len(config.get('datasets', []))} datasets x {len(config.get('classifiers', []))} "
        f"classifiers x {config.get('seeds', '?')} splits, `realdata.md`, run {written(source):%Y-%m-%d}): the "
        f"default DPM's average rank among the DPM, beta calibration and isotonic regression is "
        f"{dpm['rank_brier_checked']:.2f} on Brier score / {dpm['rank_log_loss_checked']:.2f} on log loss "
        f"({others}); among all {len(average)} calibrators it places {place[0]} / {place[1]}."
    )


def _speed_numbers(source: Path) -> str:
    """The speed line of the README's block: the default fit's time at each N, the first fit in a
    fresh process and the ratio to ``BayesianGaussianMixture`` with its defaults at 10^4."""
    lines = _speed_lines(source)
    head, rows = speed_cells(lines)
    fit = head.index("DPM fit s")
    bgm_col = next(i for i, name in enumerate(head) if name.startswith("BayesianGaussianMixture s (defaults"))
    times = ", ".join(f"{r[fit]} s at {_n(int(float(r[0])))}" for r in rows)
    first, ever = first_fit(lines, "first fit in") or "?", first_fit(lines, "first fit ever")
    if ever is not None:
        first += f" (the first fit ever, which compiles the sampler, {ever})"
    ratio = ""
    for r in rows:
        if int(float(r[0])) == 10**4 and r[bgm_col][:1].isdigit():
            bgm = float(r[bgm_col].split()[0])
            ratio = f"; at 10^4 scores {float(r[fit]) / bgm:.2f} times the time of scikit-learn's BayesianGaussianMixture with its defaults ({bgm:.2f} s)"
    return (
        f"- **Speed** (`speed.md`, run {written(source):%Y-%m-%d} on {measured_on(source)}): a default fit takes {times} scores; the first "
        f"fit in a fresh process {first}{ratio}."
    )


def _band_numbers(source: Path) -> str:
    """The band's table of the README's block: per N, over the default calibrator's cells of the
    coverage study, how many truths meet each part of the bar and how many fits converged, then the
    cells whose 95 % band misses 0.92-0.98."""
    sys.path.insert(0, str(HERE))
    from dpm_coverage import (
        DESIGN,
        _rows,
        _rule,
        _truth_label,
        bands_in_bar,
        cell_summary,
        cells,
        covers_in_bar,
        mae_in_bar,
    )

    from bayescal.bayesian.convergence import meets_target

    by_n: dict[int, list] = {}
    for (route, truth, n), sel in cells(_rows(source)):
        if route == "gibbs":
            by_n.setdefault(n, []).append((truth, cell_summary(sel), sel))
    head = (
        "| N | truths (design + held out) | seeds a cell | 95 % band covers 0.92-0.98 | 80 % and 50 % bands within "
        "0.07 too | MAE at most the KDE calibrator's | fits converged (R-hat <= 1.01, ESS >= 400) |"
    )
    miss_head = "| N | 95 % band outside 0.92-0.98: coverage (se) | 80 % / 50 % band more than 0.07 off | MAE above the KDE calibrator's: DPM / KDE |"
    lines, misses = [head, _rule(head)], [miss_head, _rule(miss_head)]
    for n, group in sorted(by_n.items()):
        design = sum(t in DESIGN for t, _, _ in group)
        in95 = [covers_in_bar(c) for _, c, _ in group]
        bands = [bands_in_bar(c) for _, c, _ in group]
        mae = [mae_in_bar(c) for _, c, _ in group]
        fits = [meets_target(r) for _, _, sel in group for r in sel]
        seeds = sorted(c["seeds"] for _, c, _ in group)
        lines.append(
            f"| {_n(n)} | {len(group)} ({design} + {len(group) - design}) "
            f"| {seeds[0] if seeds[0] == seeds[-1] else f'{seeds[0]}-{seeds[-1]}'} | {sum(in95)} "
            f"| {sum(a and b for a, b in zip(in95, bands))} | {sum(mae)} | {sum(fits)} of {len(fits)} |"
        )
        columns = [
            [
                f"{_truth_label(t)} {c['cov95']:.3f} ({c['cov95_se']:.3f})"
                for (t, c, _), ok in zip(group, in95)
                if not ok
            ],
            [f"{_truth_label(t)} {c['cov80']:.3f} / {c['cov50']:.3f}" for (t, c, _), ok in zip(group, bands) if not ok],
            [
                f"{_truth_label(t)} {c['mae']:.4f} / {c['others']['kde']:.4f}"
                for (t, c, _), ok in zip(group, mae)
                if not ok
            ],
        ]
        misses.append(f"| {_n(n)} | " + " | ".join("; ".join(col) or "-" for col in columns) + " |")
    return (
        f"**The band** on simulated truths with known maps (`coverage.md`; rows up to {written(source):%Y-%m-%d}), "
        "the default calibrator's cells, against the bar (95 % band covering 0.92-0.98 of the data region, "
        "80 % and 50 % bands within 0.07 of their level, mean-map error no larger than the KDE calibrator's, "
        "R-hat <= 1.01 and ESS >= 400):\n\n"
        + "\n".join(lines)
        + "\n\nThe cells outside the bar (means over seeds):\n\n"
        + "\n".join(misses)
    )


RANDOM_FAMILIES = {
    "logit_mixture": "on Gaussian mixtures on the logit scale",
    "beta_mixture": "on Beta mixtures (scores piled at 0 and 1)",
}
"""How the README names the random truths' families."""


def _random_truth_numbers(source: Path) -> str:
    """The README's sentence on the random truths (``random_truths_study.py``): mean 95 % coverage
    and its standard error per family and N."""
    sys.path.insert(0, str(HERE))
    from random_truths_study import column, family_cells, read_rows

    by_family: dict[str, list[str]] = {}
    for (family, n), sel in family_cells(read_rows(source)):
        cov = column(sel, "cov95")
        by_family.setdefault(family, []).append(
            f"{cov.mean():.3f} ({cov.std(ddof=1) / cov.size**0.5:.3f}) at {_n(n)} ({cov.size} truths)"
        )
    return (
        f"- **Random truths** (`random_truths.md`, run {written(source):%Y-%m-%d}; truths drawn from two families "
        "stated in advance, one data set each): the 95 % band's mean coverage (se) is "
        + "; ".join(f"{RANDOM_FAMILIES.get(family, family)} {', '.join(cells)}" for family, cells in by_family.items())
        + "."
    )


def readme_numbers(results: Path) -> str:
    """The README's block of measured numbers, from the studies' outputs in ``results``: the real-data
    ranks, the default fit's times and the band's coverage, error and convergence, each summed from
    the output its evidence page is built from (so the README cannot quote a stale number)."""
    parts = [
        render(results / name)
        for name, render in (
            ("dpm_realdata.json", _realdata_numbers),
            ("dpm_speed.md", _speed_numbers),
            ("random_truths.csv", _random_truth_numbers),
            ("dpm_coverage.csv", _band_numbers),
        )
        if (results / name).is_file()
    ]
    return "\n\n".join([README_START, *parts, README_END])


def write_readme(readme: Path, results: Path) -> bool:
    """Replace the README's block between :data:`README_START` and :data:`README_END` by
    :func:`readme_numbers`; False (the file left as it is) when the README has no such block."""
    text = readme.read_text()
    start, end = text.find(README_START), text.find(README_END)
    if start < 0 or end < start:
        return False
    readme.write_text(text[:start] + readme_numbers(results) + text[end + len(README_END) :])
    return True


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--results", type=Path, default=RESULTS, help="folder of the studies' outputs")
    ap.add_argument("--out", type=Path, default=EVIDENCE, help="folder of the evidence pages")
    ap.add_argument(
        "--allow-fewer-rows",
        action="store_true",
        help="rewrite the coverage page even when the study's output lacks some of its rows (or seeds)",
    )
    ap.add_argument(
        "--readme",
        type=Path,
        default=None,
        help=f"also rewrite the block of measured numbers in this README (the project's: {README.name})",
    )
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for name, (default_source, render) in PAGES.items():
        source = args.results / default_source.name
        if not source.is_file():
            print(f"{name}: {source} is absent; docs/evidence/{name}.md left as it is")
            continue
        page, text = args.out / f"{name}.md", render(source)
        lost = missing_rows(page.read_text(), text, KEPT_CELLS[name]) if name in KEPT_CELLS and page.is_file() else []
        if lost and not args.allow_fewer_rows:
            print(
                f"{name}: {source} lacks {len(lost)} rows of {page} (e.g. {' | '.join(lost[0])}); the page is left "
                "as it is: finish the study (its --resume runs the missing seeds) or pass --allow-fewer-rows"
            )
            continue
        page.write_text(text)
        print(f"{name}: wrote {page} from {source}")
    if args.readme is not None:
        done = write_readme(args.readme, args.results)
        print(f"README: {'wrote the numbers of' if done else 'found no block of numbers in'} {args.readme}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
