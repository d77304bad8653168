"""``max_basis="auto"`` under the all-rows posterior: the basis size the EP evidence asks for.

One round of :mod:`._ep_rounds` (selection and learning) runs at the stand-in size (100, as
today's default) and learns ``(theta, b)`` from the start. At them the basis is grown afresh by
the model's own selection (the entropy criterion by default) in doublings
(``50, 100, 200, ...``), and after each doubling EP over every (learning) row gives its log
evidence per row under the FITC prior of that basis
(:class:`~skgpsparse.latent.objectives._ep_evidence.AllRowsObjective`, GPML eq. (3.65)), each
EP run started from the sites of the last (they belong to rows, not to the basis). The size
kept is the last one before the first doubling that raises it by less than ``GAIN_PER_ROW``
nats per row: the next doubling would cost about four times the fit's ``O(n p^2)`` work for
less. The rounds then go on at that size (:func:`sized_rounds`). With fixed hyperparameters
the curve is taken at the kernel given.

Why after one round, not at the start's ``(theta, b)``: there the amplitude and the length
scale are not yet the data's, and the evidence keeps rising with the basis where the learned
model gains nothing (pmlb twonorm, 5,000 rows: 0.0066, 0.0032, 0.0015 nats per row from 50 to
400 at the start, 0.0003 after one round; the start's rule chose 200 at 2.6 times the CPU
of the 50 the learned curve chooses, at the same test NLP;
``benchmarks/studies/results/basis_size_classifier.md``). The cap
(:func:`~skgpsparse._auto_basis.basis_cap`) is :func:`~skgpsparse._auto_basis.row_cap` of the
rows and the largest basis whose fit fits in the memory available.
"""

import numpy as np

from ..._auto_basis import FIRST_SIZE, doubling_sizes, row_cap
from ...inference._adf import ADFState
from ..objectives._ep_evidence import AllRowsObjective, joint_theta

__all__ = ["GAIN_PER_ROW", "choose_basis_size", "sized_rounds"]

#: Per-row gain (nats) of the EP log evidence below which a doubling does not pay.
GAIN_PER_ROW = 0.001


def sized_rounds(model, kernel, bias, sites, X, y, rng, rounds):
    """``rounds`` (:func:`~._ep_rounds._rounds`) of ``model`` with ``max_basis="auto"``:
    ``(kept round, rounds run)``.

    One round at the stand-in size (``model.max_basis``) learns ``(theta, b)`` from the start;
    :func:`choose_basis_size` then chooses the size at them, and the rounds go on at that
    size from them (the first round counts towards ``max_iter``; at least one round runs at
    the size chosen). The kept round is the best of those at the size chosen, or of all
    rounds when the size is the stand-in's. With fixed hyperparameters the size is chosen at
    the start and the rounds run at it.
    """
    learned = model.optimizer is not None
    first, n_first = (rounds(model, kernel, bias, sites, X, y, rng, 1) if learned
                      else ((None, kernel, bias, None, sites), 0))
    _, kernel, bias, _, sites = first[:5]
    size, model.basis_size_curve_ = choose_basis_size(model, kernel, X, y, bias, rng,
                                                      model.basis_cap, sites)
    model._warm_basis = None  # a warm start's basis started the first round
    if learned and size == model.max_basis:  # the rounds go on as with an int
        best, more = rounds(model, kernel, bias, sites, X, y, rng, model.max_iter - 1,
                            previous=first[0]) if model.max_iter > 1 else (first, 0)
        best = best if best[0] < first[0] else first
        return best, n_first + more
    model.max_basis = size
    best, more = rounds(model, kernel, bias, sites, X, y, rng,
                        max(model.max_iter - n_first, 1))
    return best, n_first + more


def choose_basis_size(model, kernel, X, y, bias, rng, cap, sites=(None, None)):
    """The basis size of ``model`` on the rows ``X, y`` at ``(kernel, bias)`` (module docstring).

    Parameters
    ----------
    model : LatentSparseGP
        Its selector, likelihood, row weights and progress lines are used.
    kernel : Kernel
        The starting kernel.
    X : ndarray of shape (n, n_features)
    y : ndarray of shape (n,)
        Labels in {-1, +1}.
    bias : float
        The starting bias.
    rng : numpy.random.RandomState
        The selector's draws (none for the entropy criterion).
    cap : int
        The largest size tried (:func:`~skgpsparse._auto_basis.basis_cap`).
    sites : pair of ndarray or None
        EP's start (None: one ADF pass).

    Returns
    -------
    size : int
        The size kept.
    curve : ndarray of shape (k, 2)
        Each size reached and the EP log evidence per row there.
    """
    cap = min(cap, row_cap(y.size))  # a learning subsample's, a pair's rows
    state = ADFState(kernel, X, y, bias, cap, likelihood=model.likelihood,
                     site_update=model.site_update, n_threads=model.n_threads)
    model._twins_of(X)
    curve = []
    z = joint_theta(kernel, model.likelihood, bias)
    for size in doubling_sizes(FIRST_SIZE, cap):
        while state.size < size and state.candidates().size:
            model._add(state, model.selector.select(state, rng))
            model._progress.step(
                lambda size=size: f"max_basis='auto': basis {state.size}/{size}")
        objective = AllRowsObjective(kernel, X, y, X[state.basis_indices], sites,
                                     likelihood=model.likelihood, weights=model._row_weights)
        value = -float(objective(z, eval_gradient=False))
        sites = objective.sites
        gain = value - curve[-1][1] if curve else np.inf
        curve.append((state.size, value))
        model._progress.line(
            f"max_basis='auto': basis {state.size}, EP log evidence per row {value:.5f}"
            + ("" if len(curve) == 1 else f", gain {gain:.5f}")
        )
        if gain < GAIN_PER_ROW:
            return curve[-2][0], np.asarray(curve)
        if state.size < size:  # no candidate left
            break
    return curve[-1][0], np.asarray(curve)
