"""solve_lower, cholesky_lower and cho_solve_lower against scipy's solve_triangular,
cholesky and cho_solve (the same LAPACK calls: equal to the bit)."""

import numpy as np
import pytest
from scipy.linalg import LinAlgError, cho_solve, cholesky, solve_triangular

from skgpsparse.linalg import solve_lower
from skgpsparse.linalg._triangular import cho_solve_lower, cholesky_lower


def _factor(p, order, rng):
    A = rng.normal(size=(p, p))
    L = np.tril(A @ A.T / p + np.eye(p))  # lower, diagonal clear of zero; upper zeros
    L[np.triu_indices(p, 1)] = rng.normal(size=p * (p - 1) // 2)  # the upper is not read
    if order == "view":  # the leading block of a larger array (neither C nor F ordered)
        big = np.zeros((p + 3, p + 3))
        big[:p, :p] = L
        return big[:p, :p]
    return np.asarray(L, order=order)


@pytest.mark.parametrize("order", ["C", "F", "view"])
@pytest.mark.parametrize("trans", [0, 1])
@pytest.mark.parametrize("shape", [(7,), (7, 1), (7, 4)])
def test_equals_solve_triangular_to_the_bit(order, trans, shape):
    rng = np.random.default_rng(0)
    L, B = _factor(7, order, rng), rng.normal(size=shape)
    B_before, L_before = B.copy(), L.copy()
    got = solve_lower(L, B, trans=trans)
    expected = solve_triangular(L, B, lower=True, trans=trans, check_finite=False)
    np.testing.assert_array_equal(got, expected)
    assert got.shape == B.shape
    # the independent computation: the dense inverse of the lower triangle
    T = np.tril(L)
    np.testing.assert_allclose(got, np.linalg.solve(T.T if trans else T, B), rtol=1e-10)
    np.testing.assert_array_equal(B, B_before)  # the inputs are not written
    np.testing.assert_array_equal(L, L_before)


@pytest.mark.parametrize(
    "L, B",
    [
        (np.eye(3), np.zeros((3, 0))),  # empty
        (np.eye(3, dtype=np.float32), np.ones(3, dtype=np.float32)),  # not float64
        (np.eye(3), [1.0, 2.0, 3.0]),  # a list
    ],
)
def test_other_inputs_go_through_solve_triangular(L, B):
    got = solve_lower(L, B)
    expected = solve_triangular(L, B, lower=True, check_finite=False)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)


def test_a_zero_pivot_raises():
    L = np.array([[1.0, 0.0], [2.0, 0.0]])
    with pytest.raises(LinAlgError, match="diagonal 1"):
        solve_lower(L, np.ones(2))


@pytest.mark.parametrize("order", ["C", "F", "view"])
@pytest.mark.parametrize("shape", [(7,), (7, 3)])
def test_cholesky_and_cho_solve_equal_scipy_to_the_bit(order, shape):
    rng = np.random.default_rng(1)
    A = rng.normal(size=(7, 7))
    C = _factor(7, order, rng)
    C[...] = A @ A.T + 7 * np.eye(7)  # symmetric positive definite, in the given layout
    B = rng.normal(size=shape)
    C_before, B_before = C.copy(), B.copy()
    L = cholesky_lower(C)
    np.testing.assert_array_equal(L, cholesky(C, lower=True, check_finite=False))
    np.testing.assert_array_equal(L, np.tril(L))  # zeros above the diagonal
    x = cho_solve_lower(L, B)
    np.testing.assert_array_equal(x, cho_solve((L, True), B, check_finite=False))
    # the independent computation: numpy's dense factor and solve
    np.testing.assert_allclose(L, np.linalg.cholesky(C_before), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(x, np.linalg.solve(C_before, B), rtol=1e-10)
    np.testing.assert_array_equal(C, C_before)  # the inputs are not written
    np.testing.assert_array_equal(B, B_before)


def test_cholesky_lower_raises_as_scipy_on_an_indefinite_matrix():
    C = np.array([[1.0, 2.0], [2.0, 1.0]])
    with pytest.raises(LinAlgError, match="2-th leading minor"):
        cholesky_lower(C)
    # inputs the direct call does not cover go through scipy, with scipy's result
    np.testing.assert_array_equal(cholesky_lower([[4.0]]), [[2.0]])
    np.testing.assert_array_equal(cho_solve_lower(np.eye(2), [1.0, 2.0]), [1.0, 2.0])
