"""Quadrature over the Gaussian scale mixture of the Student-t: ``Z`` and its expectations.

With ``lambda ~ Gamma(a, rate a)``, ``a = nu / 2``, the Student-t is ``N(y; f, s^2 / lambda)``
mixed over ``lambda`` (Rasmussen & Williams 2006, §9.3), so under ``N(f; m, v)`` with
``r = y - m`` and ``q = v + s^2 / lambda``

    Z = int Gamma(lambda; a, a) N(r; 0, q) d lambda.

:func:`mixture_moments` returns ``log Z`` and the expectations under the normalised integrand
that the likelihood's derivatives are made of (``E[1/q]``, ``E[1/q^2]`` and, for learning,
``E[(s^2 / (lambda q)) (r^2 / q - 1)]`` and ``E[log lambda - lambda + 1]``). Two rules:

- **Generalised Gauss-Laguerre** in ``lambda`` where ``v <= 0.1 s^2`` (the rows EP meets most:
  a cavity narrower than the noise). With ``N(r; 0, q) = (2 pi)^-1/2 lambda^1/2 (v lambda +
  s^2)^-1/2 exp(-r^2 lambda / (2 (v lambda + s^2)))`` the integrand is ``lambda^(a - 1/2)
  e^(-beta lambda)`` times a function that is smooth on the weight's mass (its one singularity,
  at ``lambda = -s^2 / v``, is far); ``beta`` takes the exponent's slope at the weight's
  mean. Exact for ``v = 0`` (the Student-t itself); 24 nodes give ~1e-11 relative up to
  ``v = 0.1 s^2`` for ``nu >= 1`` (``benchmarks/studies/student_t_moments.py``).
- **Trapezoid rule in** ``u = log lambda`` elsewhere (wide cavities, where the integrand
  ``e^h(u)`` can have two peaks: an outlier explained by the noise or by the latent value).
  Newton steps from two analytic starts (the ``v = 0`` posterior's mode and the scale at
  which ``q = r^2``) find the peaks, Newton steps on ``h(u) = top - 28`` the range's ends.
  Left of the peaks ``h`` falls only linearly (``h ~ (a + 1/2) u``), so the nodes are equally
  spaced in ``t`` with ``u(t) = t - 3 w softplus((c - t) / w)`` (``c`` three widths ``w``
  left of the left peak): slope 1 at the peaks, 4 in the far tail, which takes a quarter of
  the nodes. The step starts at 0.45 of the narrowest peak's Laplace width (at most 0.35);
  the rule converges geometrically, so each row is checked against the rule on every other
  node and redone with twice the nodes where any output differs by more than ``3e-5``
  (relative; then ``~1e-9``).

The likelihood's parameter derivatives need ``E[log lambda]``; ``log lambda`` is singular at
``lambda = 0``, where the Laguerre weight puts its nodes, so they take the trapezoid rule on
every row (a learning step asks for them once, the EP sweeps for ``log Z`` many times).
"""

import functools

import numpy as np
from scipy.special import digamma, gammaln

__all__ = ["digamma_gap", "mixture_moments"]

# Gauss-Laguerre: nodes, and the largest v / s^2 it is used at.
_N_LAGUERRE = 24
_LAGUERRE_MAX_VAR = 0.1
# Trapezoid: the range where h is within e^-_DROP of its peak; the step as a share of the
# narrowest peak's width and its cap; node counts (odd: the check rule takes every other).
_DROP = 27.0
_STEP_WIDTH = 0.45
_MAX_STEP = 0.35
_SIZES = np.array([17, 25, 33, 41, 49, 65, 81, 97, 129, 161, 193, 257, 385, 513, 769, 1025])
_CHECK_TOL = 3e-5
# The slope alpha of the map u(t) beyond the left tail's anchor (_tail_map).
_TAIL_SLOPE = 3.0
_PEAK_STEPS = 30
_END_STEPS = 6
_CHUNK = 2048
# Above this a, Stirling series replace differences of large log-gamma values.
_LARGE_A = 1e3


def _log_gamma_half_ratio(a):
    """``log Gamma(a + 1/2) - log Gamma(a) - log(a) / 2`` (a series for large ``a``)."""
    if a > _LARGE_A:
        return -1.0 / (8.0 * a) + 1.0 / (192.0 * a**3)
    return float(gammaln(a + 0.5) - gammaln(a) - 0.5 * np.log(a))


