"""Fit CPU time against the number of rows: where the slow fits stop being practical.

Each curve is one estimator's fit time on a synthetic problem of fixed dimension (d = 8):

- classification: ``make_classification`` (6 informative features, 5 % flipped labels),
  standardised; regression: ``X ~ N(0, I_8)``,
  ``y = sin(2 x_0) + x_1 x_2 / 2 + 0.3 x_3^2 + 0.1 e``.
- ``SparseGPClassifier`` with the default moment matching, and with ``site_update="optimize"``
  under the default selection (``"adaptive"``) and under ``selection="nlp"``;
  ``RelevanceVectorRegressor`` and ``RelevanceVectorClassifier`` with their defaults (Subspace
  EM, every row a candidate basis function), and with ``n_basis_functions=1000`` (a random
  subset of candidates); ``SparseGPRegressor`` (default) as the reference.
  The sparse GP estimators keep their default basis budget, ``max_basis=100``.

Every fit runs in a fresh child process with one thread (``OMP_NUM_THREADS=1`` and friends,
``threadpool_limits(1)``) and reports its process CPU time; sizes whose first fit took less
than ``--cheap`` seconds are repeated (median of ``--repeats``). A curve stops at the first
size whose fit exceeds ``--cap`` CPU seconds (or twice that in wall time), or whose time,
extrapolated from the last two sizes, would exceed 1.5 x the cap. The slope is a least-squares
fit of log time on log n over the sizes with at least 1,000 rows and 0.5 s (the cost order:
1 linear, 2 quadratic). Results are cached per (estimator, n, code label) in
``results/cost_curves_runs.json`` (``<--name>_runs.json``), so an interrupted run resumes.

``--baseline DIR`` also times the estimators named by ``--compare`` with the package found in
``DIR`` (e.g. an export of the commit before a speed-up), interleaved with the current code at
each size, and adds the ratio to the table: a before/after in the same run.

Usage::

    python benchmarks/scale/cost_curves.py                      # cap 120 s, up to 128,000 rows
    python benchmarks/scale/cost_curves.py --quick              # cap 20 s, up to 8,000 rows

Writes ``benchmarks/scale/results/cost_curves.md`` and
``benchmarks/scale/results/cost_curves.png``.
"""

import argparse
import json
import os
import shlex
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
RESULTS = HERE / "results"
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
               "BLIS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")

# name -> (problem, estimator class, keyword arguments)
ESTIMATORS = {
    "SparseGPRegressor": ("regression", "SparseGPRegressor", {}),
    "SparseGPClassifier": ("classification", "SparseGPClassifier", {}),
    "SparseGPClassifier optimize": (
        "classification", "SparseGPClassifier", {"site_update": "optimize"}),
    "SparseGPClassifier optimize nlp": (
        "classification", "SparseGPClassifier", {"site_update": "optimize", "selection": "nlp"}),
    "RelevanceVectorRegressor": ("regression", "RelevanceVectorRegressor", {}),
    "RelevanceVectorClassifier": ("classification", "RelevanceVectorClassifier", {}),
    # a random subset of 1,000 rows as candidate basis functions (the SSEM paper's remedy)
    "RelevanceVectorRegressor 1000 candidates": (
        "regression", "RelevanceVectorRegressor", {"n_basis_functions": 1000}),
    "RelevanceVectorClassifier 1000 candidates": (
        "classification", "RelevanceVectorClassifier", {"n_basis_functions": 1000}),
}
D = 8


def make_problem(problem, n, seed=0):
    """The first ``n`` rows of the synthetic problem (prefixes of one draw of 2^18 rows)."""
    if problem == "classification":
        from sklearn.datasets import make_classification

        X, y = make_classification(
            n_samples=max(n, 1 << 12), n_features=D, n_informative=6, n_redundant=0,
            flip_y=0.05, random_state=seed,
        )
        X, y = X[:n], y[:n]
        return (X - X.mean(0)) / X.std(0), y
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((max(n, 1 << 12), D))[:n]
    e = rng.standard_normal(max(n, 1 << 12))[:n]
    y = np.sin(2 * X[:, 0]) + 0.5 * X[:, 1] * X[:, 2] + 0.3 * X[:, 3] ** 2 + 0.1 * e
    return X, y


