"""The basis of a uniform random selection under the all-rows posterior: which rows, nothing more.

Under ``posterior="all_rows"`` the basis is only the inducing set of the sparse prior; with
``selection="random"`` (and no exchange steps) nothing scores the candidates, so the ADF posterior
of the basis rows (:class:`~skgpsparse.inference._adf.ADFState`, O(n p^2) over all rows) would be
built for nothing: at n = 100,000, p = 256 it cost 1.8 times the floor
(``benchmarks/scale/floor.py``). :class:`DrawnBasis` keeps the selection protocol (``candidates``,
``add``, ``size``, ``basis_indices``, ``nlp``) for the uniform draw only. Its candidates are all
rows not yet in the basis; the ADF state also leaves out rows of ~zero posterior variance
(duplicates of basis rows), so on data without such rows both draw the same basis from the same
generator.
"""

import numpy as np

from ...selection import RandomSelector

__all__ = ["DrawnBasis", "draws_only"]


def draws_only(selector, n_exchange):
    """Whether the basis selection is a uniform draw that never reads the basis posterior."""
    return type(selector) is RandomSelector and not n_exchange


class DrawnBasis:
    """Rows drawn into the basis, in order, under the selection protocol.

    Parameters
    ----------
    n_samples : int
    max_basis : int

    Examples
    --------
    >>> import numpy as np
    >>> from skgpsparse.latent.learning._drawn_basis import DrawnBasis
    >>> state = DrawnBasis(5, 2)
    >>> state.add(3)
    >>> state.candidates().tolist(), state.basis_indices.tolist()
    ([0, 1, 2, 4], [3])
    """

    def __init__(self, n_samples, max_basis):
        self.in_basis = np.zeros(n_samples, dtype=bool)
        self.excluded = np.zeros(n_samples, dtype=bool)
        self.basis = np.empty(max_basis, dtype=np.intp)
        self.size = 0

    @property
    def n_samples(self):
        return self.in_basis.size

    @property
    def basis_indices(self):
        return self.basis[: self.size]

    def candidates(self):
        """All rows not in the basis (nor excluded, :meth:`exclude_rows`)."""
        return np.flatnonzero(~self.in_basis & ~self.excluded)

    def exclude_rows(self, rows, excluded=True):
        """As :meth:`~skgpsparse.inference._adf.ADFBasis.exclude_rows`."""
        self.excluded[rows] = excluded

    def add(self, j):
        self.basis[self.size] = j
        self.in_basis[j] = True
        self.size += 1

    def nlp(self, *, all_points=False):
        """No basis posterior is formed: NaN (``exchange_loss_curve_`` records it)."""
        return float("nan")
