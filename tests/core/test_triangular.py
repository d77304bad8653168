"""solve_lower against scipy's solve_triangular (the same LAPACK call: equal to the bit)."""

import numpy as np
import pytest
from scipy.linalg import LinAlgError, solve_triangular

from skgpsparse.linalg import solve_lower


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
