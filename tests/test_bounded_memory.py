"""Bounded memory: predictions by row blocks, and a fit's memory checked before it allocates.

Every predict method of the four estimators computes its output block by block of rows
(``skgpsparse.rows._blocks``): with blocks forced small the outputs equal the whole-array ones
(and, for the RVM, the dense formulas), and the peak memory (tracemalloc) grows by no more
than the outputs' bytes per added row. A fit whose estimated memory (``skgpsparse._memory``)
exceeds what is available fails at once with a ``MemoryError`` naming the figure and what to
lower; the estimates are checked against tracemalloc's peak of real fits.
"""

import tracemalloc
import warnings

import numpy as np
import pytest
from scipy.special import ndtr
from sklearn.base import clone
from sklearn.gaussian_process.kernels import RBF

import skgpsparse._memory as memory
import skgpsparse.kernels._gradients as gradients
from skgpsparse import (
    RelevanceVectorClassifier,
    RelevanceVectorRegressor,
    SparseGPClassifier,
    SparseGPRegressor,
)
from skgpsparse.latent._model import fit_memory as classifier_memory
from skgpsparse.regression._fit_memory import fit_memory as regressor_memory
from skgpsparse.rvm._fit_memory import fit_memory as rvm_memory
from skgpsparse.rvm._subspace_em import ActiveDesign

# Bytes of kernel values per prediction block when blocks are forced small: a few rows.
_SMALL_BLOCK_BYTES = 4096


