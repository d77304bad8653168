"""Basis-selection strategies shared by the sparse GP classifier and regressor.

A strategy picks the next basis vector from the points not yet in the basis. It sees the model
only through a small protocol that both estimators' incremental states implement:

``state.candidates()``
    Indices (into the training set) of the points that may still be added.
``state.score(criterion, J)``
    Scores of the candidates ``J`` under a named criterion, **lower is better**, computed for
    all of ``J`` at once (one batched computation, no Python loop over candidates). The
    criteria each state knows are listed in its estimator's documentation.
``state.sampling_weights(J)``
    Non-negative weights for drawing a working set (the classifier's eq. (11) of the additive
    model paper); only needed by ``sampling="weighted"``.

Two families cover the papers' methods:

- :class:`RandomSelector`: a uniform draw (the papers' baseline).
- :class:`GreedySelector`: score a working set of ``working_set_size`` candidates (all of them
  when ``None``), drawn uniformly (Smola & Bartlett 2001's random subset of 59) or by
  the state's weights (adaptive sampling), and take the best.

Users with their own criterion subclass :class:`BaseSelector` and implement ``select``; being
scikit-learn estimators in the ``get_params`` sense, selectors can be tuned by ``GridSearchCV``
(``selection__working_set_size``).
"""

import numbers

import numpy as np
from sklearn.base import BaseEstimator

__all__ = ["BaseSelector", "GreedySelector", "RandomSelector"]

# Weighted draws: repeats tolerated per requested draw before the exact fallback.
_REDRAWS = 20


class BaseSelector(BaseEstimator):
    """Base class of basis-selection strategies.

    Subclasses implement :meth:`select`. Parameters are set in ``__init__`` and exposed by
    ``get_params``, so a selector is cloned and tuned like any scikit-learn estimator.

    Examples
    --------
    A selector that takes the remaining point farthest from the origin:

    >>> import numpy as np
    >>> from sklearn.datasets import make_moons
    >>> from skgpsparse import BaseSelector, SparseGPClassifier
    >>> class FarthestFirst(BaseSelector):
    ...     def __init__(self, X=None):
    ...         self.X = X
    ...     def select(self, state, rng):
    ...         candidates = state.candidates()
    ...         return int(candidates[np.argmax(np.linalg.norm(self.X[candidates], axis=1))])
    >>> X, y = make_moons(100, noise=0.2, random_state=0)
    >>> clf = SparseGPClassifier(max_basis=5, selection=FarthestFirst(X), optimizer=None)
    >>> bool(np.linalg.norm(X[clf.fit(X, y).basis_indices_[0]]) == np.linalg.norm(X, axis=1).max())
    True
    """

    def select(self, state, rng):
        """Return the training-set index of the next basis vector.

        Parameters
        ----------
        state : object
            The estimator's incremental state (see the module docstring for its protocol).
        rng : numpy.random.RandomState
            Source of randomness, from the estimator's ``random_state``.

        Returns
        -------
        index : int
            Index of the chosen point; it must be one of ``state.candidates()``.
        """
        raise NotImplementedError


class RandomSelector(BaseSelector):
    """Pick the next basis vector uniformly at random among the remaining points.

    Examples
    --------
    >>> import numpy as np
    >>> from skgpsparse.selection import RandomSelector
    >>> class State:
    ...     def candidates(self):
    ...         return np.array([3, 5, 8])
    >>> int(RandomSelector().select(State(), np.random.RandomState(0))) in (3, 5, 8)
    True
    """

    def select(self, state, rng):
        candidates = state.candidates()
        return int(candidates[rng.randint(len(candidates))])


