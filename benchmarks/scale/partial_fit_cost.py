"""Adding one observation to a fitted SparseGPRegressor: ``partial_fit`` against refitting.

Issue 36 asks that one new row cost O(p^2) (the Woodbury updates of the ``p x p`` posterior
statistics, :mod:`skgpsparse.regression._streaming_statistics`), and for the microseconds at
``p = 100`` and ``500``. For each ``p``: a model with fixed hyperparameters
(``ConstantKernel * RBF``, ``optimizer=None``) is fitted on ``n`` rows of
``make_friedman1`` (d = 8, standardised) with ``max_basis = p``; then ``--calls`` single
rows are added by ``partial_fit``, each call timed (``perf_counter_ns`` and
``process_time``). Three figures per ``p``:

- the whole ``partial_fit(x, y)`` call (parameter and input validation included), median
  and mean per call;
- the update alone (``StreamingPosterior.add_rows`` on the row's ``V_b``), median per call;
- the periodic exact refresh (every ``32 p`` single rows, O(p^3)), timed once, and the
  amortised cost per row it adds;

and, in the same run, the baselines a user has without ``partial_fit``: our ``fit`` on the
``n + 1`` rows (same fixed hyperparameters and basis size) and scikit-learn's
``GaussianProcessRegressor(optimizer=None).fit`` on them (O(n^3)), medians of 3. One BLAS
thread.

Usage::

    python benchmarks/scale/partial_fit_cost.py            # n = 2000, p = 100 and 500, 300 calls
    python benchmarks/scale/partial_fit_cost.py --quick    # n = 600, p = 50 and 100, no file

Writes ``benchmarks/scale/results/partial_fit_cost.md``.
"""

import argparse
import shlex
import sys
import time
import warnings
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from _common.machine import machine  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"


def data(n, seed=0):
    from sklearn.datasets import make_friedman1

    X, y = make_friedman1(n_samples=n, n_features=8, noise=0.5, random_state=seed)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    return X, (y - y.mean()) / y.std()


def timed(function, repeats=3):
    """Median wall and CPU seconds of ``function()`` over ``repeats`` calls."""
    wall, cpu = [], []
    for _ in range(repeats):
        w, c = time.perf_counter(), time.process_time()
        function()
        wall.append(time.perf_counter() - w)
        cpu.append(time.process_time() - c)
    return float(np.median(wall)), float(np.median(cpu))


def measure(p, n, calls):
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import RBF
    from sklearn.gaussian_process.kernels import ConstantKernel as C

    from skgpsparse import SparseGPRegressor

    kernel = C(1.0) * RBF(np.full(8, 2.0))
    X, y = data(n + calls + 1)
    params = dict(kernel=kernel, noise_variance=0.05, optimizer=None, max_basis=p,
                  random_state=0)
    model = SparseGPRegressor(**params).fit(X[:n], y[:n])
    stream_rows = [(X[i : i + 1], y[i : i + 1]) for i in range(n, n + calls)]
    model.partial_fit(*stream_rows[0])  # the first update makes the statistics
    wall, cpu = np.empty(calls - 1), np.empty(calls - 1)
    for i, (x, t) in enumerate(stream_rows[1:]):
        a, c = time.perf_counter_ns(), time.process_time_ns()
        model.partial_fit(x, t)
        wall[i], cpu[i] = time.perf_counter_ns() - a, time.process_time_ns() - c
    stream = model._stream
    # the update alone, on copies of the statistics (no validation, no kernel call)
    V_b = stream.whiten(model._predictor.cross.block(X[:1]))
    core = []
    for _ in range(200):
        stream.since_refresh = 0  # keep to the Woodbury path
        a = time.perf_counter_ns()
        stream.add_rows(V_b, y[:1], np.ones(1))
        core.append(time.perf_counter_ns() - a)
    refresh_wall, _ = timed(stream.refresh)
    X1, y1 = X[: n + 1], y[: n + 1]
    refit = timed(lambda: SparseGPRegressor(**params).fit(X1, y1))
    gpr = timed(lambda: GaussianProcessRegressor(kernel, alpha=0.05, optimizer=None).fit(X1, y1))
    return dict(
        p=p, n=n, median_us=np.median(wall) / 1e3, mean_us=np.mean(wall) / 1e3,
        cpu_us=np.median(cpu) / 1e3, core_us=np.median(core) / 1e3,
        refresh_ms=refresh_wall * 1e3, amortised_us=refresh_wall * 1e6 / (32 * p),
        refit_s=refit[0], refit_cpu=refit[1], gpr_s=gpr[0], gpr_cpu=gpr[1],
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000, help="rows of the first fit")
    parser.add_argument("--calls", type=int, default=300, help="single rows added")
    parser.add_argument("--bases", type=int, nargs="+", default=[100, 500])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    if args.quick:
        args.n, args.calls, args.bases = 600, 100, [50, 100]
    from threadpoolctl import threadpool_limits

    rows = []
    with threadpool_limits(limits=1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for p in args.bases:
            r = measure(p, args.n, args.calls)
            rows.append(r)
            print(
                f"p={p}: partial_fit one row {r['median_us']:.0f} us median "
                f"({r['mean_us']:.0f} mean, {r['cpu_us']:.0f} CPU), update alone "
                f"{r['core_us']:.0f} us, refresh {r['refresh_ms']:.1f} ms every {32 * p} rows "
                f"(+{r['amortised_us']:.0f} us/row); refit {r['refit_s']:.3f} s, "
                f"sklearn GPR fit {r['gpr_s']:.3f} s", flush=True,
            )
    if args.quick:
        return
    load = Path("/proc/loadavg").read_text().split()[0]
    date = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "# Adding one observation: partial_fit against refitting",
        "",
        f"Machine: {machine()}; {date}; one BLAS thread; load average {load} at the end "
        "(shared machine: wall times are inflated, ratios are within one run).",
        f"`python benchmarks/scale/partial_fit_cost.py{' ' + shlex.join(argv) if argv else ''}`: "
        f"first fit on n = {args.n} rows (friedman1, d = 8, fixed `C * RBF`, "
        f"`optimizer=None`), then {args.calls} single rows by `partial_fit`.",
        "",
        "| p | partial_fit, one row: median (mean) us | CPU us | update alone us | "
        "refresh every 32p rows ms (amortised us/row) | our refit on n+1 rows s | "
        "sklearn GPR fit (optimizer=None) s | refit / partial_fit |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['p']} | {r['median_us']:.0f} ({r['mean_us']:.0f}) | {r['cpu_us']:.0f} | "
            f"{r['core_us']:.0f} | {r['refresh_ms']:.1f} ({r['amortised_us']:.0f}) | "
            f"{r['refit_s']:.3f} | {r['gpr_s']:.3f} | "
            f"{r['refit_s'] * 1e6 / r['mean_us']:.0f}x |"
        )
    (RESULTS / "partial_fit_cost.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main(sys.argv[1:])
