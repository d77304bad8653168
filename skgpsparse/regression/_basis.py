"""Forward selection and backward-deletion exchange of the regressor's basis (exchange paper).

Forward selection adds, one at a time, the candidate that the selector scores best, until the
basis holds ``max_basis`` vectors; each exchange step then deletes the basis vector whose
removal raises the cost (2) least (exchange paper eq. (5)) and forward-selects a replacement
from the other non-basis points. Both act on a :class:`~._state.RegressionState`.
"""

import warnings

import numpy as np
from sklearn.base import clone

from ..selection import BaseSelector, GreedySelector, RandomSelector

__all__ = ["forward_step", "make_selector", "select_and_exchange"]

_DEFAULT_WORKING_SET = 59


def make_selector(selection, working_set_size):
    """Map the ``selection`` parameter to a selector object."""
    if isinstance(selection, BaseSelector):
        return clone(selection)
    if selection == "random":
        return RandomSelector()
    if selection == "info_gain":
        return GreedySelector("info_gain", None)
    if selection in ("exact", "matching_pursuit", "vfe"):
        # A fresh random working set each step (Smola & Bartlett's 59). Keeping the unchosen
        # candidates (GreedySelector(..., keep_working_set=True)) computes one kernel column
        # per step instead of kappa, but on KIN40K it lost a third of DMAX's gain over random
        # selection (benchmarks/papers/results/kin40k.md), so it is an opt-in.
        return GreedySelector(selection, working_set_size or _DEFAULT_WORKING_SET)
    raise ValueError(
        "`selection` must be 'random', 'exact', 'matching_pursuit', 'info_gain', 'vfe' or a "
        f"BaseSelector instance, got {selection!r}."
    )


def forward_step(state, selector, rng, curve):
    """Add one basis vector chosen by ``selector``; False when no candidate is left."""
    while len(state.candidates()):
        if state.append(selector.select(state, rng)):
            curve.append(state.cost)
            return True
    return False


def select_and_exchange(state, selector, p, n_exchange, rng, curve, progress=None,
                        objective=None):
    """Forward selection to ``p`` basis vectors, then ``n_exchange`` exchange steps.

    Returns ``(state, curve)``; ``curve`` gets the cost (2) after every addition and deletion.
    ``progress`` (a :class:`~skgpsparse._progress.Progress`) reports the steps. An exchange
    step that leaves the fit worse than before is undone: worse means a higher cost (2), or,
    with ``objective`` (a function of the state to maximise, e.g. the VFE bound), a lower
    ``objective(state)``.
    """
    while state.n_basis < p and forward_step(state, selector, rng, curve):
        if progress is not None:
            progress.step(lambda: f"basis {state.n_basis}/{p}, cost (2) {state.cost:.6g}")
    if state.n_basis < p:
        warnings.warn(
            f"Only {state.n_basis} of max_basis={p} basis vectors could be selected; the "
            "other points are numerically redundant (e.g. repeated rows).",
            UserWarning,
        )
    for step in range(n_exchange if state.n_basis > 0 else 0):
        # Exchange paper eq. (5): delete the vector whose removal increases (2) least ...
        cost_before = state.cost
        value_before = None if objective is None else objective(state)
        pos = int(np.argmin(state.deletion_scores()))
        j = state.delete(pos)
        curve.append(state.cost)
        # ... and forward-select a replacement from the other non-basis points.
        state.excluded[j] = True
        added = forward_step(state, selector, rng, curve)
        state.excluded[j] = False
        if objective is None:
            worse = state.cost > cost_before
        else:
            worse = added and objective(state) < value_before
        if added and worse:
            # The best replacement found (from a working set, or with j itself excluded)
            # can be worse than the vector that left: undo, so that an exchange step never
            # worsens the fit. The step's second curve entry is then the old cost.
            state.delete(state.n_basis - 1)
            state.append(j)
            curve[-1] = state.cost
        elif not added:  # nothing else could be added: put the point back
            state.append(j)
            curve.append(state.cost)
        if progress is not None:
            progress.step(lambda: f"exchange step {step + 1}/{n_exchange}, cost {state.cost:.6g}")
    return state, curve
