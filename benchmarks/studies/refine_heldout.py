"""Basis refinement on regression sets the defaults were not chosen on: with it and without.

``SparseGPRegressor(refine_basis=0)`` (the greedy basis on training rows, the alternation of
selection and hyperparameter learning) against ``refine_basis="auto"`` (the default: the
greedy basis moved by L-BFGS on the objective, with the hyperparameters) on PMLB and UCI
regression sets that none of the peer benchmarks uses, with the kernels users write: an ARD
``ConstantKernel(1.0) * RBF(sqrt(d))``, the isotropic ``ConstantKernel(1.0) * RBF(1.0)`` and
``ConstantKernel(1.0) * Matern(1.0, nu=2.5)``. Each set: a random 4,000 training and 4,000
test rows (seed 0), inputs and targets standardised on the training rows (constant columns
dropped), ``max_basis=200``, one thread. Columns: test NMSE, NLPD (with the noise), mean
``z^2`` (1 when calibrated), fit CPU seconds and the refinement's L-BFGS iterations.

Usage::

    python benchmarks/studies/refine_heldout.py
    python benchmarks/studies/refine_heldout.py --sets uci_bike --kernels ard
"""

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common.data import load_dataset  # noqa: E402
from _common.machine import machine  # noqa: E402
from _common.peers import fit_and_score, standardise  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
SETS = ("pmlb_537_houses", "pmlb_574_house_16H", "uci_bike", "uci_protein", "uci_keggdirected")
CONFIGS = {"refine_basis=0": {"refine_basis": 0}, "default (auto)": {}}


def kernels(d):
    from sklearn.gaussian_process.kernels import RBF, Matern
    from sklearn.gaussian_process.kernels import ConstantKernel as C

    return {
        "ard": C(1.0) * RBF(np.full(d, np.sqrt(d))),
        "iso": C(1.0) * RBF(1.0),
        "matern": C(1.0) * Matern(1.0, nu=2.5),
    }


def split(name, n_train=4000, n_test=4000, seed=0):
    d = load_dataset(name)
    X, y = d["X"].astype(float), d["y"].astype(float).ravel()
    idx = np.random.RandomState(seed).permutation(len(y))[: n_train + n_test]
    tr, te = idx[:n_train], idx[n_train:]
    X_train, X_test, y_train, y_test = standardise(X[tr], X[te], y[tr], y[te])
    keep = X_train.std(axis=0) > 0
    return X_train[:, keep], y_train, X_test[:, keep], y_test


def fit(kernel, config, X, y, X_test, y_test):
    from skgpsparse import SparseGPRegressor

    model = SparseGPRegressor(kernel, max_basis=200, random_state=0, **config)
    rec = fit_and_score(model, X, y, X_test, y_test)
    rec.update(cpu=rec.pop("fit_cpu"), n_refine=int(model.n_refine_iter_))
    return rec


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+", default=list(SETS))
    parser.add_argument("--kernels", nargs="+", default=["ard", "iso", "matern"])
    args = parser.parse_args(argv)
    lines = [
        "# Basis refinement on held-out regression sets",
        "",
        f"{machine()}; one thread; CPU = process time. "
        f"`python benchmarks/studies/refine_heldout.py {' '.join(argv or sys.argv[1:])}`",
        "",
        "| data | kernel | model | NMSE | NLPD | mean z^2 | fit CPU s | refine iterations |",
        "|---|---|---|---|---|---|---|---|",
    ]
    print("\n".join(lines), flush=True)
    for name in args.sets:
        X, y, X_test, y_test = split(name)
        for kname in args.kernels:
            for label, config in CONFIGS.items():
                r = fit(kernels(X.shape[1])[kname], config, X, y, X_test, y_test)
                line = (f"| {name} | {kname} | {label} | {r['nmse']:.4f} | {r['nlpd']:.3f} | "
                        f"{r['z2']:.2f} | {r['cpu']:.1f} | {r['n_refine']} |")
                lines.append(line)
                print(line, flush=True)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "refine_heldout.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
