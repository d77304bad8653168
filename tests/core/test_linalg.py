"""Tests for skgpsparse.linalg: rank-one and rank-k Cholesky changes against scipy's factorisation."""

import numpy as np
import pytest
import scipy.linalg
from hypothesis import given, settings
from hypothesis import strategies as st

from skgpsparse.linalg import (
    GivensRotations,
    cholesky_append,
    cholesky_delete,
    cholesky_downdate,
    cholesky_downdate_rank_k,
    cholesky_update,
    cholesky_update_rank_k,
)

RTOL = 1e-10
SETTINGS = settings(max_examples=50, deadline=None)
GARBAGE = [np.nan, 1e300, -7.0]


def spd(p, rng, c=None):
    """A well-conditioned SPD matrix X X^T / p + c I (condition number below ~10)."""
    X = rng.normal(size=(p, p)) / np.sqrt(max(p, 1))
    c = rng.uniform(0.5, 2.0) if c is None else c
    return X @ X.T + c * np.eye(p)


def chol(A):
    return scipy.linalg.cholesky(A, lower=True) if A.shape[0] else np.zeros((0, 0))


def rel_err(L, L_ref):
    if L_ref.size == 0:
        return 0.0
    return np.linalg.norm(L - L_ref) / np.linalg.norm(L_ref)


def assert_valid_factor(L, L_ref, rtol=RTOL):
    """Shape, exact zeros above the diagonal, positive diagonal, close to scipy's factor."""
    assert L.shape == L_ref.shape
    assert np.all(np.triu(L, 1) == 0.0)
    assert np.all(np.diag(L) > 0.0)
    assert rel_err(L, L_ref) <= rtol


def with_garbage(L, value, p_max=None):
    """A storage (p_max x p_max) whose leading block holds tril(L) and whose upper triangle
    (and, if larger, unused part) holds `value`."""
    p = L.shape[0]
    p_max = p if p_max is None else p_max
    S = np.full((p_max, p_max), value)
    S[:p, :p] = np.where(np.tri(p, dtype=bool), L, value)
    return S


def upper_is(S, value):
    U = S[np.triu_indices(S.shape[0], 1)]
    return np.all(np.isnan(U)) if np.isnan(value) else np.all(U == value)


case = st.tuples(st.integers(0, 2**32 - 1), st.integers(1, 25))


# --------------------------------------------------------------------------------------------
# cholesky_append
# --------------------------------------------------------------------------------------------


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), p=st.integers(0, 25), garbage=st.sampled_from(GARBAGE))
def test_append_matches_scipy(seed, p, garbage):
    rng = np.random.default_rng(seed)
    A = spd(p + 1, rng)
    L, b, c = chol(A[:p, :p]), A[:p, p].copy(), A[p, p]
    L0, b0 = L.copy(), b.copy()

    L_new = cholesky_append(L, b, c)
    assert_valid_factor(L_new, chol(A))
    np.testing.assert_array_equal(L, L0)
    np.testing.assert_array_equal(b, b0)
    assert not np.shares_memory(L_new, L)

    # Only the lower triangle is read: garbage above the diagonal changes nothing.
    S = with_garbage(L, garbage)
    S0 = S.copy()
    # (Equal up to rounding: LAPACK may see the two storages with different memory layouts.)
    np.testing.assert_allclose(cholesky_append(S, b, c), L_new, rtol=1e-14, atol=1e-14)
    np.testing.assert_array_equal(S, S0)


@SETTINGS
@given(case, st.sampled_from(GARBAGE))
def test_append_in_place_writes_lower_triangle_only(case, garbage):
    seed, p = case
    rng = np.random.default_rng(seed)
    A = spd(p + 1, rng)
    p_max = p + 3
    S = with_garbage(chol(A[:p, :p]), garbage, p_max)
    L_new = cholesky_append(S, A[:p, p], A[p, p], size=p, overwrite_L=True)
    assert L_new.shape == (p + 1, p + 1)
    assert np.shares_memory(L_new, S)
    assert_valid_factor(np.tril(L_new), chol(A))
    assert upper_is(S, garbage)
    # Rows below the new one are spare capacity and are not touched either.
    assert upper_is(S[p + 1 :, p + 1 :], garbage) and np.all(
        np.isnan(S[p + 1 :, : p + 1]) if np.isnan(garbage) else S[p + 1 :, : p + 1] == garbage
    )


