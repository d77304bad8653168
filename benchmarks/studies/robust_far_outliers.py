"""The Student-t regressor against far outliers: 5 % of the targets displaced by far more
than the rest spread.

A one-dimensional law (``f = sin(2 x)``, ``x`` uniform on [-3, 3], noise 0.1, 500 rows),
5 % of the targets shifted up by ``shift * (1 + u)``, ``u`` uniform on [0, 1], for shifts
from 30 to 10^5 (the clean targets spread about 0.7): ``SparseGPRegressor(likelihood=
"student_t", max_basis=50, random_state=0)`` on each, its RMSE against ``f`` on 200 test
points and its learned kernel and scale. One line per fit; ``--out`` writes the table.

Usage::

    python benchmarks/studies/robust_far_outliers.py --seeds 0 1
"""

import argparse
import time
import warnings
from pathlib import Path

import numpy as np

from skgpsparse import SparseGPRegressor

SHIFTS = (30.0, 100.0, 300.0, 1e3, 1e4, 1e5)


def fit(seed, shift):
    rng = np.random.RandomState(seed)
    X = rng.uniform(-3, 3, (500, 1))
    f = np.sin(2 * X[:, 0])
    y = f + 0.1 * rng.randn(500)
    far, u = rng.rand(500) < 0.05, rng.rand(500)
    y[far] += shift * (1 + u[far])
    X_test = np.linspace(-3, 3, 200)[:, None]
    start = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = SparseGPRegressor(likelihood="student_t", max_basis=50, random_state=0).fit(X, y)
    cpu = time.process_time() - start
    rmse = float(np.sqrt(np.mean((model.predict(X_test) - np.sin(2 * X_test[:, 0])) ** 2)))
    return (f"| {seed} | {shift:g} | {rmse:.4f} | {model.likelihood_.scale:.4f} | "
            f"{model.kernel_} | {cpu:.1f} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1])
    parser.add_argument("--out", type=Path, help="markdown file for the table")
    args = parser.parse_args()
    lines = ["| seed | shift | RMSE to f | scale | kernel | CPU (s) |",
             "|---|---|---|---|---|---|"]
    print("\n".join(lines), flush=True)
    for seed in args.seeds:
        for shift in SHIFTS:
            lines.append(fit(seed, shift))
            print(lines[-1], flush=True)
    if args.out:
        args.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