def _data(n, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.uniform(-3, 3, size=(n, 2))
    f = np.sin(2 * X[:, 0]) * np.cos(X[:, 1])
    return X, f


@pytest.fixture(scope="module")
def models():
    """The four estimators fitted on small problems (binary and three-class classifiers)."""
    X, f = _data(160)
    y = f + 0.05 * np.random.RandomState(1).randn(len(f))
    labels = np.where(f > 0, "pos", "neg")
    three = np.digitize(f, [-0.3, 0.3])
    Xc, lc, tc = X[:70], labels[:70], three[:70]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {
            "rvr": RelevanceVectorRegressor(RBF(0.4), random_state=0).fit(X, y),
            "rvc": RelevanceVectorClassifier(RBF(0.7), random_state=0).fit(Xc, lc),
            "rvc3": RelevanceVectorClassifier(RBF(0.7), random_state=0).fit(Xc, tc),
            "gpr": SparseGPRegressor(max_basis=40, max_iter=2, random_state=0).fit(X, y),
            "gpr2": SparseGPRegressor(max_basis=30, max_iter=1, random_state=0).fit(
                X, np.column_stack([y, 2 * y + 1])
            ),
            "gpc": SparseGPClassifier(max_basis=30, max_iter=2, random_state=0).fit(X, labels),
            "gpc3": SparseGPClassifier(max_basis=25, max_iter=2, random_state=0).fit(X, three),
        }


def _methods(models):
    """``(name, callable)`` for every predict method of the four estimators."""
    m = models
    return [
        ("rvr.predict", m["rvr"].predict),
        ("rvr.predict_std", lambda X: m["rvr"].predict(X, return_std=True)),
        ("rvc.predict_proba", m["rvc"].predict_proba),
        ("rvc.predict", m["rvc"].predict),
        ("rvc3.predict_proba", m["rvc3"].predict_proba),
        ("rvc3.predict", m["rvc3"].predict),
        ("gpr.predict", m["gpr"].predict),
        ("gpr.predict_std", lambda X: m["gpr"].predict(X, return_std=True)),
        ("gpr2.predict_std", lambda X: m["gpr2"].predict(X, return_std=True)),
        ("gpr.sample_y", lambda X: m["gpr"].sample_y(X, 3, random_state=0)),
        ("gpr2.sample_y", lambda X: m["gpr2"].sample_y(X, 2, random_state=0)),
        ("gpc.predict_proba", m["gpc"].predict_proba),
        ("gpc.predict_log_proba", m["gpc"].predict_log_proba),
        ("gpc.decision_function", m["gpc"].decision_function),
        ("gpc.latent", m["gpc"].latent_mean_and_variance),
        ("gpc.predict", m["gpc"].predict),
        ("gpc3.predict_proba", m["gpc3"].predict_proba),
        ("gpc3.predict_log_proba", m["gpc3"].predict_log_proba),
        ("gpc3.decision_function", m["gpc3"].decision_function),
        ("gpc3.predict", m["gpc3"].predict),
    ]


def _parts(out):
    return out if isinstance(out, tuple) else (out,)


def _call(method, X):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # sample_y's low-rank warning beyond 2000 rows
        return method(X)


def test_small_blocks_give_the_whole_array_results(models, monkeypatch):
    X = _data(2300, seed=5)[0]  # beyond sample_y's exact rows: its low-rank path by blocks
    for name, method in _methods(models):
        whole = _parts(_call(method, X))
        with monkeypatch.context() as patch:
            patch.setattr(gradients, "_CHUNK_BYTES", _SMALL_BLOCK_BYTES)
            blocks = _parts(_call(method, X))
        assert len(blocks) == len(whole), name
        for a, b in zip(whole, blocks):
            assert a.shape == b.shape and a.dtype == b.dtype, name
            if a.dtype.kind in "iuU":
                np.testing.assert_array_equal(a, b, err_msg=name)
            else:
                # BLAS may sum a block's products in another order: a few ulps; a draw's
                # per-row part is the square root of a difference that can be near zero,
                # where those ulps grow (a few 1e-13 on draws of order 0.1)
                atol = 1e-12 if name.endswith("sample_y") else 1e-13
                np.testing.assert_allclose(a, b, rtol=1e-12, atol=atol, err_msg=name)


def test_rvm_predictions_by_blocks_equal_the_dense_formulas(models, monkeypatch):
    # SSEM paper eqs. (9)-(10) and (15), from the fitted attributes
    monkeypatch.setattr(gradients, "_CHUNK_BYTES", _SMALL_BLOCK_BYTES)
    X = _data(500, seed=6)[0]
    rvr = models["rvr"]
    Phi = rvr.kernel_(X, rvr.relevance_vectors_)
    if np.isfinite(rvr.alpha_bias_):
        Phi = np.column_stack([Phi, np.ones(len(X))])
    mean = Phi[:, : len(rvr.coef_)] @ rvr.coef_ + rvr.intercept_
    std = np.sqrt(rvr.noise_variance_ + np.einsum("ij,jk,ik->i", Phi, rvr.sigma_, Phi))
    got_mean, got_std = rvr.predict(X, return_std=True)
    np.testing.assert_allclose(got_mean, mean, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(got_std, std, rtol=1e-9)
    rvc = models["rvc"]
    (binary,) = rvc.estimators_
    mask = binary._bias_mask  # the fit's order of the active basis functions
    Phi = np.ones((len(X), len(mask)))
    Phi[:, ~mask] = rvc.kernel_(X, binary._centers[~mask])
    B = binary._L @ binary._L.T  # the factor of D Sigma^-1 D, D = A^-1/2 (eq. 7)
    Sigma = binary._d[:, None] * np.linalg.inv(B) * binary._d[None, :]
    latent = Phi @ binary._mu
    var = np.einsum("ij,jk,ik->i", Phi, Sigma, Phi)
    p = ndtr(latent / np.sqrt(rvc.probit_variance + var))
    np.testing.assert_allclose(rvc.predict_proba(X)[:, 1], p, rtol=1e-9, atol=1e-12)


def _peak(method, X):
    tracemalloc.start()
    try:
        out = _call(method, X)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak, sum(part.nbytes for part in _parts(out))


def test_peak_memory_grows_only_by_the_outputs(models, monkeypatch):
    # Blocks of a few rows: a method that held an n x M design (the RVMs before blocks) or
    # several output-sized temporaries grows by far more per row than its output
    monkeypatch.setattr(gradients, "_CHUNK_BYTES", _SMALL_BLOCK_BYTES)
    X = _data(12_000, seed=7)[0]
    n_small = 3000
    for name, method in _methods(models):
        # (both sizes above sample_y's exact rows, so both take its low-rank path)
        peak_small, out_small = _peak(method, X[:n_small])
        peak_large, out_large = _peak(method, X)
        added = X.shape[0] - n_small
        growth = (peak_large - peak_small) / added
        allowed = (out_large - out_small) / added + 24  # the outputs and three float columns
        assert growth <= allowed, f"{name}: {growth:.1f} bytes per row, allowed {allowed:.1f}"


# ----------------------------------------------------------------------------- the fit's check


@pytest.fixture
def two_gigabytes(monkeypatch):
    """The machine has 2 GB available (whatever it really has)."""
    monkeypatch.setattr(memory, "available_memory", lambda: (2e9, "test figure"))


def _fails_without_allocating(estimator, X, y):
    tracemalloc.start()
    try:
        with pytest.raises(MemoryError) as info:
            estimator.fit(X, y)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # nothing of the fit's size was allocated: the inputs' few megabytes at most
    assert peak < 20 * X.nbytes + 2**24
    return str(info.value)


@pytest.mark.parametrize("learn", [True, False])
def test_regressor_too_large_fails_up_front(two_gigabytes, learn):
    X, f = _data(200_000, seed=2)
    model = SparseGPRegressor(max_basis=20_000, optimizer="fmin_l_bfgs_b" if learn else None)
    message = _fails_without_allocating(model, X, f)
    need = regressor_memory(200_000, 2, 20_000, 2, 1, learn, 59).total
    assert need > 3e10  # the 200,000 x 20,000 kernel columns alone are 32 GB
    assert f"SparseGPRegressor.fit needs about {need / 1e9:.1f} GB" in message
    assert "2.0 GB is available (test figure)" in message
    assert "Lower `max_basis` (now 20000)" in message
    assert ("or pass optimizer=None" in message) == learn  # the gradient block only when learning
    # the largest max_basis that fits is named, and does fit
    fits = int(message.split("max_basis=")[-1].split()[0])
    assert regressor_memory(200_000, 2, fits, 2, 1, learn, 59).total <= 2e9
    assert regressor_memory(200_000, 2, fits + 1, 2, 1, learn, 59).total > 2e9


def test_classifier_too_large_fails_up_front(two_gigabytes):
    X, f = _data(200_000, seed=3)
    y = (f > 0).astype(int)
    message = _fails_without_allocating(SparseGPClassifier(max_basis=20_000), X, y)
    # all-rows EP; 3 hyperparameters: the default kernel's per-feature trial on 2 features
    need = classifier_memory(200_000, 2, 20_000, 3, True, 2, 1, True).total
    assert need > 3.2e10  # the 20,000 x 200,000 posterior block M alone is 32 GB
    assert f"SparseGPClassifier.fit needs about {need / 1e9:.1f} GB" in message
    assert "Lower `max_basis` (now 20000)" in message
    # the all-rows EP's V (32 GB) is not held: its passes form it by row blocks
    # (inference/_row_columns.py), so it is not counted
    assert "the all-rows EP's max_basis x n array" not in message


def test_parallel_one_vs_rest_counts_every_fit_and_names_n_jobs(monkeypatch):
    X, f = _data(30_000, seed=4)
    y = np.digitize(f, [-0.3, 0.3])
    one = classifier_memory(30_000, 2, 2000, 3, True, 2, 1, True).total  # per-feature trial
    monkeypatch.setattr(memory, "available_memory", lambda: (1.5 * one, "test figure"))
    message = _fails_without_allocating(SparseGPClassifier(max_basis=2000, n_jobs=3), X, y)
    assert "Lower `n_jobs` (now 3 fits at once)" in message
    assert f"needs about {3 * one / 1e9:.1f} GB" in message


@pytest.mark.parametrize("estimator", [RelevanceVectorRegressor, RelevanceVectorClassifier])
def test_rvm_batch_em_too_large_fails_up_front(two_gigabytes, estimator):
    X, f = _data(40_000, seed=5)
    y = f if estimator is RelevanceVectorRegressor else (f > 0).astype(int)
    message = _fails_without_allocating(estimator(method="batch_em"), X, y)
    # all 40,001 basis functions' design rows at once: 2 x 8 x 40,001 x 40,000 bytes
    assert f"{estimator.__name__}.fit needs about" in message
    assert "the design rows (basis functions x n) 25.6 GB" in message
    assert "Lower `n_basis_functions` (now None)" in message
    # with fewer candidates it fits the same figure
    assert rvm_memory("x", 40_000, 2, 2_000, "batch_em", 2_000).total < 2e9


def test_subspace_em_checks_each_growth_of_the_design(monkeypatch):
    monkeypatch.setattr(memory, "available_memory", lambda: (10_000, "test figure"))
    design = ActiveDesign(1000, capacity=1, owner="RelevanceVectorRegressor")
    design.append(np.ones((1, 1000)), [0], [1.0])  # fits the first row (no growth)
    with pytest.raises(MemoryError, match=r"2 design rows of length 1000.*Lower `n_basis_functions`, or fit on fewer rows\."):
        design.append(np.ones((1, 1000)), [1], [1.0])
    assert design.size == 1  # nothing changed


@pytest.mark.parametrize("name", ["regressor", "classifier"])
def test_verbose_first_line_gives_the_checked_estimate(name, monkeypatch, capsys):
    checked = []
    original = memory.FitMemory.check

    def record(self, *args, **kwargs):
        checked.append(self.summary())
        return original(self, *args, **kwargs)

    monkeypatch.setattr(memory.FitMemory, "check", record)
    X, f = _data(300)
    if name == "regressor":
        SparseGPRegressor(max_basis=30, max_iter=1, verbose=1, random_state=0).fit(X, f)
    else:
        SparseGPClassifier(max_basis=30, max_iter=1, verbose=1, random_state=0).fit(X, f > 0)
    first = capsys.readouterr().out.splitlines()[0]
    assert checked and first.endswith(f"the fit needs {checked[0]}")


# ----------------------------------------------------------------------------- the estimates


def _measured_peak(fit):
    tracemalloc.start()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("learn", [True, False])
def test_estimates_match_the_fits_peak(learn):
    # the estimate is of the arrays a fit holds at its peak: within 30% of tracemalloc's
    # (the input X, allocated before, is in neither)
    rng = np.random.RandomState(0)
    X = rng.randn(6000, 3)
    y = np.sin(X[:, 0]) + 0.1 * rng.randn(6000)
    optimizer = "fmin_l_bfgs_b" if learn else None
    reg = SparseGPRegressor(max_basis=150, max_iter=1, optimizer=optimizer, random_state=0)
    clf = SparseGPClassifier(max_basis=150, max_iter=1, optimizer=optimizer, random_state=0)
    adf = clone(clf).set_params(posterior="basis")
    cases = [
        (lambda: reg.fit(X, y), regressor_memory(6000, 3, 150, 2, 1, learn, 59).total),
        (lambda: clf.fit(X, y > 0), classifier_memory(6000, 3, 150, 2, learn, 2, 1, True).total),
        (lambda: adf.fit(X, y > 0), classifier_memory(6000, 3, 150, 2, learn, 2).total),
    ]
    if learn:
        rvr = RelevanceVectorRegressor(RBF(1.0), method="batch_em", max_iter=2)
        cases.append((lambda: rvr.fit(X[:800], y[:800]), rvm_memory("x", 800, 3, 801,
                                                                      "batch_em", None).total))
    for fit, estimate in cases:
        peak = _measured_peak(fit)
        assert 0.7 * peak <= estimate <= 1.3 * peak, (estimate, peak)


def test_available_memory_reads_meminfo_and_the_cgroup(tmp_path, monkeypatch):
    meminfo, limit, current = tmp_path / "meminfo", tmp_path / "max", tmp_path / "current"
    meminfo.write_text("MemTotal:       25000000 kB\nMemAvailable:   20000000 kB\n")
    monkeypatch.setattr(memory, "_MEMINFO", str(meminfo))
    monkeypatch.setattr(memory, "_CGROUP_MAX", str(limit))
    monkeypatch.setattr(memory, "_CGROUP_CURRENT", str(current))
    assert memory.available_memory() == (20_000_000 * 1024, "MemAvailable")  # no cgroup file
    limit.write_text("max\n")
    assert memory.available_memory()[0] == 20_000_000 * 1024  # no limit set
    limit.write_text(f"{8 * 2**30}\n")
    current.write_text(f"{3 * 2**30}\n")
    free, source = memory.available_memory()
    assert free == 5 * 2**30 and source.startswith("cgroup memory.max 8.6 GB")
    # without /proc/meminfo: the physical memory from sysconf
    monkeypatch.setattr(memory, "_MEMINFO", str(tmp_path / "absent"))
    limit.write_text("max\n")
    physical = memory._physical_memory()
    assert memory.available_memory() == ((physical, "physical memory") if physical else (None, ""))


def test_nothing_known_checks_nothing(monkeypatch):
    monkeypatch.setattr(memory, "available_memory", lambda: (None, ""))
    memory.FitMemory("Model", [("a part", 1e30, "`max_basis`")]).check()  # no error
    with pytest.raises(MemoryError, match="Model.fit needs about .* GB .*given"):
        memory.FitMemory("Model", [("a part", 1e30, "`max_basis`")]).check(1e9, "given")