def test_append_grows_preallocated_storage_without_reallocation():
    rng = np.random.default_rng(0)
    p_max = 20
    A = spd(p_max, rng)
    S = np.zeros((p_max, p_max))
    for p in range(p_max):
        L_new = cholesky_append(S, A[:p, p], A[p, p], size=p, overwrite_L=True)
        assert np.shares_memory(L_new, S)
        assert_valid_factor(L_new, chol(A[: p + 1, : p + 1]))
    np.testing.assert_allclose(S, chol(A), rtol=0, atol=1e-12)

    # Deleting from the storage works on its active block and stays in it.
    idx = list(range(p_max))
    size = p_max
    for j in [5, 0, size - 3, 7]:
        L_new, _ = cholesky_delete(S, j, size=size, overwrite_L=True)
        size -= 1
        del idx[j]
        assert np.shares_memory(L_new, S)
        assert_valid_factor(L_new, chol(A[np.ix_(idx, idx)]))
        assert np.all(S[size, :] == 0.0)  # row p-1 of the old active block is zeroed
    # ... and growing again reuses the freed rows.
    L_new = cholesky_append(S, A[idx, 9], A[9, 9] + 1.0, size=size, overwrite_L=True)
    A_ref = np.block([[A[np.ix_(idx, idx)], A[idx, 9:10]], [A[9:10, idx], A[9:10, 9:10] + 1.0]])
    assert np.shares_memory(L_new, S)
    assert_valid_factor(L_new, chol(A_ref))


def test_append_without_size_or_room_returns_new_array():
    rng = np.random.default_rng(1)
    A = spd(5, rng)
    L = chol(A[:4, :4])
    # Without `size` the factor cannot grow in place (documented): a new array.
    L_new = cholesky_append(L, A[:4, 4], A[4, 4], overwrite_L=True)
    assert not np.shares_memory(L_new, L)
    assert_valid_factor(L_new, chol(A))
    # A full storage (size == p_max) cannot grow in place either: a new array, input intact.
    L0 = L.copy()
    L_new = cholesky_append(L, A[:4, 4], A[4, 4], size=4, overwrite_L=True)
    assert not np.shares_memory(L_new, L)
    assert_valid_factor(L_new, chol(A))
    np.testing.assert_array_equal(L, L0)
    # With `size` and room but overwrite_L=False: new array, storage untouched.
    S = np.zeros((6, 6))
    S[:4, :4] = L
    S0 = S.copy()
    L_new = cholesky_append(S, A[:4, 4], A[4, 4], size=4)
    assert not np.shares_memory(L_new, S)
    assert_valid_factor(L_new, chol(A))
    np.testing.assert_array_equal(S, S0)


def test_append_to_empty_factor():
    L_new = cholesky_append(np.empty((0, 0)), [], 2.25)
    np.testing.assert_array_equal(L_new, [[1.5]])
    S = np.full((3, 3), np.nan)
    L_new = cholesky_append(S, np.empty(0), 4.0, size=0, overwrite_L=True)
    np.testing.assert_array_equal(L_new, [[2.0]])
    assert np.shares_memory(L_new, S)


@pytest.mark.parametrize("shrink", [0.5, 1.0 - 1e-12, 1.0, -1.0])
def test_append_not_positive_definite_raises(shrink):
    rng = np.random.default_rng(2)
    A = spd(6, rng)
    L = chol(A[:5, :5])
    b = A[:5, 5]
    l = scipy.linalg.solve_triangular(L, b, lower=True)
    c = shrink * (l @ l)  # c <= b^T A^-1 b: singular or indefinite bordered matrix
    L0 = L.copy()
    with pytest.raises(np.linalg.LinAlgError, match="not positive definite"):
        cholesky_append(L, b, c)
    np.testing.assert_array_equal(L, L0)
    # A bordering column that duplicates an existing one makes the matrix singular.
    with pytest.raises(np.linalg.LinAlgError, match="not positive definite"):
        cholesky_append(L, A[:5, 2], A[2, 2])


def test_append_bad_shapes_raise():
    L = chol(spd(4, np.random.default_rng(3)))
    with pytest.raises(ValueError, match="`b` must have length 4"):
        cholesky_append(L, np.ones(3), 5.0)
    with pytest.raises(ValueError, match="`b` must have length 4"):
        cholesky_append(L, np.ones(5), 5.0)
    with pytest.raises(ValueError, match="square"):
        cholesky_append(L[:, :3], np.ones(4), 5.0)
    with pytest.raises(ValueError, match="square"):
        cholesky_append(np.ones(4), np.ones(4), 5.0)
    with pytest.raises(ValueError, match="`size`"):
        cholesky_append(L, np.ones(4), 5.0, size=5)
    with pytest.raises(ValueError, match="floating"):
        cholesky_append(np.eye(3, dtype=int), np.ones(3), 5.0)


