"""Many classes at 10^5 rows: pmlb kddcup (23 classes, 41 features, heavily imbalanced).

A seeded permutation's first ``--n-train`` rows (default 100,000) for training and the next
20,000 for the test, features standardised on the training rows; test rows of a class absent
from the training rows are dropped (a class with 2-3 rows in all may be). Fits: the default
``SparseGPClassifier(random_state=0)`` (the shared fit, its class probabilities combined with the
leave-one-out ``logit_weight_``; the test NLP of the same models normalised, ``t = 0``, beside
it) and ``HistGradientBoostingClassifier(random_state=0, early_stopping=False)`` (its default
early stopping's stratified split refuses classes of one training row). One BLAS thread, CPU as
process time.

Usage: ``python benchmarks/studies/multiclass_kddcup.py [--n-train 100000] [--seed 0]``
"""

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common.data import load_dataset  # noqa: E402


def main(argv=None):
    from sklearn.ensemble import HistGradientBoostingClassifier

    from skgpsparse import SparseGPClassifier

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-train", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--fits", default="default,hgb")
    args = parser.parse_args(argv)
    data = load_dataset("pmlb_kddcup")
    X, y = np.asarray(data["X"], dtype=float), np.asarray(data["y"])
    perm = np.random.default_rng(args.seed).permutation(X.shape[0])
    train, test = perm[:args.n_train], perm[args.n_train:args.n_train + 20_000]
    mean, std = X[train].mean(0), X[train].std(0)
    std = np.where(std > 0, std, 1.0)
    X_train, y_train = (X[train] - mean) / std, y[train]
    seen = np.isin(y[test], np.unique(y_train))
    X_test, y_test = (X[test][seen] - mean) / std, y[test][seen]
    print(f"kddcup: {y_train.size} training rows, {np.unique(y_train).size} classes; "
          f"{y_test.size} test rows ({int((~seen).sum())} of unseen classes dropped)")
    models = {"default": SparseGPClassifier(random_state=0),
              "hgb": HistGradientBoostingClassifier(random_state=0, early_stopping=False)}
    for name in args.fits.split(","):
        model = models[name]
        cpu = time.process_time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(X_train, y_train)
        cpu = time.process_time() - cpu
        index = np.searchsorted(model.classes_, y_test)
        proba = np.clip(model.predict_proba(X_test), 1e-300, None)
        nlp = -np.mean(np.log(proba[np.arange(index.size), index]))
        error = np.mean(model.classes_[np.argmax(proba, 1)] != y_test)
        line = f"{name}: fit CPU {cpu:.1f} s, test NLP {nlp:.4f}, error {error:.5f}"
        if name == "default":
            q = np.column_stack([np.exp(p.log_proba(X_test, 1.0)) for p in model._predictors])
            q = q / q.sum(1, keepdims=True)
            nlp0 = -np.mean(np.log(np.clip(q[np.arange(index.size), index], 1e-300, None)))
            line += (f", logit weight t {model.logit_weight_:.3f} (test NLP at t = 0: "
                     f"{nlp0:.4f}), basis {model.max_basis} per class")
        print(line, flush=True)


if __name__ == "__main__":
    main()
