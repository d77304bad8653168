"""A fit with ``max_basis >= n``: the full-basis path against the selection path it replaces.

With every row in the basis ``SparseGPRegressor.fit`` skips the selection and learns on the
exact GP likelihood (``skgpsparse/regression/_full_basis.py``). This script fits the same
problems both ways, back to back in one process (the selection path by replacing
``_alternation.full_basis_fit`` with a function that declines, as the fit does for a numerically
redundant row), and reports the median CPU time of each (``time.process_time``), their ratio,
and how far the two models are apart (hyperparameters, objective, predictions).

Problems: the Bayesian-optimisation model of ``bayes_opt.py`` (``C * Matern(2.5, ARD)``,
noise fixed at 1e-6, ``normalize_y``, ``max_iter=1``) on ``n`` uniform points of Hartmann-6,
fitted cold and warm-started after 20 more points (the loop's re-learning step); and the
default constructor with ``C * RBF(ARD)`` on a noisy 3-feature function.

Usage::

    python benchmarks/studies/full_basis_fit.py             # n = 100 and 200, 3 repeats
"""

import argparse
import sys
import time
import warnings
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "peers"))  # bayes_opt.py

from _common.machine import machine  # noqa: E402
from bayes_opt import hartmann6  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"


def problems(n):
    from sklearn.gaussian_process.kernels import RBF, Matern
    from sklearn.gaussian_process.kernels import ConstantKernel as C

    rng = np.random.RandomState(0)
    X6 = rng.rand(n, 6)
    X3 = rng.uniform(-3, 3, (n, 3))
    y3 = np.sin(X3[:, 0]) + 0.3 * X3[:, 1] ** 2 + 0.1 * rng.randn(n)
    bo = dict(
        kernel=C(1.0, (1e-3, 1e3)) * Matern(np.full(6, 0.3), (1e-2, 1e2), nu=2.5),
        noise_variance=1e-6, noise_variance_bounds="fixed", max_basis=512,
        normalize_y=True, max_iter=1, refine_basis=0, noise_calibration=None,
    )
    default = dict(kernel=C(1.0) * RBF(np.ones(3)), max_basis=512)
    return [
        ("Bayesian optimisation, Hartmann-6", bo, X6, hartmann6(X6), rng.rand(500, 6)),
        ("default constructor, C * RBF(ARD)", default, X3, y3, rng.uniform(-3, 3, (500, 3))),
    ]


def fit(params, X, y, warm, selection):
    from skgpsparse import SparseGPRegressor
    from skgpsparse.regression import _alternation

    original = _alternation.full_basis_fit
    if selection:
        _alternation.full_basis_fit = lambda *args: None
    try:
        model = SparseGPRegressor(random_state=0, warm_start=warm, **params)
        if warm:  # the loop's step: a fit on 20 fewer rows, then the warm-started one
            model.fit(X[:-20], y[:-20])
        tic = time.process_time()
        model.fit(X, y)
        return model, time.process_time() - tic
    finally:
        _alternation.full_basis_fit = original


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[100, 200])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    from threadpoolctl import threadpool_limits

    rows = []
    with threadpool_limits(limits=1), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # max_basis above n, bounds reached
        for n in args.n:
            for name, params, X, y, X_test in problems(n):
                for warm in (False, True):
                    times, models = {False: [], True: []}, {}
                    for _ in range(args.repeats):
                        for selection in (True, False):  # back to back
                            model, seconds = fit(params, X, y, warm, selection)
                            times[selection].append(seconds)
                            models[selection] = model
                    new, old = models[False], models[True]
                    mean_new, std_new = new.predict(X_test, return_std=True)
                    mean_old, std_old = old.predict(X_test, return_std=True)
                    t_old, t_new = np.median(times[True]), np.median(times[False])
                    rows.append(
                        f"| {name} | {n} | {'warm start' if warm else 'cold'} | "
                        f"{t_old:.3f} | {t_new:.3f} | {t_old / t_new:.1f}x | "
                        f"{np.max(np.abs(new.kernel_.theta - old.kernel_.theta)):.1e} | "
                        f"{new.log_marginal_likelihood_value_ - old.log_marginal_likelihood_value_:+.1e} | "
                        f"{np.max(np.abs(mean_new - mean_old)) / np.std(y):.1e} / "
                        f"{np.max(np.abs(std_new - std_old)) / np.std(y):.1e} |"
                    )
                    print(rows[-1], flush=True)
    header = [
        "| problem | n | fit | selection path CPU s | full-basis path CPU s | speed-up | "
        "max abs diff of theta | objective, new - old | max abs diff of mean / std "
        "(in std(y)) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    load = Path("/proc/loadavg").read_text().split()[0]
    text = "\n".join([
        "# A fit with max_basis >= n: every row in the basis without the selection",
        "",
        f"Machine: {machine()}; {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; one BLAS thread; load "
        f"average {load} at the end (shared machine: CPU times, medians of {args.repeats}, "
        "the two paths back to back).",
        f"`python benchmarks/studies/full_basis_fit.py{' ' + ' '.join(argv) if argv else ''}`",
        "",
        *header,
        *rows,
    ]) + "\n"
    print(text)
    (RESULTS / "full_basis_fit.md").write_text(text)


if __name__ == "__main__":
    main(sys.argv[1:])
