"""Compare the numerical outputs of a fixed set of fits between two commits.

A change that only moves code (a restructure, a rename) must leave every fitted model as it
was. This script fits the same small problems with both sparse GP estimators and both
relevance vector machines: the default constructors, both classifier posteriors with every
selection, the objectives, exchange, restarts, the multi-class fits (shared and independent),
``partial_fit`` streams and fits on a dask array over a local ``distributed`` cluster. It
compares every fitted array and every prediction against the same fits run on a reference
commit (checked out into a temporary ``git worktree`` and imported from there in a
subprocess), and ends with the largest absolute and relative difference over all outputs.

Usage (from the repository root)::

    python tools/compare_outputs.py --ref 6697d48               # bit for bit (the default)
    python tools/compare_outputs.py --ref 6697d48 --rtol 1e-12  # identical to rounding

It imports only the public names (``from skgpsparse import ...``), so it runs on any layout;
a fit whose feature the package does not have (checked by its parameters and methods) is
skipped, and a fit only the current tree has is listed, not counted. Exit status 0 when
every output agrees within ``atol + rtol * max(|reference|, |current|)`` elementwise
(``--rtol`` and ``--atol``, default 0 and 0: identical), 1 otherwise; the largest
differences are printed whatever the tolerance.
"""

import argparse
import pickle
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
# Rows per dask chunk (three chunks of the 240-row binary problem, four of the regression's).
_DASK_CHUNK = 80


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


def _options(estimator_class, param):
    """The string values ``param`` accepts (empty where the class does not say)."""
    for constraint in getattr(estimator_class, "_parameter_constraints", {}).get(param, []):
        if hasattr(constraint, "options"):
            return set(constraint.options)
    return set()


def _new(estimator_class, *args, **kwargs):
    """``estimator_class(*args, **kwargs)``, or None (the fit is skipped) where the class has
    no parameter of that name (a commit older than the feature)."""
    if set(kwargs) - set(estimator_class().get_params()):
        return None
    return estimator_class(*args, **kwargs)


def _batch(X, y):
    """``est.fit(X, y)``."""
    return lambda est: est.fit(X, y)


def _stream(X, y, n_chunks, fit_rows=0, **kwargs):
    """``est.fit`` on the first ``fit_rows`` rows (if any), then ``partial_fit`` on the rest
    in ``n_chunks`` chunks (``kwargs``, e.g. ``classes``, passed to every call)."""

    def fit(est):
        if fit_rows:
            est.fit(X[:fit_rows], y[:fit_rows])
        for rows in np.array_split(np.arange(fit_rows, y.size), n_chunks):
            est.partial_fit(X[rows], y[rows], **kwargs)
        return est

    return fit


def _on_dask(X, y):
    """``est.fit`` on dask arrays of ``X`` and ``y`` chunked by ``_DASK_CHUNK`` rows (needs
    the client :func:`collect` opens)."""

    def fit(est):
        import dask.array as da

        X_dask = da.from_array(X, chunks=(_DASK_CHUNK, X.shape[1]))
        return est.fit(X_dask, da.from_array(y, chunks=_DASK_CHUNK))

    fit.needs_client = True
    return fit


def _has_dask():
    try:
        import dask.array  # noqa: F401
        import distributed  # noqa: F401
    except ImportError:
        return False
    return True