# --------------------------------------------------------------------------------------------
# cholesky_delete and GivensRotations
# --------------------------------------------------------------------------------------------


@SETTINGS
@given(case, st.integers(1, 6), st.sampled_from(GARBAGE))
def test_delete_every_index_matches_scipy(case, n, garbage):
    seed, p = case
    rng = np.random.default_rng(seed)
    A = spd(p, rng)
    L = chol(A)
    K = rng.normal(size=(p, n))
    M = scipy.linalg.solve_triangular(L, K, lower=True)
    L0, M0 = L.copy(), M.copy()
    S = with_garbage(L, garbage)
    for j in range(p):
        keep = np.delete(np.arange(p), j)
        L_ref = chol(A[np.ix_(keep, keep)])
        L_new, rot = cholesky_delete(L, j)
        assert_valid_factor(L_new, L_ref)
        assert L_new.flags.c_contiguous and not np.shares_memory(L_new, L)
        np.testing.assert_array_equal(L, L0)
        assert isinstance(rot, GivensRotations)
        assert rot.start == j and rot.size == p and len(rot.cos) == len(rot.sin) == p - j - 1
        np.testing.assert_allclose(rot.cos**2 + rot.sin**2, 1.0, rtol=1e-14)

        # The rotated M = L^-1 K holds L_new^-1 K_(-j) and, in its last row, what leaves.
        M_rot = rot.apply(M)
        np.testing.assert_array_equal(M, M0)
        M_new = scipy.linalg.solve_triangular(L_new, K[keep], lower=True) if p > 1 else M[:0]
        scale = np.linalg.norm(M)
        assert np.linalg.norm(M_rot[: p - 1] - M_new) <= 1e-10 * scale
        r = M_rot[p - 1]
        np.testing.assert_allclose(
            M.T @ M - np.outer(r, r), M_new.T @ M_new, rtol=0, atol=1e-10 * scale**2
        )

        # Only the lower triangle is read: garbage above the diagonal gives the same result.
        L_g, rot_g = cholesky_delete(S, j)
        np.testing.assert_allclose(L_g, L_new, rtol=1e-14, atol=1e-14)
        np.testing.assert_allclose(rot_g.cos, rot.cos, rtol=1e-14, atol=1e-14)
        np.testing.assert_allclose(rot_g.sin, rot.sin, rtol=1e-14, atol=1e-14)


@SETTINGS
@given(case, st.data(), st.sampled_from(GARBAGE))
def test_delete_in_place_writes_lower_triangle_only(case, data, garbage):
    seed, p = case
    j = data.draw(st.integers(0, p - 1), label="j")
    rng = np.random.default_rng(seed)
    A = spd(p, rng)
    p_max = p + 2
    S = with_garbage(chol(A), garbage, p_max)
    L_new, _ = cholesky_delete(S, j, size=p, overwrite_L=True)
    keep = np.delete(np.arange(p), j)
    assert L_new.shape == (p - 1, p - 1)
    assert p == 1 or np.shares_memory(L_new, S)  # (an empty view shares no memory)
    assert_valid_factor(np.tril(L_new), chol(A[np.ix_(keep, keep)]))
    assert upper_is(S, garbage)
    # Documented: row p - 1 of the active block is zeroed (lower triangle and diagonal only).
    assert np.all(S[p - 1, :p] == 0.0)
    # Spare capacity below the active block is left alone.
    spare = S[p:, :p]
    assert np.all(np.isnan(spare)) if np.isnan(garbage) else np.all(spare == garbage)


def test_delete_in_place_without_size_shares_memory():
    rng = np.random.default_rng(4)
    A = spd(7, rng)
    L = chol(A)
    L_new, _ = cholesky_delete(L, 2, overwrite_L=True)
    keep = [0, 1, 3, 4, 5, 6]
    assert np.shares_memory(L_new, L)
    assert_valid_factor(L_new, chol(A[np.ix_(keep, keep)]))


