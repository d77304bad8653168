"""Compare the numerical outputs of a fixed set of fits between two commits, bit for bit.

A change that only moves code (a restructure, a rename) must leave every fitted model as it
was. This script fits the same small problems with both sparse GP estimators and both
relevance vector machines, under several selections, objectives and exchange settings, and
compares every fitted array and every prediction against the same fits run on a reference
commit (checked out into a temporary ``git worktree`` and imported from there in a
subprocess).

Usage (from the repository root)::

    python tools/compare_outputs.py --ref 6697d48          # HEAD's tree against 6697d48
    python tools/compare_outputs.py --ref 6697d48 --rtol 0 # bit for bit (the default)

It imports only the public names (``from skgpsparse import ...``), so it runs on any layout.
Exit status 0 when every output agrees within ``--rtol`` (default 0: identical), 1 otherwise.
"""

import argparse
import pickle
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]


def _problems():
    """The fixed data: a binary and a three-class problem, and a 1-D and an ARD regression."""
    from sklearn.datasets import make_blobs, make_moons

    X_bin, y_bin = make_moons(n_samples=240, noise=0.25, random_state=0)
    X_mc, y_mc = make_blobs(n_samples=180, centers=3, cluster_std=2.0, random_state=1)
    rng = np.random.default_rng(2)
    X_reg = rng.uniform(-3, 3, size=(300, 3))
    y_reg = np.sin(X_reg[:, 0]) + 0.3 * X_reg[:, 1] ** 2 + 0.1 * rng.normal(size=300)
    X_test = rng.uniform(-3, 3, size=(60, 3))
    return X_bin, y_bin, X_mc, y_mc, X_reg, y_reg, X_test


def _fits():
    """Yield ``(name, estimator, X, y, X_test)`` for every fit compared."""
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel, Matern

    from skgpsparse import (
        GreedySelector,
        RelevanceVectorClassifier,
        RelevanceVectorRegressor,
        SparseGPClassifier,
        SparseGPRegressor,
    )

    X_bin, y_bin, X_mc, y_mc, X_reg, y_reg, X_test = _problems()
    # The classifier's posterior: the fits below are the basis posterior's (the default
    # before posterior="all_rows"); the all-rows EP's fits follow where the package has it.
    has_posterior = "posterior" in SparseGPClassifier().get_params()

    def basis_clf(*args, **kwargs):
        if has_posterior:
            kwargs.setdefault("posterior", "basis")
        return SparseGPClassifier(*args, **kwargs)

    Xt2 = X_test[:, :2]
    for selection in ("random", "entropy", "info_gain", "nlp", "adaptive"):
        clf = basis_clf(max_basis=25, selection=selection, max_iter=3, random_state=0)
        yield f"clf-{selection}", clf, X_bin, y_bin, Xt2
    yield "clf-evidence", basis_clf(
        max_basis=25, hyperparameter_objective="evidence", max_iter=3, random_state=0
    ), X_bin, y_bin, Xt2
    yield "clf-optimize-sites", basis_clf(
        max_basis=20, selection="nlp", site_update="optimize", max_iter=2, random_state=0
    ), X_bin, y_bin, Xt2
    yield "clf-exchange", basis_clf(
        max_basis=20, n_exchange=5, max_iter=2, random_state=0
    ), X_bin, y_bin, Xt2
    yield "clf-restarts", basis_clf(
        max_basis=20, n_restarts=2, max_iter=2, random_state=0
    ), X_bin, y_bin, Xt2
    yield "clf-user-kernel", basis_clf(
        ConstantKernel(1.0) * RBF(1.0), max_basis=25, max_iter=3, random_state=0
    ), X_bin, y_bin, Xt2
    yield "clf-selector", basis_clf(
        max_basis=20, selection=GreedySelector("nlp_all", 4, sampling="uniform"),
        max_iter=2, random_state=0,
    ), X_bin, y_bin, Xt2
    yield "clf-multiclass", basis_clf(
        max_basis=20, max_iter=2, random_state=0
    ), X_mc, y_mc, Xt2
    if has_posterior:
        yield "clf-all-rows", SparseGPClassifier(
            max_basis=20, posterior="all_rows", max_iter=3, random_state=0
        ), X_bin, y_bin, Xt2
        yield "clf-all-rows-user-kernel", SparseGPClassifier(
            ConstantKernel(1.0) * RBF(1.0), max_basis=20, posterior="all_rows", max_iter=3,
            random_state=0,
        ), X_bin, y_bin, Xt2
        yield "clf-all-rows-multiclass", SparseGPClassifier(
            max_basis=15, posterior="all_rows", max_iter=2, random_state=0
        ), X_mc, y_mc, Xt2
    # The regressor's fits are the DTC evidence's (the default before "vfe"); the VFE
    # bound's fits follow, with and without exchange and refinement where the package has it.
    def dtc_reg(*args, **kwargs):
        return SparseGPRegressor(*args, hyperparameter_objective="dtc", **kwargs)

    for selection in ("random", "exact", "matching_pursuit", "info_gain"):
        reg = dtc_reg(max_basis=30, selection=selection, max_iter=3, random_state=0)
        yield f"reg-{selection}", reg, X_reg, y_reg, X_test
    yield "reg-exchange", dtc_reg(
        max_basis=30, n_exchange=15, max_iter=3, random_state=0
    ), X_reg, y_reg, X_test
    yield "reg-ard-normalize", dtc_reg(
        ConstantKernel(1.0) * RBF(np.ones(3)), max_basis=30, normalize_y=True, max_iter=3,
        random_state=0,
    ), X_reg, y_reg, X_test
    yield "reg-fixed", dtc_reg(
        Matern(1.0, nu=1.5), max_basis=40, optimizer=None, n_exchange=10, random_state=0
    ), X_reg, y_reg, X_test
    yield "reg-vfe", SparseGPRegressor(
        max_basis=30, hyperparameter_objective="vfe", n_exchange=10, max_iter=3, random_state=0
    ), X_reg, y_reg, X_test
    if "refine_basis" in SparseGPRegressor().get_params():
        yield "reg-vfe-refine", SparseGPRegressor(
            max_basis=15, hyperparameter_objective="vfe", refine_basis=10, random_state=0
        ), X_reg, y_reg, X_test
    yield "rvr-ssem", RelevanceVectorRegressor(random_state=0), X_reg[:150], y_reg[:150], X_test
    yield "rvr-batch", RelevanceVectorRegressor(
        method="batch_em", random_state=0
    ), X_reg[:150], y_reg[:150], X_test
    yield "rvc-ssem", RelevanceVectorClassifier(random_state=0), X_bin[:150], y_bin[:150], Xt2
    yield "rvc-batch", RelevanceVectorClassifier(
        method="batch_em", random_state=0
    ), X_bin[:150], y_bin[:150], Xt2