class GreedySelector(BaseSelector):
    """Score a working set of candidates with a named criterion and pick the best.

    Parameters
    ----------
    criterion : str
        Name of the criterion the estimator's state computes (for example ``"exact"``,
        ``"matching_pursuit"`` or ``"info_gain"`` for the regressor; ``"entropy"``, ``"nlp"``
        or ``"nlp_all"`` for the classifier).
    working_set_size : int or None, default=None
        Number of candidates scored per step (kappa in the papers). ``None`` scores every
        remaining point.
    sampling : {"uniform", "weighted"}, default="uniform"
        How the working set is drawn: uniformly without replacement, or with probabilities
        proportional to ``state.sampling_weights`` (adaptive sampling).
    keep_working_set : bool, default=False
        Keep the working set across steps (Keerthi & Chu 2005, section 4): the candidates of
        the previous step that are still candidates stay, and only the ones that left (the
        chosen one, redundant points) are replaced by fresh draws. A state that caches the
        kernel columns of its last working set (the regressor's) then computes one new
        kernel column per step instead of ``working_set_size``.

    Examples
    --------
    >>> import numpy as np
    >>> from skgpsparse.selection import GreedySelector
    >>> class State:
    ...     def candidates(self):
    ...         return np.arange(10)
    ...     def score(self, criterion, J):
    ...         return (J - 6.0) ** 2
    >>> GreedySelector("toy").select(State(), np.random.RandomState(0))
    6
    """

    def __init__(
        self, criterion, working_set_size=None, sampling="uniform", keep_working_set=False
    ):
        self.criterion = criterion
        self.working_set_size = working_set_size
        self.sampling = sampling
        self.keep_working_set = keep_working_set

    def _validate(self):
        kappa = self.working_set_size
        if kappa is not None and (
            not isinstance(kappa, numbers.Integral) or isinstance(kappa, bool) or kappa < 1
        ):
            raise ValueError(
                f"`working_set_size` must be a positive integer or None, got {kappa!r}."
            )
        if self.sampling not in ("uniform", "weighted"):
            raise ValueError(f"`sampling` must be 'uniform' or 'weighted', got {self.sampling!r}.")

    def working_set(self, state, rng):
        """Draw the candidates to score this step."""
        self._validate()
        candidates = state.candidates()
        kappa = self.working_set_size
        if kappa is None or kappa >= len(candidates):
            return candidates
        kept = np.zeros(0, dtype=candidates.dtype)
        previous = getattr(self, "_kept", None) if self.keep_working_set else None
        if previous is not None and len(previous):
            # state.candidates() is sorted (flatnonzero), so membership is a binary search.
            at = np.searchsorted(candidates, previous).clip(0, len(candidates) - 1)
            kept = previous[candidates[at] == previous][:kappa]
        J = np.concatenate([kept, self._draw(state, rng, candidates, kept, kappa - len(kept))])
        if self.keep_working_set:
            self._kept = J
        return J

    def _draw(self, state, rng, candidates, kept, size):
        """``size`` candidates not in ``kept``, uniformly or by the state's weights."""
        if size <= 0:
            return np.zeros(0, dtype=candidates.dtype)
        free = np.ones(len(candidates), dtype=bool)
        if len(kept):
            free[np.searchsorted(candidates, kept)] = False
        pool = candidates[free] if len(kept) else candidates
        if self.sampling == "uniform":
            return pool[_uniform_draws(len(pool), size, rng)]
        weights = np.asarray(state.sampling_weights(candidates), dtype=float)
        weights = np.where(free & np.isfinite(weights) & (weights > 0), weights, 0.0)
        n_positive = np.count_nonzero(weights)
        if n_positive == 0:
            return pool[_uniform_draws(len(pool), size, rng)]
        size = min(size, n_positive)
        return candidates[_weighted_draws(weights, size, rng)]

    def select(self, state, rng):
        J = self.working_set(state, rng)
        scores = np.asarray(state.score(self.criterion, J), dtype=float)
        # A candidate whose score is not finite (numerical trouble) is never preferred.
        scores = np.where(np.isnan(scores), np.inf, scores)
        return int(J[np.argmin(scores)])


def draw_ahead(selector, state, rng, criteria):
    """The working set ``selector`` will draw next from ``state``, without drawing it.

    For a fit whose rows live on other machines (:mod:`skgpsparse.rows`): the rows of the
    next working set can then travel with the current step's pass. Returns ``None`` unless
    the draw is a function of ``state.candidates()`` and ``rng``'s state alone (a
    :class:`GreedySelector` drawing uniformly afresh each step, with a criterion of
    ``criteria``); the draw uses a copy of ``rng``'s state, so ``rng`` is untouched and then
    draws exactly this set.

    Examples
    --------
    >>> import numpy as np
    >>> class State:
    ...     def candidates(self):
    ...         return np.arange(100)
    >>> rng = np.random.RandomState(0)
    >>> selector = GreedySelector("toy", 3)
    >>> ahead = draw_ahead(selector, State(), rng, ("toy",))
    >>> bool(np.array_equal(ahead, selector.working_set(State(), rng)))
    True
    """
    if not (
        type(selector) is GreedySelector
        and selector.sampling == "uniform"
        and not selector.keep_working_set
        and selector.criterion in criteria
        and isinstance(rng, np.random.RandomState)
    ):
        return None
    ahead = np.random.RandomState()
    ahead.set_state(rng.get_state())
    return np.asarray(selector.working_set(state, ahead), dtype=np.intp)