def test_delete_edge_cases():
    # p = 1: deleting the only row leaves a 0 x 0 factor and no rotations.
    L_new, rot = cholesky_delete(np.array([[2.0]]), 0)
    assert L_new.shape == (0, 0)
    assert rot.size == 1 and len(rot.cos) == 0
    np.testing.assert_array_equal(rot.apply(np.array([[1.0, 2.0]])), [[1.0, 2.0]])
    # ... and the empty factor can grow again.
    np.testing.assert_array_equal(cholesky_append(L_new, [], 9.0), [[3.0]])

    # Deleting the last index: no rotations, the factor is the leading block.
    rng = np.random.default_rng(5)
    L = chol(spd(6, rng))
    L_new, rot = cholesky_delete(L, 5)
    assert len(rot.cos) == 0 and rot.start == 5
    np.testing.assert_array_equal(L_new, L[:5, :5])
    M = rng.normal(size=(6, 3))
    np.testing.assert_array_equal(rot.apply(M), M)


def test_delete_bad_arguments_raise():
    L = chol(spd(4, np.random.default_rng(6)))
    for j in [-1, 4, 10]:
        with pytest.raises(ValueError, match=r"`j` must be in \[0, 3\]"):
            cholesky_delete(L, j)
    with pytest.raises(ValueError, match=r"`j` must be in \[0, 1\]"):
        cholesky_delete(L, 2, size=2)
    with pytest.raises(ValueError, match="square"):
        cholesky_delete(L[:3], 0)
    with pytest.raises(ValueError):
        cholesky_delete(np.zeros((0, 0)), 0)
    _, rot = cholesky_delete(L, 1)
    with pytest.raises(ValueError, match="at least 4 rows"):
        rot.apply(np.ones((3, 2)))


def test_delete_singular_factor_raises_linalgerror():
    # A zero on the diagonal (A = diag(1, 0, 1)): the rotation of columns (0, 1) divides 0 by 0.
    # The contract is a LinAlgError naming the problem, never a NaN factor, and L left unchanged.
    L = np.diag([1.0, 0.0, 1.0])
    for j in range(3):
        for overwrite in (False, True):
            S = L.copy()
            with pytest.raises(np.linalg.LinAlgError, match=r"delete.*singular.*L\[1, 1\]"):
                cholesky_delete(S, j, overwrite_L=overwrite)
            np.testing.assert_array_equal(S, L)
    # A non-finite diagonal inside a preallocated storage's active block is refused alike; the
    # spare capacity beyond ``size`` is not read.
    S = np.full((5, 5), np.nan)
    S[:3, :3] = np.diag([2.0, np.inf, 1.0])
    with pytest.raises(np.linalg.LinAlgError, match=r"L\[1, 1\] = inf"):
        cholesky_delete(S, 0, size=3)
    S[:3, :3] = np.linalg.cholesky(spd(3, np.random.default_rng(8)))
    L_new, _ = cholesky_delete(S, 0, size=3)
    assert np.all(np.isfinite(L_new))


def test_rotations_apply_variants():
    rng = np.random.default_rng(7)
    p, n = 9, 5
    L = chol(spd(p, rng))
    _, rot = cholesky_delete(L, 2)
    M = rng.normal(size=(p, n))
    expected = rot.apply(M)

    # A 1-D vector (e.g. beta = L^-1 y) is rotated like a column.
    for col in range(n):
        beta = M[:, col].copy()
        beta_rot = rot.apply(beta)
        np.testing.assert_allclose(beta_rot, expected[:, col], rtol=1e-14, atol=1e-14)
        np.testing.assert_array_equal(beta, M[:, col])
        out = rot.apply(beta, overwrite=True)
        assert np.shares_memory(out, beta)
        np.testing.assert_allclose(beta, expected[:, col], rtol=1e-14, atol=1e-14)

    # In place on a C-contiguous, a Fortran-ordered and a column-sliced (strided) matrix.
    for M_in in [M.copy(), np.asfortranarray(M), np.hstack([M, M])[:, :n]]:
        out = rot.apply(M_in, overwrite=True)
        assert np.shares_memory(out, M_in)
        np.testing.assert_allclose(M_in, expected, rtol=1e-14, atol=1e-14)

    # A storage with spare rows: only the leading p rows are rotated.
    big = np.vstack([M, np.full((3, n), 7.0)])
    out = rot.apply(big)
    np.testing.assert_allclose(out[:p], expected, rtol=1e-14, atol=1e-14)
    np.testing.assert_array_equal(out[p:], 7.0)

    # float32 works, in place it stays float32; integer input is rotated in a float copy.
    M32 = M.astype(np.float32)
    np.testing.assert_allclose(rot.apply(M32), expected, rtol=1e-5, atol=1e-5)
    out = rot.apply(M32, overwrite=True)
    assert out.dtype == np.float32 and np.shares_memory(out, M32)
    np.testing.assert_allclose(M32, expected, rtol=1e-5, atol=1e-5)
    Mi = np.arange(p * n).reshape(p, n)
    np.testing.assert_allclose(rot.apply(Mi), rot.apply(Mi.astype(float)), rtol=1e-14, atol=1e-12)

    # Read-only input is fine without overwrite.
    M_ro = M.copy()
    M_ro.flags.writeable = False
    np.testing.assert_array_equal(rot.apply(M_ro), expected)


