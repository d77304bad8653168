"""Kernel blocks with their gradient contracted against a weight matrix, block by block.

Both hyperparameter objectives (the classifier's NLP loss and the regressor's marginal
likelihood) only ever use the ``n x p x n_theta`` derivative array ``dK`` of ``K(X, X_u)``
through a contraction ``sum_ij W_ij dK_ij``, with ``W`` a weight matrix of the same block.
For the exact ``RBF`` and ``ConstantKernel * RBF`` kernels (GPML eq. (2.31)),
``k(x, z) = c exp(-|s_x - s_z|^2 / 2)`` with ``s = (x - m) / l``, that contraction needs no
``dK`` at all: with ``M = W o K`` (elementwise),

- ``d / d log c``: ``sum_ij M_ij``;
- ``d / d log l_k``: ``sum_ij M_ij (s_ik - s_jk)^2 = sum_i r_i s_ik^2 + sum_j q_j s_jk^2 -
  2 sum_i s_ik (M S_Z)_ik``, with row sums ``r`` and column sums ``q`` of ``M``: one
  ``(n x p)(p x d)`` product per block instead of an ``n x p x d`` array (an isotropic length
  scale sums the ``d`` terms).

``Matern`` (``nu`` 1.5, 2.5, inf) and ``ConstantKernel * Matern`` contract the same way with
``M = W o G`` for the length scales, ``G`` the slopes of :mod:`skgpsparse.kernels._radial`
(``dK / d log l_k = G D_k``, GPML eqs. (4.16)-(4.17)), and ``sum_ij (W o K)_ij`` for ``c``.

A ``WhiteKernel`` term of a top-level sum (``k + WhiteKernel()``, the latent random effect of
the regressor's default kernel for counts) adds nothing to a cross block ``K(X, Z)`` nor to
its gradient (scikit-learn's convention whenever ``Z`` is given, :mod:`._rules`): such a sum
contracts as ``k`` does, with zeros for the white term's ``theta``.

The centre ``m`` is the mean of ``Z``, as for the kernel blocks of
:func:`skgpsparse.kernels._columns.iter_cross_kernel`, which keeps the cancellation in the
expanded square at a few ``eps (|s_x|^2 + |s_z|^2)``; blocks with a row (and bases with a
vector) for which ``|s|^2 / 2 > 1e4`` contract the full array instead. Every other kernel
goes through
:func:`skgpsparse.kernels.iter_kernel_gradient` and contracts the array it returns.
"""

import numpy as np
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, Matern, Product, Sum, WhiteKernel

from ._columns import MAX_HALF_SQNORM, CrossKernel, rbf_parameters
from ._gradients import chunk_rows, iter_kernel_gradient, row_blocks
from ._radial import radial_parameters

__all__ = ["contract_given_block", "iter_kernel_contractions"]

# Entries of one block of the weights in contract_given_block.
_BLOCK_ENTRIES = 1 << 21


def _rbf_layout(kernel, n_features, parameters=rbf_parameters):
    """``(c, length_scale, parts)`` for the fast path, else None.

    ``parts`` lists the free hyperparameters in the order of ``kernel.theta``:
    ``"constant"`` or ``"length_scale"`` (with its number of entries). ``parameters`` says
    which kernels have the fast path: :func:`rbf_parameters` (the RBF) or
    :func:`~skgpsparse.kernels._radial.radial_parameters` (also ``Matern``).
    """
    params = parameters(kernel, n_features)
    if params is None:
        return None
    factors = [kernel.k1, kernel.k2] if type(kernel) is Product else [kernel]
    parts = []
    for factor in factors:
        if type(factor) is ConstantKernel:
            if not factor.hyperparameter_constant_value.fixed:
                parts.append(("constant", 1))
        elif type(factor) in (RBF, Matern):
            hp = factor.hyperparameter_length_scale
            if not hp.fixed:
                parts.append(("length_scale", hp.n_elements))
    # ``parameters`` passed only a ConstantKernel times an RBF or Matern (exact types, or
    # the leaf alone), whose free hyperparameters are these parts: their sizes sum to
    # ``kernel.n_dims`` (not read: scikit-learn's theta costs ~0.2 ms, a fifth of an exact
    # objective's evaluation on a few dozen rows)
    return (*params[:2], parts)


