"""Fit and prediction time of the sparse GP estimators as multiples of the O(n p^2) floor.

Any model with ``p`` basis vectors must at least compute the kernel block ``K(X, X_u)``
(``n x p``, in chunks) and one triangular solve ``L^-1 K(X_u, X)`` against the Cholesky factor
``L`` of ``K(X_u, X_u)``. This script times that floor and, in the same run (same data, same
basis size, same BLAS threads), the estimators:

- fit of SparseGPClassifier and SparseGPRegressor with ``selection="random"``,
  ``optimizer=None`` (goal: <= 3x the floor); the classifier both with ``posterior="basis"``
  and with its default all-rows EP (issue #35's goal: <= 5x the floor);
- ``predict_proba`` / ``predict(return_std=True)`` on ``n`` rows (goal: <= 2x the floor for
  those rows);
- the default selections (adaptive / matching_pursuit) with hyperparameter learning on
  ``--n-default`` rows, as a multiple of the floor for that ``n``.

Data: ``X ~ U(-1, 1)^d``, a smooth regression target plus noise, and its sign as binary labels.
Each timing is the median of ``--repeats`` runs; both wall time and process CPU time (all
threads) are recorded, ratios are quoted on wall time with the CPU ratio next to them (the
machine may be shared, which inflates wall time but not CPU time).

Usage::

    python benchmarks/scale/floor.py             # n = 200,000, d = 10, p = 256, 3 repeats
    python benchmarks/scale/floor.py --quick     # n = 20,000, p = 128, 1 repeat

Writes ``benchmarks/scale/results/floor.md``.
"""

import argparse
import os
import platform
import sys
import time
import warnings
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from scipy.linalg import cholesky, solve_triangular
from threadpoolctl import threadpool_info

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from sklearn.gaussian_process.kernels import RBF
from sklearn.gaussian_process.kernels import ConstantKernel as C

from skgpsparse import SparseGPClassifier, SparseGPRegressor
from skgpsparse.kernels import iter_kernel

RESULTS = Path(__file__).resolve().parent / "results"


def make_data(n, d, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, (n, d))
    f = np.sin(3 * X[:, 0]) + X[:, 1] ** 2 - 0.5 * X[:, 2] * X[:, 3]
    y = f + 0.1 * rng.standard_normal(n)
    labels = (f + 0.3 * rng.standard_normal(n) > np.median(f)).astype(int)
    return X, y, labels


def kernel_for(d):
    return C(1.0) * RBF(np.sqrt(d))


def floor(kernel, X, X_u):
    """The floor: chunked K(X, X_u), Cholesky of K(X_u, X_u), one solve L^-1 K(X_u, X)."""
    K_uu = kernel(X_u)
    K_uu[np.diag_indices_from(K_uu)] += 1e-8 * float(np.mean(np.diag(K_uu)))
    L = cholesky(K_uu, lower=True, check_finite=False)
    V = np.empty((X_u.shape[0], X.shape[0]))
    for rows, K in iter_kernel(kernel, X, X_u):
        V[:, rows] = solve_triangular(L, K.T, lower=True, check_finite=False)
    return V


