"""Prediction cost: kernel blocks by the kernel's own call against the product form.

``SparseGPRegressor.predict(return_std=True)`` and ``SparseGPClassifier.predict_proba`` form
``K(X*, X_u)`` chunk by chunk. For ``RBF`` / ``c * RBF`` kernels they use the product form
of ``skgpsparse.kernels._columns.CrossKernel`` (one BLAS product of centred, scaled inputs and
one ``exp``), set up at the end of the fit; this script times both estimators with it and, in
the same run, with scikit-learn's kernel call (the fitted models' ``CrossKernel`` objects
switched to it), on ``n`` random
rows, d = 20, p = 500 basis vectors (random selection on 20,000 training rows, fixed
hyperparameters), one BLAS thread, and prints the CPU times (median of the repeats), their
ratio and the largest difference of the outputs.

Usage::

    OPENBLAS_NUM_THREADS=1 python benchmarks/scale/predict_blocks.py       # n = 200,000, 3 repeats
    OPENBLAS_NUM_THREADS=1 python benchmarks/scale/predict_blocks.py --n 1000000 --repeats 1
"""

import argparse
import time
import warnings

import numpy as np
from sklearn.gaussian_process.kernels import RBF
from sklearn.gaussian_process.kernels import ConstantKernel as C
from threadpoolctl import threadpool_limits

from skgpsparse import SparseGPClassifier, SparseGPRegressor


def cross_kernels(model):
    """The kernel set-ups against the basis that a fitted model's predictions use."""
    if isinstance(model, SparseGPRegressor):
        return [model._predictor.cross]
    return [predictor.cross for predictor in model._predictors]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200_000, help="rows to predict")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    d, p = 20, 500
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20_000, d))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=len(X))
    X_new = rng.normal(size=(args.n, d))
    kernel = C(1.0) * RBF(np.sqrt(d))
    fixed = {"max_basis": p, "optimizer": None, "selection": "random", "random_state": 0}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        models = {
            "SparseGPRegressor.predict(return_std=True)": SparseGPRegressor(kernel, **fixed).fit(
                X, y
            ),
            "SparseGPClassifier.predict_proba": SparseGPClassifier(kernel, **fixed).fit(X, y > 0),
        }
    times, outputs = {}, {}
    with threadpool_limits(limits=1):
        for _ in range(args.repeats):
            for blocks in ("kernel call", "product form"):
                for name, model in models.items():
                    for cross in cross_kernels(model):
                        cross.product_form = blocks == "product form"
                    start = time.process_time()
                    if isinstance(model, SparseGPRegressor):
                        out = np.column_stack(model.predict(X_new, return_std=True))
                    else:
                        out = model.predict_proba(X_new)
                    times.setdefault((name, blocks), []).append(time.process_time() - start)
                    outputs[name, blocks] = out
    print(
        f"n = {args.n}, d = {d}, p = {p}, one BLAS thread, CPU seconds (median of {args.repeats})"
    )
    print(f"{'method':<46}{'kernel call':>12}{'product form':>14}{'ratio':>8}{'max |diff|':>12}")
    for name in models:
        old, new = (float(np.median(times[name, b])) for b in ("kernel call", "product form"))
        diff = np.max(np.abs(outputs[name, "kernel call"] - outputs[name, "product form"]))
        print(f"{name:<46}{old:>12.2f}{new:>14.2f}{old / new:>8.2f}{diff:>12.1e}")


if __name__ == "__main__":
    main()
