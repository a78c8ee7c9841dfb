"""No release is reported "valid" when it is not: float noise and
the Wishart mechanisms' float draws are "invalid" and never booked; a pipeline step fitted
on the private data makes the record "data-dependent"."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dpggm import ZCDP, ApproxDP, Box, PureDP, RowNorm
from dpggm.estimators._contract import FittedOnPrivateDataWarning
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


# ------------------------------------------------------------------ pipelines


def _pipeline_fit(steps, estimator, X, y=None):
    from sklearn.pipeline import Pipeline

    pipe = Pipeline([*steps, ("est", estimator)])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pipe.fit(X, y) if y is not None else pipe.fit(X)
    flagged = [w for w in caught if issubclass(w.category, FittedOnPrivateDataWarning)]
    return pipe.steps[-1][1], flagged


@pytest.fixture(scope="module")
def positive():
    rng = np.random.default_rng(1)
    return np.exp(rng.normal(size=(300, 3)) / 4)


def _secure_covariance():
    return PrivateCovariance(budget=ZCDP(0.5), bounds=RowNorm(3.0), random_state="secure")


def test_fitted_scaler_makes_the_record_data_dependent_and_refused(positive, ledger):
    from sklearn.preprocessing import StandardScaler

    est, flagged = _pipeline_fit([("scale", StandardScaler())], _secure_covariance(), positive)
    assert est.privacy_.validity == "data-dependent"
    assert "'scale'" in est.privacy_.reason and "StandardScaler" in est.privacy_.reason
    assert len(flagged) == 1 and "'scale'" in str(flagged[0].message)
    with pytest.raises(InvalidGuaranteeError, match="data-dependent"):
        PrivacyAccountant(ZCDP(1.0)).spend(est.privacy_)
    with pytest.raises(InvalidGuaranteeError, match="data-dependent"):
        ledger.spend("zcdp", est.privacy_)
    assert ledger.history("zcdp") == []


@pytest.mark.parametrize("make_step", [
    lambda: __import__("sklearn.preprocessing", fromlist=["x"]).FunctionTransformer(np.log),
    lambda: __import__("sklearn.preprocessing", fromlist=["x"]).Normalizer(),
])
def test_fixed_public_per_record_function_is_silent_and_valid(positive, ledger, make_step):
    est, flagged = _pipeline_fit([("f", make_step())], _secure_covariance(), positive)
    assert flagged == []
    assert est.privacy_.validity == "valid", est.privacy_.reason
    ledger.spend("zcdp", est.privacy_)


def test_a_stateless_transform_that_mixes_records_is_not_a_fixed_function(positive):
    from sklearn.preprocessing import FunctionTransformer

    center = FunctionTransformer(lambda Z: Z - Z.mean(axis=0))
    est, flagged = _pipeline_fit([("center", center)], _secure_covariance(), positive)
    assert est.privacy_.validity == "data-dependent"
    assert "'center'" in est.privacy_.reason and "other records" in est.privacy_.reason
    assert len(flagged) == 1


def test_one_learned_step_among_fixed_ones_is_named(positive):
    from sklearn.preprocessing import FunctionTransformer, MinMaxScaler

    est, _ = _pipeline_fit([("log", FunctionTransformer(np.log)), ("skip", "passthrough"),
                            ("minmax", MinMaxScaler())], _secure_covariance(), positive)
    assert est.privacy_.validity == "data-dependent"
    assert "'minmax'" in est.privacy_.reason and "'log'" not in est.privacy_.reason


@pytest.mark.parametrize("make", [
    lambda: SSPCovariance(budget=ZCDP(0.5), bounds=Box(3.0), random_state="secure"),
    lambda: PACECovariance(budget=ZCDP(0.5), bounds=Box(3.0), max_rounds=2,
                           random_state="secure"),
    lambda: GraphicalLasso(alpha=0.1, budget=ZCDP(0.5), bounds=RowNorm(3.0),
                           random_state="secure"),
])
def test_every_estimator_routes_the_pipeline_through_its_record(positive, make):
    from sklearn.preprocessing import StandardScaler

    est, flagged = _pipeline_fit([("scale", StandardScaler())], make(), positive)
    assert est.privacy_.validity == "data-dependent" and "'scale'" in est.privacy_.reason
    assert len(flagged) == 1


def test_private_graph_in_a_pipeline(positive):
    from sklearn.preprocessing import StandardScaler

    from dpggm.estimators.graph import PrivateGraph

    graph = PrivateGraph(budget=ZCDP(1.0), random_state="secure")
    est, flagged = _pipeline_fit([("scale", StandardScaler())], graph, positive)
    assert est.privacy_.validity == "data-dependent" and "'scale'" in est.privacy_.reason


def test_wrapped_estimator_in_a_pipeline(positive):
    from sklearn.preprocessing import StandardScaler

    from dpggm.estimators.regression import PrivateLinearRegression

    regression = PrivateLinearRegression(covariance_estimator=PrivateCovariance(
        budget=ZCDP(0.5), bounds=RowNorm(3.0), random_state="secure"))
    X, y = positive[:, :2], positive[:, 2] / 4
    est, flagged = _pipeline_fit([("scale", StandardScaler())], regression, X, y)
    assert est.privacy_.validity == "data-dependent" and "'scale'" in est.privacy_.reason
    assert len(flagged) == 1  # once, from the pipeline's own final step
    alone = PrivateLinearRegression(covariance_estimator=PrivateCovariance(
        budget=ZCDP(0.5), bounds=RowNorm(3.0), random_state="secure")).fit(X, y)
    assert alone.privacy_.validity == "valid"


def test_nested_pipelines_are_seen(positive):
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import FunctionTransformer, MinMaxScaler

    inner = Pipeline([("log", FunctionTransformer(np.log)), ("est", _secure_covariance())])
    outer = Pipeline([("scale", MinMaxScaler(feature_range=(1, 2))), ("inner", inner)])
    with pytest.warns(FittedOnPrivateDataWarning, match="'scale'"):
        outer.fit(positive)
    record = inner.steps[-1][1].privacy_
    assert record.validity == "data-dependent" and "'scale'" in record.reason


def test_dataframe_input_and_a_transformer_fitted_by_hand(positive):
    # Fitted by hand before fit: only its output reaches the estimator (documented limit).
    import pandas as pd
    from sklearn.preprocessing import FunctionTransformer, StandardScaler

    frame = pd.DataFrame(positive, columns=["a", "b", "c"])
    est, flagged = _pipeline_fit([("log", FunctionTransformer(np.log))], _secure_covariance(),
                                 frame)
    assert est.privacy_.validity == "valid" and flagged == []
    scaled = StandardScaler().fit_transform(positive)
    assert _secure_covariance().fit(scaled).privacy_.validity == "valid"
