"""Tests for skgpsparse.kernels: gradients of K(X, Z) and of the diagonal."""

import itertools
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.gaussian_process.kernels import (
    RBF,
    ConstantKernel,
    DotProduct,
    Exponentiation,
    ExpSineSquared,
    Matern,
    PairwiseKernel,
    Product,
    RationalQuadratic,
    WhiteKernel,
)

from skgpsparse.kernels import (
    KernelGradientWarning,
    iter_kernel,
    iter_kernel_gradient,
    kernel_diag_gradient,
    kernel_gradient,
)
from skgpsparse.kernels import _gradients as kernels_module

C = ConstantKernel
FIXED = "fixed"

ANALYTIC_KERNELS = {
    "rbf": RBF(1.3),
    "rbf-ard": RBF([0.7, 1.5, 2.2]),
    "matern0.5": Matern(1.2, nu=0.5),
    "matern0.5-ard": Matern([0.7, 1.5, 2.2], nu=0.5),
    "matern1.5": Matern(1.2, nu=1.5),
    "matern1.5-ard": Matern([0.7, 1.5, 2.2], nu=1.5),
    "matern2.5": Matern(1.2, nu=2.5),
    "matern2.5-ard": Matern([0.7, 1.5, 2.2], nu=2.5),
    "matern-inf": Matern(1.2, nu=np.inf),
    "matern-inf-ard": Matern([0.7, 1.5, 2.2], nu=np.inf),
    "rational-quadratic": RationalQuadratic(length_scale=1.3, alpha=0.7),
    "rational-quadratic-fixed-alpha": RationalQuadratic(alpha=2.0, alpha_bounds=FIXED),
    "dot-product": DotProduct(sigma_0=0.8),
    "constant": C(2.5),
    "white": WhiteKernel(0.3),
    "c*rbf+white": C(2.0) * RBF([0.7, 1.5, 2.2]) + WhiteKernel(0.3),
    "c*matern-ard+rq": C(1.5) * Matern([0.7, 1.5, 2.2], nu=2.5) + RationalQuadratic(0.9, 1.7),
    "(rbf+dot)**2": Exponentiation(RBF(2.0) + DotProduct(0.5), 2),
    "rbf**1.5": Exponentiation(RBF([0.7, 1.5, 2.2]), 1.5),
    "fixed-rbf*c": RBF(1.3, length_scale_bounds=FIXED) * C(2.0),
    "c*fixed-ard+matern": C(0.5) * RBF([1.0, 2.0, 3.0], length_scale_bounds=FIXED)
    + Matern(0.9, nu=0.5),
    "nested": (C(1.2) * RBF(0.8) + C(0.4, constant_value_bounds=FIXED) * DotProduct(0.3))
    * Matern([0.7, 1.5, 2.2], nu=1.5)
    + WhiteKernel(0.1),
}

FALLBACK_KERNELS = {
    "exp-sine-squared": ExpSineSquared(length_scale=1.2, periodicity=2.5),
    "matern-nu0.7": Matern([0.7, 1.5, 2.2], nu=0.7),
    "pairwise-laplacian": PairwiseKernel(gamma=0.4, metric="laplacian"),
    "c*ess+white": C(2.0) * ExpSineSquared(1.2, 2.5) + WhiteKernel(0.3),
}


class ScaledRBF(RBF):
    """An RBF subclass with a different __call__: must not get RBF's analytic formula."""

    def __call__(self, X, Y=None, eval_gradient=False):
        if eval_gradient:
            K, dK = super().__call__(X, Y, eval_gradient=True)
            return 3.0 * K, 3.0 * dK
        return 3.0 * super().__call__(X, Y)

    def diag(self, X):
        return 3.0 * super().diag(X)


def _ids(d):
    return list(d.keys())


