"""Scales ``c`` that bring targets of any finite magnitude to order one (``y / c``).

Both rules give ``c = 1`` for targets of ordinary magnitude (largest ``|y|`` in
``[1/16, 16)``), so that their fits stay bit for bit what they were. Beyond,
:func:`target_scale` is the largest ``|y|`` itself, so that every scale ``s`` of the same
targets gives the same ``y / c`` up to one rounding (a model fitted to ``y / c`` is then
equivariant in the unit of ``y``); :func:`power_of_two_scale` is a power of two, for
arithmetic that must stay exact (the moments of :func:`scaled_mean_std`).
"""

import numpy as np

__all__ = ["ORDINARY_EXPONENTS", "power_of_two_scale", "scaled_mean_std", "target_scale"]

# Targets whose largest magnitude m satisfies 2**lo <= m < 2**hi are "ordinary": scale 1.
ORDINARY_EXPONENTS = (-4, 4)


def _largest_magnitude(y, ordinary):
    """``(m, e)``: ``m = max |y|`` and its binary exponent, or None for ordinary targets."""
    m = float(np.max(np.abs(y), initial=0.0))  # no square is formed: no overflow
    if m == 0.0 or not np.isfinite(m):
        return None
    _, e = np.frexp(m)  # m = f 2**e with f in [0.5, 1)
    if ordinary[0] < e <= ordinary[1]:  # 2**lo <= m < 2**hi
        return None
    return m, int(e)


def target_scale(y, ordinary=ORDINARY_EXPONENTS):
    """``c = max |y|``, or 1 for targets of ordinary magnitude (``2**lo <= max |y| < 2**hi``).

    Targets ``s * y`` outside the ordinary range give ``s * y / c = y / max |y|`` up to one
    rounding, whatever ``s``: the fitted model is the same in every unit of ``y``.

    Examples
    --------
    >>> import numpy as np
    >>> from skgpsparse._scaling import target_scale
    >>> target_scale(np.array([0.5, -3.0])), target_scale(np.array([0.5, -3.0]) * 1e300)
    (1.0, 3e+300)
    """
    found = _largest_magnitude(y, ordinary)
    return 1.0 if found is None else found[0]


def power_of_two_scale(y, ordinary=ORDINARY_EXPONENTS):
    """``c = 2**k`` such that ``y / c`` has order one; 1 for targets of ordinary magnitude.

    The rule: let ``m = max |y|``. If ``2**lo <= m < 2**hi`` (``ordinary``, by default
    ``[1/16, 16)``), or ``m`` is 0, ``c = 1``. Otherwise ``c`` is the power of two that puts
    ``m / c`` in ``[1, 2)``, so that ``y / c`` and ``(y / c) * c`` are exact.

    Examples
    --------
    >>> import numpy as np
    >>> from skgpsparse._scaling import power_of_two_scale
    >>> power_of_two_scale(np.array([0.5, -3.0]))
    1.0
    >>> c = power_of_two_scale(np.array([0.5, -3.0]) * 2.0**600)
    >>> c == 2.0**601, power_of_two_scale(np.array([3e-200])) == 2.0**-663
    (True, True)
    """
    found = _largest_magnitude(y, ordinary)
    return 1.0 if found is None else float(np.ldexp(1.0, found[1] - 1))


def scaled_mean_std(y):
    """``(mean, std)`` of ``y`` (per column of a 2-D ``y``) without overflow of the squares.

    ``np.std`` squares the deviations, which overflows beyond ``|y| ~ 1e154`` and flushes to
    zero below ``~1e-162``. Both moments are computed on ``y / c`` (``c`` from
    :func:`power_of_two_scale`, per column) and multiplied back by ``c``; for ordinary
    targets ``c = 1`` and the result is ``np.mean(y, axis=0), np.std(y, axis=0)`` exactly.
    """
    c = power_of_two_scale(y) if y.ndim == 1 else np.array([power_of_two_scale(v) for v in y.T])
    if np.all(c == 1.0):
        return np.mean(y, axis=0), np.std(y, axis=0)
    z = y / c
    return np.mean(z, axis=0) * c, np.std(z, axis=0) * c
