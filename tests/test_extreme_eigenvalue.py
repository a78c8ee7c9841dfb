"""The extreme eigenvalue the inference and the graphical lasso ask LAPACK for survives the
matrices on which LAPACK's one-eigenvalue driver fails."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import linalg

from dpggm.exceptions import NumericalError
from dpggm.solvers.psd import extreme_eigenvalue

# The precision of a refit (p = 100, one edge, 13-40) met in Su, Guo & Zhang's reproduction
# (RidgePrecision, model 4, n = 100): 74 of its diagonal entries are one value. On it
# LAPACK's ?syevr reports "Internal Error" and ?syevx does not converge (OpenBLAS 0.3, the
# wheels' LAPACK); rounding any entry makes the failure go away, so it is kept to the bit.
_VALUES = [
    "0x1.080fe32cb4059p-3", "0x1.187c55a58b390p-3", "0x1.253ad3d007db6p-3",
    "0x1.3c5bd6a51aa40p-3", "0x1.52b551c0e1662p-3", "0x1.53f7682d9a64fp-3",
    "0x1.8c4a7c912aa20p-3", "0x1.8c4a7c912aa21p-3", "0x1.9342a28551400p-3",
    "0x1.958c991627278p-3", "0x1.aa4e50737cfb3p-3", "0x1.ade21eae2f931p-3",
    "0x1.d89bc36a3a414p-3", "0x1.dd04b950f9ce5p-3", "0x1.e6d6a91613c5ap-3",
    "0x1.ec727eb5cc5a4p-3", "0x1.ee53fb2abb4d2p-3", "0x1.fc3832faeb2d2p-3",
    "0x1.05bcf4379f2a9p-2", "0x1.0d076835151d3p-2", "0x1.13d32640fe1b9p-2",
    "0x1.1f234d21eafa2p-2", "0x1.2fa6ada6575bcp-2", "0x1.381913f3dc6e5p-2",
    "0x1.56491f6a0a86dp-2", "0x1.64e5842f794dbp-2", "0x1.6671b63ffe9d5p-2",
]
_WHICH = [
    26, 26, 26, 26, 26, 11, 26, 26, 17, 26, 26, 26, 26, 6, 1, 26, 26, 26, 10, 26, 26, 23, 0,
    26, 26, 26, 14, 26, 26, 26, 26, 16, 21, 26, 26, 26, 15, 25, 26, 19, 7, 26, 18, 26, 26, 26,
    26, 26, 26, 26, 26, 26, 26, 22, 26, 26, 26, 26, 26, 26, 26, 26, 26, 26, 26, 26, 26, 26, 26,
    26, 26, 26, 13, 26, 8, 12, 26, 26, 26, 26, 5, 2, 26, 26, 26, 26, 26, 9, 26, 26, 26, 26, 26,
    4, 24, 26, 3, 26, 20, 26,
]


def _refit_precision() -> np.ndarray:
    values = np.array([float.fromhex(v) for v in _VALUES])
    theta = np.diag(values[_WHICH])
    theta[13, 40] = theta[40, 13] = float.fromhex("-0x1.4098efeed297fp-3")
    return theta


def test_the_extremes_of_a_matrix_lapack_s_subset_driver_fails_on():
    theta = _refit_precision()
    every = np.linalg.eigvalsh(theta)
    assert extreme_eigenvalue(theta, which="largest") == pytest.approx(every[-1], rel=1e-12)
    assert extreme_eigenvalue(theta, which="smallest") == pytest.approx(every[0], rel=1e-12)


def test_where_the_subset_driver_fails_every_eigenvalue_is_computed(monkeypatch):
    """Whatever this machine's LAPACK does with the matrix above, the fallback runs."""
    real = linalg.eigvalsh

    def failing_subset(a, *args, **kwargs):
        if "subset_by_index" in kwargs:
            raise np.linalg.LinAlgError("Internal Error.")
        return real(a, *args, **kwargs)

    monkeypatch.setattr(linalg, "eigvalsh", failing_subset)
    S = np.array([[2.0, 0.5, 0.0], [0.5, 1.0, 0.2], [0.0, 0.2, 3.0]])
    expected = np.linalg.eigvalsh(S)
    assert extreme_eigenvalue(S, which="smallest") == pytest.approx(expected[0], rel=1e-12)
    assert extreme_eigenvalue(S, which="largest") == pytest.approx(expected[-1], rel=1e-12)


def test_where_the_subset_driver_succeeds_its_value_is_returned_unchanged():
    rng = np.random.default_rng(3)
    A = rng.normal(size=(30, 30))
    S = A @ A.T
    p = S.shape[0]
    assert extreme_eigenvalue(S, which="smallest") == float(
        linalg.eigvalsh(S, subset_by_index=[0, 0], check_finite=False)[0])
    assert extreme_eigenvalue(S, which="largest") == float(
        linalg.eigvalsh(S, subset_by_index=[p - 1, p - 1], check_finite=False)[0])


def test_a_matrix_no_driver_can_decompose_is_a_numerical_error_and_which_is_checked():
    with pytest.raises(NumericalError, match="largest eigenvalue of a 2 x 2 symmetric matrix could not"):
        extreme_eigenvalue(np.array([[np.nan, 0.0], [0.0, 1.0]]), which="largest")
    with pytest.raises(ValueError, match="which must be 'smallest' or 'largest'; got 'top'"):
        extreme_eigenvalue(np.eye(2), which="top")


def test_the_fit_that_met_the_matrix_completes():
    """The inference on a refit whose precision is that matrix no longer stops the fit:
    the smallest eigenvalue of its completion is computed (1 / the largest of theta)."""
    from dpggm.solvers.inference import _smallest_eigenvalue_of_inverse

    theta = _refit_precision()
    assert _smallest_eigenvalue_of_inverse(theta) == pytest.approx(
        1.0 / np.linalg.eigvalsh(theta)[-1], rel=1e-12)