def _fits():
    """Yield ``(name, estimator, fit, X_test)`` for every fit compared; ``fit(estimator)``
    fits it (by ``fit``, ``partial_fit`` chunks or on a dask array) and returns it; the
    estimator is None where the package lacks one of its parameters."""
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel, Matern

    from skgpsparse import (
        GreedySelector,
        RelevanceVectorClassifier,
        RelevanceVectorRegressor,
        SparseGPClassifier,
        SparseGPRegressor,
    )

    X_bin, y_bin, X_mc, y_mc, X_reg, y_reg, X_test = _problems()
    clf_params = SparseGPClassifier().get_params()
    reg_params = SparseGPRegressor().get_params()
    # The classifier's posterior: the fits below are the basis posterior's (the default
    # before posterior="all_rows"); the all-rows EP's fits follow where the package has it.
    has_posterior = "posterior" in clf_params

    def classifier(*args, **kwargs):
        return _new(SparseGPClassifier, *args, **kwargs)

    def regressor(*args, **kwargs):
        return _new(SparseGPRegressor, *args, **kwargs)

    def basis_clf(*args, **kwargs):
        if has_posterior:
            kwargs.setdefault("posterior", "basis")
        return classifier(*args, **kwargs)

    Xt2 = X_test[:, :2]
    bin_fit, mc_fit = _batch(X_bin, y_bin), _batch(X_mc, y_mc)
    yield "clf-default", classifier(random_state=0), bin_fit, Xt2
    for selection in ("random", "entropy", "info_gain", "nlp", "adaptive"):
        clf = basis_clf(max_basis=25, selection=selection, max_iter=3, random_state=0)
        yield f"clf-{selection}", clf, bin_fit, Xt2
    yield "clf-evidence", basis_clf(
        max_basis=25, hyperparameter_objective="evidence", max_iter=3, random_state=0
    ), bin_fit, Xt2
    yield "clf-optimize-sites", basis_clf(
        max_basis=20, selection="nlp", site_update="optimize", max_iter=2, random_state=0
    ), bin_fit, Xt2
    yield "clf-exchange", basis_clf(
        max_basis=20, n_exchange=5, max_iter=2, random_state=0
    ), bin_fit, Xt2
    yield "clf-restarts", basis_clf(
        max_basis=20, n_restarts=2, max_iter=2, random_state=0
    ), bin_fit, Xt2
    yield "clf-user-kernel", basis_clf(
        ConstantKernel(1.0) * RBF(1.0), max_basis=25, max_iter=3, random_state=0
    ), bin_fit, Xt2
    yield "clf-selector", basis_clf(
        max_basis=20, selection=GreedySelector("nlp_all", 4, sampling="uniform"),
        max_iter=2, random_state=0,
    ), bin_fit, Xt2
    yield "clf-multiclass", basis_clf(max_basis=20, max_iter=2, random_state=0), mc_fit, Xt2
    if has_posterior:
        yield "clf-all-rows", classifier(
            max_basis=20, posterior="all_rows", max_iter=3, random_state=0
        ), bin_fit, Xt2
        # "entropy" is "auto"'s choice under the all-rows posterior: clf-all-rows above
        for selection in ("random", "info_gain", "nlp", "adaptive"):
            yield f"clf-all-rows-{selection}", classifier(
                max_basis=20, posterior="all_rows", selection=selection, max_iter=2,
                random_state=0,
            ), bin_fit, Xt2
        yield "clf-all-rows-user-kernel", classifier(
            ConstantKernel(1.0) * RBF(1.0), max_basis=20, posterior="all_rows", max_iter=3,
            random_state=0,
        ), bin_fit, Xt2
        yield "clf-all-rows-multiclass", classifier(
            max_basis=15, posterior="all_rows", max_iter=2, random_state=0
        ), mc_fit, Xt2
    if "independent" in _options(SparseGPClassifier, "multi_class"):
        yield "clf-multiclass-independent", classifier(
            max_basis=15, multi_class="independent", max_iter=2, random_state=0
        ), mc_fit, Xt2
    if "stream_buffer" in clf_params:  # partial_fit: the first chunk fits, the others stream
        yield "clf-stream", classifier(
            max_basis=15, max_iter=2, stream_buffer=0, random_state=0
        ), _stream(X_bin, y_bin, 4, classes=[0, 1]), Xt2
        # refitted on the buffer at 120 and 150 rows (grown by a quarter, then full)
        yield "clf-stream-buffer", classifier(
            max_basis=15, max_iter=2, stream_buffer=150, random_state=0
        ), _stream(X_bin, y_bin, 4, classes=[0, 1]), Xt2
        yield "clf-stream-adf", classifier(
            max_basis=15, max_iter=2, stream_buffer=0, stream_ep_sweeps=0, random_state=0
        ), _stream(X_bin, y_bin, 4, classes=[0, 1]), Xt2
        yield "clf-stream-multiclass", classifier(
            max_basis=10, max_iter=1, stream_buffer=0, random_state=0
        ), _stream(X_mc, y_mc, 3, classes=[0, 1, 2]), Xt2
        yield "clf-fit-then-stream", classifier(
            max_basis=15, max_iter=2, stream_buffer=0, random_state=0
        ), _stream(X_bin, y_bin, 2, fit_rows=160), Xt2
    # The regressor's fits are the DTC evidence's (the default before "vfe"); the VFE
    # bound's fits follow, with and without exchange and refinement where the package has it.
    def dtc_reg(*args, **kwargs):
        if "hyperparameter_objective" in reg_params:
            kwargs["hyperparameter_objective"] = "dtc"
        return regressor(*args, **kwargs)

    reg_fit = _batch(X_reg, y_reg)
    yield "reg-default", regressor(random_state=0), reg_fit, X_test
    for selection in ("random", "exact", "matching_pursuit", "info_gain"):
        reg = dtc_reg(max_basis=30, selection=selection, max_iter=3, random_state=0)
        yield f"reg-{selection}", reg, reg_fit, X_test
    yield "reg-exchange", dtc_reg(
        max_basis=30, n_exchange=15, max_iter=3, random_state=0
    ), reg_fit, X_test
    yield "reg-ard-normalize", dtc_reg(
        ConstantKernel(1.0) * RBF(np.ones(3)), max_basis=30, normalize_y=True, max_iter=3,
        random_state=0,
    ), reg_fit, X_test
    yield "reg-fixed", dtc_reg(
        Matern(1.0, nu=1.5), max_basis=40, optimizer=None, n_exchange=10, random_state=0
    ), reg_fit, X_test
    yield "reg-vfe", regressor(
        max_basis=30, hyperparameter_objective="vfe", n_exchange=10, max_iter=3, random_state=0
    ), reg_fit, X_test
    # the VFE bound with each selection, on the greedy basis (the refinement: reg-vfe-refine)
    no_refine = {"refine_basis": 0} if "refine_basis" in reg_params else {}
    for selection in sorted(_options(SparseGPRegressor, "selection")):
        yield f"reg-vfe-{selection}", regressor(
            max_basis=30, hyperparameter_objective="vfe", selection=selection, max_iter=3,
            random_state=0, **no_refine,
        ), reg_fit, X_test
    if "refine_basis" in reg_params:
        yield "reg-vfe-refine", regressor(
            max_basis=15, hyperparameter_objective="vfe", refine_basis=10, random_state=0
        ), reg_fit, X_test
    if hasattr(SparseGPRegressor, "partial_fit"):
        # the documented use: fixed hyperparameters, the basis full after the first chunk
        yield "reg-stream-fixed", regressor(
            ConstantKernel(1.0) * RBF(1.0), noise_variance=0.05, max_basis=15, optimizer=None,
            normalize_y=True, random_state=0,
        ), _stream(X_reg, y_reg, 4), X_test
        # hyperparameters learned on the first chunk, the basis grown from the later ones
        yield "reg-stream-grow", regressor(
            max_basis=40, max_iter=2, random_state=0
        ), _stream(X_reg, y_reg, 4), X_test
        yield "reg-stream-grow-random", regressor(
            ConstantKernel(1.0) * RBF(1.0), max_basis=40, optimizer=None, selection="random",
            random_state=0,
        ), _stream(X_reg, y_reg, 6), X_test
        yield "reg-fit-then-stream", dtc_reg(
            max_basis=20, max_iter=2, random_state=0
        ), _stream(X_reg, y_reg, 3, fit_rows=150), X_test
    if _has_dask() and "learning_rows" in clf_params and "learning_rows" in reg_params:
        # Row chunks on the workers of a local cluster. The classifier: the default (learning
        # on the rows gathered to the driver, EP on the workers), learning on a subsample,
        # fixed hyperparameters, the basis posterior learned on the partitions, three
        # classes. The regressor: the default, learning on every row's partition or on a
        # subsample, fixed hyperparameters with exchange.
        clf_dask, reg_dask = _on_dask(X_bin, y_bin), _on_dask(X_reg, y_reg)
        yield "clf-dask-default", classifier(random_state=0), clf_dask, Xt2
        yield "clf-dask-learning-rows", classifier(
            max_basis=15, max_iter=2, learning_rows=150, random_state=0
        ), clf_dask, Xt2
        yield "clf-dask-fixed", classifier(
            max_basis=15, optimizer=None, random_state=0
        ), clf_dask, Xt2
        yield "clf-dask-basis", basis_clf(
            max_basis=15, selection="nlp", max_iter=2, learning_rows=None, random_state=0
        ), clf_dask, Xt2
        yield "clf-dask-multiclass", classifier(
            max_basis=10, max_iter=1, learning_rows=150, random_state=0
        ), _on_dask(X_mc, y_mc), Xt2
        yield "reg-dask-default", regressor(random_state=0), reg_dask, X_test
        yield "reg-dask-every-row", regressor(
            max_basis=20, max_iter=2, learning_rows=None, random_state=0
        ), reg_dask, X_test
        yield "reg-dask-learning-rows", regressor(
            max_basis=20, max_iter=2, learning_rows=150, random_state=0
        ), reg_dask, X_test
        yield "reg-dask-fixed", regressor(
            max_basis=20, optimizer=None, selection="exact", n_exchange=3, random_state=0
        ), reg_dask, X_test
    rv_fit = _batch(X_reg[:150], y_reg[:150])
    rc_fit = _batch(X_bin[:150], y_bin[:150])
    yield "rvr-ssem", _new(RelevanceVectorRegressor, random_state=0), rv_fit, X_test
    yield "rvr-batch", _new(
        RelevanceVectorRegressor, method="batch_em", random_state=0
    ), rv_fit, X_test
    yield "rvc-ssem", _new(RelevanceVectorClassifier, random_state=0), rc_fit, Xt2
    yield "rvc-batch", _new(
        RelevanceVectorClassifier, method="batch_em", random_state=0
    ), rc_fit, Xt2