def log_gamma_prior_term(a):
    """``a log a - a - log Gamma(a)``: the log-normaliser of ``Gamma(a, rate a)`` in
    ``u = log lambda`` less ``a`` (a Stirling series for large ``a``)."""
    if a > _LARGE_A:
        return 0.5 * np.log(a / (2.0 * np.pi)) - 1.0 / (12.0 * a) + 1.0 / (360.0 * a**3)
    return float(a * np.log(a) - a - gammaln(a))


@functools.lru_cache(maxsize=32)
def _laguerre_rule(n, alpha):
    """Nodes and normalised weights (sum 1) of ``n``-point Gauss-Laguerre for the weight
    ``x^alpha e^-x`` by Golub-Welsch (the unnormalised weights overflow for large alpha)."""
    k = np.arange(n)
    diagonal = 2.0 * k + alpha + 1.0
    off = np.sqrt(k[1:] * (k[1:] + alpha))
    jacobi = np.diag(diagonal) + np.diag(off, 1) + np.diag(off, -1)
    nodes, vectors = np.linalg.eigh(jacobi)
    weights = vectors[0] ** 2
    return nodes, np.log(weights / weights.sum())


def _laguerre(r, r2, var, a, s2):
    """Gauss-Laguerre over ``lambda`` (module docstring); rows with ``v <= 0.1 s^2``."""
    x, log_w = _laguerre_rule(_N_LAGUERRE, a - 0.5)
    # beta = a + d/d lambda [r^2 lambda / (2 (v lambda + s^2))] at lambda0, the v = 0 mode
    lam0 = (a + 0.5) / (a + 0.5 * r2 / (s2 + var))
    excess = 0.5 * r2 * s2 / (var * lam0 + s2) ** 2  # beta - a
    beta = a + excess
    lam = x / beta[:, None]
    den = var[:, None] * lam + s2  # lambda q
    log_terms = (log_w - 0.5 * np.log(den) - 0.5 * r2[:, None] * lam / den
                 + excess[:, None] * lam)
    top = np.max(log_terms, axis=1, keepdims=True)
    weights = np.exp(log_terms - top)
    total = weights.sum(axis=1)
    weights /= total[:, None]
    # log Z = log[a^a / Gamma(a)] + log Gamma(a + 1/2) - (a + 1/2) log beta - log(2 pi) / 2
    #         + log sum_k w_k G(x_k / beta)
    log_z = (_log_gamma_half_ratio(a) - (a + 0.5) * np.log1p(excess / a)
             - 0.5 * np.log(2.0 * np.pi) + np.log(total) + top[:, 0])
    inv_q = lam / den
    return [log_z, np.sum(weights * inv_q, axis=1), np.sum(weights * inv_q * inv_q, axis=1)]


def _parameter_sums(weights, inv_q, r2, var, u):
    """``E[(w / q)(r^2 / q - 1)]`` with ``w = q - v = s^2 / lambda``, and
    ``E[log lambda - lambda + 1]`` (``O(1 / a)``, so no cancellation for large ``a``), under
    the normalised ``weights`` on the nodes ``u = log lambda``."""
    share = 1.0 - var[:, None] * inv_q  # w / q
    return [np.sum(weights * share * (r2[:, None] * inv_q - 1.0), axis=1),
            -np.sum(weights * (np.expm1(u) - u), axis=1)]


def _log_integrand(u, r2, var, a, s2, c0, derivatives=False):
    """``h(u)`` less a constant, and ``q``; or ``(h, h', h'')``."""
    lam = np.exp(u)
    extra = s2 / lam  # q - v = -dq/du
    q = var + extra
    inv_q = 1.0 / q
    t = r2 * inv_q
    # log Gamma(u) = c0 + a (u - e^u + 1); through expm1 where a is large (exact near u = 0)
    if a > _LARGE_A:
        h = c0 - a * (np.expm1(u) - u) - 0.5 * np.log(q) - 0.5 * t
    else:
        h = (c0 + a) + a * (u - lam) - 0.5 * np.log(q) - 0.5 * t
    if not derivatives:
        return h, q
    share = extra * inv_q
    grad = a - a * lam + 0.5 * share * (1.0 - t)
    curv = -a * lam - 0.5 * var * share * inv_q + 0.5 * t * share * inv_q * (2.0 * var - q)
    return h, grad, curv


def _peak(u, r2, var, a, s2, c0):
    """Newton steps to a peak of ``h`` (a bounded ascent step where ``h`` is not concave),
    on the rows still moving; the peak, ``h`` there and its Laplace width."""
    u = u.copy()
    active = np.arange(u.size)
    for _ in range(_PEAK_STEPS):
        x = u[active]
        _, grad, curv = _log_integrand(x, r2[active], var[active], a, s2, c0, derivatives=True)
        concave = curv < 0.0
        step = np.where(concave, -grad / np.where(concave, curv, -1.0), np.sign(grad) * 2.0)
        step = np.clip(step, -2.0, 2.0)
        x += step
        u[active] = x
        active = active[np.abs(step) > 1e-9 * (1.0 + np.abs(x))]
        if not active.size:
            break
    h, _, curv = _log_integrand(u, r2, var, a, s2, c0, derivatives=True)
    return u, h, 1.0 / np.sqrt(np.maximum(-curv, 1e-12))


