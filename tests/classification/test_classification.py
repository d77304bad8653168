"""Tests for the sparse GP classifier: the ADF state against dense formulas, then the estimator."""

import copy
import warnings

import numpy as np
import pytest
from _support.dense_adf import binary_problem, dense_posterior
from _support.threads import blas_thread_counts, record_blas_threads
from hypothesis import given, settings
from hypothesis import strategies as st
from joblib import parallel_config
from scipy.stats import norm
from sklearn.datasets import make_blobs, make_moons
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, DotProduct, Matern, WhiteKernel
from threadpoolctl import threadpool_limits

from skgpsparse.classification._estimator import SparseGPClassifier
from skgpsparse.inference._adf import ADFState
from skgpsparse.latent.objectives._nlp_loss import nlp_loss
from skgpsparse.likelihoods import Probit
from skgpsparse.selection import GreedySelector

C = ConstantKernel


def _paper_site_update(f, a, y, b):
    """Additive-model paper eq. (2), written literally with scipy.stats.norm."""
    z = y * (f + b) / np.sqrt(1 + a)
    alpha = y * norm.pdf(z) / norm.cdf(z) / np.sqrt(1 + a)
    nu = alpha * (alpha + (f + b) / (1 + a))
    return nu / (1 - a * nu), f + alpha / nu


def _check_against_dense(state, rtol=1e-8, atol=1e-9):
    p = state.size
    f, A = dense_posterior(
        state.kernel, state.X, state.basis[:p], state.site_precision[:p], state.site_mean[:p]
    )
    np.testing.assert_allclose(state.f_hat, f, rtol=rtol, atol=atol)
    np.testing.assert_allclose(state.diag_A, np.diag(A), rtol=rtol, atol=atol)
    # A = K - M^T M and f_hat = M^T beta with the stored factors
    M = state.M[:p]
    np.testing.assert_allclose(state.k_diag - np.sum(M * M, axis=0), np.diag(A), atol=atol)
    np.testing.assert_allclose(M.T @ state.beta[:p], f, rtol=rtol, atol=atol)
    # L is the Cholesky factor of B = I + S K_uu S
    s = np.sqrt(state.site_precision[:p])
    Xu = state.X[state.basis[:p]]
    B = np.eye(p) + s[:, None] * state.kernel(Xu) * s[None, :]
    np.testing.assert_allclose(state.L[:p, :p] @ state.L[:p, :p].T, B, rtol=1e-10, atol=1e-10)


# ---------------------------------------------------------------------------- the ADF state
@settings(max_examples=15, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    n_add=st.integers(1, 12),
    bias=st.floats(-1.0, 1.0),
    length_scale=st.floats(0.3, 3.0),
)
def test_incremental_state_equals_dense_posterior(seed, n_add, bias, length_scale):
    X, y = binary_problem(n=25, seed=seed)
    kernel = C(1.5) * RBF(length_scale)
    state = ADFState(kernel, X, y, bias, max_basis=n_add, likelihood=Probit())
    order = np.random.RandomState(seed).permutation(len(y))[:n_add]
    for j in order:
        state.add(j)
    _check_against_dense(state)
    assert np.all(state.site_precision[:n_add] > 0) and np.all(state.site_precision <= 1)


def test_site_update_matches_equation_2():
    X, y = binary_problem(n=40, seed=3)
    state = ADFState(Matern(0.8, nu=1.5), X, y, 0.3, max_basis=10, likelihood=Probit())
    for j in (0, 7, 11, 20, 33):
        f_j, a_j = state.f_hat[j], state.diag_A[j]
        p_ref, m_ref = _paper_site_update(f_j, a_j, y[j], 0.3)
        state.add(j)
        k = state.size - 1
        np.testing.assert_allclose(state.site_precision[k], p_ref, rtol=1e-10)
        np.testing.assert_allclose(state.site_mean[k], m_ref, rtol=1e-10)