def _attributes(est, prefix=""):
    """The fitted attributes of ``est`` (name ending in ``_``) that are numbers or arrays, a
    fitted kernel's ``theta``, and those of the binary models in a list ``estimators_``."""
    out = {}
    for name, value in sorted(vars(est).items()):
        if not name.endswith("_") or name.startswith("_") or "time" in name:
            continue
        key = prefix + name
        if isinstance(value, (np.ndarray, float, int, np.floating, np.integer)):
            out[key] = np.asarray(value)
        elif hasattr(value, "theta"):  # a fitted kernel
            out[key + ".theta"] = np.asarray(value.theta)
        elif isinstance(value, list) and value and all(
            isinstance(v, (float, int, np.floating)) for v in value
        ):
            out[key] = np.asarray(value, dtype=float)
        elif name == "estimators_" and isinstance(value, list):
            for i, model in enumerate(value):
                if hasattr(model, "__dict__"):
                    out.update(_attributes(model, f"{key}[{i}]."))
    return out


def _outputs(est, X_test):
    """Every fitted array attribute and every prediction of a fitted estimator, as arrays."""
    out = _attributes(est)
    for method in ("predict", "predict_proba", "decision_function"):
        if hasattr(est, method):
            out[method] = np.asarray(getattr(est, method)(X_test))
    if hasattr(est, "predict") and "return_std" in est.predict.__code__.co_varnames:
        mean, std = est.predict(X_test, return_std=True)
        out["predict.std"] = np.asarray(std)
    return out


