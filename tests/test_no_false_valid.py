"""No release is reported "valid" when it is not (issue 20, first list): float noise and
the Wishart mechanisms' float draws are "invalid" and never booked; a pipeline step fitted
on the private data makes the record "data-dependent"."""

from __future__ import annotations

import numpy as np
import pytest

from dpggm import ZCDP, ApproxDP, Box, PureDP, RowNorm
from dpggm.estimators.baselines import AdaptiveCovariance, SSPCovariance
from dpggm.estimators.covariance import PrivateCovariance
from dpggm.estimators.pace import PACECovariance
from dpggm.estimators.precision import GraphicalLasso, OutputPerturbationPrecision
from dpggm.estimators.regression import AdaSSP
from dpggm.exceptions import InvalidGuaranteeError
from dpggm.mechanisms.publish import publish
from dpggm.privacy import Ledger, PrivacyAccountant


@pytest.fixture(scope="module")
def X():
    rng = np.random.default_rng(0)
    return np.clip(rng.normal(size=(300, 3)) / 3, -1, 1)


@pytest.fixture
def ledger(tmp_path):
    book = Ledger(tmp_path / "l.db")
    book.declare("zcdp", ZCDP(100.0))
    book.declare("pure", PureDP(100.0))
    book.declare("approx", ApproxDP(100.0, 0.5))
    return book


def _float_releases(X):
    """Every path that accepts noise="float" (and the Wishart mechanism), unseeded."""
    secure = {"random_state": "secure"}
    y = X[:, 0] * 0.5
    yield "gaussian", PrivateCovariance(budget=ApproxDP(1, 1e-5), bounds=RowNorm(1),
                                        noise="float", **secure).fit(X).privacy_
    yield "laplace", PrivateCovariance(budget=PureDP(1), bounds=RowNorm(1), mechanism="laplace",
                                       noise="float", **secure).fit(X).privacy_
    yield "zcdp", PrivateCovariance(budget=ZCDP(0.5), bounds=RowNorm(1), noise="float",
                                    **secure).fit(X).privacy_
    yield "sulq", PrivateCovariance(budget=ApproxDP(1, 1e-5), bounds=RowNorm(1), mechanism="sulq",
                                    noise="float", **secure).fit(X).privacy_
    yield "private mean", PrivateCovariance(budget=ApproxDP(1, 1e-5), bounds=RowNorm(1),
                                            center="private", noise="float",
                                            **secure).fit(X).privacy_
    yield "add-remove", PrivateCovariance(budget=ZCDP(0.5), bounds=RowNorm(1), noise="float",
                                          neighbors="add-remove", **secure).fit(X).privacy_
    yield "glasso", GraphicalLasso(alpha=0.1, budget=ZCDP(0.5), bounds=RowNorm(1), noise="float",
                                   **secure).fit(X).privacy_
    yield "ssp-zcdp", SSPCovariance(budget=ZCDP(0.5), bounds=Box(1), noise="float",
                                    **secure).fit(X).privacy_
    yield "adaptive", AdaptiveCovariance(budget=ZCDP(0.5), bounds=Box(1), noise="float",
                                         **secure).fit(X).privacy_
    yield "pace", PACECovariance(budget=ZCDP(0.5), bounds=Box(1), noise="float", max_rounds=2,
                                 **secure).fit(X).privacy_
    yield "adassp", AdaSSP(budget=ApproxDP(1, 1e-5), bounds=RowNorm(1), y_bound=1.0,
                           noise="float", **secure).fit(X[:, 1:], y).privacy_
    yield "publish", publish(X, bounds=RowNorm(1), epsilon=1.0, delta=1e-5, noise="float",
                             **secure).privacy_
    yield "wishart", PrivateCovariance(budget=ApproxDP(0.5, 1e-5), bounds=RowNorm(1),
                                       mechanism="wishart", **secure).fit(X).privacy_
    yield "wishart glasso", GraphicalLasso(alpha=0.1, budget=ApproxDP(0.5, 1e-5),
                                           bounds=RowNorm(1), mechanism="wishart",
                                           **secure).fit(X).privacy_
    yield "output perturbation", OutputPerturbationPrecision(
        budget=PureDP(1), bounds=RowNorm(1), allow_invalid=True, **secure).fit(X).privacy_


def test_float_noise_is_never_valid_and_names_mironov(X):
    records = dict(_float_releases(X))
    assert len(records) == 15
    for name, record in records.items():
        assert record.validity == "invalid", name
        assert not record.is_valid
        assert "Mironov 2012" in record.reason, name
        assert "INVALID" in record.summary()


def test_float_noise_is_never_booked(X, ledger):
    for name, record in _float_releases(X):
        accountant = PrivacyAccountant(ZCDP(100.0) if not isinstance(record.budget, ApproxDP)
                                       else ApproxDP(100.0, 0.5))
        with pytest.raises(InvalidGuaranteeError, match="invalid"):
            accountant.spend(record)
        assert accountant.spends == ()
        dataset = {"ApproxDP": "approx", "PureDP": "pure"}.get(type(record.budget).__name__,
                                                                "zcdp")
        with pytest.raises(InvalidGuaranteeError, match="Mironov 2012"):
            ledger.spend(dataset, record)
        assert ledger.history(dataset) == [], name


def test_exact_noise_stays_valid_and_bookable(X, ledger):
    record = PrivateCovariance(budget=ZCDP(0.5), bounds=RowNorm(1),
                               random_state="secure").fit(X).privacy_
    assert record.validity == "valid" and record.reason == ""
    ledger.spend("zcdp", record)
    assert len(ledger.history("zcdp")) == 1


def test_seeded_float_release_reports_both_reasons(X):
    record = PrivateCovariance(budget=ZCDP(0.5), bounds=RowNorm(1), noise="float",
                               random_state=3).fit(X).privacy_
    assert record.validity == "invalid"  # the most severe status is reported
    assert "noise='float'" in record.reason and "seeded" in record.reason