def test_moment_matching_extreme_margins_are_finite():
    z = np.array([-1e12, -1e6, -200.0, -40.0, -5.0, 0.0, 5.0, 40.0, 200.0, 1e6])
    for a in (0.0, 1e-12, 1.0, 1e8):
        p, dm, alpha, nu = Probit().site_update(np.ones_like(z), z, np.full_like(z, a))
        for v in (p, dm, alpha, nu):
            assert np.all(np.isfinite(v))
        assert np.all((p >= 0) & (p <= 1))
    # against the literal formula where it is well conditioned
    f = np.linspace(-6, 6, 13)
    p, dm, _, _ = Probit().site_update(-np.ones(13), f + 0.2, np.full(13, 0.7))
    p_ref, m_ref = _paper_site_update(f, 0.7, -1.0, 0.2)
    np.testing.assert_allclose(p, p_ref, rtol=1e-9)
    np.testing.assert_allclose(f + dm, m_ref, rtol=1e-9)


def test_fixed_sites_and_removal_equal_dense_posterior():
    X, y = binary_problem(n=30, seed=5)
    kernel = C(2.0) * RBF(1.2)
    rng = np.random.RandomState(0)
    basis = rng.choice(30, 8, replace=False)
    prec, mean = rng.uniform(0.1, 1.0, 8), rng.randn(8) * 2
    state = ADFState(kernel, X, y, -0.2, max_basis=8, likelihood=Probit())
    for j, p, m in zip(basis, prec, mean):
        state.add(j, p, m)
    _check_against_dense(state)
    for k in (3, 0, 5):  # positions in the current basis order
        state.remove(k)
        assert not state.in_basis[basis[k]]
        basis, prec, mean = (np.delete(a, k) for a in (basis, prec, mean))
        np.testing.assert_array_equal(state.basis_indices, basis)
        _check_against_dense(state)
    state.add(int(np.setdiff1d(np.arange(30), basis)[0]))  # grows again after deletions
    _check_against_dense(state)


@pytest.mark.parametrize("criterion", ["entropy", "info_gain", "nlp", "nlp_all"])
def test_batched_criteria_equal_brute_force(criterion):
    X, y = binary_problem(n=35, seed=7)
    kernel = C(1.3) * RBF(0.9)
    state = ADFState(kernel, X, y, 0.25, max_basis=7, chunk_size=8,
                     likelihood=Probit())  # several row blocks
    for j in (1, 4, 9, 16):
        state.add(j)
    J = state.candidates()
    batched = state.score(criterion, J)
    brute = []
    for j in J:
        new = copy.deepcopy(state)
        new.add(j)
        f_old, a_old = state.f_hat[j], state.diag_A[j]
        f_new, a_new = new.f_hat[j], new.diag_A[j]
        if criterion == "entropy":
            brute.append(np.log(a_new / a_old))  # log(1 - nu A) = log(A'/A)
        elif criterion == "info_gain":
            kl = 0.5 * (a_new / a_old - 1 - np.log(a_new / a_old) + (f_new - f_old) ** 2 / a_old)
            brute.append(-kl)
        else:
            brute.append(new.nlp(all_points=criterion == "nlp_all"))
    np.testing.assert_allclose(batched, brute, rtol=1e-7, atol=1e-10)
    assert np.all(np.isfinite(batched))


def test_sampling_weights_equation_11():
    X, y = binary_problem(n=20, seed=2)
    state = ADFState(RBF(1.0), X, y, 0.1, max_basis=3, likelihood=Probit())
    state.add(0)
    J = state.candidates()
    z = y[J] * (state.f_hat[J] + 0.1) / np.sqrt(1 + state.diag_A[J])
    np.testing.assert_allclose(state.sampling_weights(J), 1 - norm.cdf(z), rtol=1e-12)


def test_duplicate_points_give_a_regular_factor():
    X, y = binary_problem(n=12, seed=1)
    X = np.vstack([X, X, X])
    y = np.concatenate([y, y, y])
    state = ADFState(RBF(1.0), X, y, 0.0, max_basis=20, likelihood=Probit())
    for j in (0, 12, 24, 1, 13):  # the same points three times over
        state.add(j)
    _check_against_dense(state, atol=1e-8)
    assert np.all(np.diag(state.L[:5, :5]) >= 1.0 - 1e-12)  # B >= I
    for criterion in ("entropy", "info_gain", "nlp", "nlp_all"):
        assert not np.any(np.isnan(state.score(criterion, state.candidates())))