def collect():
    """Fit every problem and return ``{fit name: {output name: array}}``; a fit that raises
    gives ``{"error": message}``. The dask fits run on a local cluster of two one-thread
    workers in this process, opened for them only."""
    import contextlib
    import logging
    import warnings

    from threadpoolctl import threadpool_limits

    results = {}
    with contextlib.ExitStack() as stack:
        stack.enter_context(threadpool_limits(1))
        stack.enter_context(warnings.catch_warnings())
        warnings.simplefilter("ignore")
        client = None
        for name, est, fit, X_test in _fits():
            if est is None:
                continue
            if getattr(fit, "needs_client", False) and client is None:
                import distributed

                logging.getLogger("distributed").setLevel(logging.ERROR)
                cluster = stack.enter_context(distributed.LocalCluster(
                    n_workers=2, threads_per_worker=1, processes=False,
                    dashboard_address=None,
                ))
                client = stack.enter_context(distributed.Client(cluster))
            start = time.perf_counter()
            try:
                results[name] = _outputs(fit(est), X_test)
            except Exception as exc:  # reported as a difference, the other fits still run
                results[name] = {"error": f"{type(exc).__name__}: {exc}"}
            print(f"  {name:28s} {time.perf_counter() - start:6.1f} s", file=sys.stderr)
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