def iter_kernel_contractions(kernel, X, Z, *, chunk_size=None):
    """Yield ``(rows, K, contract)`` over blocks of rows of ``X``.

    ``K = kernel(X[rows], Z)`` and ``contract(W)`` returns ``sum_ij W_ij dK_ij / d theta``
    (length ``kernel.n_dims``, log-space ``theta`` as in ``kernel.theta``) for a weight matrix
    ``W`` of ``K``'s shape, equal to ``W.ravel() @ dK.reshape(-1, n_theta)``. For the
    ``RBF`` and ``Matern`` (``nu`` 1.5, 2.5, inf) kernels, alone or times a
    ``ConstantKernel``, without ``dK`` (module docs).

    Parameters
    ----------
    kernel : sklearn.gaussian_process.kernels.Kernel
    X : ndarray of shape (n_X, n_features)
        Rows, split into blocks (float64).
    Z : ndarray of shape (n_Z, n_features)
        Used whole in every block, e.g. the basis vectors (float64).
    chunk_size : int, default=None
        Rows per block; by default about 32 MB of ``K`` (of ``dK`` for other kernels).

    Yields
    ------
    rows : slice
    K : ndarray of shape (n_rows, n_Z)
    contract : callable

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF, ConstantKernel
    >>> from skgpsparse.kernels import kernel_gradient
    >>> from skgpsparse.kernels._contraction import iter_kernel_contractions
    >>> rng = np.random.RandomState(0)
    >>> X, Z, W = rng.rand(6, 2), rng.rand(3, 2), rng.rand(6, 3)
    >>> kernel = ConstantKernel(2.0) * RBF([0.5, 2.0])
    >>> (rows, K, contract), = iter_kernel_contractions(kernel, X, Z)
    >>> dK = kernel_gradient(kernel, X, Z)[1]
    >>> bool(np.allclose(contract(W), W.ravel() @ dK.reshape(-1, 3)))
    True
    """
    if type(kernel) is Sum and type(kernel.k2) is WhiteKernel:  # K(X, Z) and dK: k1's alone
        n_white = kernel.k2.n_dims
        for rows, K, contract in iter_kernel_contractions(kernel.k1, X, Z,
                                                           chunk_size=chunk_size):
            yield rows, K, (lambda W, c=contract: np.concatenate([c(W), np.zeros(n_white)]))
        return
    layout = _rbf_layout(kernel, X.shape[1], radial_parameters) if Z.shape[0] else None
    cross = CrossKernel(kernel, Z) if layout is not None else None
    if cross is None or not cross.product_form:
        yield from _generic(kernel, X, Z, chunk_size)
        return
    _, ls, parts = layout
    scaled_Z = _scaled(Z, cross.centre, ls)
    if scaled_Z is None:
        yield from _generic(kernel, X, Z, chunk_size)
        return
    S_Z, S_Z2 = scaled_Z
    for rows in row_blocks(X, chunk_rows(chunk_size, Z.shape[0], 1)):
        square = X is Z and rows == slice(0, Z.shape[0])  # the square block of an exact GP
        K, G = cross.block_and_slopes(X if square else X[rows])
        if G is None:
            scaled_X = None
        elif square:
            scaled_X = scaled_Z
        else:
            scaled_X = _scaled(X[rows], cross.centre, ls)
        if scaled_X is None:
            # rows so far from the centre that the expanded squares would lose digits: the
            # full array, by the (smaller) chunks of iter_kernel_gradient, when contracted
            contract = _generic_contraction(kernel, X[rows], Z)
        else:
            contract = _rbf_contraction(K, G, *scaled_X, S_Z, S_Z2, parts)
        yield rows, K, contract


def _generic(kernel, X, Z, chunk_size):
    """``(rows, K, contract)`` from the full gradient array of each block."""
    n_theta = kernel.n_dims
    for rows, K, dK in iter_kernel_gradient(kernel, X, Z, chunk_size=chunk_size):
        flat = dK.reshape(K.size, n_theta)
        yield rows, K, lambda W, flat=flat: np.ravel(W) @ flat


def _generic_contraction(kernel, X, Z):
    """``contract(W)`` for the rows ``X`` from the full gradient array, chunk by chunk."""

    def contract(W):
        return sum(c(W[rows]) for rows, _, c in _generic(kernel, X, Z, None))

    return contract