def test_white_kernel_diagonal_is_used():
    X, y = binary_problem(n=20, seed=4)
    kernel = C(1.2) * RBF(0.8) + WhiteKernel(0.3)
    state = ADFState(kernel, X, y, 0.1, max_basis=6, likelihood=Probit())
    for j in (0, 3, 8):
        state.add(j)
    _check_against_dense(state)
    J = state.candidates()
    brute = []
    for j in J:
        new = copy.deepcopy(state)
        new.add(j)
        brute.append(new.nlp())
    np.testing.assert_allclose(state.score("nlp", J), brute, rtol=1e-8)


def test_add_after_scoring_uses_the_scored_column_and_equals_dense():
    # add() takes K(X, x_j) from the last NLP-scored working set (WhiteKernel diagonal too)
    X, y = binary_problem(n=20, seed=5)
    kernel = C(1.2) * RBF(0.8) + WhiteKernel(0.3)
    scored = ADFState(kernel, X, y, -0.2, max_basis=6, likelihood=Probit())
    plain = ADFState(kernel, X, y, -0.2, max_basis=6, likelihood=Probit())
    for step in range(6):
        J = scored.candidates()[step::3]
        scored.score("nlp_all", J)
        j = J[-1]
        scored.add(j)
        plain.add(j)
    _check_against_dense(scored)
    np.testing.assert_allclose(scored.f_hat, plain.f_hat, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(scored.diag_A, plain.diag_A, rtol=1e-12, atol=1e-14)


def test_add_after_another_add_does_not_use_stale_scored_columns():
    # the kept posterior columns A_.J are those of the state that scored them: once another
    # point is added, add() must compute its column afresh
    X, y = binary_problem(n=30, seed=7)
    kernel = C(1.5) * RBF(0.7)
    state = ADFState(kernel, X, y, 0.2, max_basis=8, likelihood=Probit())
    for _ in range(3):
        J = state.candidates()[:4]
        state.score("nlp_all", J)
        state.add(int(J[0]))
        state.add(int(J[1]))  # scored before J[0] was added
    _check_against_dense(state)


@pytest.mark.parametrize("criterion", ["nlp", "nlp_all"])
def test_threads_over_row_blocks_give_identical_scores_and_state(criterion):
    # n_threads spreads the row blocks of a scored working set (and of the eq. (11) weights)
    # over threads; the per-block sums are added in block order, so nothing may change
    X, y = binary_problem(n=300, seed=8)
    kernel = C(1.3) * RBF(0.9)
    one = ADFState(kernel, X, y, 0.1, max_basis=12, chunk_size=37, likelihood=Probit())
    two = ADFState(kernel, X, y, 0.1, max_basis=12, chunk_size=37, n_threads=2,
                   likelihood=Probit())
    rng = np.random.RandomState(0)
    for _ in range(12):
        J = rng.choice(one.candidates(), size=5, replace=False)
        scores = one.score(criterion, J)
        np.testing.assert_array_equal(two.score(criterion, J), scores)
        np.testing.assert_array_equal(
            two.sampling_weights(two.candidates()), one.sampling_weights(one.candidates())
        )
        j = int(J[np.argmin(scores)])
        one.add(j)
        two.add(j)
    np.testing.assert_array_equal(two.f_hat, one.f_hat)
    np.testing.assert_array_equal(two.diag_A, one.diag_A)
    _check_against_dense(two)


def test_binary_fit_passes_n_jobs_to_the_row_threads(monkeypatch):
    # a binary problem spends n_jobs on the rows of each scored working set, a multiclass
    # one on the one-vs-rest models; the fitted model does not depend on it
    from skgpsparse.latent import _model as _classification_binary

    seen = []
    real = _classification_binary.ADFState

    def recording(*args, **kwargs):
        seen.append(kwargs["n_threads"])
        return real(*args, **kwargs)

    monkeypatch.setattr(_classification_binary, "ADFState", recording)
    X, y = make_moons(n_samples=80, noise=0.3, random_state=0)
    fits = [
        SparseGPClassifier(max_basis=6, max_iter=2, random_state=0, n_jobs=n_jobs).fit(X, y)
        for n_jobs in (1, 2)
    ]
    assert set(seen[: len(seen) // 2]) == {1} and set(seen[len(seen) // 2 :]) == {2}
    np.testing.assert_array_equal(fits[0].predict_proba(X), fits[1].predict_proba(X))
    seen.clear()
    X3, y3 = make_blobs(n_samples=90, centers=3, random_state=0)
    with parallel_config(backend="threading"):  # the workers see the recording ADFState
        SparseGPClassifier(max_basis=6, max_iter=2, random_state=0, n_jobs=2).fit(X3, y3)
    assert set(seen) == {1}


def test_multiclass_evidence_at_theta_with_parallel_jobs():
    # the binary models come back from joblib's worker processes pickled (without their
    # training rows): log_marginal_likelihood(theta) must still evaluate, equal to n_jobs=1
    X3, y3 = make_blobs(n_samples=90, centers=3, random_state=0)
    values = []
    for n_jobs in (1, 2):
        clf = SparseGPClassifier(max_basis=6, max_iter=2, random_state=0, n_jobs=n_jobs)
        clf.fit(X3, y3)
        theta = np.concatenate([k.theta for k in clf.kernels_])
        values.append(clf.log_marginal_likelihood(theta + 0.1))
    assert np.isfinite(values[0])
    np.testing.assert_allclose(values[1], values[0], rtol=1e-10)


def test_large_working_set_keeps_no_columns():
    # kappa = |u^c| (the validation paper's largest working set) would make the kept columns
    # n x n: only small working sets keep them; add() then computes its column itself
    from skgpsparse.inference._adf_rows import KEPT_COLUMNS

    X, y = binary_problem(n=KEPT_COLUMNS + 16, seed=6)
    state = ADFState(C(1.2) * RBF(0.8), X, y, 0.1, max_basis=3, likelihood=Probit())
    for _ in range(3):
        J = state.candidates()
        assert J.size > KEPT_COLUMNS
        scores = state.score("nlp", J)
        assert state._rows.kept is None
        state.add(int(J[np.argmin(scores)]))
    _check_against_dense(state)


# ---------------------------------------------------------------------------- the estimator
@pytest.fixture(autouse=True)
def _single_blas_thread():
    # tiny matrices: BLAS threads only contend on the shared 2-core test machine
    with threadpool_limits(limits=1, user_api="blas"):
        yield


def _dense_predictive(clf, X):
    """Validation paper eq. (2.7) with explicit inverses: f = k S B^-1 S m, s2 = k - k S B^-1 S k."""
    s = np.sqrt(clf.site_precision_)
    Xu = clf.basis_vectors_
    Binv = np.linalg.inv(np.eye(len(s)) + s[:, None] * clf.kernel_(Xu) * s[None, :])
    K = clf.kernel_(X, Xu)
    f = K @ (s * (Binv @ (s * clf.site_mean_)))
    s2 = clf.kernel_.diag(X) - np.einsum("ij,jk,ik->i", K * s, Binv, K * s)
    return f, s2, norm.cdf((f + clf.bias_) / np.sqrt(1 + s2))


@pytest.mark.parametrize("optimizer", [None, "fmin_l_bfgs_b"])
def test_predict_proba_matches_dense_eq_2_7(optimizer):
    X, y = make_moons(n_samples=120, noise=0.25, random_state=0)
    Xt = np.random.RandomState(1).uniform(-2, 3, size=(50, 2))
    clf = SparseGPClassifier(
        posterior="basis", max_basis=12, optimizer=optimizer, max_iter=3, random_state=0
    )
    clf.fit(X, y)
    f, s2, p1 = _dense_predictive(clf, Xt)
    mean, var = clf.latent_mean_and_variance(Xt)
    np.testing.assert_allclose(mean, f + clf.bias_, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(var, s2, rtol=1e-8, atol=1e-10)
    proba = clf.predict_proba(Xt)
    np.testing.assert_allclose(proba[:, 1], p1, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_allclose(clf.decision_function(Xt), (f + clf.bias_) / np.sqrt(1 + s2))
    np.testing.assert_allclose(np.exp(clf.predict_log_proba(Xt)), proba, rtol=1e-10)
    np.testing.assert_array_equal(clf.predict(Xt), clf.classes_[(p1 > 0.5).astype(int)])


@pytest.mark.parametrize("precision", [1e-3, 1.0, 1e4, 1e8])
def test_predictive_variance_gemm_form_equals_triangular_solve(precision):
    """``|W k|^2`` with the explicit ``W = L^-1 S`` equals ``|L^-1 (S k)|^2`` by a triangular
    solve, to round-off relative to the prior variance, also for near-duplicate basis points
    and huge site precisions (an ill-conditioned ``K_uu``, posterior variance ~0)."""
    from scipy.linalg import cholesky, solve_triangular

    from skgpsparse.latent._model import LatentSparseGP

    rng = np.random.default_rng(0)
    Xu = rng.normal(size=(40, 3))
    Xu[20:] = Xu[:20] + 1e-6 * rng.normal(size=(20, 3))  # near-duplicates
    model = LatentSparseGP(None, 40, None, None, 1, 0.0, 0)
    model.kernel_ = ConstantKernel(4.0) * RBF(3.0)
    model.basis_vectors_ = Xu
    model.site_precision_ = precision * rng.uniform(0.5, 2.0, size=40)
    model.site_mean_ = rng.normal(size=40)
    model.bias_ = 0.3
    model._set_predictive_factors()
    Xt = np.vstack([Xu[:10] + 1e-3 * rng.normal(size=(10, 3)), 3 * rng.normal(size=(30, 3))])
    mean, var = model.latent_mean_and_variance(Xt)

    s = np.sqrt(model.site_precision_)
    L = cholesky(np.eye(40) + s[:, None] * model.kernel_(Xu) * s[None, :], lower=True)
    K = model.kernel_(Xt, Xu)
    V = solve_triangular(L, (K * s).T, lower=True)
    prior = model.kernel_.diag(Xt)
    ref_var = np.maximum(prior - np.einsum("ij,ij->j", V, V), 0.0)
    z = solve_triangular(L, s * model.site_mean_, lower=True)
    ref_mean = K @ (s * solve_triangular(L.T, z, lower=False)) + model.bias_
    np.testing.assert_allclose(var, ref_var, rtol=0, atol=1e-10 * prior.max())
    # The mean is k_*u w with |w| ~ 1e6 here: equal to round-off in that sum.
    w = s * solve_triangular(L.T, z, lower=False)
    np.testing.assert_allclose(mean, ref_mean, rtol=0, atol=1e-12 * np.max(np.abs(K) @ np.abs(w)))
    assert np.all(np.isfinite(mean)) and np.all(var >= 0)


@pytest.mark.parametrize("optimizer", [None, "fmin_l_bfgs_b"])
def test_training_nlp_is_nlp_of_the_kept_model(optimizer):
    X, y = make_moons(n_samples=100, noise=0.3, random_state=2)
    clf = SparseGPClassifier(
        posterior="basis", max_basis=10, optimizer=optimizer, max_iter=4, random_state=0
    )
    clf.fit(X, y)
    y_pm = np.where(y == clf.classes_[1], 1.0, -1.0)
    nlp = nlp_loss(
        clf.kernel_, X, y_pm, clf.bias_, clf.basis_indices_, clf.site_mean_, clf.site_precision_,
        likelihood=Probit()
    )
    np.testing.assert_allclose(nlp, min(clf.loss_curve_), rtol=1e-8)
    assert clf.n_iter_ == len(clf.loss_curve_)
    np.testing.assert_array_equal(clf.basis_vectors_, X[clf.basis_indices_])
    if optimizer is None:
        assert clf.n_iter_ == 1
        # b from the class balance, kernel untouched
        # moons have 2 features: the default starts at RBF(sqrt(2))
        default = C(1.0, constant_value_bounds=(1e-5, 100.0)) * RBF(np.sqrt(2.0))
        assert clf.kernel_.get_params() == default.get_params()


def test_default_kernel_caps_the_amplitude():
    # Separable data: the NLP with the sites fixed rewards confidence, and without a cap the
    # amplitude runs to sklearn's default bound 1e5. The default kernel stops it at 100.
    X, y = make_blobs(n_samples=120, centers=[[-3, 0], [3, 0]], cluster_std=0.5, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf = SparseGPClassifier(max_basis=10, max_iter=5, random_state=0).fit(X, y)
        free = SparseGPClassifier(C(1.0) * RBF(1.0), max_basis=10, max_iter=5, random_state=0)
        free.fit(X, y)
    amplitude = clf.kernel_.k1.constant_value
    assert amplitude <= 100.0 * (1 + 1e-9)
    assert free.kernel_.k1.constant_value > 100.0  # the cap is what holds it
    assert np.all(np.isfinite(clf.predict_proba(X)))


def test_moons_accuracy():
    X, y = make_moons(n_samples=300, noise=0.2, random_state=0)
    Xt, yt = make_moons(n_samples=500, noise=0.2, random_state=1)
    clf = SparseGPClassifier(max_basis=30, random_state=0).fit(X, y)
    assert len(clf.basis_indices_) == 30
    assert clf.score(X, y) > 0.9
    assert clf.score(Xt, yt) > 0.9


def test_multiclass_string_labels():
    X, y = make_blobs(n_samples=150, centers=3, cluster_std=1.0, random_state=0)
    labels = np.array(["setosa", "versicolor", "virginica"], dtype=object)[y]
    clf = SparseGPClassifier(posterior="basis", max_basis=10, max_iter=2, random_state=0)
    clf.fit(X, labels)
    with parallel_config(backend="threading"):  # the n_jobs path, without process start-up
        par = SparseGPClassifier(
            posterior="basis", max_basis=10, max_iter=2, random_state=0, n_jobs=2
        )
        par.fit(X, labels)
    np.testing.assert_array_equal(par.predict_proba(X), clf.predict_proba(X))
    np.testing.assert_array_equal(clf.classes_, ["setosa", "versicolor", "virginica"])
    assert len(clf.estimators_) == 3 and len(clf.kernels_) == 3
    assert clf.bias_.shape == (3,) and len(clf.basis_indices_) == 3
    proba = clf.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    # one-vs-rest probabilities Phi(e_k) normalised per row
    _, _, p_k = zip(*(_dense_predictive(est, X) for est in clf.estimators_))
    p_k = np.column_stack(p_k)
    # (explicit inverse of an ill-conditioned B after the hyperparameter step: loose rtol)
    np.testing.assert_allclose(proba, p_k / p_k.sum(axis=1, keepdims=True), rtol=1e-5)
    assert np.mean(clf.predict(X) == labels) > 0.85
    with pytest.raises(ValueError, match="only supported for binary classification"):
        clf.latent_mean_and_variance(X[:7])  # as scikit-learn's GPC


def test_duplicates_and_huge_scale_never_nan():
    X, y = make_moons(n_samples=40, noise=0.2, random_state=0)
    X_dup = np.vstack([X[:5]] * 8)  # 40 rows, only 5 distinct points
    y_dup = np.tile(y[:5], 8)
    for Xf, yf in ((X_dup, y_dup), (X * 1e8, y), (X * 1e-8, y)):
        for selection in ("adaptive", "entropy", "info_gain", "nlp", "random"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                clf = SparseGPClassifier(
                    max_basis=20, selection=selection, max_iter=2, random_state=0
                ).fit(Xf, yf)
            for out in (
                clf.predict_proba(Xf),
                clf.predict_log_proba(Xf),
                clf.decision_function(Xf),
                *clf.latent_mean_and_variance(Xf),
            ):
                assert np.all(np.isfinite(out))


def test_zero_variance_candidates_stop_growth_with_warning():
    # DotProduct with sigma_0 = 0 and points at the origin: k(x, x) = 0 carries no information
    X = np.zeros((10, 2))
    X[:3] = [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]
    y = np.array([1, 0, 1, 0, 1, 0, 1, 0, 1, 0])
    kernel = DotProduct(sigma_0=0.0, sigma_0_bounds="fixed")
    with pytest.warns(RuntimeWarning, match="zero posterior variance"):
        clf = SparseGPClassifier(kernel, max_basis=8, optimizer=None, random_state=0).fit(X, y)
    assert len(clf.basis_indices_) <= 3
    assert np.all(np.isfinite(clf.predict_proba(X)))


def test_extreme_inputs_give_finite_log_proba():
    X, y = make_moons(n_samples=60, noise=0.1, random_state=0)
    clf = SparseGPClassifier(C(1e4) * RBF(1.0), max_basis=10, optimizer=None, random_state=0)
    clf.fit(X, y)
    log_p = clf.predict_log_proba(X)
    assert np.all(np.isfinite(log_p)) and np.all(log_p <= 0)


def test_random_state_reproducibility():
    X, y = make_moons(n_samples=80, noise=0.3, random_state=0)
    for selection in ("adaptive", "nlp", "random"):
        a = SparseGPClassifier(max_basis=8, selection=selection, max_iter=2, random_state=3)
        b = SparseGPClassifier(max_basis=8, selection=selection, max_iter=2, random_state=3)
        a.fit(X, y)
        b.fit(X, y)
        np.testing.assert_array_equal(a.basis_indices_, b.basis_indices_)
        np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))
    c = SparseGPClassifier(max_basis=8, selection="random", optimizer=None, random_state=4)
    assert not np.array_equal(c.fit(X, y).basis_indices_, a.basis_indices_)


def test_max_basis_clipped_with_warning():
    # the basis posterior keeps a held-out row for eq. (4); the all-rows one takes them all
    X, y = make_moons(n_samples=12, noise=0.1, random_state=0)
    with pytest.warns(UserWarning, match="max_basis"):
        clf = SparseGPClassifier(max_basis=50, optimizer=None, random_state=0,
                                 posterior="basis").fit(X, y)
    assert len(clf.basis_indices_) == 11
    with pytest.warns(UserWarning, match="using max_basis=12"):
        clf = SparseGPClassifier(max_basis=50, optimizer=None, random_state=0).fit(X, y)
    assert len(clf.basis_indices_) == 12


def test_one_class_and_invalid_values_raise():
    X, y = make_moons(n_samples=20, random_state=0)
    with pytest.raises(ValueError, match="requires 2 or more distinct classes; got 1 class"):
        SparseGPClassifier().fit(X, np.zeros(20))
    for params, name in (
        ({"site_update": "newton"}, "site_update"),
        ({"hyperparameter_objective": "loo"}, "hyperparameter_objective"),
        ({"n_exchange": -1}, "n_exchange"),
    ):
        with pytest.raises(ValueError, match=name):
            SparseGPClassifier(**params).fit(X, y)
    with pytest.raises(ValueError, match="selection"):
        SparseGPClassifier(selection="best").fit(X, y)


def test_selector_instance_and_callable_optimizer():
    X, y = make_moons(n_samples=60, noise=0.2, random_state=0)
    selector = GreedySelector("entropy", working_set_size=5)
    calls = []

    def optimizer(obj_func, initial_theta, bounds):
        value, grad = obj_func(initial_theta)
        assert grad.shape == initial_theta.shape == (bounds.shape[0],)
        calls.append(initial_theta)
        return initial_theta, value

    clf = SparseGPClassifier(
        max_basis=6, selection=selector, optimizer=optimizer, max_iter=3, random_state=0,
        posterior="basis",
    ).fit(X, y)
    params = selector.get_params()  # the selector itself is not fitted (it is cloned)
    assert {k: params[k] for k in ("criterion", "working_set_size", "sampling")} == {
        "criterion": "entropy",
        "working_set_size": 5,
        "sampling": "uniform",
    }
    assert len(calls) == clf.n_iter_ == 3  # [theta..., b] is 2 kernel + 1 bias long
    assert calls[0].shape == (3,)


def test_verbose_prints_one_line_per_outer_iteration(capsys):
    X, y = make_moons(n_samples=50, noise=0.2, random_state=0)
    clf = SparseGPClassifier(
        posterior="basis", max_basis=5, max_iter=3, verbose=1, tol=1.0, random_state=0
    )
    clf.fit(X, y)
    lines = [ln for ln in capsys.readouterr().out.splitlines() if "NLP" in ln]
    assert len(lines) == clf.n_iter_ >= 1
    assert "basis 5" in lines[0]


def test_fit_runs_blas_on_one_thread_and_restores_it(monkeypatch):
    # Two BLAS threads made whole fits slower in wall time on a two-core machine (the NLP
    # gradient's products are small); the fit limits BLAS to one thread and gives it back.
    import skgpsparse.latent._model as binary

    seen = record_blas_threads(monkeypatch, binary, "nlp_loss")
    X, y = make_moons(n_samples=80, noise=0.3, random_state=0)
    with threadpool_limits(limits=2, user_api="blas"):
        before = blas_thread_counts()
        SparseGPClassifier(posterior="basis", max_basis=8, max_iter=2, random_state=0).fit(X, y)
        assert blas_thread_counts() == before
    assert seen and all(t == [1] * len(t) for t in seen)
