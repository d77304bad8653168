"""The memory a regressor fit holds at its peak, checked before its first ``n x p`` array."""

from .._memory import FitMemory, max_basis_advice

__all__ = ["fit_memory"]


def fit_memory(n, n_features, p, n_theta, n_targets, learn, working_set, float32=False):
    """:class:`~skgpsparse._memory.FitMemory` of a fit on ``n`` rows with a basis of ``p``.

    The arrays held together at the fit's peak: the selection state (``n x p`` kernel
    columns in :class:`~skgpsparse.kernels._columns.ColumnBlocks`, two ``p x p`` factors, a
    working set's ``n x kappa`` columns, the scaled inputs and a few ``n``-vectors) and, when
    the hyperparameters are learned on its basis, the objective's gradient
    (:func:`~skgpsparse.regression._dtc.dtc_gradient`: ``V``, ``P`` and ``B^T``, three
    ``n x p`` arrays, and about ``10 + n_theta`` ``p x p`` ones with ``dK_uu``); otherwise
    the predictive factors' ``p x p`` matrices. A ``float32`` input adds its scaled copy in
    single precision and, when learning, the likelihood's ``float64`` copy of ``X``.
    """
    block = 8.0 * (-(-n // 2048) * 2048 if n > 2048 else n) * p
    rows = 8.0 * n * (n_features + 12 + 4 * n_targets + working_set)
    if float32:
        rows += 4.0 * n * (n_features + 2) + (8.0 * n * n_features if learn else 0.0)
    # and a row block of the gradient's contraction (about 32 MB, kernels._gradients)
    gradient = 24.0 * n * p + min(32 * 2**20, 8.0 * n * p) if learn else 0.0
    square = 8.0 * p * p * ((12 + n_theta) if learn else 10)
    lower_p = f"lower `max_basis` (now {p})"
    parts = [
        ("the n x max_basis kernel columns", block, lower_p),
        ("the gradient's n x max_basis arrays", gradient, lower_p),
        (
            (
                f"the max_basis x max_basis factors and gradient block ({n_theta} kernel "
                "hyperparameters)"
            ),
            square,
            (lower_p, "pass optimizer=None (fixed hyperparameters)") if learn else lower_p,
        ),
        ("the rows' inputs and working columns", rows, f"fit on fewer rows (now {n})"),
    ]

    def need(q):
        return fit_memory(n, n_features, q, n_theta, n_targets, learn, working_set, float32).total

    return FitMemory("SparseGPRegressor", parts, max_basis_advice(need, p))
