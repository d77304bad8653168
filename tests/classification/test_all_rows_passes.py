"""Tests of the all-rows EP's passes over row blocks (the ADF start, the fused EP sweep) and of
the reuse of a fit's prior and converged EP run."""

import numpy as np
import pytest
from scipy.stats import norm
from sklearn.gaussian_process.kernels import RBF
from sklearn.gaussian_process.kernels import ConstantKernel as C

from skgpsparse.inference import _ep_passes as passes
from skgpsparse.inference._ep import (
    all_rows_ep,
    negative_log_evidence_all_rows,
    weight_posterior_of,
)
from skgpsparse.inference._row_columns import StoredColumns
from skgpsparse.inference._sparse_prior import SparsePrior, reusing_priors
from skgpsparse.likelihoods import Probit


def _problem(n=60, seed=0, prior="fitc"):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, 2)
    y = np.where(np.sin(2.0 * X[:, 0]) + 0.5 * rng.randn(n) > 0, 1.0, -1.0)
    sparse = SparsePrior(C(1.3) * RBF(0.9), X, X[::5], prior)
    return sparse, y


def _dense(sparse):
    """The sparse prior's covariance of the latents written densely: ``Q + Lambda``."""
    return sparse.V.T @ sparse.V + np.diag(sparse.lam)


def _dense_marginals(K, tau, nu):
    """``Sigma = (K^-1 + T)^-1``, as ``K - K S (I + S K S)^-1 S K`` with ``S = T^1/2``, and
    ``Sigma nu``."""
    s = np.sqrt(tau)
    inner = np.eye(tau.size) + s[:, None] * K * s[None, :]
    Sigma = K - K @ (s[:, None] * np.linalg.solve(inner, s[:, None] * K))
    return Sigma @ nu, np.diag(Sigma)


def _gpml_sites(mc, s2c, y, bias):
    """GPML eqs. (3.58)-(3.59) with scipy's normal: the sites matching the tilted moments."""
    z = y * (mc + bias) / np.sqrt(1.0 + s2c)
    ratio = norm.pdf(z) / norm.cdf(z)
    mh = mc + y * s2c * ratio / np.sqrt(1.0 + s2c)
    s2h = s2c - s2c**2 * ratio * (z + ratio) / (1.0 + s2c)
    return 1.0 / s2h - 1.0 / s2c, mh / s2h - mc / s2c


def _dense_adf(K, y, bias, rows):
    """ADF by blocks of ``rows`` rows on the dense covariance: each row's site matches its
    marginal under the sites of the blocks before it (``rows=1``: sequential ADF)."""
    n = y.size
    tau, nu = np.zeros(n), np.zeros(n)
    for start in range(0, n, rows):
        J = slice(start, min(start + rows, n))
        mu, s2 = _dense_marginals(K, tau, nu)
        tau[J], nu[J] = _gpml_sites(mu[J], s2[J], y[J], bias)
    return tau, nu


