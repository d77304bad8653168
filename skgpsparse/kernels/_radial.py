"""Radial kernels ``c * RBF`` and ``c * Matern`` as functions of the squared scaled distance.

The product forms of :mod:`skgpsparse.kernels._columns` and
:mod:`skgpsparse.kernels._contraction` get ``E = -r^2 / 2`` of every pair in one BLAS
product, ``r^2 = |s_x - s_z|^2`` for the scaled inputs ``s = (x - m) / l``. This module
turns ``E`` into the kernel values, and into the slopes ``G = c g(r)`` with
``g = -(dk/dr) / r``, through which the length-scale gradient is ``dK / d log l_k = G D_k``
with ``D_k = (s_xk - s_zk)^2`` (:mod:`skgpsparse.kernels._rules`). For the RBF (GPML eq.
(2.31)) ``G = K``; for the half-integer Matern kernels (GPML eqs. (4.16)-(4.17)), with
``t = sqrt(2 nu) r``:

- ``nu = 1.5``: ``K = c (1 + t) exp(-t)``, ``G = 3 c exp(-t)``;
- ``nu = 2.5``: ``K = c (1 + t + t^2 / 3) exp(-t)``, ``G = 5/3 c (1 + t) exp(-t)``;
- ``nu = inf``: the RBF.

``r^2`` from inner products carries an absolute error ``delta`` of a few
``eps (|s_x|^2 + |s_z|^2)``; these kernels are smooth in ``r^2`` to first order
(``K = c (1 - nu / (nu - 1) r^2 / 2 + O(r^3))``), so ``K`` is off by ``O(c delta)``, as the
RBF's exponent. ``nu = 0.5`` (``exp(-r)``, whose slope in ``r^2`` is unbounded at 0) would be
off by ``sqrt(delta)`` near the diagonal and keeps the kernel's own call, as do the Bessel
forms of other ``nu``.

:func:`with_theta` builds these kernels at a new ``theta`` without scikit-learn's
``clone_with_theta`` (a hyperparameter search's candidate kernels).
"""

import numpy as np
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, Matern, Product

__all__ = ["Radial", "radial_parameters", "with_theta"]

# nu of the Matern kernels with a product form (inf: the RBF)
_MATERN_NU = (1.5, 2.5, np.inf)


class Radial:
    """Values and slopes of ``c * RBF`` or ``c * Matern(nu)`` from ``E = -r^2 / 2``.

    Parameters
    ----------
    c : float
        The amplitude (1 without a ``ConstantKernel`` factor).
    nu : float
        ``np.inf`` for the RBF, else the Matern kernel's ``nu`` (1.5 or 2.5).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import Matern
    >>> from skgpsparse.kernels._radial import Radial
    >>> r = np.array([[0.0, 0.5, 2.0]])
    >>> K, G = Radial(2.0, 2.5).values(-0.5 * r**2, slopes=True)
    >>> bool(np.allclose(K, 2.0 * Matern(1.0, nu=2.5)(np.zeros((1, 1)), r.T)))
    True
    """

    def __init__(self, c, nu):
        self.c, self.nu = float(c), float(nu)

    def values(self, E, slopes=False):
        """``K`` (and ``G`` when ``slopes``) from ``E = -r^2 / 2 <= 0``, which is overwritten.

        ``K`` is returned in ``E``'s memory. ``E`` entries above 0 (rounding of the inner
        products) must have been clipped by the caller.
        """
        c, nu = self.c, self.nu
        if nu == np.inf:  # GPML eq. (2.31); the slope is K itself
            K = np.exp(E, out=E)
            if c != 1.0:
                K *= c
            return (K, K) if slopes else K
        # t^2 = 2 nu r^2 = -4 nu E; in place where possible: a fresh array of a prediction's
        # block size costs about as much in page faults as the arithmetic on it
        E *= -4.0 * nu
        t = np.sqrt(E)
        if not slopes:  # seven passes, c in the exponent: c exp(-t) = exp(log c - t)
            if nu == 1.5:  # GPML eq. (4.17), first form
                E = np.add(t, 1.0, out=E)
            else:  # nu == 2.5, GPML eq. (4.17), second form: 1 + t + t^2 / 3
                E *= 1.0 / 3.0
                E += t
                E += 1.0
            np.subtract(np.log(c), t, out=t)
            return np.multiply(E, np.exp(t, out=t), out=E)
        e = np.negative(t)
        np.exp(e, out=e)
        if nu == 1.5:  # GPML eq. (4.17), first form
            G = np.multiply(e, 3.0 * c)
            t += 1.0
            K = np.multiply(t, e, out=E)
        else:  # nu == 2.5, GPML eq. (4.17), second form
            E *= 1.0 / 3.0  # t^2 / 3
            E += t
            E += 1.0
            t += 1.0
            G = np.multiply(t, e, out=t)
            G *= 5.0 / 3.0 * c
            K = np.multiply(E, e, out=E)
        if c != 1.0:
            K *= c
        return K, G