def _fd_gradient(kernel, f, h=1e-6):
    """Central differences of f(kernel) in kernel.theta (log-hyperparameters)."""
    theta = kernel.theta
    columns = []
    for i in range(theta.size):
        step = np.zeros_like(theta)
        step[i] = h
        plus = f(kernel.clone_with_theta(theta + step))
        minus = f(kernel.clone_with_theta(theta - step))
        columns.append((plus - minus) / (2.0 * h))
    shape = np.shape(f(kernel)) + (0,)
    return np.stack(columns, axis=-1) if columns else np.empty(shape)


def _rel_err(actual, expected):
    assert actual.shape == expected.shape
    if actual.size == 0:
        return 0.0
    return np.max(np.abs(actual - expected)) / max(np.max(np.abs(expected)), 1e-300)


def _contains(kernel, cls):
    return any(isinstance(k, cls) for k in _leaves(kernel))


def _leaves(kernel):
    if isinstance(kernel, Exponentiation):
        return _leaves(kernel.kernel)
    if hasattr(kernel, "k1"):
        return _leaves(kernel.k1) + _leaves(kernel.k2)
    return [kernel]


@pytest.fixture
def data():
    rng = np.random.RandomState(0)
    X = rng.randn(7, 3)
    # include a row equal to a row of X: exercises r = 0 (e.g. Matern nu=0.5's K / r)
    Z = np.vstack([rng.randn(4, 3), X[2:3]])
    return X, Z


@pytest.fixture(autouse=True)
def fresh_warning_registry(monkeypatch):
    """Each test sees the fallback warning as if no kernel had warned before."""
    monkeypatch.setattr(kernels_module, "_WARNED_CLASSES", set())


# ----------------------------------------------------------------------------- analytic


@pytest.mark.parametrize("kernel", ANALYTIC_KERNELS.values(), ids=_ids(ANALYTIC_KERNELS))
def test_analytic_gradient_matches_finite_differences(kernel, data):
    X, Z = data
    with warnings.catch_warnings():
        warnings.simplefilter("error", KernelGradientWarning)  # analytic: must not warn
        K, dK = kernel_gradient(kernel, X, Z)
    np.testing.assert_allclose(K, kernel(X, Z), rtol=1e-12, atol=1e-15)
    assert dK.shape == (X.shape[0], Z.shape[0], kernel.theta.size)
    assert _rel_err(dK, _fd_gradient(kernel, lambda k: k(X, Z))) <= 1e-6


@pytest.mark.parametrize("kernel", ANALYTIC_KERNELS.values(), ids=_ids(ANALYTIC_KERNELS))
def test_analytic_diag_gradient_matches_finite_differences(kernel, data):
    X, _ = data
    with warnings.catch_warnings():
        warnings.simplefilter("error", KernelGradientWarning)
        diag, dDiag = kernel_diag_gradient(kernel, X)
    np.testing.assert_allclose(diag, kernel.diag(X), rtol=1e-12, atol=1e-15)
    assert dDiag.shape == (X.shape[0], kernel.theta.size)
    assert _rel_err(dDiag, _fd_gradient(kernel, lambda k: k.diag(X))) <= 1e-6


# sklearn's WhiteKernel puts noise on the diagonal only for kernel(X), not kernel(X, X);
# kernel_gradient follows kernel(X, Z), so kernels with a WhiteKernel term are compared in
# test_white_kernel_cross_covariance_is_zero_but_diag_is_not instead.
NO_WHITE_KERNELS = {
    name: kernel for name, kernel in ANALYTIC_KERNELS.items() if not _contains(kernel, WhiteKernel)
}