@pytest.mark.parametrize("prior", ["fitc", "dtc"])
@pytest.mark.parametrize("rows", [1, 7, 1000])
def test_adf_pass_is_the_dense_adf(prior, rows):
    sparse, y = _problem(prior=prior)
    tau, nu, post = passes.adf_sites(sparse, y, 0.2, rows=rows)
    tau_d, nu_d = _dense_adf(_dense(sparse), y, 0.2, rows)
    np.testing.assert_allclose(tau, tau_d, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(nu, nu_d, rtol=1e-8, atol=1e-12)
    # the returned posterior of w is that of the final sites
    again = passes.system(sparse, tau, nu)
    np.testing.assert_allclose(post.L_B, again.L_B, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(post.mean_w, again.mean_w, rtol=1e-10, atol=1e-12)


def test_sequential_adf_sites_depend_on_the_rows_before_them_only():
    # the first row's site comes from the prior marginal; a later one from the posterior
    sparse, y = _problem()
    tau, nu, _ = passes.adf_sites(sparse, y, 0.0, rows=1)
    prior_var = _dense(sparse)[0, 0]
    np.testing.assert_allclose([tau[0], nu[0]], _gpml_sites(0.0, prior_var, y[0], 0.0))
    tau_prefix, nu_prefix = _dense_adf(_dense(sparse)[:20, :20], y[:20], 0.0, 1)
    np.testing.assert_allclose(tau[:20], tau_prefix, rtol=1e-8)
    np.testing.assert_allclose(nu[:20], nu_prefix, rtol=1e-8)


@pytest.mark.parametrize("prior", ["fitc", "dtc"])
def test_adf_start_reaches_the_fixed_point_of_the_zero_start(prior):
    sparse, y = _problem(120, seed=3, prior=prior)
    n = y.size
    zero = all_rows_ep(sparse, y, -0.3, np.zeros(n), np.zeros(n), tol=1e-12)
    adf = all_rows_ep(sparse, y, -0.3, tol=1e-12)
    assert zero[3] and adf[3]
    np.testing.assert_allclose(adf[0], zero[0], rtol=0, atol=1e-6)
    np.testing.assert_allclose(adf[1], zero[1], rtol=0, atol=1e-6)
    value_zero, _ = negative_log_evidence_all_rows(
        sparse, y, -0.3, np.zeros(n), np.zeros(n), tol=1e-12
    )
    value_adf, _ = negative_log_evidence_all_rows(sparse, y, -0.3, tol=1e-12)
    np.testing.assert_allclose(value_adf, value_zero, rtol=1e-6)



@pytest.mark.parametrize("prior", ["fitc", "dtc"])
@pytest.mark.parametrize("start", ["adf", "zero"])
def test_anderson_accelerated_ep_reaches_the_plain_fixed_point(prior, start):
    # a large amplitude saturates the probit: plain parallel EP converges slowly there
    rng = np.random.RandomState(4)
    X = rng.randn(150, 2)
    y = np.where(X[:, 0] + 0.3 * rng.randn(150) > 0.8, 1.0, -1.0)
    sparse = SparsePrior(C(60.0) * RBF(1.2), X, X[::6], prior)
    sites = (None, None) if start == "adf" else (np.zeros(150), np.zeros(150))
    plain = all_rows_ep(sparse, y, -2.0, *sites, tol=1e-11, max_sweeps=2000)
    fast = all_rows_ep(sparse, y, -2.0, *sites, tol=1e-11, accelerate=True)
    assert plain[3] and fast[3]
    np.testing.assert_allclose(fast[0], plain[0], rtol=0, atol=1e-8)
    np.testing.assert_allclose(fast[1], plain[1], rtol=0, atol=1e-8)
    # the marginals returned are those of the returned sites
    np.testing.assert_allclose(fast[2][0], plain[2][0], rtol=0, atol=1e-7)
    np.testing.assert_allclose(fast[2][1], plain[2][1], rtol=1e-7)


def _random_sites(n, seed):
    rng = np.random.RandomState(seed)
    tau = rng.uniform(0.0, 0.8, n)
    tau[::4] = 0.0  # rows without a site yet
    return tau, np.where(tau > 0, rng.randn(n) * tau, 0.0)


@pytest.fixture(params=[None, 7], ids=["one_block", "blocks_of_7"])
def block(request, monkeypatch):
    """Passes in one block, or in blocks of 7 rows (the last one shorter)."""
    if request.param is not None:
        monkeypatch.setattr(passes, "block_rows", lambda p: request.param)
    return request.param


@pytest.mark.parametrize("prior", ["fitc", "dtc"])
def test_fused_sweep_is_the_two_pass_sweep(prior, block):
    # one pass gives the marginals of the current sites, the new sites, and the system of the
    # damped new sites: each against the dense formula
    sparse, y = _problem(prior=prior)
    tau, nu = _random_sites(y.size, 1)
    post = passes.system(sparse, tau, nu)
    (mu, s2, uu), (new_tau, new_nu), (S, Va) = passes.ep_sweep(
        sparse, y, 0.1, tau, nu, post, 0.5
    )
    K = _dense(sparse)
    mu_d, s2_d = _dense_marginals(K, tau, nu)
    np.testing.assert_allclose(mu, mu_d, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(s2, s2_d, rtol=1e-8, atol=1e-10)
    s2c = 1.0 / (1.0 / s2_d - tau)  # GPML eq. (3.56)
    mc = s2c * (mu_d / s2_d - nu)
    tau_d, nu_d = _gpml_sites(mc, s2c, y, 0.1)
    np.testing.assert_allclose(new_tau, tau_d, rtol=1e-7, atol=1e-10)
    np.testing.assert_allclose(new_nu, nu_d, rtol=1e-7, atol=1e-10)
    # uu = |L_B^-1 v_i|^2 and the system of the damped sites, B - I = V G V^T
    V, lam = sparse.V, sparse.lam
    g0 = tau / (1.0 + lam * tau)
    B = np.eye(V.shape[0]) + (V * g0) @ V.T
    np.testing.assert_allclose(uu, np.einsum("ij,ij->j", V, np.linalg.solve(B, V)), rtol=1e-8)
    t_half, n_half = tau + 0.5 * (new_tau - tau), nu + 0.5 * (new_nu - nu)
    h = 1.0 + lam * t_half
    np.testing.assert_allclose(np.tril(S), np.tril((V * (t_half / h)) @ V.T), atol=1e-10)
    np.testing.assert_allclose(Va, V @ (n_half / h), rtol=1e-10, atol=1e-12)


def _reference_ep(K, y, bias, tau, nu, sweeps):
    """The previous parallel EP on the dense covariance: marginals, then all sites, damped
    by half whenever the largest change grows."""
    damping, last = 1.0, np.inf
    for _ in range(sweeps):
        mu, s2 = _dense_marginals(K, tau, nu)
        s2c = 1.0 / (1.0 / s2 - tau)
        mc = s2c * (mu / s2 - nu)
        new_tau, new_nu = _gpml_sites(mc, s2c, y, bias)
        change = max(np.max(np.abs(new_tau - tau)), np.max(np.abs(new_nu - nu)))
        if change > last:
            damping = max(0.5 * damping, 0.05)
        last = change
        tau, nu = tau + damping * (new_tau - tau), nu + damping * (new_nu - nu)
    return tau, nu


@pytest.mark.parametrize("sweeps", [1, 3, 8])
def test_ep_sweeps_follow_the_two_pass_iteration(sweeps, block):
    sparse, y = _problem(seed=2)
    tau0, nu0 = _random_sites(y.size, 4)
    tau, nu, (mu, s2, _), _ = all_rows_ep(
        sparse, y, -0.1, tau0, nu0, tol=0.0, max_sweeps=sweeps
    )
    K = _dense(sparse)
    tau_d, nu_d = _reference_ep(K, y, -0.1, tau0, nu0, sweeps)
    np.testing.assert_allclose(tau, tau_d, rtol=1e-7, atol=1e-10)
    np.testing.assert_allclose(nu, nu_d, rtol=1e-7, atol=1e-10)
    mu_d, s2_d = _dense_marginals(K, tau_d, nu_d)  # the returned marginals are the sites'
    np.testing.assert_allclose(mu, mu_d, rtol=1e-7, atol=1e-10)
    np.testing.assert_allclose(s2, s2_d, rtol=1e-7, atol=1e-10)


def test_passes_read_either_layout_of_v():
    sparse, y = _problem()
    tau, nu = _random_sites(y.size, 5)
    post_f = passes.system(sparse, tau, nu)
    sparse.columns = StoredColumns(np.ascontiguousarray(sparse.V))
    post_c = passes.system(sparse, tau, nu)
    np.testing.assert_allclose(post_c.L_B, post_f.L_B, rtol=1e-12)
    np.testing.assert_allclose(post_c.mean_w, post_f.mean_w, rtol=1e-12)


def test_a_prior_is_reused_only_inside_reusing_priors_and_for_the_same_arguments():
    rng = np.random.RandomState(0)
    X = rng.randn(50, 2)
    kernel = C(1.3) * RBF(0.9)
    first = SparsePrior(kernel, X, X[::5])
    assert SparsePrior(kernel, X, X[::5]).V is not first.V  # outside: built again
    with reusing_priors():
        inside = SparsePrior(kernel, X, X[::5])
        # the same kernel through log space (exp(log(x)) may differ from x), basis by value
        again = SparsePrior(kernel.clone_with_theta(kernel.theta), X, X[::5].copy())
        assert again.V is inside.V
        np.testing.assert_array_equal(inside.V, first.V)
        for other in (
            SparsePrior(kernel.clone_with_theta(kernel.theta + 1e-6), X, X[::5]),
            SparsePrior(kernel, X.copy(), X[::5]),
            SparsePrior(kernel, X, X[1::5]),
            SparsePrior(C(1.3) * RBF(0.9, length_scale_bounds="fixed"), X, X[::5]),
            SparsePrior(kernel, X, X[::5], "dtc"),
        ):
            assert other.V is not inside.V
    assert SparsePrior(kernel, X, X[::5]).V is not inside.V  # released at the end


def test_a_converged_run_is_read_back_only_for_its_own_sites_labels_and_bias():
    sparse, y = _problem(seed=5)
    value, (tau, nu) = negative_log_evidence_all_rows(sparse, y, 0.2)
    fresh = SparsePrior(sparse.kernel, sparse.X, sparse.X_u)  # no converged run on it
    # the fitted model's route: the sites through site_mean_ = nu / tau
    site_mean = np.divide(nu, tau, out=np.zeros_like(nu), where=tau > 0)
    for start in [(tau, nu), (tau, tau * site_mean)]:
        again, _ = negative_log_evidence_all_rows(sparse, y, 0.2, *start)
        np.testing.assert_allclose(again, value, rtol=1e-12)
        np.testing.assert_allclose(
            again, negative_log_evidence_all_rows(fresh, y, 0.2, *start)[0], rtol=1e-9
        )
    post = weight_posterior_of(sparse, tau, tau * site_mean)
    direct = passes.system(sparse, tau, nu)
    np.testing.assert_allclose(post[0], direct.L_B, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(post[2], direct.mean_w, rtol=1e-9, atol=1e-12)
    # another bias, other labels or other sites run EP again
    for labels, bias in [(y, 0.3), (-y, 0.2)]:
        other = all_rows_ep(sparse, labels, bias, tau, nu)
        assert other[3] and not np.allclose(other[0], tau, rtol=1e-3)
    value_other, _ = negative_log_evidence_all_rows(sparse, y, 0.2, tau * 0.5, nu * 0.5)
    np.testing.assert_allclose(value_other, value, rtol=1e-6)  # EP from there: same point


@pytest.mark.parametrize("prior", ["fitc", "dtc"])
def test_evidence_gradient_by_row_blocks_is_the_one_block_gradient(prior, monkeypatch):
    # the gradient forms M P^T a block of rows at a time; its finite-difference check runs
    # on one block (tests/classification/test_all_rows_ep.py)
    from skgpsparse.inference import _ep

    sparse, y = _problem(prior=prior)
    one = negative_log_evidence_all_rows(sparse, y, 0.1, eval_gradient=True, tol=1e-10)
    monkeypatch.setattr(_ep, "block_rows", lambda p: 7)
    monkeypatch.setattr(passes, "block_rows", lambda p: 7)
    blocks = negative_log_evidence_all_rows(sparse, y, 0.1, eval_gradient=True, tol=1e-10)
    np.testing.assert_allclose(blocks[0], one[0], rtol=1e-12)
    np.testing.assert_allclose(blocks[1], one[1], rtol=1e-9, atol=1e-12)


def test_random_selection_under_all_rows_draws_the_basis_of_the_adf_state():
    # the all-rows posterior with random selection builds no basis posterior; on rows without
    # duplicates it draws the same basis as the ADF state from the same generator
    from skgpsparse.inference._adf import ADFState
    from skgpsparse.latent._model import (
        LatentSparseGP,
        _make_selector,
    )
    from skgpsparse.latent.learning._drawn_basis import DrawnBasis

    rng = np.random.RandomState(0)
    X = rng.randn(200, 3)
    y = np.where(X[:, 0] + 0.3 * rng.randn(200) > 0, 1.0, -1.0)
    kernel = C(1.0) * RBF(1.5)
    model = LatentSparseGP(
        kernel, 20, _make_selector("random", None), None, 1, 1e-3, 0, posterior="all_rows"
    )
    drawn = model._select(kernel, X, y, 0.0, np.random.RandomState(3))
    assert isinstance(drawn, DrawnBasis) and drawn.size == 20
    assert np.isnan(model._last_exchange_curve[0])  # no basis posterior, no NLP_a
    adf = model._select_into(ADFState(kernel, X, y, 0.0, 20, likelihood=Probit()),
                             np.random.RandomState(3))
    np.testing.assert_array_equal(drawn.basis_indices, adf.basis_indices)
    # duplicated rows: the draw may take a duplicate; the prior's jitter keeps the fit finite
    X_dup = np.repeat(X[:10], 3, axis=0)
    y_dup = np.repeat(y[:10], 3)
    model = LatentSparseGP(
        kernel, 15, _make_selector("random", None), None, 1, 1e-3, 0, posterior="all_rows"
    ).fit(X_dup, y_dup, np.random.RandomState(0))
    assert np.all(np.isfinite(model.moderated_margin(X[:10])))