def test_rotations_apply_with_no_columns():
    # A p x 0 matrix (e.g. no candidates left) is a valid, empty input.
    L = chol(spd(5, np.random.default_rng(8)))
    _, rot = cholesky_delete(L, 1)
    for overwrite in [False, True]:
        out = rot.apply(np.zeros((5, 0)), overwrite=overwrite)
        assert out.shape == (5, 0)


def test_delete_large_factor_with_wide_matrix():
    # "Never a Python loop over matrix entries": p = 200 rows, a 200 x 20000 matrix to rotate.
    rng = np.random.default_rng(9)
    p, n = 200, 20000
    A = spd(p, rng)
    L = chol(A)
    K = rng.normal(size=(p, n))
    M = scipy.linalg.solve_triangular(L, K, lower=True)
    L_new, rot = cholesky_delete(L, 0)
    assert len(rot.cos) == p - 1
    rot.apply(M, overwrite=True)
    assert_valid_factor(L_new, chol(A[1:, 1:]))
    M_new = scipy.linalg.solve_triangular(L_new, K[1:], lower=True)
    assert np.linalg.norm(M[: p - 1] - M_new) <= 1e-10 * np.linalg.norm(M_new)


# --------------------------------------------------------------------------------------------
# cholesky_update / cholesky_downdate
# --------------------------------------------------------------------------------------------


def rank_one_case(seed, p, sign):
    """A, L = chol(A), v with A + sign v v^T well conditioned."""
    rng = np.random.default_rng(seed)
    A = spd(p, rng)
    L = chol(A)
    if sign > 0:
        v = rng.normal(size=p)
    else:
        # v = L w with |w| <= 0.6: A - v v^T = L (I - w w^T) L^T, eigenvalues of the middle >= 0.64
        w = rng.normal(size=p)
        w *= rng.uniform(0.0, 0.6) / np.linalg.norm(w)
        v = L @ w
    return A, L, v


def check_factor_contract(func, L, V, L_ref, garbage, **overwrite):
    """Check an up/downdate ``func(L, V)`` against ``L_ref`` and the storage contract.

    A new factor (``L`` untouched); only the lower triangle read; in place in a larger storage
    with ``size=p`` the same result, the upper triangle and the spare capacity untouched.
    ``overwrite`` (e.g. ``overwrite_v=True``) is passed to the in-place call on a copy of ``V``.
    Returns the new factor.
    """
    p = L.shape[0]
    L0 = L.copy()
    L_new = func(L, V)
    assert_valid_factor(L_new, L_ref)
    assert not np.shares_memory(L_new, L)
    np.testing.assert_array_equal(L, L0)

    S = with_garbage(L, garbage)
    S0 = S.copy()
    np.testing.assert_allclose(func(S, V), L_new, rtol=1e-14, atol=1e-14)
    np.testing.assert_array_equal(S, S0)

    S = with_garbage(L, garbage, p + 2)
    out = func(S, np.array(V, copy=True), size=p, overwrite_L=True, **overwrite)
    assert out.shape == (p, p) and np.shares_memory(out, S)
    np.testing.assert_allclose(np.tril(out), L_new, rtol=1e-14, atol=1e-14)
    assert upper_is(S, garbage)
    spare = S[p:, :p]
    assert np.all(np.isnan(spare)) if np.isnan(garbage) else np.all(spare == garbage)
    return L_new


@SETTINGS
@given(case, st.sampled_from([1, -1]), st.sampled_from(GARBAGE))
def test_rank_one_matches_scipy(case, sign, garbage):
    seed, p = case
    A, L, v = rank_one_case(seed, p, sign)
    func = cholesky_update if sign > 0 else cholesky_downdate
    L_ref = chol(A + sign * np.outer(v, v))
    v0 = v.copy()

    L_new = check_factor_contract(func, L, v, L_ref, garbage, overwrite_v=True)
    np.testing.assert_array_equal(v, v0)

    # A list is accepted for v and is not a problem for overwrite_v.
    np.testing.assert_array_equal(func(L, list(v), overwrite_v=True), L_new)


