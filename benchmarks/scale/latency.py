"""Single-row prediction latency of both sparse GP estimators against scikit-learn's linear models.

Production callers score one row at a time, where the per-call overhead (validation, kernel
set-up, small array operations) rather than the O(p d + p^2) arithmetic sets the time. This
script fits, on the same standardised d = 20 data (2,000 training rows):

- ``SparseGPClassifier(max_basis=200)`` and ``LogisticRegression()`` on
  ``make_classification`` (binary), and
- ``SparseGPRegressor(max_basis=200)`` and ``Ridge()`` on ``make_friedman1(n_features=20)``,

then times single-row calls (a ``(1, 20)`` float64 array, a fresh test row each call) with one
BLAS thread: ``predict_proba``, ``decision_function`` and ``predict`` of the classifier against
the same methods of ``LogisticRegression`` (and ``predict_proba`` once more with both models
fitted on a ``DataFrame`` with column names and called with one-row DataFrames), and
``predict`` (mean, and with ``return_std``) of the regressor against ``Ridge.predict``. Each
timed call is one ``perf_counter_ns`` interval; the sparse model and the baseline take turns
by blocks of 50 calls on the same rows, so both see the same machine load. After
``--warmup`` calls of each, ``--calls`` calls per method and repeat; the table gives the
median and 90th percentile per call (microseconds) and the ratio of the medians, for each of
``--repeats`` repeats and their median.

The goal of issue 21: single-row ``SparseGPClassifier.predict_proba`` at most 1.5x
``LogisticRegression.predict_proba``.

Usage::

    python benchmarks/scale/latency.py                 # 2,000 calls x 3 repeats
    python benchmarks/scale/latency.py --quick         # 300 calls x 1 repeat, no file written
    python benchmarks/scale/latency.py --output latency_baseline.md

Writes ``benchmarks/scale/results/latency.md`` (or ``--output`` in that folder).
"""

import argparse
import gc
import shlex
import sys
import time
import warnings
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from _common.machine import machine

RESULTS = Path(__file__).resolve().parent / "results"
N_TRAIN, N_FEATURES, MAX_BASIS = 2000, 20, 200


def data(seed):
    """Standardised training rows and 1,000 test rows of both problems (d = 20)."""
    from sklearn.datasets import make_classification, make_friedman1
    from sklearn.preprocessing import StandardScaler

    n = N_TRAIN + 1000
    Xc, yc = make_classification(
        n_samples=n, n_features=N_FEATURES, n_informative=10, random_state=seed
    )
    Xr, yr = make_friedman1(n_samples=n, n_features=N_FEATURES, noise=0.5, random_state=seed)
    out = {}
    for name, X, y in (("classification", Xc, yc), ("regression", Xr, yr)):
        scaler = StandardScaler().fit(X[:N_TRAIN])
        X = scaler.transform(X)
        out[name] = (X[:N_TRAIN], y[:N_TRAIN], X[N_TRAIN:])
    return out