def radial_parameters(kernel, n_features):
    """``(c, length_scale, Radial)`` of an exact ``RBF``, ``Matern`` or ``c *`` one, else None.

    ``Matern`` qualifies for ``nu`` in 1.5, 2.5 and inf; either order of the product.

    Examples
    --------
    >>> from sklearn.gaussian_process.kernels import ConstantKernel, Matern, RBF
    >>> from skgpsparse.kernels._radial import radial_parameters
    >>> c, ls, radial = radial_parameters(ConstantKernel(2.0) * Matern([1.0, 3.0]), 2)
    >>> c, ls.tolist(), radial.nu
    (2.0, [1.0, 3.0], 1.5)
    >>> radial_parameters(Matern(1.0, nu=0.5), 1) is None
    True
    """
    c, leaf = 1.0, kernel
    if type(kernel) is Product:
        k1, k2 = kernel.k1, kernel.k2
        if type(k1) in (RBF, Matern) and type(k2) is ConstantKernel:
            k1, k2 = k2, k1
        if not (type(k1) is ConstantKernel and type(k2) in (RBF, Matern)):
            return None
        c, leaf = float(k1.constant_value), k2
    elif type(kernel) not in (RBF, Matern):
        return None
    nu = np.inf if type(leaf) is RBF else float(leaf.nu)
    if nu not in _MATERN_NU:
        return None
    ls = np.asarray(leaf.length_scale, dtype=float)
    # A length-scale vector must match the features (else the kernel's own call raises).
    if not (c > 0 and np.all(ls > 0) and (ls.ndim == 0 or ls.shape == (n_features,))):
        return None
    return c, ls, Radial(c, nu)


def _free(bounds):
    return not (isinstance(bounds, str) and bounds == "fixed")


def with_theta(kernel, theta):
    """``kernel.clone_with_theta(theta)``, built directly for ``c * RBF`` and ``c * Matern``.

    scikit-learn's ``clone_with_theta`` clones the kernel and sets ``theta`` through
    ``get_params`` and the ``hyperparameters`` lists (~0.2 ms for ``c * Matern``, more than an
    evaluation of the objective on a hundred rows in a hyperparameter search). For a product
    of a ``ConstantKernel`` and an ``RBF`` or ``Matern`` (either order, or the leaf alone)
    whose hyperparameters are all free, the same kernel (the same values, bounds and ``nu``)
    is constructed from ``theta`` in their order; any other kernel goes through
    ``clone_with_theta``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import ConstantKernel, Matern
    >>> from skgpsparse.kernels._radial import with_theta
    >>> k = ConstantKernel(2.0) * Matern([1.0, 3.0], nu=2.5)
    >>> theta = np.log([4.0, 0.5, 2.0])
    >>> repr(with_theta(k, theta)) == repr(k.clone_with_theta(theta))
    True
    """
    c_first, leaf, constant = True, kernel, None
    if type(kernel) is Product:
        constant, leaf = kernel.k1, kernel.k2
        if type(constant) in (RBF, Matern):
            c_first, constant, leaf = False, leaf, constant
        if type(constant) is not ConstantKernel or not _free(constant.constant_value_bounds):
            return kernel.clone_with_theta(theta)
    if type(leaf) not in (RBF, Matern) or not _free(leaf.length_scale_bounds):
        return kernel.clone_with_theta(theta)
    ls = leaf.length_scale
    n_ls = len(ls) if np.iterable(ls) and len(ls) > 1 else 1  # scikit-learn's anisotropic
    theta = np.asarray(theta, dtype=float)
    if theta.shape != (n_ls + (constant is not None),):
        return kernel.clone_with_theta(theta)
    start = 1 if constant is not None and c_first else 0
    value = np.exp(theta[start : start + n_ls]) if n_ls > 1 else np.exp(theta[start])
    if type(leaf) is RBF:
        new_leaf = RBF(value, leaf.length_scale_bounds)
    else:
        new_leaf = Matern(value, leaf.length_scale_bounds, nu=leaf.nu)
    if constant is None:
        return new_leaf
    new_c = ConstantKernel(np.exp(theta[0 if c_first else n_ls]), constant.constant_value_bounds)
    return Product(new_c, new_leaf) if c_first else Product(new_leaf, new_c)
