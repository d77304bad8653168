"""An early exit for the per-feature trial's first learn when it cannot pay its charge.

The per-feature decision
(:func:`skgpsparse.latent.learning._ep_rounds._per_feature_choice`) learns ``(theta, b)``
with one length scale per feature on the kept basis, by at most ``maxiter`` L-BFGS-B iterations,
and goes on only if the gain in log evidence per row exceeds the charge per row. Where the extra
length scales gain little (pmlb twonorm: +1.3 nats against a charge of 72) the run's later
iterations cannot change that answer. :class:`ChargeBound` is the run's ``callback``: after each
iteration it bounds what the run can still gain by two estimates, and stops it (``StopIteration``,
so that L-BFGS-B returns its current iterate) when both say that the gain cannot reach the charge:

- the quadratic model of L-BFGS (Nocedal and Wright 2006, §7.2): its minimum lies
  ``0.5 g^T H g`` below the iterate, ``H`` the inverse-Hessian estimate of the two-loop
  recursion on the iterates' pairs ``(s_k, y_k)`` and ``g`` the gradient projected on the
  bounds; taken ``SAFETY`` times (``H`` is only right along the directions searched);
- the iterations left at the largest of the last two iterations' decreases (L-BFGS's
  decreases shrink as it converges).

The answer then is the one the full run would give unless the run's remaining iterations
gain over ``SAFETY`` times the model's estimate and, at once, more than the recent rate would
reach; the benchmark log of session 22 (``benchmarks/README.md``, "History") measures the
decisions with and without it.
"""

import numpy as np

__all__ = ["ChargeBound", "ChargeStop", "lbfgs_model_decrease"]

# The factor on the quadratic model's estimate of the decrease left.
SAFETY = 10.0
# Iterations before the bound may stop the run (the model needs pairs to mean anything).
MIN_ITERATIONS = 3


def lbfgs_model_decrease(g, pairs):
    """``0.5 g^T H g``: the decrease to the minimum of L-BFGS's quadratic model at gradient
    ``g``, ``H`` the two-loop recursion's inverse Hessian from the pairs ``[(s, y), ...]``
    (oldest first; pairs with ``s^T y <= 0`` are skipped, as L-BFGS-B does).

    Examples
    --------
    On a quadratic ``f(x) = x^T A x / 2`` with pairs along both axes the model is exact:

    >>> import numpy as np
    >>> A = np.diag([1.0, 4.0])
    >>> pairs = [(np.array([1.0, 0.0]), A @ [1.0, 0.0]), (np.array([0.0, 1.0]), A @ [0.0, 1.0])]
    >>> x = np.array([2.0, 1.0])
    >>> float(lbfgs_model_decrease(A @ x, pairs)), float(x @ A @ x / 2)
    (4.0, 4.0)
    """
    pairs = [(s, y) for s, y in pairs if s @ y > 0]
    if not pairs:
        return np.inf
    q, alphas = np.array(g, dtype=float), []
    for s, y in reversed(pairs):
        alpha = (s @ q) / (s @ y)
        q -= alpha * y
        alphas.append(alpha)
    s, y = pairs[-1]
    r = (s @ y) / (y @ y) * q
    for (s, y), alpha in zip(pairs, reversed(alphas)):
        r += s * (alpha - (y @ r) / (s @ y))
    return 0.5 * float(g @ r)


class ChargeBound:
    """``callback`` of an L-BFGS-B run (scipy's ``intermediate_result`` form) that raises
    ``StopIteration`` when the run's gain below ``start`` cannot reach ``needed``.

    Parameters
    ----------
    start : float
        The loss the gain is measured from (the kept round's).
    needed : float
        The gain the run must exceed (the charge, in the loss's units).
    maxiter : int
        The run's iteration cap.
    bounds : ndarray of shape (n_params, 2)
        The run's bounds (the gradient is projected on them).
    """

    def __init__(self, start, needed, maxiter, bounds):
        self.start, self.needed, self.maxiter = start, needed, maxiter
        self.bounds = np.asarray(bounds, dtype=float)
        self.stopped, self._seen, self._iterates = False, {}, []

    def watch(self, objective):
        """``objective`` with its evaluations recorded (the callback needs the gradients)."""

        def watched(theta, eval_gradient=True):
            out = objective(theta, eval_gradient)
            if eval_gradient:
                seen = (np.array(theta, dtype=float), float(out[0]), np.array(out[1], dtype=float))
                if not self._iterates:  # the start
                    self._iterates.append(seen)
                self._seen = {seen[0].tobytes(): seen[1:]}
            return out

        return watched

    def __call__(self, intermediate_result):
        x = np.asarray(intermediate_result.x, dtype=float)
        seen = self._seen.get(x.tobytes())
        if seen is None:  # the iterate's gradient unknown: no bound
            return
        self._iterates.append((x.copy(), *seen))
        k = len(self._iterates) - 1  # iterations run
        missing = self.needed - (self.start - seen[0])
        if k < MIN_ITERATIONS or missing <= 0:
            return
        xs, fs, gs = zip(*self._iterates)
        pairs = [(xs[i + 1] - xs[i], gs[i + 1] - gs[i]) for i in range(k - 1)]
        g = gs[-1].copy()
        lower, upper = self.bounds[:, 0], self.bounds[:, 1]
        g[((x <= lower) & (g > 0)) | ((x >= upper) & (g < 0))] = 0.0  # projected gradient
        model = SAFETY * lbfgs_model_decrease(g, pairs)
        rate = (self.maxiter - k) * max(fs[-3] - fs[-2], fs[-2] - fs[-1], 0.0)
        if max(model, rate) < missing:
            self.stopped = True
            raise StopIteration


class ChargeStop:
    """``stop`` of a learn (:func:`~skgpsparse.latent.learning._ep_rounds._learn`): given the
    run's bounds it makes the run's :class:`ChargeBound` (from ``start``, ``needed``, at most
    ``maxiter`` iterations) and keeps the last one made, to say whether it stopped the run.

    Parameters
    ----------
    start : float
        The loss the gain is measured from.
    needed : float
        The gain the run must exceed.
    maxiter : int
        The run's iteration cap.
    """

    def __init__(self, start, needed, maxiter):
        self.start, self.needed, self.maxiter = start, needed, maxiter
        self.bound = None

    def __call__(self, run_bounds):
        self.bound = ChargeBound(self.start, self.needed, self.maxiter, run_bounds)
        return self.bound

    @property
    def stopped(self):
        """Whether the last run's bound ended it early."""
        return self.bound is not None and self.bound.stopped