def child(name, n, seed):
    """Fit once in this (fresh, one-thread) process; print the CPU time as JSON."""
    import time
    import warnings

    from threadpoolctl import threadpool_limits

    import skgpsparse

    problem, cls, kwargs = ESTIMATORS[name]
    X, y = make_problem(problem, n)
    model = getattr(skgpsparse, cls)(random_state=seed, **kwargs)
    with threadpool_limits(limits=1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tic = time.process_time()
        model.fit(X, y)
        cpu = time.process_time() - tic
    print(json.dumps({"cpu": cpu, "module": skgpsparse.__file__}))


def fit_once(name, n, seed, pythonpath, wall_limit):
    """CPU seconds of one fit in a child process, or None when it ran past ``wall_limit``."""
    env = dict(os.environ, PYTHONPATH=str(pythonpath), PYTHONDONTWRITEBYTECODE="1",
               MPLBACKEND="Agg", **dict.fromkeys(THREAD_VARS, "1"))
    cmd = [sys.executable, __file__, "--child", name, str(n), str(seed)]
    try:
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=wall_limit,
                             check=True)
    except subprocess.TimeoutExpired:
        return None
    record = json.loads(out.stdout.strip().splitlines()[-1])
    if not record["module"].startswith(str(Path(pythonpath).resolve())):
        raise RuntimeError(f"child imported {record['module']}, not from {pythonpath}")
    return record["cpu"]


def measure(name, n, label, pythonpath, args, runs):
    """Median CPU time of ``name`` at ``n`` rows (cached in ``runs``); None past the cap."""
    key = f"{name}|{n}|{label}"
    if key in runs:
        return runs[key]["median"]
    times = []
    for seed in range(args.repeats):
        cpu = fit_once(name, n, seed, pythonpath, 2 * args.cap + 30)
        if cpu is None:
            times = None
            break
        times.append(cpu)
        if cpu >= args.cheap:
            break
    med = None if times is None else float(np.median(times))
    runs[key] = {"median": med, "times": times, "date": datetime.now(UTC).isoformat()}
    (RESULTS / f"{args.name}_runs.json").write_text(json.dumps(runs, indent=1, sort_keys=True))
    shown = "timed out" if med is None else f"{med:.2f} s (of {len(times)})"
    print(f"{label:8s} {name:33s} n={n:7d}: {shown}", flush=True)
    return med


def curve(name, label, pythonpath, args, runs, sizes, previous=()):
    """Times along ``sizes`` until the cap; returns [(n, time or None)], note.

    ``previous``: the last measured points before ``sizes``, for the extrapolation.
    """
    out = []
    for n in sizes:
        known = list(previous) + out
        if len(known) >= 2 and known[-1][1] and known[-2][1]:
            (n1, t1), (n2, t2) = known[-2], known[-1]
            local = max(np.log(t2 / t1) / np.log(n2 / n1), 1.0)
            predicted = t2 * (n / n2) ** local
            if predicted > 1.5 * args.cap:
                return out, f"stopped before n = {n:,} (extrapolated {predicted:.0f} s)"
        t = measure(name, n, label, pythonpath, args, runs)
        out.append((n, t))
        if t is None or t > args.cap:
            return out, f"over the {args.cap:.0f} s cap at n = {n:,}"
    return out, ""


def slope(points):
    """Least-squares slope of log time on log n over n >= 1000 and time >= 0.5 s."""
    pts = [(n, t) for n, t in points if t is not None and n >= 1000 and t >= 0.5]
    if len(pts) < 2:
        pts = [(n, t) for n, t in points if t is not None][-2:]
    if len(pts) < 2:
        return float("nan")
    n, t = np.array(pts, dtype=float).T
    return float(np.polyfit(np.log(n), np.log(t), 1)[0])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--cap", type=float, default=120.0, help="CPU seconds per fit")
    parser.add_argument("--cheap", type=float, default=10.0,
                        help="repeat fits faster than this many CPU seconds")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--max-n", type=int, default=128000)
    parser.add_argument("--estimators", nargs="+", default=list(ESTIMATORS))
    parser.add_argument("--label", default="current", help="code label of the cache entries")
    parser.add_argument("--baseline", type=Path, help="package root of the 'before' code")
    parser.add_argument("--baseline-label", default="before")
    parser.add_argument("--compare", nargs="+", default=[],
                        help="estimators also timed with --baseline")
    parser.add_argument("--compare-max-n", type=int, default=4000,
                        help="largest n of the before/after comparison")
    parser.add_argument("--name", default="cost_curves", help="stem of the output files")
    parser.add_argument("--fresh", action="store_true", help="ignore cached runs")
    args = parser.parse_args(argv)
    if args.quick:
        args.cap, args.max_n, args.repeats = 20.0, 8000, 1
    sizes = [n for n in (250, 500, 1000, 2000, 4000, 8000, 16000, 32000, 64000, 128000)
             if n <= args.max_n]
    RESULTS.mkdir(exist_ok=True)
    cache = RESULTS / f"{args.name}_runs.json"
    runs = {} if args.fresh or not cache.exists() else json.loads(cache.read_text())
    curves, notes = {}, {}
    for name in args.estimators:
        if name in args.compare and args.baseline is not None:
            # before and after interleaved size by size, so that the load they see is alike
            before, after = [], []
            for n in sizes:
                if n > args.compare_max_n:
                    break
                before += curve(name, args.baseline_label, args.baseline, args, runs, [n])[0]
                after += curve(name, args.label, ROOT, args, runs, [n])[0]
                if before[-1][1] is None or before[-1][1] > args.cap:
                    break
            curves[(name, args.baseline_label)], notes[(name, args.baseline_label)] = before, ""
            # the current code's curve goes on alone past the comparison
            last = after[-1][1]
            rest = [n for n in sizes if n > after[-1][0]] if last and last <= args.cap else []
            more, notes[(name, args.label)] = curve(
                name, args.label, ROOT, args, runs, rest, after[-2:])
            curves[(name, args.label)] = after + more
        else:
            curves[(name, args.label)], notes[(name, args.label)] = curve(
                name, args.label, ROOT, args, runs, sizes)
    write(curves, notes, sizes, args, argv)