def _end(peak, peak_h, width, threshold, direction, r2, var, a, s2, c0):
    """A point beyond the peak (``direction`` -1: left, +1: right) where ``h <= threshold``:
    Newton steps on ``h = threshold - 1`` from the Gaussian guess (they overshoot outward where
    ``h`` is concave, then come back from outside), then steps out while ``h`` is above."""
    target = threshold - 1.0  # a margin: Newton lands on the root to rounding
    x = peak + direction * np.sqrt(2.0 * np.maximum(peak_h - target, 0.0)) * width
    for _ in range(_END_STEPS):
        h, grad, _ = _log_integrand(x, r2, var, a, s2, c0, derivatives=True)
        slope = -grad * direction  # > 0 where h falls outward
        falls = slope > 0.0
        move = np.where(falls, (h - target) / np.where(falls, slope, 1.0), width)
        x = x + direction * np.clip(move, -4.0 * width - 1.0, 4.0 * width + 1.0)
    h, _ = _log_integrand(x, r2, var, a, s2, c0)
    for k in range(40):
        inside = h > threshold
        if not inside.any():
            break
        x = np.where(inside, x + direction * width * 2.0**k, x)
        h, _ = _log_integrand(x, r2, var, a, s2, c0)
    return x


def _tail_map(t, anchor, width):
    """``u(t) = t - alpha w softplus((c - t) / w)`` and ``log du/dt``: the identity right of
    the anchor ``c``, slope ``1 + alpha`` left of it, so the left tail (where ``h`` falls
    only linearly) takes ``1 / (1 + alpha)`` of its nodes."""
    e = np.exp(np.minimum((anchor - t) / width, 700.0))
    softplus = np.log1p(e)
    # du/dt = 1 + alpha e / (1 + e) = (1 + (1 + alpha) e) / (1 + e)
    return t - _TAIL_SLOPE * width * softplus, np.log1p((1.0 + _TAIL_SLOPE) * e) - softplus


def _trapezoid_rows(left, right, anchor, width, n_nodes, r2, var, a, s2, c0,
                    with_parameters):
    """The trapezoid rule with ``n_nodes`` nodes on ``[left, right]`` in ``t`` (``u`` by
    :func:`_tail_map`) and the rule on every other node: two lists as
    :func:`mixture_moments` returns."""
    t = left[:, None] + (right - left)[:, None] * np.linspace(0.0, 1.0, n_nodes)
    u, log_jacobian = _tail_map(t, anchor[:, None], width[:, None])
    h, q = _log_integrand(u, r2[:, None], var[:, None], a, s2, c0)
    h += log_jacobian
    top = np.max(h, axis=1, keepdims=True)
    weights = np.exp(h - top)
    inv_q = 1.0 / q
    results = []
    for every in (1, 2):
        w = weights[:, ::every]
        total = w.sum(axis=1)
        w = w / total[:, None]
        step = (right - left) / (n_nodes - 1) * every
        iq = inv_q[:, ::every]
        out = [np.log(total) + top[:, 0] + np.log(step), np.sum(w * iq, axis=1),
               np.sum(w * iq * iq, axis=1)]
        if with_parameters:
            out += _parameter_sums(w, iq, r2, var, u[:, ::every])
        results.append(out)
    return results