def _difference(a, b):
    """The largest absolute and relative (to ``max(|a|, |b|)``) elementwise difference of
    two float arrays; ``inf`` where only one is NaN or the infinities differ."""
    dtype = np.result_type(a, b, float)
    a, b = np.asarray(a, dtype=dtype), np.asarray(b, dtype=dtype)
    both_nan = np.isnan(a) & np.isnan(b)
    same = (a == b) | both_nan
    if same.all():
        return 0.0, 0.0
    a, b = a[~same], b[~same]
    diff = np.abs(a - b)
    if not np.isfinite(diff).all():
        return np.inf, np.inf
    return float(diff.max()), float(np.max(diff / np.maximum(np.abs(a), np.abs(b))))


def compare(reference, current, rtol=0.0, atol=0.0):
    """Print one line per fit; return ``(number of outputs that differ beyond the tolerance,
    the largest absolute difference, the largest relative one, where each was)``.

    Floats agree when ``|a - b| <= atol + rtol * max(|a|, |b|)`` elementwise (NaN equal to
    NaN); other arrays (indices, labels) when equal. A fit or an output only the current
    tree has (a feature or attribute newer than the reference) is listed, not counted.
    """
    n_bad = 0
    worst_abs, worst_rel = (0.0, "-"), (0.0, "-")
    for name in sorted(set(reference) | set(current)):
        ref, cur = reference.get(name), current.get(name)
        if cur is None:
            print(f"{name:28s} MISSING on current")
            n_bad += 1
            continue
        if ref is None:
            print(f"{name:28s} not on the reference (not compared)")
            continue
        if "error" in ref or "error" in cur:
            errors = [f"{side}: {out['error']}" for side, out in (("reference", ref),
                      ("current", cur)) if "error" in out]
            print(f"{name:28s} ERROR {'; '.join(errors)}")
            n_bad += 1
            continue
        diffs, fit_abs, new = [], 0.0, []
        for key in sorted(set(ref) | set(cur)):
            a, b = ref.get(key), cur.get(key)
            if a is None and b is not None:  # an attribute newer than the reference
                new.append(key)
                continue
            if a is None or b is None or a.shape != b.shape:
                diffs.append(f"{key}: missing or shape differs")
                continue
            if a.dtype.kind in "fc" or b.dtype.kind in "fc":
                d_abs, d_rel = _difference(a, b)
                fit_abs = max(fit_abs, d_abs)
                if d_abs > worst_abs[0]:
                    worst_abs = (d_abs, f"{name} {key}")
                if d_rel > worst_rel[0]:
                    worst_rel = (d_rel, f"{name} {key}")
                close = np.abs(a - b) <= atol + rtol * np.maximum(np.abs(a), np.abs(b))
                same = d_abs == 0.0 or bool(np.all(
                    (a == b) | close | (np.isnan(a) & np.isnan(b))
                ))
                if not same:
                    diffs.append(f"{key}: max difference {d_abs:.3g} (relative {d_rel:.3g})")
            elif not np.array_equal(a, b):
                diffs.append(f"{key}: differs")
        if diffs:
            status = "DIFFERS: " + "; ".join(diffs)
        else:
            status = "identical" if fit_abs == 0.0 else f"within tolerance ({fit_abs:.3g})"
        if new:
            status += f" (not on the reference, not compared: {', '.join(new)})"
        print(f"{name:28s} {len(ref):3d} outputs  {status}")
        n_bad += len(diffs)
    return n_bad, worst_abs, worst_rel


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ref", required=True, help="the reference commit (e.g. 6697d48)")
    parser.add_argument("--rtol", type=float, default=0.0,
                        help="largest relative difference accepted (default 0: identical)")
    parser.add_argument("--atol", type=float, default=0.0,
                        help="largest absolute difference accepted besides rtol (default 0)")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    reference, current = _run_reference(args.ref)
    n_bad, (d_abs, at_abs), (d_rel, at_rel) = compare(reference, current, args.rtol, args.atol)
    n_out = sum(len(v) for v in current.values())
    print(f"{len(current)} fits, {n_out} outputs; {n_bad} differ beyond "
          f"rtol={args.rtol:g}, atol={args.atol:g}")
    print(f"largest absolute difference: {d_abs:.3g} ({at_abs})")
    print(f"largest relative difference: {d_rel:.3g} ({at_rel})")
    print(f"run time: {time.perf_counter() - start:.0f} s")
    return 1 if n_bad else 0


if __name__ == "__main__":
    sys.exit(main())
