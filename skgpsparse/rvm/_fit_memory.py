"""The memory of a relevance vector machine's fit: its design rows and ``M x M`` matrices.

Both RVMs hold the rows ``phi_j(X)`` of their active basis functions (``M x n``,
:class:`~skgpsparse.rvm._subspace_em.ActiveDesign`) and a few ``M x M`` matrices (``G``,
the factor, ``Sigma``). Batch EM makes every candidate active at once (``M`` = the
candidates and the bias), so its need is known before the fit; Subspace EM adds one basis
function per step and prunes most, so only its start is checked up front and each growth of
the design is checked as it comes (:func:`check_design_growth`).
"""

from .._memory import FitMemory

__all__ = ["check_design_growth", "fit_memory"]

# Rows of the design that Subspace EM allocates first (ActiveDesign's capacity).
_START_CAPACITY = 16


def fit_memory(estimator, n, n_features, n_candidates, method, n_basis_functions):
    """:class:`~skgpsparse._memory.FitMemory` of an RVM fit on ``n`` rows.

    ``n_candidates`` basis functions (the bias included) are all active at the start of
    batch EM: the design rows twice over (the kernel rows and their copy into the design, or
    a temporary of the mean-field M-step), about six ``M x M`` matrices and ten
    ``n``-vectors. Subspace EM starts from ``_START_CAPACITY`` rows.
    """
    M = n_candidates if method == "batch_em" else min(n_candidates, _START_CAPACITY)
    lower = f"lower `n_basis_functions` (now {n_basis_functions})"
    return FitMemory(
        estimator,
        [
            ("the design rows (basis functions x n)", 16.0 * M * n, lower),
            ("the basis functions' M x M matrices", 48.0 * M * M, lower),
            ("the rows' vectors", 8.0 * n * (n_features + 10), f"fit on fewer rows (now {n})"),
        ],
    )


def check_design_growth(owner, n_rows, n, held):
    """Check that ``n_rows`` more design rows of length ``n`` fit, before allocating them.

    ``held`` design rows exist already (and are counted in the memory in use).
    """
    FitMemory(
        owner,
        [
            (
                (
                    f"{n_rows} design rows of length {n} for the active basis functions "
                    f"(now {held} rows)"
                ),
                8.0 * n_rows * n,
                ("lower `n_basis_functions`", "fit on fewer rows"),
            )
        ],
    ).check()