@pytest.mark.parametrize("kernel", NO_WHITE_KERNELS.values(), ids=_ids(NO_WHITE_KERNELS))
def test_same_inputs_match_sklearn_eval_gradient(kernel, data):
    X, _ = data
    K, dK = kernel_gradient(kernel, X, X)
    K_ref, dK_ref = kernel(X, eval_gradient=True)
    np.testing.assert_allclose(K, K_ref, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(dK, dK_ref, rtol=1e-10, atol=1e-12)


def test_white_kernel_cross_covariance_is_zero_but_diag_is_not(data):
    X, _ = data
    kernel = WhiteKernel(0.3)
    K, dK = kernel_gradient(kernel, X, X)
    assert not K.any() and not dK.any()
    assert dK.shape == (7, 7, 1)
    diag, dDiag = kernel_diag_gradient(kernel, X)
    np.testing.assert_allclose(diag, 0.3)
    np.testing.assert_allclose(dDiag, 0.3)
    # sklearn's self-covariance convention, which kernel_gradient deliberately does not follow
    np.testing.assert_allclose(kernel(X, eval_gradient=True)[1][..., 0], 0.3 * np.eye(7))


def test_length_one_array_length_scale_counts_as_one_theta():
    # sklearn squeezes length_scale=[l]: isotropic, one theta (needs one feature)
    rng = np.random.RandomState(1)
    X, Z = rng.randn(6, 1), rng.randn(4, 1)
    for kernel in (RBF([1.3]), Matern([1.3], nu=0.5), Matern([1.3], nu=2.5)):
        K, dK = kernel_gradient(kernel, X, Z)
        assert kernel.hyperparameter_length_scale.n_elements == 1
        assert dK.shape == (6, 4, kernel.theta.size)
        np.testing.assert_allclose(K, kernel(X, Z), rtol=1e-12)
        assert _rel_err(dK, _fd_gradient(kernel, lambda k: k(X, Z))) <= 1e-6


def test_theta_order_follows_sklearn(data):
    # RationalQuadratic's hyperparameters are ordered (alpha, length_scale) by sklearn
    X, Z = data
    kernel = RationalQuadratic(length_scale=1.3, alpha=0.7)
    _, dK = kernel_gradient(kernel, X, Z)
    only_alpha = RationalQuadratic(length_scale=1.3, alpha=0.7, length_scale_bounds=FIXED)
    np.testing.assert_allclose(dK[..., :1], kernel_gradient(only_alpha, X, Z)[1])


@pytest.mark.parametrize(
    "kernel",
    [
        RBF([1.0, 2.0, 3.0], length_scale_bounds=FIXED),
        C(2.0, constant_value_bounds=FIXED) * Matern(1.0, length_scale_bounds=FIXED)
        + WhiteKernel(0.1, noise_level_bounds=FIXED),
        Exponentiation(DotProduct(1.0, sigma_0_bounds=FIXED), 3),
    ],
)
def test_all_fixed_hyperparameters_give_empty_gradients(kernel, data):
    X, Z = data
    assert kernel.theta.size == 0
    K, dK = kernel_gradient(kernel, X, Z)
    np.testing.assert_allclose(K, kernel(X, Z), rtol=1e-12)
    assert dK.shape == (7, 5, 0)
    diag, dDiag = kernel_diag_gradient(kernel, X)
    np.testing.assert_allclose(diag, kernel.diag(X), rtol=1e-12)
    assert dDiag.shape == (7, 0)


# ----------------------------------------------------------------------------- fallback


@pytest.mark.parametrize("kernel", FALLBACK_KERNELS.values(), ids=_ids(FALLBACK_KERNELS))
def test_fallback_warns_once_and_is_accurate(kernel, data):
    X, Z = data
    with pytest.warns(KernelGradientWarning, match=r"ExpSineSquared|Matern|PairwiseKernel"):
        K, dK = kernel_gradient(kernel, X, Z)
    np.testing.assert_allclose(K, kernel(X, Z), rtol=1e-12, atol=1e-15)
    assert _rel_err(dK, _fd_gradient(kernel, lambda k: k(X, Z))) <= 1e-6
    with warnings.catch_warnings():
        warnings.simplefilter("error", KernelGradientWarning)  # once per class
        diag, dDiag = kernel_diag_gradient(kernel, X)
    np.testing.assert_allclose(diag, kernel.diag(X), rtol=1e-12, atol=1e-15)
    assert _rel_err(dDiag, _fd_gradient(kernel, lambda k: k.diag(X))) <= 1e-6


def test_subclass_of_supported_kernel_takes_fallback(data):
    X, Z = data
    kernel = ScaledRBF([0.7, 1.5, 2.2])
    with pytest.warns(KernelGradientWarning, match="ScaledRBF"):
        K, dK = kernel_gradient(kernel, X, Z)
    np.testing.assert_allclose(K, kernel(X, Z), rtol=1e-12)
    _, dK_rbf = kernel_gradient(RBF([0.7, 1.5, 2.2]), X, Z)
    assert _rel_err(dK, 3.0 * dK_rbf) <= 1e-6


def test_fallback_warning_is_a_user_warning():
    assert issubclass(KernelGradientWarning, UserWarning)


# ----------------------------------------------------------------------------- chunking


@pytest.mark.parametrize("chunk_size", [1, 7, 10_000, None])
@pytest.mark.parametrize(
    "kernel",
    [C(2.0) * RBF([0.7, 1.5, 2.2]) + WhiteKernel(0.3), ExpSineSquared(1.2, 2.5)],
    ids=["analytic", "fallback"],
)
def test_chunked_iterators_concatenate_to_unchunked(kernel, chunk_size):
    rng = np.random.RandomState(2)
    X, Z = rng.randn(23, 3), rng.randn(6, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", KernelGradientWarning)
        K, dK = kernel_gradient(kernel, X, Z)
        blocks = list(iter_kernel_gradient(kernel, X, Z, chunk_size=chunk_size))
    assert blocks[0][0].start == 0 and blocks[-1][0].stop == 23
    assert all(a[0].stop == b[0].start for a, b in itertools.pairwise(blocks))
    if chunk_size is not None:
        assert len(blocks) == -(-23 // chunk_size)
    np.testing.assert_array_equal(np.concatenate([b[1] for b in blocks]), K)
    np.testing.assert_array_equal(np.concatenate([b[2] for b in blocks]), dK)
    plain = list(iter_kernel(kernel, X, Z, chunk_size=chunk_size))
    assert [b[0] for b in plain] == [b[0] for b in blocks]
    np.testing.assert_allclose(np.concatenate([b[1] for b in plain]), K, rtol=1e-12)


def test_default_chunk_size_follows_memory_budget(monkeypatch):
    # shrink the budget to 4 KB: 4096 // (8 * 4 * 2) = 64 rows of X per block
    monkeypatch.setattr(kernels_module, "_CHUNK_BYTES", 4096)
    X, Z = np.zeros((150, 2)), np.zeros((4, 2))
    kernel = RBF([1.0, 2.0])
    assert [b[0].stop for b in iter_kernel_gradient(kernel, X, Z)] == [64, 128, 150]
    assert [b[0].stop for b in iter_kernel(kernel, X, Z)] == [128, 150]


@pytest.mark.parametrize(
    "chunk_size, error", [(0, ValueError), (-3, ValueError), (2.5, TypeError), (True, TypeError)]
)
def test_bad_chunk_size_raises_at_call(chunk_size, error):
    X = np.zeros((3, 2))
    with pytest.raises(error, match="chunk_size"):
        iter_kernel_gradient(RBF(), X, X, chunk_size=chunk_size)
    with pytest.raises(error, match="chunk_size"):
        iter_kernel(RBF(), X, X, chunk_size=chunk_size)


# ----------------------------------------------------------------------------- input checks


def test_input_validation():
    X = np.zeros((3, 2))
    with pytest.raises(ValueError, match="X must be a 2-D"):
        kernel_gradient(RBF(), np.zeros(3), X)
    with pytest.raises(ValueError, match="Z must be a 2-D"):
        kernel_gradient(RBF(), X, np.zeros(3))
    with pytest.raises(ValueError, match="same number of features"):
        kernel_gradient(RBF(), X, np.zeros((3, 4)))
    with pytest.raises(ValueError, match="one entry per feature"):
        kernel_gradient(RBF([1.0, 2.0, 3.0]), X, X)
    with pytest.raises(TypeError, match="kernel must be a scikit-learn Kernel"):
        kernel_gradient("rbf", X, X)
    with pytest.raises(TypeError, match="kernel must be a scikit-learn Kernel"):
        kernel_diag_gradient(None, X)


def test_list_inputs_and_empty_rows():
    K, dK = kernel_gradient(RBF(), [[0.0, 1.0]], [[1.0, 1.0], [0.0, 0.0]])
    assert K.shape == (1, 2) and dK.shape == (1, 2, 1)
    K, dK = kernel_gradient(C() * RBF([1.0, 2.0]), np.zeros((0, 2)), np.zeros((3, 2)))
    assert K.shape == (0, 3) and dK.shape == (0, 3, 3)


# ----------------------------------------------------------------------------- properties


@settings(max_examples=15, deadline=None)
@given(
    log_params=st.lists(st.floats(-1.5, 1.5), min_size=6, max_size=6),
    nu=st.sampled_from([0.5, 1.5, 2.5, np.inf]),
    seed=st.integers(0, 2**16),
)
def test_random_composite_kernels_match_finite_differences(log_params, nu, seed):
    c, l1, l2, l3, alpha, sigma = np.exp(log_params)
    kernel = C(c) * Matern([l1, l2], nu=nu) + Exponentiation(
        RationalQuadratic(l3, alpha) + DotProduct(sigma), 2
    )
    rng = np.random.RandomState(seed)
    X, Z = rng.randn(5, 2), rng.randn(3, 2)
    K, dK = kernel_gradient(kernel, X, Z)
    np.testing.assert_allclose(K, kernel(X, Z), rtol=1e-12, atol=1e-15)
    assert _rel_err(dK, _fd_gradient(kernel, lambda k: k(X, Z))) <= 1e-6
    diag, dDiag = kernel_diag_gradient(kernel, X)
    np.testing.assert_allclose(diag, kernel.diag(X), rtol=1e-12)
    assert _rel_err(dDiag, _fd_gradient(kernel, lambda k: k.diag(X))) <= 1e-6


# ------------------------------------------------------------------ prediction kernel blocks
@pytest.mark.parametrize(
    "kernel",
    [
        RBF(0.7),
        RBF([0.5, 2.0, 1.3]),
        ConstantKernel(3.0) * RBF(1.1),
        RBF([0.9, 0.4, 5.0]) * ConstantKernel(0.2),
        Matern(0.8, nu=1.5),  # the Matern forms in r (kernels._radial)
        ConstantKernel(1.7) * Matern([0.5, 2.0, 1.3], nu=2.5),
        Matern(0.8, nu=0.5),  # exp(-r): the kernel's own call
        ConstantKernel(2.0) * RBF(1.0) + WhiteKernel(0.1),  # a sum: the kernel's own call
    ],
)
def test_iter_cross_kernel_equals_the_kernel(kernel):
    from skgpsparse.kernels._columns import iter_cross_kernel

    rng = np.random.default_rng(3)
    Z = rng.normal(size=(17, 3)) * 2 + 5
    X = np.vstack([rng.normal(size=(40, 3)) * 2 + 5, Z[:4]])  # some rows on the basis
    seen = []
    for rows, K in iter_cross_kernel(kernel, X, Z, chunk_size=16):
        seen.append(rows)
        np.testing.assert_allclose(K, kernel(X[rows], Z), rtol=1e-12, atol=1e-14)
        assert K.shape == (rows.stop - rows.start, 17) and np.all(K >= 0)
    assert seen == [slice(0, 16), slice(16, 32), slice(32, 44)]
    # on the basis points themselves the RBF's exponent is clipped at log c: k(z, z) = c
    K_zz = np.vstack([K for _, K in iter_cross_kernel(kernel, Z, Z)])
    np.testing.assert_allclose(np.diag(K_zz), np.diag(kernel(Z, Z)), rtol=1e-13)


def test_iter_cross_kernel_far_rows_go_through_the_kernel(monkeypatch):
    # A block with a row far from the basis (|s_x|^2 / 2 > 1e4, where inner products would
    # lose digits) is computed by the kernel itself, the other blocks by the product form.
    import skgpsparse.kernels._columns as kc

    kernel = ConstantKernel(2.0) * RBF(1.0)
    rng = np.random.default_rng(4)
    Z = rng.normal(size=(6, 2))
    X = np.vstack([rng.normal(size=(5, 2)), [[300.0, -200.0]], rng.normal(size=(5, 2))])
    calls = []
    call = Product.__call__

    def spy(self, A, B=None, eval_gradient=False):
        calls.append(len(A))
        return call(self, A, B, eval_gradient)

    monkeypatch.setattr(Product, "__call__", spy)
    blocks = list(kc.iter_cross_kernel(kernel, X, Z, chunk_size=4))
    monkeypatch.undo()
    assert calls == [4]  # only the block of rows 4-7 holds the far row
    K = np.vstack([K for _, K in blocks])
    np.testing.assert_allclose(K, kernel(X, Z), rtol=1e-12, atol=1e-300)
    assert np.all(K[5] == 0.0)  # exp(-|x - z|^2 / 2) underflows: zero, not NaN


@pytest.mark.parametrize(
    "kernel, product_form",
    [
        (RBF(0.7), True),
        (RBF([0.5, 2.0, 1.3]), True),
        (ConstantKernel(3.0) * RBF(1.1), True),
        (RBF([0.9, 0.4, 5.0]) * ConstantKernel(0.2), True),
        (ConstantKernel(2) * RBF(1.0), True),  # an integer amplitude, as a user may give it
        (Matern(0.8, nu=1.5), True),
        (Matern([0.5, 2.0, 1.3], nu=2.5) * ConstantKernel(0.3), True),
        (Matern(0.8, nu=np.inf), True),
        (Matern(0.8, nu=0.5), False),  # exp(-r) is not smooth in r^2 at 0 (kernels._radial)
        (ConstantKernel(2.0) * RBF(1.0) + WhiteKernel(0.1), False),
    ],
)
def test_cross_kernel_set_up_once_equals_the_kernel(kernel, product_form):
    # The object kept by a fitted model: blocks, single rows and the diagonal as the kernel's.
    from skgpsparse.kernels._columns import CrossKernel, iter_cross_kernel

    rng = np.random.default_rng(5)
    Z = rng.normal(size=(17, 3)) * 2 + 5
    X = np.vstack([rng.normal(size=(40, 3)) * 2 + 5, Z[:4]])
    cross = CrossKernel(kernel, Z)
    assert cross.product_form == product_form
    np.testing.assert_allclose(cross.block(X), kernel(X, Z), rtol=1e-12, atol=1e-14)
    # the diagonal is the kernel's to the bit (c for c * RBF)
    np.testing.assert_array_equal(cross.diag(X), kernel.diag(X))
    # blocks equal iter_cross_kernel's (set up per call) to the bit, one row or many
    for x in (X[:1], X[:5], X):
        got = list(cross.blocks(x, chunk_size=16))
        expected = list(iter_cross_kernel(kernel, x, Z, chunk_size=16))
        assert [rows for rows, _ in got] == [rows for rows, _ in expected]
        for (_, K), (_, K_ref) in zip(got, expected):
            np.testing.assert_array_equal(K, K_ref)
    one = cross.blocks(X[:1])
    assert len(one) == 1 and one[0][0] == slice(0, 1)  # one block, without a generator
    # the square block K(Z, Z) (an exact GP's objective) reuses the set-up's scaled rows:
    # the kernel's values, and those of a copy of Z to the bit, with the same slopes
    np.testing.assert_allclose(cross.block(Z), kernel(Z, Z), rtol=1e-12, atol=1e-14)
    K_sq, G_sq = cross.block_and_slopes(Z)
    K_copy, G_copy = cross.block_and_slopes(Z.copy())
    np.testing.assert_array_equal(K_sq, K_copy)
    assert (G_sq is None) == (G_copy is None)
    if G_sq is not None:
        np.testing.assert_array_equal(G_sq, G_copy)
    assert list(cross.blocks(X[:0])) == []  # no rows, no block (as iter_kernel)


def test_cross_kernel_far_row_goes_through_the_kernel():
    from skgpsparse.kernels._columns import CrossKernel

    kernel = ConstantKernel(2.0) * RBF(1.0)
    Z = np.random.default_rng(4).normal(size=(6, 2))
    cross = CrossKernel(kernel, Z)
    x = np.array([[300.0, -200.0]])  # |s_x|^2 / 2 > 1e4: the inner products would lose digits
    K = cross.block(x)
    assert np.all(K == 0.0) and K.dtype == np.float64
    # a basis too far from its own mean for the product form: the kernel's call throughout
    far = CrossKernel(kernel, np.vstack([Z, [[1e4, 0.0]]]))
    assert not far.product_form
    np.testing.assert_array_equal(far.block(Z[:2]), kernel(Z[:2], far.Z))


# ----------------------------------------------------------------------------- contractions
@pytest.mark.parametrize(
    "kernel",
    [
        RBF(0.7),
        RBF([0.5, 1.5, 3.0]),
        ConstantKernel(2.5) * RBF(1.3),
        RBF([0.5, 1.5, 3.0]) * ConstantKernel(0.4),
        ConstantKernel(2.0, constant_value_bounds="fixed") * RBF([0.5, 1.5, 3.0]),
        ConstantKernel(2.0) * RBF(1.0, length_scale_bounds="fixed"),
        ConstantKernel(2.0, "fixed") * RBF(1.0, "fixed"),
        Matern(1.1, nu=1.5),
        Matern(1.1, length_scale_bounds="fixed", nu=2.5),
        ConstantKernel(1.3) * Matern([0.5, 1.5, 3.0], nu=2.5),
        Matern([0.5, 1.5, 3.0], nu=np.inf) * ConstantKernel(0.7),
        Matern(1.1, nu=0.5),
        ConstantKernel(1.5) * RBF(1.0) + WhiteKernel(0.1),
        ConstantKernel(1.5) * RBF([0.5, 1.5, 3.0]) + WhiteKernel(0.1),
        ConstantKernel(1.5) * Matern(1.0, nu=1.5) + WhiteKernel(0.1, "fixed"),
        Matern(1.1, nu=0.5) + WhiteKernel(0.1),
    ],
    ids=repr,
)
def test_kernel_contractions_equal_the_dense_gradient_contraction(kernel):
    # sum_ij W_ij dK_ij for every theta, against the full n x p x n_theta array: the RBF
    # formula (expanded squares around the mean of Z) and the fallback, block by block, also
    # with rows far from Z (K underflows there; the last block's row at 400 is too far for
    # the expanded squares and takes the full array)
    from skgpsparse.kernels._contraction import iter_kernel_contractions

    rng = np.random.RandomState(0)
    X = np.vstack([rng.normal(size=(36, 3)), rng.normal(size=(3, 3)) + 40.0, [[400.0] * 3]])
    Z = rng.normal(size=(6, 3)) + 0.5
    W = rng.normal(size=(40, 6))
    K_ref, dK_ref = kernel_gradient(kernel, X, Z)
    expected = W.ravel() @ dK_ref.reshape(W.size, kernel.n_dims)
    total, n_rows = np.zeros(kernel.n_dims), 0
    for rows, K, contract in iter_kernel_contractions(kernel, X, Z, chunk_size=16):
        np.testing.assert_allclose(K, K_ref[rows], rtol=1e-12, atol=1e-300)
        total += contract(W[rows])
        n_rows += K.shape[0]
    assert n_rows == 40 and total.shape == (kernel.n_dims,)
    np.testing.assert_allclose(total, expected, rtol=1e-10, atol=1e-12)
    # a basis spread so widely that its own squares are too large: the full array throughout
    Z_far = np.vstack([Z, [[1e3, 0.0, 0.0]]])
    W_far = rng.normal(size=(40, 7))
    dK_far = kernel_gradient(kernel, X, Z_far)[1]
    total = sum(c(W_far[r]) for r, _, c in iter_kernel_contractions(kernel, X, Z_far))
    expected = W_far.ravel() @ dK_far.reshape(W_far.size, kernel.n_dims)
    np.testing.assert_allclose(total, expected, rtol=1e-10, atol=1e-12)


def test_rbf_contractions_never_form_the_gradient_array(monkeypatch):
    # the fast path for c * RBF and c * Matern: no n x p x n_theta array (iter_kernel_gradient
    # is not called)
    from skgpsparse.kernels import _contraction as gc

    def forbidden(*args, **kwargs):
        raise AssertionError("the full gradient array was formed")

    monkeypatch.setattr(gc, "iter_kernel_gradient", forbidden)
    rng = np.random.RandomState(1)
    X, Z = rng.normal(size=(50, 4)), rng.normal(size=(7, 4))
    for kernel in (ConstantKernel(2.0) * RBF(np.ones(4)), RBF(1.5),
                   ConstantKernel(2.0) * Matern(np.ones(4), nu=2.5),
                   ConstantKernel(2.0) * RBF(np.ones(4)) + WhiteKernel(0.1)):
        blocks = list(gc.iter_kernel_contractions(kernel, X, Z, chunk_size=20))
        assert len(blocks) == 3
        assert all(np.all(np.isfinite(c(np.ones_like(K)))) for _, K, c in blocks)


def test_far_rows_fall_back_within_a_block_larger_than_a_gradient_chunk(monkeypatch):
    # a fast-path block (chunked for K alone) holds more rows than one chunk of the full
    # gradient array (chunked for n_theta times as much); a far row in it must still give the
    # dense contraction of the whole block
    from skgpsparse.kernels import _gradients as kernels_mod
    from skgpsparse.kernels._contraction import iter_kernel_contractions

    monkeypatch.setattr(kernels_mod, "_CHUNK_BYTES", 8 * 6 * 10)  # 10 rows of K for 6 columns
    rng = np.random.RandomState(3)
    X = np.vstack([rng.normal(size=(9, 3)), [[400.0] * 3]])
    Z = rng.normal(size=(6, 3))
    W = rng.normal(size=(10, 6))
    kernel = ConstantKernel(1.5) * RBF([0.7, 1.0, 2.0])
    blocks = list(iter_kernel_contractions(kernel, X, Z))
    assert len(blocks) == 1 and blocks[0][1].shape == (10, 6)
    dK = kernel_gradient(kernel, X, Z)[1]
    expected = W.ravel() @ dK.reshape(W.size, kernel.n_dims)
    np.testing.assert_allclose(blocks[0][2](W), expected, rtol=1e-10, atol=1e-12)


def test_with_theta_is_clone_with_theta():
    from skgpsparse.kernels._radial import with_theta

    X = np.random.RandomState(0).uniform(-1, 1, (5, 2))
    kernels = [
        C(2.0) * Matern([1.0, 3.0], nu=2.5), Matern([1.0, 3.0], nu=1.5) * C(3.0), RBF(1.0),
        C(1.0) * RBF([2.0]), C(1.0, "fixed") * RBF(1.0), RBF([1.0, 2.0], "fixed") * C(2.0),
        C(2.0) * RBF(1.0) + WhiteKernel(),  # the last three through clone_with_theta
    ]
    for kernel in kernels:
        theta = kernel.theta + 0.3
        got, expected = with_theta(kernel, theta), kernel.clone_with_theta(theta)
        assert repr(got) == repr(expected)
        np.testing.assert_array_equal(got.theta, expected.theta)
        np.testing.assert_array_equal(got.bounds, expected.bounds)
        np.testing.assert_array_equal(got(X), expected(X))
        assert kernel.theta.tolist() != theta.tolist()  # the kernel itself is not changed