def _rbf_theta(M, S_X, S_X2, S_Z, S_Z2, parts, constant=None):
    """``sum_ij W_ij dK_ij / d theta`` from ``M = W o K`` (module docs), or for a Matern from
    ``M = W o G`` (:mod:`skgpsparse.kernels._radial`; the RBF's ``G`` is ``K``) with
    ``constant = sum_ij (W o K)_ij``."""
    r, q = M.sum(axis=1), M.sum(axis=0)
    out = []
    for name, size in parts:
        if name == "constant":
            out.append([r.sum() if constant is None else constant])
            continue
        # sum_ij M_ij (s_ik - s_jk)^2 for every feature k
        per_feature = r @ S_X2 + q @ S_Z2 - 2.0 * np.einsum("ik,ik->k", S_X, M @ S_Z)
        out.append(per_feature if size > 1 else [per_feature.sum()])
    return np.concatenate(out) if out else np.zeros(0)


def _rbf_contraction(K, G, S_X, S_X2, S_Z, S_Z2, parts):
    def contract(W):
        M = W * K
        if G is K:
            return _rbf_theta(M, S_X, S_X2, S_Z, S_Z2, parts)
        constant = M.sum()
        # W o G into W o K's memory (a block's array fewer)
        return _rbf_theta(np.multiply(W, G, out=M), S_X, S_X2, S_Z, S_Z2, parts, constant)

    return contract


def _scaled(A, centre, ls):
    """``(S, S o S)`` of ``S = (A - centre) / ls``, or None where the expanded square of the
    fast path would lose digits (module docs)."""
    S = (A - centre) / ls
    with np.errstate(over="ignore"):  # an overflow is caught by the check below
        S2 = S * S
    if not np.all(np.isfinite(S2)) or (S2.size and S2.sum(axis=1).max() / 2 > MAX_HALF_SQNORM):
        return None
    return S, S2


def contract_given_block(kernel, X, Z, K, W, *, eval_theta=True):
    """Both contractions of ``W`` with the derivatives of a given ``K = kernel(X, Z)``.

    For the exact ``RBF`` and ``ConstantKernel * RBF`` kernels, ``dk(x, z) / dz_k =
    k(x, z) (s_xk - s_zk) / l_k`` (GPML eq. 2.31), so with ``M = W o K`` both the
    hyperparameter contraction of :func:`iter_kernel_contractions` and the input gradient
    ``G_jk = sum_i W_ij dK_ij / dz_jk = ((M^T S_X)_jk - s_jk sum_i M_ij) / l_k`` of
    :func:`skgpsparse.kernels._inputs.input_gradient_contraction` come from the one block
    ``K`` that the caller already holds: no kernel evaluations, O(n p d).

    Parameters
    ----------
    kernel : sklearn.gaussian_process.kernels.Kernel
    X : ndarray of shape (n, n_features)
    Z : ndarray of shape (p, n_features)
        The inputs differentiated.
    K : ndarray of shape (n, p)
        ``kernel(X, Z)``.
    W : ndarray of shape (n, p)
        Weights.
    eval_theta : bool, default=True
        Also contract with the hyperparameter derivatives.

    Returns
    -------
    (grad_theta, G) or None
        ``grad_theta`` of length ``kernel.n_dims`` (empty unless ``eval_theta``) and ``G``
        of shape ``(p, n_features)``; None for other kernels, or inputs so far from the
        basis's centre that the expanded square would lose digits.
    """
    layout = _rbf_layout(kernel, X.shape[1]) if Z.shape[0] else None
    if layout is None:
        return None
    _, ls, parts = layout
    centre = Z.mean(axis=0)
    scaled_Z = _scaled(Z, centre, ls)
    if scaled_Z is None:
        return None
    S_Z, S_Z2 = scaled_Z
    grad_theta = np.zeros(kernel.n_dims if eval_theta else 0)
    G = np.zeros(Z.shape)
    step = max(1, _BLOCK_ENTRIES // Z.shape[0])
    for start in range(0, X.shape[0], step):
        rows = slice(start, start + step)
        scaled_X = _scaled(X[rows], centre, ls)
        if scaled_X is None:
            return None
        S_X, S_X2 = scaled_X
        M = W[rows] * K[rows]
        if eval_theta:
            grad_theta += _rbf_theta(M, S_X, S_X2, S_Z, S_Z2, parts)
        # sum_i M_ij (s_ik - s_jk), divided by l_k below
        G += M.T @ S_X - S_Z * M.sum(axis=0)[:, None]
    return grad_theta, G / ls
