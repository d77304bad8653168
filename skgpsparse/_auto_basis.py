"""``max_basis="auto"``: what both estimators' automatic basis sizes share.

Each estimator grows its basis by greedy forward selection in doublings (``FIRST_SIZE``,
twice that, ...) and stops at the first doubling whose gain per row is too small (its own
measure: Titsias' bound for the regressor, :mod:`skgpsparse.regression._basis_size`; the EP
evidence for the classifier, :mod:`skgpsparse.latent.learning._basis_size`). Here: the
parameter's test, the int that stands for it before the decision, the sizes tried and the cap
from the number of rows and the memory.
"""

from ._memory import available_memory, largest_fitting

__all__ = ["AUTO_START", "FIRST_SIZE", "MAX_AUTO_BASIS", "basis_cap", "doubling_sizes",
           "is_auto", "row_cap", "start_size"]

#: The first size checked, and the smallest basis ``"auto"`` keeps (fewer rows: every row).
FIRST_SIZE = 50
#: The largest basis ``"auto"`` grows (a larger one: an int ``max_basis``).
MAX_AUTO_BASIS = 800
#: The size that stands for ``"auto"`` before the decision: the learning subsample
#: (``learning_rows="auto"``) and the starts are today's default's (``max_basis=100``).
AUTO_START = 100


def is_auto(max_basis):
    """Whether ``max_basis`` is ``"auto"``."""
    return isinstance(max_basis, str) and max_basis == "auto"


def start_size(max_basis):
    """The int that stands for ``max_basis`` until the fit has chosen (``AUTO_START``)."""
    return AUTO_START if is_auto(max_basis) else max_basis


def row_cap(n):
    """The largest basis ``"auto"`` grows on ``n`` rows before the memory budget:
    ``MAX_AUTO_BASIS`` and half the rows (every row when there are at most ``FIRST_SIZE``).

    Examples
    --------
    >>> row_cap(30), row_cap(300), row_cap(10**5)
    (30, 150, 800)
    """
    return min(MAX_AUTO_BASIS, max(n // 2, min(n, FIRST_SIZE)))


def basis_cap(n, need, available=None):
    """The largest basis ``"auto"`` may grow on ``n`` rows: :func:`row_cap` of them and the
    largest ``q`` whose fit needs at most the memory ``available`` (bytes; None: the
    machine's), ``need(q)`` the bytes of a fit with ``q`` basis vectors. A fit that does not
    fit even with one basis vector raises at its memory check (the cap is then ``row_cap``)."""
    cap = row_cap(n)
    if available is None:
        available = available_memory()[0]
    if available is None:
        return cap
    fitting = largest_fitting(need, 1, cap, available)
    return cap if fitting is None else fitting


def doubling_sizes(start, cap):
    """The sizes of the doublings from ``min(start, cap)`` to ``cap`` (the last may be less
    than a doubling).

    Examples
    --------
    >>> doubling_sizes(50, 800), doubling_sizes(50, 300), doubling_sizes(50, 30)
    ([50, 100, 200, 400, 800], [50, 100, 200, 300], [30])
    """
    sizes, size = [], min(start, cap)
    while True:
        sizes.append(size)
        if size >= cap:
            return sizes
        size = min(2 * size, cap)