def test_update_then_downdate_roundtrip():
    rng = np.random.default_rng(10)
    A = spd(12, rng)
    L = chol(A)
    v = rng.normal(size=12)
    L_back = cholesky_downdate(cholesky_update(L, v), v)
    assert rel_err(L_back, L) <= 1e-10


@pytest.mark.parametrize("col", [0, 3, 6])
def test_downdate_not_positive_definite_raises(col):
    rng = np.random.default_rng(11)
    A = spd(7, rng)
    L = chol(A)
    # A - v v^T = L (I - 1.0201 e_col e_col^T) L^T is indefinite.
    v = 1.01 * L[:, col]
    L0, v0 = L.copy(), v.copy()
    with pytest.raises(np.linalg.LinAlgError, match="not positive definite"):
        cholesky_downdate(L, v)
    np.testing.assert_array_equal(L, L0)
    np.testing.assert_array_equal(v, v0)
    # Exactly singular (v a column of L) also fails rather than returning a zero pivot.
    with pytest.raises(np.linalg.LinAlgError, match="not positive definite"):
        cholesky_downdate(L, L[:, col] * (1 + 1e-12))


def test_rank_one_bad_shapes_raise():
    L = chol(spd(4, np.random.default_rng(12)))
    for func in [cholesky_update, cholesky_downdate]:
        with pytest.raises(ValueError, match="`v` must be a vector of length 4"):
            func(L, np.ones(3))
        with pytest.raises(ValueError, match="`v` must be a vector of length 4"):
            func(L, np.ones((4, 1)))
        with pytest.raises(ValueError, match="`v` must be a vector of length 2"):
            func(L, np.ones(4), size=2)
        with pytest.raises(ValueError, match="square"):
            func(L[:, :3], np.ones(4))


# --------------------------------------------------------------------------------------------
# cholesky_update_rank_k / cholesky_downdate_rank_k
# --------------------------------------------------------------------------------------------


def rank_k_case(seed, p, k, sign):
    """A, L = chol(A), V (p x k) with A + sign V V^T well conditioned."""
    rng = np.random.default_rng(seed)
    A = spd(p, rng)
    L = chol(A)
    if sign > 0:
        V = rng.normal(size=(p, k))
    else:
        # V = L W with |W|_2 <= 0.6: A - V V^T = L (I - W W^T) L^T, middle eigenvalues >= 0.64
        W = rng.normal(size=(p, k))
        W *= rng.uniform(0.0, 0.6) / max(np.linalg.norm(W, 2), 1e-300)
        V = L @ W
    return A, L, V


def _rank_k_func(sign):
    return cholesky_update_rank_k if sign > 0 else cholesky_downdate_rank_k


@SETTINGS
@given(case, st.sampled_from(["1", "3", "p"]), st.sampled_from([1, -1]), st.sampled_from(GARBAGE))
def test_rank_k_matches_scipy(case, k, sign, garbage):
    seed, p = case
    k = {"1": 1, "3": 3, "p": p}[k]
    A, L, V = rank_k_case(seed, p, k, sign)
    func = _rank_k_func(sign)
    L_ref = chol(A + sign * V @ V.T)
    V0 = V.copy()

    check_factor_contract(func, L, V, L_ref, garbage)
    np.testing.assert_array_equal(V, V0)


@pytest.mark.parametrize("sign", [1, -1])
def test_rank_k_equals_k_rank_one_changes(sign):
    # A +- V V^T = A +- sum_c v_c v_c^T: the same factor as k rank-one changes in a row
    _, L, V = rank_k_case(20, 15, 4, sign)
    one = cholesky_update if sign > 0 else cholesky_downdate
    L_seq = L
    for c in range(V.shape[1]):
        L_seq = one(L_seq, V[:, c])
    assert rel_err(_rank_k_func(sign)(L, V), L_seq) <= 1e-13
    # a vector is one column
    assert rel_err(_rank_k_func(sign)(L, V[:, 0]), one(L, V[:, 0])) <= 1e-14


