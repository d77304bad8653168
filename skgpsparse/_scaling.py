"""Exact power-of-two scales that bring targets of any finite magnitude to order one.

Dividing by a power of two is exact in floating point (short of the subnormal range), so a
fit on ``y / c`` is the fit on ``y`` in other units, without a rounding of its own; and with
``c = 1`` for targets of ordinary magnitude their fits stay bit for bit what they were.
"""

import numpy as np

__all__ = ["ORDINARY_EXPONENTS", "power_of_two_scale", "scaled_mean_std"]

# Targets whose largest magnitude m satisfies 2**lo <= m < 2**hi are "ordinary": scale 1.
ORDINARY_EXPONENTS = (-4, 4)


def power_of_two_scale(y, ordinary=ORDINARY_EXPONENTS):
    """``c = 2**k`` such that ``y / c`` has order one; 1 for targets of ordinary magnitude.

    The rule: let ``m = max |y|`` (finite; no square is formed, so no overflow). If
    ``2**lo <= m < 2**hi`` (``ordinary``, by default ``[1/16, 16)``), or ``m`` is 0, ``c = 1``.
    Otherwise ``c`` is the power of two that puts ``m / c`` in ``[1, 2)``: targets scaled by
    a power of two outside the ordinary range all give the same ``y / c``.

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
    m = float(np.max(np.abs(y), initial=0.0))
    if m == 0.0 or not np.isfinite(m):
        return 1.0
    _, e = np.frexp(m)  # m = f 2**e with f in [0.5, 1)
    if ordinary[0] < e <= ordinary[1]:  # 2**lo <= m < 2**hi
        return 1.0
    return float(np.ldexp(1.0, int(e) - 1))


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