def fit_models(seed):
    """The fitted pairs (sparse model, baseline) and the test rows of each problem."""
    from sklearn.linear_model import LogisticRegression, Ridge

    from skgpsparse import SparseGPClassifier, SparseGPRegressor

    problems = data(seed)
    X, y, X_test = problems["classification"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a hyperparameter at its bound is fine here
        clf = SparseGPClassifier(max_basis=MAX_BASIS, random_state=seed).fit(X, y)
    lr = LogisticRegression().fit(X, y)
    Xr, yr, Xr_test = problems["regression"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reg = SparseGPRegressor(max_basis=MAX_BASIS, random_state=seed).fit(Xr, yr)
    ridge = Ridge().fit(Xr, yr)
    # The same classifier pair fitted on a DataFrame with column names and called with
    # one-row DataFrames: scikit-learn's validation on both sides.
    names = [f"x{j}" for j in range(N_FEATURES)]
    frame = pd.DataFrame(X, columns=names)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf_df = SparseGPClassifier(max_basis=MAX_BASIS, random_state=seed).fit(frame, y)
    lr_df = LogisticRegression().fit(frame, y)
    X_test_df = pd.DataFrame(X_test, columns=names)
    return [
        ("SparseGPClassifier.predict_proba", clf.predict_proba, "LogisticRegression.predict_proba",
         lr.predict_proba, X_test),
        ("SparseGPClassifier.decision_function", clf.decision_function,
         "LogisticRegression.decision_function", lr.decision_function, X_test),
        ("SparseGPClassifier.predict", clf.predict, "LogisticRegression.predict", lr.predict,
         X_test),
        ("SparseGPClassifier.predict_proba, DataFrame row", clf_df.predict_proba,
         "LogisticRegression.predict_proba, DataFrame row", lr_df.predict_proba, X_test_df),
        ("SparseGPRegressor.predict", reg.predict, "Ridge.predict", ridge.predict, Xr_test),
        ("SparseGPRegressor.predict(return_std=True)",
         lambda X: reg.predict(X, return_std=True), "Ridge.predict", ridge.predict, Xr_test),
    ]


def time_pair(ours, baseline, rows, calls, warmup, block=50):
    """Per-call microseconds of ``ours(row)`` and ``baseline(row)`` on the same rows.

    The two sides take turns by blocks of ``block`` calls on the same rows: within a block one
    model is called repeatedly, as a production caller does (calling the two models row by row
    instead lets each warm the other's caches, shared validation code included), while the
    turns keep a drift of the machine's load from favouring either side.
    """
    perf = time.perf_counter_ns
    for i in range(warmup):
        row = rows[i % len(rows)]
        ours(row)
        baseline(row)
    t_ours, t_base = np.empty(calls), np.empty(calls)
    gc.disable()  # a collection inside one timed call would land on one side only
    try:
        for start in range(0, calls, block):
            for times, function in ((t_ours, ours), (t_base, baseline)):
                for i in range(start, min(start + block, calls)):
                    row = rows[i % len(rows)]
                    a = perf()
                    function(row)
                    times[i] = perf() - a
    finally:
        gc.enable()
    return t_ours / 1e3, t_base / 1e3


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000, help="timed calls per repeat")
    parser.add_argument("--warmup", type=int, default=200, help="untimed calls first")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="300 calls, 1 repeat, no file")
    parser.add_argument("--output", default="latency.md", help="file name in results/")
    parser.add_argument("--note", default="", help="a line about the code measured")
    args = parser.parse_args(argv)
    if args.quick:
        args.calls, args.repeats = 300, 1

    import sklearn
    from threadpoolctl import threadpool_limits

    tic = time.perf_counter()
    with threadpool_limits(limits=1):
        pairs = fit_models(args.seed)
        print(f"fitted in {time.perf_counter() - tic:.1f} s", flush=True)
        rows_of = {}
        results = []
        for name, ours, base_name, baseline, X_test in pairs:
            if isinstance(X_test, pd.DataFrame):
                rows = [X_test.iloc[i : i + 1] for i in range(len(X_test))]
            else:
                rows = rows_of.setdefault(id(X_test), [X_test[i : i + 1] for i in range(len(X_test))])
            runs = []
            for _ in range(args.repeats):
                a, b = time_pair(ours, baseline, rows, args.calls, args.warmup)
                runs.append(
                    (np.median(a), np.percentile(a, 90), np.median(b), np.percentile(b, 90))
                )
            results.append((name, base_name, runs))
            ratios = [r[0] / r[2] for r in runs]
            print(
                f"{name:<50} {np.median([r[0] for r in runs]):7.1f} us   "
                f"{base_name:<48} {np.median([r[2] for r in runs]):6.1f} us   "
                f"ratio {', '.join(f'{q:.2f}' for q in ratios)} (median {np.median(ratios):.2f})",
                flush=True,
            )

    date = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    load = Path("/proc/loadavg").read_text().split()[0] if Path("/proc/loadavg").exists() else "?"
    lines = [
        "# Single-row prediction latency",
        "",
        (
            f"Machine: {machine()}; scikit-learn {sklearn.__version__}, numpy {np.__version__}; "
            f"{date}; one BLAS thread; load average {load} at the end."
        ),
        (
            f"`python benchmarks/scale/latency.py{' ' + shlex.join(argv) if argv else ''}`: d = "
            f"{N_FEATURES}, {N_TRAIN} standardised training rows, max_basis = {MAX_BASIS}; one "
            f"(1, {N_FEATURES}) row per call, {args.calls} timed calls per repeat after "
            f"{args.warmup} warm-up calls, the two sides taking turns by blocks of 50 calls; "
            "microseconds per call (median / 90th percentile) and the ratio of the medians."
        ),
    ]
    if args.note:
        lines.append(args.note)
    lines += [
        "",
        ("| method | baseline | repeat | ours median | ours p90 | baseline median | "
        "baseline p90 | ratio |"),
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, base_name, runs in results:
        for r, (om, o90, bm, b90) in enumerate(runs, 1):
            lines.append(
                f"| `{name}` | `{base_name}` | {r} | {om:.1f} | {o90:.1f} | {bm:.1f} | "
                f"{b90:.1f} | {om / bm:.2f} |"
            )
        ratios = [run[0] / run[2] for run in runs]
        lines.append(
            f"| `{name}` | `{base_name}` | median | {np.median([run[0] for run in runs]):.1f} | | "
            f"{np.median([run[2] for run in runs]):.1f} | | **{np.median(ratios):.2f}** |"
        )
    text = "\n".join(lines) + "\n"
    print()
    print(text)
    if not args.quick:
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / args.output).write_text(text)
        print(f"wrote {RESULTS / args.output}")


if __name__ == "__main__":
    main(sys.argv[1:])