@pytest.mark.parametrize("p", [1, 8, 40])
def test_rank_k_diagonal_change(p):
    # the RVM's use: A + diag(d) with d > 0 at some entries (columns sqrt(d_j) e_j in any
    # order, zero columns included), then back down by the same diagonal
    rng = np.random.default_rng(p)
    A = spd(p, rng)
    L = chol(A)
    entries = rng.permutation(p)[: max(1, p // 2)]
    d = rng.uniform(0.1, 3.0, size=len(entries))
    V = np.zeros((p, len(entries) + 1))
    V[entries, np.arange(len(entries))] = np.sqrt(d)
    D = np.zeros(p)
    D[entries] = d
    L_up = cholesky_update_rank_k(L, V)
    assert_valid_factor(L_up, chol(A + np.diag(D)))
    L_back = cholesky_downdate_rank_k(L_up, V)
    assert_valid_factor(L_back, L)
    # only rows from the first changed entry on move
    j0 = entries.min()
    np.testing.assert_array_equal(L_up[:j0], L[:j0])


@pytest.mark.parametrize("block", [None, 3])
def test_rank_k_ill_conditioned(monkeypatch, block):
    # A with eigenvalues 1 ... 1e-10: the backward error stays at round-off, and the forward
    # error within cond(A) times it (Cholesky's perturbation bound); the row loop and (with
    # panels of 3 rows) the blocked loop
    if block is not None:
        from skgpsparse.linalg import _rank_k as _cholesky_rank_k

        monkeypatch.setattr(_cholesky_rank_k, "_BLOCK", block)
    rng = np.random.default_rng(21)
    p = 30
    Q = np.linalg.qr(rng.normal(size=(p, p)))[0]
    C = (Q * np.logspace(0, -10, p)) @ Q.T
    C = (C + C.T) / 2
    V = rng.normal(size=(p, 5))
    A = C + V @ V.T
    L_up = cholesky_update_rank_k(chol(C), V)
    assert np.linalg.norm(L_up @ L_up.T - A) <= 1e-14 * np.linalg.norm(A)
    assert rel_err(L_up, chol(A)) <= 1e-10
    # downdating back to the ill-conditioned C: a backward error relative to |A| (the data of
    # the problem), and the factor's error at most cond(C) times round-off
    L_dn = cholesky_downdate_rank_k(chol(A), V)
    assert np.all(np.diag(L_dn) > 0) and np.all(np.triu(L_dn, 1) == 0)
    assert np.linalg.norm(L_dn @ L_dn.T - C) <= 1e-13 * np.linalg.norm(A)
    assert rel_err(L_dn, chol(C)) <= 1e10 * 1e-14
    # a diagonal change spanning 12 orders of magnitude, up then down
    d = np.logspace(-6, 6, p)
    L_d = cholesky_update_rank_k(chol(C), np.diag(np.sqrt(d)))
    assert rel_err(L_d, chol(C + np.diag(d))) <= 1e-12
    L_back = cholesky_downdate_rank_k(L_d, np.diag(np.sqrt(d)))
    assert np.linalg.norm(L_back @ L_back.T - C) <= 1e-12 * np.linalg.norm(C + np.diag(d))


@pytest.mark.parametrize("col", [0, 3, 6])
def test_rank_k_downdate_not_positive_definite_raises(col):
    rng = np.random.default_rng(11)
    A = spd(7, rng)
    L = chol(A)
    # A - V V^T = L (I - W W^T) L^T with W's largest singular value 1.01: indefinite
    W = rng.normal(size=(7, 3))
    W[:, 1] = 0.0
    W[col, 1] = 1.0
    W[:, [0, 2]] *= 0.3 / np.linalg.norm(W[:, [0, 2]], 2)
    W *= 1.01 / np.linalg.norm(W, 2)
    V = L @ W
    L0, V0 = L.copy(), V.copy()
    with pytest.raises(np.linalg.LinAlgError, match="cholesky_downdate_rank_k.*not positive"):
        cholesky_downdate_rank_k(L, V)
    np.testing.assert_array_equal(L, L0)
    np.testing.assert_array_equal(V, V0)
    # exactly singular (a column of L) also fails rather than returning a zero pivot
    with pytest.raises(np.linalg.LinAlgError, match="not positive definite"):
        cholesky_downdate_rank_k(L, L[:, [col]] * (1 + 1e-12))
    # each column alone is a valid downdate; together they are not
    for c in range(3):
        cholesky_downdate_rank_k(L, V[:, [c]] * 0.99)
    big = L @ (np.eye(7)[:, :2] * 0.75)
    cholesky_downdate_rank_k(L, big)
    with pytest.raises(np.linalg.LinAlgError, match="not positive definite"):
        cholesky_downdate_rank_k(L, np.column_stack([big, L[:, [0]] * 0.75]))


def test_rank_k_edge_cases():
    rng = np.random.default_rng(13)
    A = spd(5, rng)
    L = chol(A)
    # no columns, zero columns: the factor unchanged (a copy)
    for V in [np.zeros((5, 0)), np.zeros((5, 2))]:
        for func in [cholesky_update_rank_k, cholesky_downdate_rank_k]:
            out = func(L, V)
            np.testing.assert_array_equal(out, L)
            assert not np.shares_memory(out, L)
    # an empty factor
    assert cholesky_update_rank_k(np.zeros((0, 0)), np.zeros((0, 3))).shape == (0, 0)
    # a factor with negative diagonal entries (L D, D = +-1) is a factor of the same A
    Ls = L * np.array([1.0, -1.0, 1.0, -1.0, -1.0])
    V = rng.normal(size=(5, 2))
    assert_valid_factor(cholesky_update_rank_k(Ls, V), chol(A + V @ V.T))
    # the update of a singular factor fails when V does not fill the zero pivot, and
    # succeeds when it does
    L0 = L.copy()
    L0[2:, 2] = 0.0
    L0[2, :2] = 0.0  # A = L0 L0^T has a zero row and column 2
    with pytest.raises(np.linalg.LinAlgError, match="cholesky_update_rank_k.*pivot 2"):
        cholesky_update_rank_k(L0, np.eye(5)[:, [1, 4]] * [[0.0, 1.0]] + np.eye(5)[:, [1]])
    for V in [np.eye(5)[:, [2]], np.eye(5)[:, [0, 2]]]:
        B = L0 @ L0.T + V @ V.T
        assert_valid_factor(cholesky_update_rank_k(L0, V), chol(B))


def test_rank_k_bad_shapes_raise():
    L = chol(spd(4, np.random.default_rng(12)))
    for func in [cholesky_update_rank_k, cholesky_downdate_rank_k]:
        with pytest.raises(ValueError, match=r"`V` must have shape \(4, k\)"):
            func(L, np.ones((3, 2)))
        with pytest.raises(ValueError, match=r"`V` must have shape \(4, k\)"):
            func(L, np.ones((4, 2, 1)))
        with pytest.raises(ValueError, match=r"`V` must have shape \(2, k\)"):
            func(L, np.ones((4, 2)), size=2)
        with pytest.raises(ValueError, match="square"):
            func(L[:, :3], np.ones((4, 1)))


@pytest.mark.parametrize("block", [2, 3, 5, 32])
@pytest.mark.parametrize("sign", [1, -1])
def test_rank_k_blocked_panels_match_scipy(monkeypatch, block, sign):
    # from 6 panels of _BLOCK rows and _BLOCK columns of V on, the reflections of a panel are
    # applied to the rows below at once (compact WY form): the same factor as scipy's
    from skgpsparse.linalg import _rank_k as _cholesky_rank_k

    monkeypatch.setattr(_cholesky_rank_k, "_BLOCK", block)
    p = 40 if block < 32 else 230
    rng = np.random.default_rng(block)
    A, L, V = rank_k_case(block, p, p, sign)
    # columns that start at different rows, some at the bottom, one zero, any order
    V = V * (np.arange(p)[:, None] >= rng.integers(0, p, size=p)[None, :])
    V[:, 3] = 0.0
    if sign < 0:
        V *= 0.9  # still |L^-1 V|_2 < 1: rows zeroed only shrink it
    for V_case in [V, np.diag(np.sqrt(rng.uniform(0.1, 0.5, size=p)) * np.diag(L)) * 0.5]:
        L_ref = chol(A + sign * V_case @ V_case.T)
        # a negative column in L (still a factor of A) and garbage above the diagonal
        Ls = L * np.where(np.arange(p) % 7 == 3, -1.0, 1.0)
        S = with_garbage(Ls, np.nan, p + 1)
        out = _rank_k_func(sign)(S, V_case, size=p, overwrite_L=True)
        assert_valid_factor(np.tril(out), L_ref)
        assert upper_is(S, np.nan)
    # a downdate that removes more than A holds fails in the blocked loop too
    if sign < 0:
        with pytest.raises(np.linalg.LinAlgError, match="cholesky_downdate_rank_k.*pivot"):
            cholesky_downdate_rank_k(L, L @ np.diag(np.linspace(0.5, 1.05, p)))
