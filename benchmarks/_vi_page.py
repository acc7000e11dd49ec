"""The evidence page of the variational route, ``docs/evidence/vi.md``, from its studies' outputs.

``benchmarks/make_evidence.py`` writes it from these files of ``benchmarks/results/`` (each
section is left out while its file is absent):

=========================  ==============================================================
vi_study.csv               ``vi_study.py``: the candidate methods on Gaussian components
vi_select.csv              ``dpm_coverage.py --routes vi``: the route as users call it
vi_beta.csv                ``dpm_coverage.py --routes vi --option components="beta"``
vi_bootstrap.csv           ``vi_study.py --candidates gibbs bootstrap``
dpm_speed_vi.md            ``dpm_speed.py --route vi`` (and ``dpm_speed_vi_gibbs.md``, the
                           sampler timed in the same session)
posterior_geometry.md      ``posterior_geometry.py``
=========================  ==============================================================

Every number in the page's prose is computed here from those files.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from dpm_coverage import (  # noqa: E402
    BAND_TOLERANCE,
    COVERAGE_BAR,
    _rows,
    cell_summary,
    cells,
    covers_in_bar,
    meets_bar,
)

STUDY_COMMANDS = {
    "vi_study.csv": [
        "python benchmarks/vi_study.py --truths monotone piles plateau --n 300 1000 --seeds 8 \\\n"
        "    --candidates gibbs pathfinder dadvi dadvi_lr fullrank_advi",
        "python benchmarks/vi_study.py --truths bimodal --n 1000 --seeds 8 \\\n"
        "    --candidates gibbs pathfinder dadvi dadvi_lr fullrank_advi",
    ],
    "vi_select.csv": [
        "python benchmarks/dpm_coverage.py --truths monotone piles plateau --n 300 1000 --seeds 8 \\\n"
        "    --routes vi --others kde --out benchmarks/results/vi_select.csv",
        "python benchmarks/dpm_coverage.py --truths bimodal --n 1000 --seeds 8 \\\n"
        "    --routes vi --others kde --out benchmarks/results/vi_select.csv",
        "python benchmarks/dpm_coverage.py --truths monotone piles plateau bimodal --n 10000 --seeds 8 \\\n"
        "    --routes vi --others kde --out benchmarks/results/vi_select.csv",
    ],
    "vi_beta.csv": [
        "python benchmarks/dpm_coverage.py --truths monotone piles plateau --n 300 1000 --seeds 8 \\\n"
        "    --routes vi --option 'components=\"beta\"' --others kde --out benchmarks/results/vi_beta.csv",
    ],
    "vi_bootstrap.csv": [
        "python benchmarks/vi_study.py --truths monotone piles plateau --n 1000 --seeds 3 \\\n"
        "    --candidates gibbs bootstrap --out benchmarks/results/vi_bootstrap.csv",
        "python benchmarks/vi_study.py --truths monotone --n 1000000 --seeds 3 \\\n"
        "    --candidates gibbs bootstrap --out benchmarks/results/vi_bootstrap.csv",
    ],
}

INTRO = """# Variational inference: `inference="vi"`

