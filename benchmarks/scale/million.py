"""Fit at scale: the default constructors at 10^4 .. 10^6 rows x 20 features (and fixed mode).

``--mode default`` (the default): ``SparseGPRegressor(random_state=0)`` and
``SparseGPClassifier(random_state=0)`` as a new user calls them, on the issue-35 data: ``X``
standard normal (n x 20), ``f = sin(x0) + x1^2 / 2 - x2 x3 / 2``, regression targets ``f +
0.3 noise`` standardised by the training rows, labels ``f + 0.3 noise > median(f)``; 20,000
test rows from the same law. Records, per size in ``--sizes`` and estimator, the fit wall and
CPU time, the BLAS floor at that size (one chunked ``K(X, X_u)`` block and one triangular
solve with ``p = max_basis`` basis rows, ``floor.py``'s, timed in the same child), their ratio,
the child's peak resident memory and the test metrics (NMSE, NLPD, mean z^2 with the noise
included; NLP and error rate). ``--learning-rows auto,none`` fits both ways (``none``: every
row, as before ``learning_rows``), back to back, to compare learning on a subsample with
learning on every row; ``--data uci_protein`` / ``pmlb_adult`` uses a real set instead
(``--sizes`` training rows drawn at random, the other rows the test set).

``--mode fixed`` is the earlier run: max_basis=500, fixed hyperparameters.
Each estimator runs in its own subprocess (default selection: matching_pursuit for the
regressor, adaptive for the classifier; ``optimizer=None``) so that its peak resident memory
(``resource.getrusage(RUSAGE_CHILDREN).ru_maxrss``) is its own. Records fit and prediction
wall and CPU time and the peak memory next to the O(n p) estimate of the memory formula
(``docs/parallel.rst``): ``8 n (p + kappa + 2 d + 9)`` bytes for the regressor on a float64
``X`` (``8 n (p + kappa + 2 d + 10)`` on a float32 one), and the load average before and
after each run (the machine is shared).

The regressor runs on a float64 ``X`` and on the same ``X`` as float32 (``--dtype``): a
float32 input scores the working sets' candidates with float32 kernel columns, the model stays
float64. ``--threads`` sets the row-block threads of both estimators (their ``n_jobs``).

Goal of the performance issue: fit in under 2 minutes, peak memory under 8 GB, predictions on
1,000,000 rows in seconds.

Usage::

    python benchmarks/scale/million.py --sizes 10000,100000,1000000        # default constructors
    python benchmarks/scale/million.py --only regressor --max-basis auto,100 --tag auto
    python benchmarks/scale/million.py --sizes 100000 --learning-rows auto,none --only regressor
    python benchmarks/scale/million.py --data uci_protein --sizes 40000 --learning-rows auto,none
    python benchmarks/scale/million.py --only classifier --sizes 200000 --polish skip,run
    python benchmarks/scale/million.py --mode fixed                  # fixed hyperparameters, p=500
    python benchmarks/scale/million.py --mode fixed --n 200000 --quick
    python benchmarks/scale/million.py --mode fixed --only regressor --dtype float32 --threads 2

Writes ``benchmarks/scale/results/million_default[_tag].md`` (and ``.json``) in the default mode,
``benchmarks/scale/results/million_run.md`` in the fixed one (``million_keep_run.md`` with
``--keep-working-set``, ``--tag`` adds a suffix); ``benchmarks/scale/results/million.md`` is the
commented record of the runs.
"""

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
import warnings
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
RESULTS = Path(__file__).resolve().parent / "results"