def timed(fn, repeats):
    """Median wall and CPU seconds of ``repeats`` calls (and the last result)."""
    walls, cpus = [], []
    out = None
    for _ in range(repeats):
        w0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
    return float(np.median(walls)), float(np.median(cpus)), out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200_000)
    parser.add_argument("--d", type=int, default=10)
    parser.add_argument("--p", type=int, default=256)
    parser.add_argument("--n-default", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--tag", default="", help="write results/floor_<tag>.md")
    parser.add_argument(
        "--skip",
        default="",
        help="comma-separated rows to skip: clf, clf_basis, reg, clf_default, reg_default",
    )
    args = parser.parse_args()
    if args.quick:
        args.n, args.p, args.n_default, args.repeats = 20_000, 128, 5_000, 1
    skip = set(filter(None, args.skip.split(",")))
    load_start = os.getloadavg()[0]
    n, d, p = args.n, args.d, args.p
    X, y, labels = make_data(n, d)
    kernel = kernel_for(d)
    rng = np.random.default_rng(1)
    rows = []

    def add(name, wall, cpu, ref, note=""):
        rows.append((name, wall, cpu, wall / ref[0], cpu / ref[1], note))
        print(
            f"{name:58s} wall {wall:8.2f}s  cpu {cpu:8.2f}s  "
            f"x floor {wall / ref[0]:6.2f} (cpu {cpu / ref[1]:6.2f}) {note}",
            flush=True,
        )

    X_u = X[rng.choice(n, p, replace=False)]
    fl = timed(lambda: floor(kernel, X, X_u), args.repeats)[:2]
    add(f"floor K(X, X_u) + L^-1 K_u (n={n}, p={p})", *fl, fl)

    fixed = {
        "kernel": kernel,
        "max_basis": p,
        "selection": "random",
        "optimizer": None,
        "random_state": 0,
    }
    if "reg" not in skip:
        reg = SparseGPRegressor(noise_variance=0.01, **fixed)
        w, c, _ = timed(lambda: reg.fit(X, y), args.repeats)
        add("SparseGPRegressor fit (random, optimizer=None)", w, c, fl)
        w, c, _ = timed(lambda: reg.predict(X, return_std=True), args.repeats)
        add(f"SparseGPRegressor predict(return_std=True), {n} rows", w, c, fl)
    if "clf_basis" not in skip:
        clf = SparseGPClassifier(posterior="basis", **fixed)
        w, c, _ = timed(lambda: clf.fit(X, labels), args.repeats)
        add('SparseGPClassifier fit (random, optimizer=None, posterior="basis")', w, c, fl)
    if "clf" not in skip:
        # the default posterior: EP over every row's likelihood (ADF start, fused sweeps)
        clf = SparseGPClassifier(**fixed)
        w, c, _ = timed(lambda: clf.fit(X, labels), args.repeats)
        add("SparseGPClassifier fit (random, optimizer=None, all-rows EP)", w, c, fl)
        w, c, _ = timed(lambda: clf.predict_proba(X), args.repeats)
        add(f"SparseGPClassifier predict_proba, {n} rows", w, c, fl)

    nd = args.n_default
    Xd, yd, ld = X[:nd], y[:nd], labels[:nd]
    X_ud = Xd[rng.choice(nd, p, replace=False)]
    fld = timed(lambda: floor(kernel, Xd, X_ud), max(args.repeats, 3))[:2]
    add(f"floor (n={nd}, p={p})", *fld, fld)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if "reg_default" not in skip:
            reg = SparseGPRegressor(kernel=kernel, max_basis=p, random_state=0)
            w, c, _ = timed(lambda: reg.fit(Xd, yd), 1)
            add(
                "SparseGPRegressor fit (matching_pursuit + learning)",
                w,
                c,
                fld,
                f"n_iter_={reg.n_iter_}",
            )
        if "clf_default" not in skip:
            clf = SparseGPClassifier(kernel=kernel, max_basis=p, random_state=0)
            w, c, _ = timed(lambda: clf.fit(Xd, ld), 1)
            add(
                "SparseGPClassifier fit (adaptive + learning)",
                w,
                c,
                fld,
                f"n_iter_={getattr(clf, 'n_iter_', '?')}",
            )

    blas = ", ".join(f"{i['internal_api']} {i['num_threads']} threads" for i in threadpool_info())
    header = (
        f"# Floor benchmark\n\nMachine: {platform.node()} ({platform.machine()}, "
        f"{os.cpu_count()} cores, BLAS: {blas}), load average {load_start:.1f} at the start, "
        f"{os.getloadavg()[0]:.1f} at the end (shared machine). Date: "
        f"{datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}.\n\n"
        f"n = {n}, d = {d}, p = {p}; default-selection rows at n = {nd}. Median of "
        f"{args.repeats} repeats (default-selection rows: 1 run). Wall and process CPU time "
        "(all threads); 'x floor' divides by the floor of the same n measured in this run.\n\n"
        "| what | wall (s) | CPU (s) | x floor (wall) | x floor (CPU) | note |\n"
        "|---|---:|---:|---:|---:|---|\n"
    )
    body = "".join(
        f"| {r[0]} | {r[1]:.2f} | {r[2]:.2f} | {r[3]:.2f} | {r[4]:.2f} | {r[5]} |\n" for r in rows
    )
    RESULTS.mkdir(exist_ok=True)
    name = "floor" + (f"_{args.tag}" if args.tag else "") + ("_quick" if args.quick else "")
    out = RESULTS / f"{name}.md"
    out.write_text(header + body)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