The DPM calibrator can fit each class's mixture by variational inference on the PyMC model
(`inference="vi"`, `bayescal.bayesian.vi`) instead of the sampler. This page measures the route's
candidate methods side by side against the bar of the coverage study (the 95 % band covers the true
map at {lo:.2f}-{hi:.2f} of the data region in every cell, the 50 % and 80 % bands within {tol:.2f} of their
level, the posterior-mean map's MAE no larger than the KDE calibrator's; a warm fit at most twice the
sampler's time, a first fit in a new process within 15 s). {verdict}
"""

CANDIDATES = """## Candidates

| name | `route_options` | what it is |
|---|---|---|
| `dadvi` (the route's default) | `{"method": "dadvi"}` | deterministic ADVI (Giordano, Ingram & Broderick 2024): the mean-field ELBO on 30 standard-normal draws fixed once, minimised by L-BFGS-B with the exact gradient, restarted from where it stops while the optimality gap (the Newton decrement with its inverse Hessian) exceeds 0.01 nats; 2 paths (the KDE-informed start and a jittered one), equal mixture of their Gaussians |
| `dadvi_lr` | `{"method": "dadvi", "linear_response": True}` | the same optimum with the linear-response covariance (Giordano, Broderick & Jordan 2018), the mean block of the inverse Hessian of the DADVI objective |
| `pathfinder` | `{"method": "pathfinder"}` | multi-path Pathfinder with Pareto-smoothed importance resampling, `pymc_extras.fit_pathfinder` (4 paths, jitter 0.5) |
| `fullrank_advi` | `{"method": "fullrank_advi"}` | full-rank ADVI (PyMC's `FullRankADVI`, adam, at most 20,000 iterations per path, 2 paths) |
| `gibbs` | (`inference="gibbs"`) | the sampler route, the reference |

Every VI fit reports, per class in `diagnostics_["class_0"]` / `["class_1"]`: `pareto_k`
(PSIS k-hat of the importance ratios log p - log q of the final draws), `ess_importance`,
`converged` (every path's optimiser met its stopping rule; for DADVI every path's optimality gap
is within 0.01 nats, `optimality_gap` the largest), `elbo_final` and `elbo_spread`
(best minus worst path's ELBO, in nats: how much the paths disagree), and warns when k-hat
exceeds 0.7 or an optimiser has not converged, naming `inference="gibbs"`. The draws of the
paths come in a random order in the one chain (they are independent), so the map's ESS is
that of independent draws and says nothing about the approximation's quality: k-hat does.
"""

STATIC_END = """## Agreement with the sampler

On small data (400 scores, K = 3) the posterior-mean maps of `inference="vi"` and
`inference="gibbs"` agree within a mean absolute difference of 0.03 and a largest difference
of 0.08 over the central 90 % of the scores (`tests/bayesian/test_vi.py`); the bands do not
agree, as the tables show.

## Tried and set aside

DADVI by trust-region Newton-CG with exact Hessian-vector products (the default of
`pymc_extras.fit_dadvi`), which ran the Beta prior's trigamma in Python object mode and took
100-180 s per class (2026-11-23); the route uses L-BFGS-B and, for the linear response, forward
differences of the exact gradient. `pymc_extras.fit_dadvi` itself is not called because it
recompiles its graph on every call (its fixed draws are constants in the graph) and starts from
the model's default point; the route states the same objective with the draws as an input,
compiled once per process and K, started at the KDE-informed values.
"""


def _fmt_range(values) -> str:
    values = [v for v in values if np.isfinite(v)]
    if not values:
        return "-"
    lo, hi = min(values), max(values)
    return f"{lo:.2f}" if f"{lo:.2f}" == f"{hi:.2f}" else f"{lo:.2f}-{hi:.2f}"


def _by_candidate(rows: list[dict]) -> dict[str, list[tuple[tuple, list[dict], dict]]]:
    """The study's cells by candidate (in ``vi_study.CANDIDATES``' order): (key, rows, summary) each."""
    from vi_study import CANDIDATES as ORDER

    rank = {name: i for i, name in enumerate(ORDER)}
    out: dict[str, list] = {}
    for key, sel in cells(rows, lambda route: rank.get(route, 99)):
        out.setdefault(key[0], []).append((key, sel, cell_summary(sel)))
    return out


def _candidate_table(path: Path) -> str:
    from vi_study import summarise

    return summarise(path)


def _reading(rows: list[dict]) -> tuple[str, str]:
    """The verdict of the introduction and the bullets of the "Reading" section, from the study's rows."""
    groups = _by_candidate(rows)
    gibbs = groups.get("gibbs", [])
    vi = {name: g for name, g in groups.items() if name != "gibbs"}
    passing = [name for name, g in vi.items() if all(meets_bar(c) for _, _, c in g)]
    if passing:
        verdict = (
            f"**On every measured cell the band of {', '.join(f'`{p}`' for p in passing)} meets the coverage part "
            'of the bar**; its time is under "Time" below.'
        )
    else:
        verdict = (
            '**No candidate meets it, so the sampler (`inference="gibbs"`) stays the default and the '
            "variational route is opt-in.**"
        )
    bullets = []
    for name, g in vi.items():
        fits = [r for _, sel, _ in g for r in sel]
        k = np.array([float(r["pareto_k_max"]) for r in fits])
        spread = [float(r["elbo_spread_max"]) for r in fits]
        conv = sum(r["converged"] == "True" for r in fits)
        bullets.append(
            f"`{name}`: 95 % coverage {_fmt_range(c['cov95'] for _, _, c in g)} over the cells, the whole bar met "
            f"in {sum(meets_bar(c) for _, _, c in g)} of {len(g)} cells (95 % band in "
            f"{sum(covers_in_bar(c) for _, _, c in g)}); MAE {_fmt_range(_ratios(g, 'mae', gibbs))} times the sampler's "
            f"on the same replicates and width {_fmt_range(_ratios(g, 'width', gibbs))} times its band's; the larger "
            f"class k-hat {_fmt_range(k)} ({int(np.sum(k > 0.7))} of {k.size} fits above 0.7); the paths' ELBO "
            f"spread {_fmt_range(spread)} nats; every path's optimiser converged in {conv} of {len(fits)} fits"
        )
    if "gibbs" in groups:
        g = groups["gibbs"]
        piles = [c["cov95"] for key, _, c in g if key[1] == "piles"]
        bullets.append(
            f"the sampler on the same Gaussian components (`gibbs`): 95 % coverage "
            f"{_fmt_range(c['cov95'] for _, _, c in g)}, the whole bar met in {sum(meets_bar(c) for _, _, c in g)} "
            f"of {len(g)} cells"
            + (
                f"; on the piled scores {_fmt_range(piles)}, where the calibrator's default "
                '(`components="select"`) takes Beta components (next section and `coverage.md`)'
                if piles
                else ""
            )
        )
    if "dadvi" in groups and "dadvi_lr" in groups:
        diffs = [a - b for a, b in _paired_means(groups["dadvi_lr"], "cov95", groups["dadvi"])]
        bullets.append(
            f"the linear-response covariance (`dadvi_lr` against `dadvi`, the same optima) moves the 95 % coverage "
            f"by {min(diffs):+.3f} to {max(diffs):+.3f} per cell (mean paired difference over seeds)"
        )
    return verdict, "\n".join(f"- {b}." for b in bullets)


def _paired_means(group, field: str, base) -> list[tuple[float, float]]:
    """Per cell of ``group`` (a candidate's cells, :func:`_by_candidate`), the mean ``field`` of its rows and of
    ``base``'s rows (another candidate's cells) on the seeds both fitted; cells without such seeds left out."""
    by_cell = {key[1:]: sel for key, sel, _ in base}
    out = []
    for key, sel, _ in group:
        ref = {r["seed"]: float(r[field]) for r in by_cell.get(key[1:], [])}
        both = [(float(r[field]), ref[r["seed"]]) for r in sel if r["seed"] in ref]
        if both:
            a, b = np.mean(both, axis=0)
            out.append((float(a), float(b)))
    return out


def _ratios(group, field: str, base) -> list[float]:
    """:func:`_paired_means` as ratios: the candidate's mean over ``base``'s."""
    return [a / b for a, b in _paired_means(group, field, base)]


def _same_replicates(rows: list[dict], beside: dict | None) -> list[dict]:
    """The rows of ``beside`` (the default calibrator's, by (truth, N, seed): :func:`_by_replicate`) fitted
    on the replicates of ``rows``."""
    keys = ((r["truth"], int(r["n"]), r["seed"]) for r in rows)
    return [beside[k] for k in keys if k in beside] if beside else []


def _by_replicate(rows: list[dict]) -> dict[tuple[str, int, str], dict]:
    return {(r["truth"], int(r["n"]), r["seed"]): r for r in rows}


def _coverage_table(rows: list[dict], beside: dict | None = None) -> str:
    """A markdown table of dpm_coverage-format ``rows`` per (route, truth, N); with ``beside`` (the
    default calibrator's rows of ``dpm_coverage.csv``), that calibrator's 95 % coverage, MAE, width and
    time on the same seeds."""
    head = (
        "| route | truth | N | seeds | 95 % cov (se) | 80 % | 50 % | 95 % data-weighted | MAE | MAE KDE | width "
        "| time s | bar met |"
    )
    if beside is not None:
        head += " sampler 95 % cov (se) | sampler MAE | sampler width | sampler time s |"
    lines = [head, "|---" * (head.count("|") - 1) + "|"]
    for key, sel in cells(rows):
        c = cell_summary(sel)
        line = (
            f"| {key[0]} | {key[1]} | {key[2]} | {c['seeds']} | {c['cov95']:.3f} ({c['cov95_se']:.3f}) "
            f"| {c['cov80']:.3f} | {c['cov50']:.3f} | {c['cov95_data']:.3f} | {c['mae']:.4f} "
            f"| {c['others'].get('kde', float('nan')):.4f} | {c['width']:.3f} | {c['time_s']:.1f} "
            f"| {'yes' if meets_bar(c) else 'no'} |"
        )
        if beside is not None:
            ref = _same_replicates(sel, beside)
            if len(ref) == len(sel):
                d = cell_summary(ref)
                line += (
                    f" {d['cov95']:.3f} ({d['cov95_se']:.3f}) | {d['mae']:.4f} | {d['width']:.3f} | {d['time_s']:.1f} |"
                )
            else:
                line += " - | - | - | - |"
        lines.append(line)
    return "\n".join(lines)


def _coverage_reading(rows: list[dict], beside: dict | None) -> str:
    """One sentence on a table of :func:`_coverage_table`: cells meeting the bar, the 95 % coverage's range and
    the fit time's, beside the default calibrator's on the same seeds."""
    summaries = [cell_summary(sel) for _, sel in cells(rows)]
    text = (
        f"The whole bar is met in {sum(meets_bar(c) for c in summaries)} of {len(summaries)} cells (the 95 % band "
        f"in {sum(covers_in_bar(c) for c in summaries)}); the 95 % coverage is {_fmt_range(c['cov95'] for c in summaries)}"
        f" and a fit takes {_fmt_range(c['time_s'] for c in summaries)} s"
    )
    ref = _same_replicates(rows, beside)
    if ref:
        theirs = [cell_summary(sel) for _, sel in cells(ref)]
        text += (
            f", against the default calibrator's {_fmt_range(c['cov95'] for c in theirs)} (the bar met in "
            f"{sum(meets_bar(c) for c in theirs)} of {len(theirs)}) and {_fmt_range(c['time_s'] for c in theirs)} s "
            "on the same replicates"
        )
    return text + ".\n"


def _commands(name: str) -> str:
    return "```\n" + "\n".join(STUDY_COMMANDS[name]) + "\n```\n"


def _speed(path: Path) -> tuple[dict[int, float], dict[str, str]]:
    """A ``dpm_speed.py`` output's default fit in seconds per N, and its first fits ("first fit in" a fresh
    process, "first fit ever") as written, "-" where the run did not measure one."""
    from make_evidence import _speed_lines, first_fit, speed_cells

    lines = _speed_lines(path)
    head, rows = speed_cells(lines)
    fit = head.index("DPM fit s")
    firsts = {which: first_fit(lines, which) or "-" for which in ("first fit in", "first fit ever")}
    return {int(float(r[0])): float(r[fit].split()[0]) for r in rows}, firsts


def vi_page(source: Path) -> str:
    """``docs/evidence/vi.md`` from ``source`` (``vi_study.csv``) and the other files of its folder."""
    from make_evidence import _speed_table, measured_on, stamp

    results = source.parent
    rows = _rows(source)
    verdict, reading = _reading(rows)
    parts = [
        INTRO.format(lo=COVERAGE_BAR[0], hi=COVERAGE_BAR[1], tol=BAND_TOLERANCE, verdict=verdict),
        CANDIDATES,
        "## Measured: the candidates on one model\n\n"
        + stamp(source, "the commands below, then python benchmarks/make_evidence.py")
        + '\nEvery row, the sampler\'s too, fits Gaussian components (the study sets `components="gaussian"`), '
        "so the table compares ways of fitting one model; the route as users call it fits both families and is "
        "measured in the next section. K = 20, default draws (1000 for the variational routes, 2 chains of 500 "
        "for the sampler). `bimodal` is a truth held out from every choice of settings. Columns as on the coverage "
        "page; *k-hat max* is the larger of the two classes' k-hat (mean over seeds), *ELBO spread* the larger "
        "of the two classes' spread between paths, *converged* the fits whose every path converged; times are "
        "wall-clock seconds of a fit in the study's process. Commands:\n\n"
        + _commands("vi_study.csv")
        + "\n"
        + _candidate_table(source)
        + "\n\n### Reading\n\n"
        + reading
        + "\n",
    ]
    coverage = results / "dpm_coverage.csv"  # the default calibrator's rows, set beside the route's
    beside = _by_replicate([r for r in _rows(coverage) if r["route"] == "gibbs"]) if coverage.is_file() else None
    sections = (
        (
            "vi_select.csv",
            "The route as users call it",
            '`DPMCalibrator(inference="vi")` with its other defaults: `components="select"` fits both '
            "component families with the route's default method (mean-field DADVI) and keeps or averages them "
            "as the sampler's fits are kept; beside it, the default calibrator (the sampler) on the same "
            "replicates, from `dpm_coverage.csv`. *bar met*: the 95 % band in the bar, the 80 % and 50 % bands "
            "within their tolerance and the MAE no larger than the KDE calibrator's.",
        ),
        (
            "vi_beta.csv",
            "Beta components",
            'Since the Beta-component model is written in PyMC too, the route fits `components="beta"`; '
            "the route's default method (mean-field DADVI) on it, beside the default calibrator on the same "
            "replicates.",
        ),
    )
    for name, title, description in sections:
        path = results / name
        if path.is_file():
            rows_, word = _rows(path), "command" if len(STUDY_COMMANDS[name]) == 1 else "commands"
            parts.append(
                f"## {title}\n\n"
                + stamp(path, f"the {word} below, then python benchmarks/make_evidence.py")
                + f"\n{description} {word.capitalize()}:\n\n"
                + _commands(name)
                + "\n"
                + _coverage_table(rows_, beside)
                + "\n\n"
                + _coverage_reading(rows_, beside)
            )
    speed, speed_gibbs = results / "dpm_speed_vi.md", results / "dpm_speed_vi_gibbs.md"
    if speed.is_file():
        fits, firsts = _speed(speed)
        text = (
            "## Time\n\n"
            + stamp(
                speed,
                "python benchmarks/dpm_speed.py --route vi --n 1000 10000 | tee benchmarks/results/dpm_speed_vi.md",
                measured_on(speed),
            )
            + "\nThe speed page's timings (`speed.md` describes the columns) with `--route vi`: the route's "
            'default fit (`components="select"`, mean-field DADVI), with Gaussian components alone and with '
            '`components="auto"`; the first fit in a fresh process (PyTensor\'s compile cache on disk, reused '
            "across processes) and the first fit ever (empty compile caches, as after installing).\n\n"
            + _speed_table(speed)
        )
        if speed_gibbs.is_file():
            gfits, gfirsts = _speed(speed_gibbs)
            ratios = ", ".join(f"{fits[n] / gfits[n]:.1f} times at {n:,} scores" for n in sorted(fits) if n in gfits)
            text += (
                "\nThe sampler route timed by the same command with `--route gibbs` in the same session "
                f"(`{speed_gibbs.name}`):\n\n"
                + _speed_table(speed_gibbs)
                + f"\nSo a warm default fit of the variational route takes {ratios} the sampler's (the bar: "
                f"twice); its first fit in a fresh process, with PyTensor's compile cache on disk, takes "
                f"{firsts['first fit in']} (the bar: 15 s with the cache reused across processes) and "
                f"its first fit ever, which compiles everything, {firsts['first fit ever']}, against "
                f"the sampler's {gfirsts['first fit in']} and {gfirsts['first fit ever']}.\n"
            )
        parts.append(text)
    boot = results / "vi_bootstrap.csv"
    if boot.is_file():
        parts.append(
            "## A posterior bootstrap of the mode\n\n"
            + stamp(boot, "the commands below, then python benchmarks/make_evidence.py")
            + "\nThe issue lists a posterior bootstrap among the candidates. `benchmarks/posterior_bootstrap.py` "
            "draws it as the weighted likelihood bootstrap (Newton & Raftery 1994): each of 200 draws a class "
            "re-weights the class's points by a Bayesian bootstrap and takes the mode of the mixture's log "
            "posterior under those weights (the sampler's start search, L-BFGS, from the full-data mode), "
            "beside the sampler (Gaussian components) on the same replicates. Commands:\n\n"
            + _commands("vi_bootstrap.csv")
            + "\n"
            + _candidate_table(boot)
            + "\n\n"
            + _bootstrap_reading(_rows(boot))
        )
    geometry = results / "posterior_geometry.md"
    if geometry.is_file():
        parts.append(_geometry_section(geometry, stamp))
    parts.append(STATIC_END)
    return "\n".join(parts)


def _bootstrap_reading(rows: list[dict]) -> str:
    """The bootstrap's cells beside the sampler's on the same replicates: coverage, error and time."""
    groups = _by_candidate(rows)
    boot, gibbs = groups.get("bootstrap", []), groups.get("gibbs", [])
    if not boot or not gibbs:
        return ""
    cov = {key[1:]: c["cov95"] for key, _, c in gibbs}
    lines = [
        f"{key[1]} at {key[2]:,} scores: 95 % coverage {c['cov95']:.3f} against the sampler's "
        f"{cov.get(key[1:], float('nan')):.3f}"
        for key, _, c in boot
    ]
    return (
        "; ".join(lines)
        + f". The bootstrap's MAE is {_fmt_range(_ratios(boot, 'mae', gibbs))} times the sampler's and a fit takes "
        f"{_fmt_range(_ratios(boot, 'time_s', gibbs))} times as long (200 searches a class).\n"
    )


def _geometry_section(path: Path, stamp) -> str:
    """Why a Gaussian cannot carry the posterior: ``posterior_geometry.py``'s table and its reading."""
    table = [ln for ln in path.read_text().splitlines() if ln.startswith("|")]
    rows = [[c.strip() for c in ln.split("|")[1:-1]] for ln in table[2:]]
    head = [c.strip() for c in table[0].split("|")[1:-1]]

    def col(name: str) -> int:
        return next(i for i, h in enumerate(head) if h.startswith(name))

    ratios: dict[bool, list[float]] = {True: [], False: []}  # by whether the row is of the smallest N
    khat, largest = [], []
    smallest = min(int(r[col("N")]) for r in rows)
    for r in rows:
        drop, gauss = r[col("drop at r = 1")].split(" (")
        ratios[int(r[col("N")]) == smallest].append(float(drop) / float(gauss.rstrip(")")))
        k = r[col("Laplace k-hat")]
        if k != "-":
            khat.append(float(k))
        largest.append(float(r[col("largest weight")]))
    return (
        "## Geometry at the mode\n\n"
        + stamp(
            path,
            "python benchmarks/posterior_geometry.py --n 1000 10000 100000 1000000 --seed 0 "
            "> benchmarks/results/posterior_geometry.md",
        )
        + "\nWhy a Gaussian cannot carry this posterior, measured directly: `benchmarks/posterior_geometry.py` "
        "takes one class of the monotone truth as the calibrator prepares it (K = 20 Gaussian components, 60 "
        "unconstrained parameters), finds the mode of its log posterior by L-BFGS, whitens by the Hessian there "
        "(eigenvalues below 1, the components' prior curvature, raised to 1) and compares the log posterior's "
        "drop at whitened radius r along 50 random directions (median) with the drop of the Gaussian that has "
        "this Hessian; then it draws 1,000 points from that Gaussian (the Laplace approximation) and fits the "
        "Pareto tail of their importance ratios.\n\n"
        + "\n".join(table)
        + f"\n\nOne standard deviation out along a random direction the log posterior falls "
        f"{_fmt_range(ratios[True])} times as fast as the Gaussian's at {smallest:,} scores and "
        f"{_fmt_range(ratios[False])} times from the next N on; the Laplace approximation's draws, about "
        "sqrt(60) = 7.7 standard deviations out, are mostly where the posterior has little mass: k-hat "
        f"{_fmt_range(khat)} where its tail could be fitted, and the largest of 1,000 normalised weights "
        f"{_fmt_range(largest)}. The variational candidates' Gaussians meet the same curvature, as their k-hat "
        "above says.\n"
    )
