"""The default constructors on a dask array against the same fits in memory (issue 34).

The issue's set-up: 6,000 rows x 5 features in chunks of 1,500 rows on a LocalCluster of 2
worker processes, ``max_basis=40``, ``random_state=0``, everything else default (``max_iter=3``
where learned; the classifier on two classes, and on three by the terciles of the same
function). Prints, per estimator and setting, the largest difference between the two
models' predictions (``predict`` / ``predict_proba``), whether the bases agree, and the wall
and driver CPU time of each fit. ``--learning-rows`` sets it on both fits (below the number
of rows: learning on the subsample, the passes over every row on the workers).

    python benchmarks/scale/dask_default.py [--rows 6000] [--learning-rows 2000]
"""

import argparse
import time
import warnings

import numpy as np


def _timed(fit):
    wall, cpu = time.perf_counter(), time.process_time()
    model = fit()
    return model, time.perf_counter() - wall, time.process_time() - cpu


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=6000)
    parser.add_argument("--chunk", type=int, default=1500)
    parser.add_argument("--learning-rows", default="auto")
    args = parser.parse_args(argv)
    learning_rows = args.learning_rows if args.learning_rows == "auto" else int(args.learning_rows)

    import dask.array as da
    from distributed import Client, LocalCluster

    from skgpsparse import SparseGPClassifier, SparseGPRegressor

    rng = np.random.RandomState(0)
    X = rng.uniform(-2.0, 2.0, (args.rows, 5))
    y = np.sin(X[:, 0]) + 0.5 * np.cos(X[:, 1] * X[:, 2]) + 0.1 * rng.randn(args.rows)
    labels = (y > 0.2).astype(int)
    labels3 = np.digitize(y, np.quantile(y, [1 / 3, 2 / 3]))  # the one-vs-rest default
    Xd = da.from_array(X, chunks=(args.chunk, 5))
    common = {"max_basis": 40, "random_state": 0, "learning_rows": learning_rows}
    cases = [
        ("SparseGPRegressor(optimizer=None)", SparseGPRegressor, {"optimizer": None}, y),
        ("SparseGPRegressor(max_iter=3)", SparseGPRegressor, {"max_iter": 3}, y),
        ("SparseGPClassifier(optimizer=None)", SparseGPClassifier, {"optimizer": None}, labels),
        ("SparseGPClassifier(max_iter=3)", SparseGPClassifier, {"max_iter": 3}, labels),
        ("SparseGPClassifier(max_iter=3), 3 classes", SparseGPClassifier, {"max_iter": 3},
         labels3),
    ]
    print(f"{args.rows} rows x 5, chunks of {args.chunk}, max_basis=40, "
          f"learning_rows={learning_rows!r}, LocalCluster of 2 worker processes")
    print("| estimator | max abs difference | same basis | in-memory s (CPU) | dask s (driver CPU) |")
    print("|---|---|---|---|---|")
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster):
        for name, cls, params, target in cases:
            params = {**common, **params}
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ref, w0, c0 = _timed(lambda: cls(**params).fit(X, target))
                td = da.from_array(target, chunks=args.chunk)
                got, w1, c1 = _timed(lambda: cls(**params).fit(Xd, td))
            if cls is SparseGPRegressor:
                diff = np.abs(got.predict(X) - ref.predict(X)).max()
            else:
                diff = np.abs(got.predict_proba(X) - ref.predict_proba(X)).max()
            same = all(np.array_equal(a, b) for a, b in
                       zip(np.atleast_2d(got.basis_indices_), np.atleast_2d(ref.basis_indices_)))
            print(f"| {name} | {diff:.1e} | {same} | {w0:.1f} ({c0:.1f}) | {w1:.1f} ({c1:.1f}) |")


if __name__ == "__main__":
    main()