def write(curves, notes, sizes, args, argv):
    sys.path.insert(0, str(HERE.parent))
    from _common.machine import machine

    keys = list(curves)
    title = {k: k[0] if k[1] == args.label else f"{k[0]} ({k[1]})" for k in keys}
    lines = [
        "# Fit CPU time against the number of rows",
        "",
        (f"Machine: {machine()}; load average {os.getloadavg()[0]:.1f} (shared). Date: "
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC. Command: "
        f"`python benchmarks/scale/cost_curves.py {shlex.join(argv or sys.argv[1:])}`."),
        "",
        (f"Process CPU seconds of one fit on one thread, each in a fresh process; median of "
        f"up to {args.repeats} fits (seeds 0, 1, ...) where the first took under "
        f"{args.cheap:g} s, else one. d = {D}, default parameters (the sparse GP "
        "estimators: max_basis = 100). A "
        f"curve stops past {args.cap:.0f} s per fit. Slope: log-log least squares over "
        "n >= 1,000 (fits of at least 0.5 s); cost ~ n^slope."),
        "",
        "| n | " + " | ".join(title[k] for k in keys) + " |",
        "|---:|" + "---:|" * len(keys),
    ]
    for n in sizes:
        cells = []
        for k in keys:
            t = dict(curves[k]).get(n, "-")
            cells.append("-" if t == "-" else ("timed out" if t is None else f"{t:.2f}"))
        if any(c != "-" for c in cells):
            lines.append(f"| {n:,} | " + " | ".join(cells) + " |")
    lines.append("| **slope** | " + " | ".join(f"**{slope(curves[k]):.2f}**" for k in keys)
                 + " |")
    lines.append("")
    lines += [f"- {title[k]}: {notes[k]}" for k in keys if notes[k]]
    if args.baseline is not None:
        for name in args.compare:
            b = dict(curves.get((name, args.baseline_label), []))
            a = dict(curves.get((name, args.label), []))
            ratios = [f"{n:,}: {b[n] / a[n]:.2f}x" for n in sizes
                      if b.get(n) and a.get(n)]
            lines.append(f"- {name}, {args.baseline_label} / {args.label} CPU time: "
                         + ", ".join(ratios))
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.name}.md").write_text("\n".join(lines) + "\n")
    plot(curves, title, RESULTS / f"{args.name}.png", args.cap)
    print("\n".join(lines))


def plot(curves, title, path, cap):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5))
    for k, pts in curves.items():
        pts = [(n, t) for n, t in pts if t is not None]
        if not pts:
            continue
        n, t = np.array(pts, dtype=float).T
        ax.loglog(n, t, "o-", label=f"{title[k]} (slope {slope(curves[k]):.2f})")
    ax.axhline(cap, color="grey", ls=":", lw=1)
    ax.text(ax.get_xlim()[0] * 1.05, cap * 1.08, f"cap {cap:.0f} s", color="grey", fontsize=8)
    ax.set_xlabel("rows n")
    ax.set_ylabel("fit CPU time, one thread (s)")
    ax.set_title("Fit cost against the number of rows (d = 8)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        main()