def child(estimator, n, d, p, seed, keep=False, dtype="float64", threads=1):
    """Run one estimator in this process and print a JSON line of timings."""
    sys.path.insert(0, str(ROOT))
    from sklearn.gaussian_process.kernels import RBF
    from sklearn.gaussian_process.kernels import ConstantKernel as C

    from skgpsparse import SparseGPClassifier, SparseGPRegressor
    from skgpsparse.selection import BaseSelector, GreedySelector

    class Progress(BaseSelector):
        """The selector it wraps, printing the fit's CPU time every 50 steps (to stderr)."""

        def __init__(self, inner=None):
            self.inner = inner

        def select(self, state, rng):
            if state.n_basis % 50 == 0:
                print(f"p={state.n_basis} cpu={time.process_time():.1f}", file=sys.stderr)
            return self.inner.select(state, rng)

    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, (n, d))
    f = np.sin(3 * X[:, 0]) + X[:, 1] ** 2 - 0.5 * X[:, 2] * X[:, 3]
    kernel = C(1.0) * RBF(np.sqrt(d))
    X = X.astype(dtype)
    if estimator == "regressor":
        y = f + 0.1 * rng.standard_normal(n)
        # Default selection (what selection="matching_pursuit" builds: a fresh working set
        # of 59 each step), or Keerthi & Chu's kept working set (one new column per step).
        selection = Progress(GreedySelector("matching_pursuit", 59, keep_working_set=keep))
        model = SparseGPRegressor(
            kernel,
            noise_variance=0.01,
            max_basis=p,
            optimizer=None,
            random_state=0,
            selection=selection,
            n_jobs=threads,
        )
    else:
        y = (f + 0.3 * rng.standard_normal(n) > np.median(f)).astype(int)
        model = SparseGPClassifier(
            kernel, max_basis=p, optimizer=None, random_state=0, n_jobs=threads
        )
    out = {"estimator": estimator, "load_before": os.getloadavg()[0]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        w, c = time.perf_counter(), time.process_time()
        model.fit(X, y)
        out["fit_wall"], out["fit_cpu"] = time.perf_counter() - w, time.process_time() - c
        w, c = time.perf_counter(), time.process_time()
        if estimator == "regressor":
            pred = model.predict(X, return_std=True)[0]
            out["quality"] = f"train R^2 {1 - np.mean((pred - y) ** 2) / np.var(y):.4f}"
        else:
            proba = model.predict_proba(X)
            out["quality"] = f"train error {np.mean(proba.argmax(1) != y):.4f}"
        out["predict_wall"] = time.perf_counter() - w
        out["predict_cpu"] = time.process_time() - c
    out["n_basis"] = len(model.basis_vectors_) if hasattr(model, "basis_vectors_") else p
    if hasattr(model, "basis_indices_"):
        # A fingerprint of the basis, to tell whether the float32 fit chose the same one.
        idx = np.asarray(model.basis_indices_, dtype=np.int64)
        out["basis"] = f"{int(idx[:8].sum())}/{int((idx * np.arange(1, len(idx) + 1)).sum())}"
    out["peak_rss_gb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2
    out["load_after"] = os.getloadavg()[0]
    print("RESULT " + json.dumps(out), flush=True)

TEST_ROWS = 20_000


def synthetic(n, d, seed):
    """The issue-35 rows: ``X`` standard normal, ``f = sin(x0) + x1^2/2 - x2 x3/2``;
    returns ``X``, the noisy targets ``f + 0.3 e`` and the labels ``f + 0.3 e' > median(f)``."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    f = np.sin(X[:, 0]) + 0.5 * X[:, 1] ** 2 - 0.5 * X[:, 2] * X[:, 3]
    y = f + 0.3 * rng.standard_normal(n)
    labels = (f + 0.3 * rng.standard_normal(n) > 0.5).astype(int)  # 0.5: about median(f)
    return X, y, labels


def default_split(estimator, data, n, d, seed=0):
    """``X, y, X_test, y_test``: ``n`` training rows (standardised) and the test rows."""
    from _common.peers import standardise

    if data == "synthetic":
        X, y, labels = synthetic(n + TEST_ROWS, d, seed)
        t = labels if estimator == "classifier" else y
        X, X_t, t, t_t = X[:n], X[n:], t[:n], t[n:]
    else:
        from _common.data import load_dataset

        z = load_dataset(data)
        rng = np.random.default_rng(seed)
        order = rng.permutation(len(z["y"]))
        X_all, t_all = np.asarray(z["X"], float), np.asarray(z["y"])
        X, X_t = X_all[order[:n]], X_all[order[n:]]
        t, t_t = t_all[order[:n]], t_all[order[n:]]
    if estimator == "classifier":
        X, X_t = standardise(X, X_t)
        return X, t.astype(int), X_t, t_t.astype(int)
    X, X_t, t, t_t = standardise(X, X_t, t.astype(float), t_t.astype(float))
    return X, t, X_t, t_t


def child_default(estimator, data, n, d, learning_rows, seed=0, polish="skip",
                  max_basis="default"):
    """One default-constructor fit (``learning_rows`` "auto" or "none"); prints a JSON line.

    ``max_basis``: "default" keeps the constructor's; "auto" or an int (as a string) is
    passed, the rest default (``--max-basis auto,100`` puts the two side by side).

    ``polish="run"``: the classifier's subsample learning ends with the final L-BFGS-B run
    to convergence as it did before (the package skips it there), for a back-to-back
    comparison.
    """
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from _common.peers import classification_metrics, regression_metrics
    from floor import floor, kernel_for

    from skgpsparse import SparseGPClassifier, SparseGPRegressor

    if polish == "run":
        from skgpsparse.latent.learning import _ep_rounds

        rounds = _ep_rounds._learn_rounds
        _ep_rounds._learn_rounds = lambda model, X, y, rng, subsample=False: rounds(
            model, X, y, rng
        )

    X, y, X_t, y_t = default_split(estimator, data, n, d, seed)
    lr = None if learning_rows == "none" else learning_rows
    size = {} if max_basis == "default" else {
        "max_basis": max_basis if max_basis == "auto" else int(max_basis)}
    if estimator == "regressor":
        model = SparseGPRegressor(random_state=0, learning_rows=lr, **size)
    else:
        model = SparseGPClassifier(random_state=0, learning_rows=lr, **size)
    out = {"estimator": estimator, "data": data, "n": n, "d": X.shape[1],
           "learning_rows": learning_rows, "polish": polish, "max_basis": max_basis,
           "load_before": os.getloadavg()[0]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        w, c = time.perf_counter(), time.process_time()
        model.fit(X, y)
        out["fit_wall"], out["fit_cpu"] = time.perf_counter() - w, time.process_time() - c
        if estimator == "regressor":
            mean, std = model.predict(X_t, return_std=True)
            out.update(regression_metrics(y_t, mean, std**2 + model.noise_variance_))
        else:
            out.update(classification_metrics(y_t, model.predict_proba(X_t)[:, 1]))
    out["kernel"] = str(model.kernel_)
    out["n_basis"] = int(np.max(model.n_basis_))
    # the BLAS floor at this n: one K(X, X_u) block and one triangular solve, p = max_basis
    X_u = X[np.random.default_rng(1).choice(n, size=min(n, 100), replace=False)]
    w, c = time.perf_counter(), time.process_time()
    floor(kernel_for(X.shape[1]), X, X_u)
    out["floor_wall"], out["floor_cpu"] = time.perf_counter() - w, time.process_time() - c
    out["peak_rss_gb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2
    out["load_after"] = os.getloadavg()[0]
    print("RESULT " + json.dumps(out), flush=True)


def main_default(args):
    """The default-constructor runs: each size, estimator and learning_rows in a child."""
    rows = []
    sizes = [int(v) for v in args.sizes.split(",")]
    estimators = [args.only] if args.only else ["regressor", "classifier"]
    for n in sizes:
        for est in estimators:
            for lr, polish, size in [(lr, po, mb) for lr in args.learning_rows.split(",")
                                     for po in args.polish.split(",")
                                     for mb in args.max_basis.split(",")]:
                cmd = [sys.executable, __file__, "--mode", "default", "--child", est,
                       "--n", str(n), "--d", str(args.d), "--data", args.data,
                       "--learning-rows", lr, "--polish", polish, "--max-basis", size]
                try:
                    proc = subprocess.run(cmd, capture_output=True, text=True,
                                          timeout=args.timeout, check=False)
                    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
                    if line:
                        r = json.loads(line[0][7:])
                    else:
                        print(proc.stdout[-2000:], proc.stderr[-2000:])
                        r = {"estimator": est, "n": n, "learning_rows": lr, "failed": True}
                except subprocess.TimeoutExpired:
                    r = {"estimator": est, "n": n, "learning_rows": lr,
                         "failed": f"timed out after {args.timeout:.0f} s"}
                rows.append(r)
                print(r, flush=True)

    def f(r, key, fmt=".3f"):
        return format(r[key], fmt) if key in r else "-"

    header = (
        f"# Default constructors at scale ({args.data})\n\nMachine: {platform.node()} "
        f"({os.cpu_count()} cores, shared), date "
        f"{datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}, BLAS threads "
        f"{os.environ.get('OPENBLAS_NUM_THREADS', 'default')}. Each fit in its own process; "
        "floor = one chunked K(X, X_u) and one triangular solve at p = 100 in that process; "
        "peak = the child's maximum resident set size.\n\n"
        "| estimator | n | learning_rows | max_basis (basis) | fit wall (s) | fit CPU (s) | "
        "floor wall (s) | x floor (wall / CPU) | peak (GB) | NMSE / NLP | NLPD / error | z^2 | "
        "load |\n"
        "|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n"
    )
    body = ""
    for r in rows:
        reg = r["estimator"] == "regressor"
        ratio = (f"{r['fit_wall'] / r['floor_wall']:.1f} / {r['fit_cpu'] / r['floor_cpu']:.1f}"
                 if "floor_wall" in r else "-")
        body += (
            f"| {r['estimator']} | {r['n']} | {r['learning_rows']}"
            f"{' (polish run)' if r.get('polish') == 'run' else ''} | "
            f"{r.get('max_basis', 'default')} ({r.get('n_basis', '-')}) | "
            f"{f(r, 'fit_wall', '.1f')} | "
            f"{f(r, 'fit_cpu', '.1f')} | {f(r, 'floor_wall', '.2f')} | {ratio} | "
            f"{f(r, 'peak_rss_gb', '.2f')} | {f(r, 'nmse' if reg else 'nlp', '.4f')} | "
            f"{f(r, 'nlpd' if reg else 'error', '.4f')} | {f(r, 'z2', '.3f') if reg else '-'} | "
            f"{f(r, 'load_before', '.1f')} / {f(r, 'load_after', '.1f')} |\n"
        )
    RESULTS.mkdir(exist_ok=True)
    name = "million_default" + (f"_{args.tag}" if args.tag else "")
    (RESULTS / f"{name}.md").write_text(header + body)
    (RESULTS / f"{name}.json").write_text(json.dumps(rows, indent=1))
    print(f"wrote {RESULTS / name}.md")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--d", type=int, default=20)
    parser.add_argument("--p", type=int, default=500)
    parser.add_argument("--only", choices=["regressor", "classifier"])
    parser.add_argument("--quick", action="store_true", help="n = 100,000")
    parser.add_argument(
        "--keep-working-set",
        action="store_true",
        help="regressor: matching_pursuit with Keerthi & Chu's kept working set",
    )
    parser.add_argument(
        "--dtype",
        default="float64,float32",
        help="comma-separated dtypes of X for the regressor (the classifier runs float64)",
    )
    parser.add_argument("--threads", type=int, default=1, help="row-block threads (n_jobs)")
    parser.add_argument("--tag", default="", help="suffix of the results file")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--timeout", type=float, default=1500.0)
    parser.add_argument("--mode", choices=["default", "fixed"], default="default")
    parser.add_argument("--sizes", default="10000,100000", help="default mode: training rows")
    parser.add_argument("--learning-rows", default="auto",
                        help="default mode: comma-separated learning_rows ('none': every row)")
    parser.add_argument("--polish", default="skip",
                        help="default mode, classifier: 'skip' (the package's), 'run' (the "
                        "final L-BFGS-B run on the subsample, as before) or 'skip,run'")
    parser.add_argument("--data", default="synthetic",
                        help="default mode: synthetic, uci_protein or pmlb_adult")
    parser.add_argument("--max-basis", default="default",
                        help="default mode: comma-separated max_basis ('default': the "
                        "constructor's; 'auto' or an int), e.g. 'auto,100'")
    args = parser.parse_args()
    if args.mode == "default":
        if args.child:
            child_default(args.child, args.data, args.n, args.d, args.learning_rows,
                          polish=args.polish, max_basis=args.max_basis)
        else:
            main_default(args)
        return
    if args.quick:
        args.n = 100_000
    if args.child:
        dtype = args.dtype.split(",")[0]
        child(args.child, args.n, args.d, args.p, 0, args.keep_working_set, dtype, args.threads)
        return
    rows = []
    runs = []
    for est in [args.only] if args.only else ["regressor", "classifier"]:
        for dtype in args.dtype.split(",") if est == "regressor" else ["float64"]:
            runs.append((est, dtype))
    for est, dtype in runs:
        cmd = [
            sys.executable,
            __file__,
            "--child",
            est,
            "--n",
            str(args.n),
            "--d",
            str(args.d),
            "--p",
            str(args.p),
            "--dtype",
            dtype,
            "--threads",
            str(args.threads),
        ] + (["--keep-working-set"] if args.keep_working_set else [])
        try:
            proc = subprocess.run(
                cmd, capture_output=True, text=True, timeout=args.timeout, check=False
            )
            line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
            if not line:
                print(proc.stdout[-2000:], proc.stderr[-2000:])
                r = {"estimator": est, "quality": "failed"}
            else:
                r = json.loads(line[0][7:])
        except subprocess.TimeoutExpired as exc:
            err = exc.stderr or ""
            err = err.decode(errors="replace") if isinstance(err, bytes) else err
            progress = err.strip().splitlines()[-1:]
            r = {
                "estimator": est,
                "quality": f"timed out after {args.timeout:.0f} s {' '.join(progress)}",
            }
        r["dtype"] = dtype
        if est == "regressor":
            # K_p^T, X and its augmented scaled copy (d + 2), ~7 vectors of length n, and
            # the column cache of a kept working set; a float32 X (4 n d) adds the float32
            # copy of the scaled inputs (4 n (d + 2)): 8 n more bytes.
            kappa = 59 if args.keep_working_set else 0
            extra = 1 if dtype == "float32" else 0
            r["estimate_gb"] = 8 * args.n * (args.p + kappa + 2 * args.d + 9 + extra) / 1024**3
            if args.keep_working_set:
                r["estimator"] = "regressor (kept working set)"
        else:
            # M, X and its augmented scaled copy (d + 2), the kept posterior columns of the
            # working set (kappa = 2) and ~8 vectors of length n
            r["estimate_gb"] = 8 * args.n * (args.p + 2 * args.d + 12) / 1024**3
        rows.append(r)
        print(r, flush=True)

    def fmt(r, key):
        return f"{r[key]:.1f}" if key in r else "-"

    header = (
        f"# One million rows\n\nMachine: {platform.node()} ({platform.machine()}, "
        f"{os.cpu_count()} cores), load average {os.getloadavg()[0]:.1f} (shared machine). "
        f"Date: {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}. "
        f"Row-chunk threads: {args.threads}; BLAS threads: "
        f"{os.environ.get('OPENBLAS_NUM_THREADS', 'default')}.\n\n"
        f"n = {args.n}, d = {args.d}, max_basis = {args.p}, fixed hyperparameters "
        "(optimizer=None), default selection; one run each, in its own process. Peak memory is "
        "the child's maximum resident set size; 'estimate' is the memory formula "
        "8 n (p + kappa + 2 d + 9) bytes for the regressor on a float64 X, one 8 n more on a "
        "float32 X (kappa = 59 with a kept working set, else 0), 8 n (p + kappa + 2 d + 10) "
        "for the classifier (kappa = 2).\n\n"
        "| estimator | X | fit wall (s) | fit CPU (s) | predict wall (s) | predict CPU (s) | "
        "peak memory (GB) | estimate (GB) | load before / after | result |\n"
        "|---|---|---:|---:|---:|---:|---:|---:|---|---|\n"
    )
    body = "".join(
        f"| {r['estimator']} | {r['dtype']} | {fmt(r, 'fit_wall')} | {fmt(r, 'fit_cpu')} | "
        f"{fmt(r, 'predict_wall')} | {fmt(r, 'predict_cpu')} | {fmt(r, 'peak_rss_gb')} | "
        f"{r['estimate_gb']:.2f} | {fmt(r, 'load_before')} / {fmt(r, 'load_after')} | "
        f"{r.get('quality', '')}{', basis ' + r['basis'] if 'basis' in r else ''} |\n"
        for r in rows
    )
    RESULTS.mkdir(exist_ok=True)
    suffix = ("_keep" if args.keep_working_set else "") + (f"_{args.tag}" if args.tag else "")
    out = RESULTS / (
        f"million{suffix}_run.md" if args.n == 1_000_000 else f"million_n{args.n}{suffix}.md"
    )
    out.write_text(header + body)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