def _trapezoid(r, r2, var, a, s2, with_parameters):
    """The trapezoid rule in ``u = log lambda`` (module docstring), checked row by row."""
    c0 = log_gamma_prior_term(a) - 0.5 * np.log(2.0 * np.pi)
    start = np.log((a + 0.5) / (a + 0.5 * r2 / (s2 + var)))
    peak_a, h_a, width_a = _peak(start, r2, var, a, s2, c0)
    far = r2 > 2.0 * var + s2
    start_b = np.where(far, np.log(s2 / np.maximum(r2 - var, 1e-300)), start)
    peak_b, h_b, width_b = _peak(start_b, r2, var, a, s2, c0)
    threshold = np.maximum(h_a, h_b) - _DROP
    two = (h_b > threshold) & (np.abs(peak_b - peak_a) > 1e-6)
    b_left = two & (peak_b < peak_a)
    b_right = two & (peak_b > peak_a)
    left = _end(np.where(b_left, peak_b, peak_a), np.where(b_left, h_b, h_a),
                np.where(b_left, width_b, width_a), threshold, -1.0, r2, var, a, s2, c0)
    right = _end(np.where(b_right, peak_b, peak_a), np.where(b_right, h_b, h_a),
                 np.where(b_right, width_b, width_a), threshold, 1.0, r2, var, a, s2, c0)
    # the tail map's anchor: 3 widths left of the left peak; t = u right of it, and
    # u(t) <= (1 + alpha) t - alpha c everywhere, so this t puts u at or left of the end
    left_width = np.where(b_left, width_b, width_a)
    anchor = np.where(b_left, peak_b, peak_a) - 3.0 * left_width
    left = np.maximum(left, (left + _TAIL_SLOPE * anchor) / (1.0 + _TAIL_SLOPE))
    width = np.where(two, np.minimum(width_a, width_b), width_a)
    step = np.minimum(_STEP_WIDTH * width, _MAX_STEP)
    size = np.searchsorted(_SIZES, np.ceil((right - left) / step) + 1)
    size = np.minimum(size, _SIZES.size - 1)
    n_out = 5 if with_parameters else 3
    out = np.empty((n_out, r.size))
    scale1 = 1.0 / (var + s2)
    todo = np.arange(r.size)
    while todo.size:
        redo = []
        for k in np.unique(size[todo]):
            rows = todo[size[todo] == k]
            for begin in range(0, rows.size, _CHUNK):
                rr = rows[begin:begin + _CHUNK]
                fine, coarse = _trapezoid_rows(
                    left[rr], right[rr], anchor[rr], left_width[rr], _SIZES[k], r2[rr],
                    var[rr], a, s2, c0, with_parameters)
                out[:, rr] = fine
                # the check: every output against the rule on every other node
                off = np.abs(fine[0] - coarse[0]) > _CHECK_TOL
                units = [scale1[rr], scale1[rr] ** 2, 1.0, 1.0][:n_out - 1]
                for j, unit in enumerate(units, start=1):
                    off |= (np.abs(fine[j] - coarse[j])
                            > _CHECK_TOL * (np.abs(fine[j]) + 1e-3 * unit))
                redo.append(rr[off & (k < _SIZES.size - 1)])
        todo = np.concatenate(redo) if redo else np.empty(0, dtype=int)
        size[todo] = np.minimum(size[todo] + 2, _SIZES.size - 1)
    return list(out)


def mixture_moments(r, var, dof, scale, with_parameters=False):
    """``log Z`` and expectations under the Student-t's scale mixture (module docstring).

    Parameters
    ----------
    r : ndarray of shape (n,)
        Residuals ``y - m``.
    var : ndarray of shape (n,)
        Marginal (cavity) variances, at least 0.
    dof, scale : float
        The Student-t's degrees of freedom ``nu = 2 a`` and scale ``s``.
    with_parameters : bool, default=False
        Also return the two expectations that the parameter derivatives need.

    Returns
    -------
    list of ndarray of shape (n,)
        ``log Z``, ``E[1/q]``, ``E[1/q^2]``; with ``with_parameters``,
        ``E[(s^2 / (lambda q)) (r^2 / q - 1)]`` and ``E[log lambda - lambda + 1]``.
    """
    a, s2 = 0.5 * float(dof), float(scale) ** 2
    r2 = r * r
    n_out = 5 if with_parameters else 3
    out = np.empty((n_out, r.size))
    # E[log lambda] is not smooth at lambda = 0, so the parameters' sums take the trapezoid
    narrow = np.flatnonzero((var <= _LAGUERRE_MAX_VAR * s2) & (not with_parameters))
    for begin in range(0, narrow.size, _CHUNK):  # chunks that stay in cache
        rows = narrow[begin:begin + _CHUNK]
        out[:, rows] = _laguerre(r[rows], r2[rows], var[rows], a, s2)
    wide = np.flatnonzero((var > _LAGUERRE_MAX_VAR * s2) | with_parameters)
    if wide.size:
        out[:, wide] = _trapezoid(r[wide], r2[wide], var[wide], a, s2, with_parameters)
    return list(out)


def digamma_gap(a):
    """``log a - psi(a)`` (about ``1 / (2a)``; a series for large ``a``): with
    ``E[log lambda - lambda + 1]`` it gives ``d log Z / da`` (``_student_t.py``)."""
    if a > _LARGE_A:
        return 1.0 / (2.0 * a) + 1.0 / (12.0 * a**2) - 1.0 / (120.0 * a**4)
    return float(np.log(a) - digamma(a))