def _weighted_draws(weights, size, rng):
    """``size`` successive draws without replacement with probabilities ``weights / sum``.

    Each draw inverts the cumulative sum of the weights at one uniform number (a binary
    search); a repeat is drawn again, which makes the accepted draw exactly the next draw
    without replacement (the first distribution conditioned on not repeating). One O(n) sum
    per call, against O(n) random numbers, logarithms and a partition for sampling by keys.
    Should the repeats keep coming (a few weights hold nearly all the mass), the weights
    drawn so far are zeroed and the sum recomputed, one O(n) pass per remaining draw.

    Parameters
    ----------
    weights : ndarray of shape (n,)
        Non-negative, at least ``size`` of them positive.
    size : int
    rng : numpy.random.RandomState

    Returns
    -------
    indices : ndarray of shape (size,)
        In the order drawn.

    Examples
    --------
    >>> import numpy as np
    >>> from skgpsparse.selection import _weighted_draws
    >>> draws = _weighted_draws(np.array([0.0, 1.0, 0.0, 2.0]), 2, np.random.RandomState(0))
    >>> sorted(draws.tolist())
    [1, 3]
    """

    def draw(cumulative):
        i = int(np.searchsorted(cumulative, rng.uniform(0.0, cumulative[-1]), side="right"))
        return min(i, cumulative.size - 1)  # u < total: only round-off lands past the end

    cumulative = np.cumsum(weights)
    chosen = []
    for _ in range(_REDRAWS * size):
        i = draw(cumulative)
        if weights[i] > 0 and i not in chosen:
            chosen.append(i)
            if len(chosen) == size:
                return np.array(chosen, dtype=np.intp)
    weights = weights.copy()
    while len(chosen) < size:
        weights[chosen] = 0.0
        i = draw(np.cumsum(weights))
        if weights[i] > 0:
            chosen.append(i)
    return np.array(chosen, dtype=np.intp)


def _uniform_draws(n, size, rng):
    """``size`` distinct indices of ``range(n)``, drawn uniformly without replacement.

    Draws with replacement and drops repeats (keeping the first occurrence), then draws again
    for the missing ones: each accepted index is the next draw without replacement, as in
    :func:`_weighted_draws`. O(size) random numbers against the O(n) permutation that
    ``RandomState.choice(n, size, replace=False)`` makes each call (15 ms at n = 10^6, once
    per forward step). When ``size`` is a large part of ``n`` (repeats would be frequent) it
    falls back to that permutation.

    Parameters
    ----------
    n : int
    size, rng
        As :func:`_weighted_draws`'s; ``size`` at most ``n``.

    Returns
    -------
    indices
        As :func:`_weighted_draws`'s: ``size`` indices in the order drawn.

    Examples
    --------
    >>> import numpy as np
    >>> from skgpsparse.selection import _uniform_draws
    >>> draws = _uniform_draws(1000, 5, np.random.RandomState(0))
    >>> len(set(draws.tolist())), bool(draws.max() < 1000)
    (5, True)
    """
    if 4 * size > n:
        return rng.choice(n, size=size, replace=False)
    chosen = np.zeros(0, dtype=np.intp)
    while len(chosen) < size:
        draws = np.concatenate([chosen, rng.randint(n, size=size - len(chosen))])
        _, first = np.unique(draws, return_index=True)
        chosen = draws[np.sort(first)]
    return chosen


def check_working_set_size(working_set_size, default):
    """Validate an estimator's ``working_set_size`` parameter; ``None`` means ``default``."""
    if working_set_size is None:
        return default
    if (
        not isinstance(working_set_size, numbers.Integral)
        or isinstance(working_set_size, bool)
        or working_set_size < 1
    ):
        raise ValueError(
            f"`working_set_size` must be a positive integer or None, got {working_set_size!r}."
        )
    return int(working_set_size)