def _outputs(est, X_test):
    """Every fitted array attribute and every prediction of a fitted estimator, as arrays."""
    out = {}
    for name, value in sorted(vars(est).items()):
        if name.endswith("_") and not name.startswith("_") and "time" not in name:
            if isinstance(value, (np.ndarray, float, int, np.floating, np.integer)):
                out[name] = np.asarray(value)
            elif hasattr(value, "theta"):  # a fitted kernel
                out[name + ".theta"] = np.asarray(value.theta)
            elif isinstance(value, list) and value and all(
                isinstance(v, (float, int, np.floating)) for v in value
            ):
                out[name] = np.asarray(value, dtype=float)
    for method in ("predict", "predict_proba", "decision_function"):
        if hasattr(est, method):
            out[method] = np.asarray(getattr(est, method)(X_test))
    if hasattr(est, "predict") and "return_std" in est.predict.__code__.co_varnames:
        mean, std = est.predict(X_test, return_std=True)
        out["predict.std"] = np.asarray(std)
    return out


def collect():
    """Fit every problem and return ``{fit name: {output name: array}}``."""
    import warnings

    from threadpoolctl import threadpool_limits

    results = {}
    with threadpool_limits(1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, est, X, y, X_test in _fits():
            est.fit(X, y)
            results[name] = _outputs(est, X_test)
    return results


def _collect_in(tree, tmp):
    """Collect the outputs of the package in ``tree`` in a fresh subprocess.

    Both sides run through this same path, so that they differ only by the package's code.
    """
    out_file = Path(tmp) / f"{Path(tree).name}.pkl"
    code = (
        "import sys, pickle; sys.path.insert(0, sys.argv[1]); "
        "import importlib.util as u; "
        "spec = u.spec_from_file_location('cmp', sys.argv[2]); "
        "m = u.module_from_spec(spec); spec.loader.exec_module(m); "
        "import skgpsparse; assert skgpsparse.__file__.startswith(sys.argv[1]), "
        "skgpsparse.__file__; "
        "pickle.dump(m.collect(), open(sys.argv[3], 'wb'))"
    )
    subprocess.run(
        [sys.executable, "-c", code, str(tree), __file__, str(out_file)], check=True, cwd=tmp
    )
    with open(out_file, "rb") as f:
        return pickle.load(f)


def _run_reference(ref):
    """Collect the outputs on commit ``ref`` (a temporary worktree) and on this tree."""
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "ref"
        subprocess.run(
            ["git", "-C", str(REPO), "worktree", "add", "--detach", "-q", str(tree), ref],
            check=True,
        )
        try:
            return _collect_in(tree, tmp), _collect_in(REPO, tmp)
        finally:
            subprocess.run(
                ["git", "-C", str(REPO), "worktree", "remove", "--force", str(tree)],
                check=True,
            )


def compare(reference, current, rtol):
    """Print one line per fit; return the number of outputs that differ beyond ``rtol``."""
    n_bad = 0
    for name in sorted(set(reference) | set(current)):
        ref, cur = reference.get(name), current.get(name)
        if ref is None or cur is None:
            print(f"{name:22s} MISSING on {'reference' if ref is None else 'current'}")
            n_bad += 1
            continue
        diffs = []
        for key in sorted(set(ref) | set(cur)):
            a, b = ref.get(key), cur.get(key)
            if a is None or b is None or a.shape != b.shape:
                diffs.append(f"{key}: missing or shape differs")
                continue
            if a.dtype.kind in "fc":
                scale = np.maximum(np.abs(a), np.finfo(float).tiny)
                err = float(np.max(np.abs(a - b) / scale, initial=0.0))
                same = np.array_equal(a, b, equal_nan=True) or err <= rtol
            else:
                err, same = 0.0, np.array_equal(a, b)
            if not same:
                diffs.append(f"{key}: max relative difference {err:.3g}")
        status = "identical" if not diffs else "DIFFERS: " + "; ".join(diffs)
        print(f"{name:22s} {len(ref):3d} outputs  {status}")
        n_bad += len(diffs)
    return n_bad


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ref", required=True, help="the reference commit (e.g. 6697d48)")
    parser.add_argument("--rtol", type=float, default=0.0,
                        help="largest relative difference accepted (default 0: identical)")
    args = parser.parse_args(argv)
    reference, current = _run_reference(args.ref)
    n_bad = compare(reference, current, args.rtol)
    n_out = sum(len(v) for v in current.values())
    print(f"{len(current)} fits, {n_out} outputs; {n_bad} differ beyond rtol={args.rtol:g}")
    return 1 if n_bad else 0


if __name__ == "__main__":
    sys.exit(main())
