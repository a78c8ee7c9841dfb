"""The estimator contract (scikit-learn's conventions and dpggm's own), checked
for every registered method and every estimator exported from ``dpggm``: the same bound
forms accepted, the same fitted attributes, clone and pickle round trips, a serialisable
``privacy_`` without curator-only figures, and bad parameters refused before the data are
read."""

from __future__ import annotations

import inspect
import json
import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.base import BaseEstimator, clone
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

import dpggm
from dpggm import (
    SCIO,
    ZCDP,
    AdaSSP,
    ApproxDP,
    Box,
    DiagonalCovariance,
    GraphicalLasso,
    NeighborhoodSelection,
    NonPrivate,
    PACECovariance,
    PrivateCovariance,
    PrivateLinearRegression,
    PureDP,
    RowNorm,
    SSPCovariance,
)
from dpggm.estimators._contract import FittedOnPrivateDataWarning, ParameterTypeError
from dpggm.estimators.registry import METHODS, make_estimator

N, P = 200, 4
INVALID_BY_DESIGN = {"wishart-pure", "output-perturbation", "OutputPerturbationPrecision"}
#: Wishart noise is built from floating-point draws: a sound mechanism, an invalid release.
FLOAT_NOISE = {"wishart"}
GRAPH = {"glasso", "pace", "GraphicalLasso", "PACECovariance", "NoisyGraphicalLasso",
         "NeighborhoodSelection", "SCIO", "GWishartGraph"}
REGRESSORS = {"AdaSSP", "PrivateLinearRegression"}
POST_PROCESSING = {"NoisyGraphicalLasso", "NeighborhoodSelection", "SCIO", "GWishartGraph"}


def _budget_for(name: str):
    if name in ("laplace", "wishart-pure", "output-perturbation", "OutputPerturbationPrecision"):
        return PureDP(1.0)
    if name in ("sulq", "wishart"):
        return ApproxDP(0.5, 1e-6)
    return ZCDP(1.0)


def _method_factory(name: str):
    def make(**params):
        params.setdefault("budget", _budget_for(name))
        params.setdefault("bounds", "box:1")
        if name in INVALID_BY_DESIGN:
            params.setdefault("allow_invalid", True)
        return make_estimator(name, **params)
    return make


def _class_factory(cls):
    name = cls.__name__

    def make(**params):
        if name == "PrivateLinearRegression":
            inner = {"budget": ZCDP(1.0), "bounds": params.pop("bounds", "box:1")}
            for key in ("random_state", "neighbors", "noise"):
                if key in params:
                    inner[key] = params.pop(key)
            if "budget" in params:
                inner["budget"] = params.pop("budget")
            params.setdefault("covariance_estimator", PrivateCovariance(**inner))
            return cls(**params)
        if name == "GWishartGraph":
            params.setdefault("noise_sigma", 0.0)
            params.setdefault("n_iter", 6000)
            return cls(**params)
        if name in POST_PROCESSING:
            params.setdefault("noise_sigma", 0.0)
            params.setdefault("alpha", 0.05)
            return cls(**params)
        params.setdefault("budget", _budget_for(name))
        params.setdefault("bounds", "box:1")
        if name == "OutputPerturbationPrecision":
            params.setdefault("allow_invalid", True)
        if name == "AdaSSP":
            params.setdefault("y_bound", 1.0)
        return cls(**params)
    return make


# Every public name of the package (exports load lazily, so they are fetched by name).
EXPORTED = sorted(
    (obj for obj in (getattr(dpggm, name) for name in dpggm.__all__)
     if inspect.isclass(obj) and issubclass(obj, BaseEstimator)),
    key=lambda c: c.__name__,
)
CASES = {f"method:{m}": (m, _method_factory(m)) for m in METHODS}
CASES.update({f"class:{c.__name__}": (c.__name__, _class_factory(c)) for c in EXPORTED})
IDS = sorted(CASES)


def _data(kind: str = "array"):
    rng = np.random.default_rng(0)
    X = rng.uniform(-0.45, 0.45, size=(N, P))
    y = X @ np.array([0.2, -0.1, 0.0, 0.1]) + rng.uniform(-0.05, 0.05, size=N)
    if kind == "frame":
        X = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    return X, y


def _fit(name, est, X, y):
    return est.fit(X, y) if name in REGRESSORS else est.fit(X)


def _takes(est, param):
    return param in est.get_params(deep=False)


def _bounds_param(name, make):
    return name == "PrivateLinearRegression" or _takes(make(), "bounds")


BOUNDED_IDS = [case for case in IDS if _bounds_param(*CASES[case])]


def test_every_exported_estimator_is_covered():
    names = {c.__name__ for c in EXPORTED}
    assert {"PrivateCovariance", "PACECovariance", "AdaSSP", "SCIO",
            "NoisyGraphicalLasso"} <= names
    assert len(EXPORTED) == 17
    assert len(METHODS) >= 14


def test_post_processing_estimators_take_no_bounds():
    # They fit a release and spend nothing; every other estimator declares its bounds.
    assert sorted(set(IDS) - set(BOUNDED_IDS)) == sorted(f"class:{n}" for n in POST_PROCESSING)


@pytest.mark.parametrize("case", BOUNDED_IDS)
def test_bound_forms_accepted_alike(case):
    """The text and object forms of a bound are accepted (or refused) alike, and a box is
    accepted by every estimator that takes bounds -- PACE included."""
    name, make = CASES[case]
    X, y = _data()
    outcomes = {}
    for label, bound in (("l2:1", "l2:1"), ("RowNorm", RowNorm(1.0)),
                         ("box:1", "box:1"), ("Box", Box(1.0))):
        try:
            _fit(name, make(bounds=bound, random_state="secure"), X, y)
            outcomes[label] = "ok"
        except (TypeError, ValueError) as exc:
            outcomes[label] = type(exc).__name__
    assert outcomes["box:1"] == outcomes["Box"] == "ok"
    assert outcomes["l2:1"] == outcomes["RowNorm"]


@pytest.mark.parametrize("case", IDS)
def test_fitted_attributes(case):
    name, make = CASES[case]
    X, y = _data()
    est = _fit(name, make(bounds="box:1", random_state="secure") if _bounds_param(name, make)
               else make(), X, y)
    assert est.n_features_in_ == P
    assert est.n_samples_ == N
    assert not hasattr(est, "feature_names_in_")  # ndarray input names no columns
    assert hasattr(est, "privacy_")
    if name in REGRESSORS:
        assert est.coef_.shape == (P,)
    estimates = [getattr(est, a) for a in ("covariance_", "precision_")
                 if getattr(est, a, None) is not None]
    # Every matrix estimator gives covariance_ or precision_; neighbourhood selection
    # estimates only the graph (adjacency_, checked below).
    assert estimates or name in REGRESSORS | {"NeighborhoodSelection"}
    assert all(e.shape == (P, P) for e in estimates)
    if name in GRAPH:
        graph = est.adjacency_
        assert graph.dtype == bool and graph.shape == (P, P)
        assert not graph.diagonal().any()
        np.testing.assert_array_equal(graph, graph.T)
    if name in FLOAT_NOISE:
        # Float draws leak through floating-point gaps: never "valid".
        assert est.privacy_.validity == "invalid" and "Mironov 2012" in est.privacy_.reason
    elif name not in INVALID_BY_DESIGN and name not in POST_PROCESSING:
        assert est.privacy_.validity == "valid", est.privacy_.reason


@pytest.mark.parametrize("case", IDS)
def test_feature_names_only_for_dataframes(case):
    name, make = CASES[case]
    X, y = _data("frame")
    est = _fit(name, make(bounds="box:1") if _bounds_param(name, make) else make(), X, y)
    assert isinstance(est.feature_names_in_, np.ndarray)
    assert est.feature_names_in_.tolist() == ["a", "b", "c", "d"]
    # Refitting on an array removes the names of the earlier fit.
    _fit(name, est, X.to_numpy(), y)
    assert not hasattr(est, "feature_names_in_")


@pytest.mark.parametrize("case", IDS)
def test_clone_round_trip(case):
    _, make = CASES[case]
    est = make()
    copy = clone(est)
    assert type(copy) is type(est)
    original, cloned = est.get_params(deep=False), copy.get_params(deep=False)
    assert original.keys() == cloned.keys()
    for key, value in original.items():
        if isinstance(value, BaseEstimator):
            assert cloned[key].get_params() == value.get_params()
        else:
            assert cloned[key] == value, key


def _public_arrays(est):
    names = ("covariance_", "precision_", "adjacency_", "coef_", "noisy_covariance_")
    return {n: getattr(est, n) for n in names if getattr(est, n, None) is not None}


@pytest.mark.parametrize("case", IDS)
def test_pickle_round_trip_of_fitted(case):
    name, make = CASES[case]
    X, y = _data()
    est = _fit(name, make(bounds="box:1", random_state=0) if _bounds_param(name, make)
               else make(), X, y)
    restored = pickle.loads(pickle.dumps(est))
    before, after = _public_arrays(est), _public_arrays(restored)
    assert before.keys() == after.keys() and before
    for key in before:
        np.testing.assert_array_equal(after[key], before[key])
    assert restored.privacy_.to_dict() == est.privacy_.to_dict()
    if name in REGRESSORS:
        np.testing.assert_array_equal(restored.predict(X), est.predict(X))


@pytest.mark.parametrize("case", IDS)
def test_privacy_record_serialisable_and_public(case):
    name, make = CASES[case]
    X, y = _data()
    seed = 987654321
    est = _fit(name, make(bounds="box:1", random_state=seed) if _bounds_param(name, make)
               else make(), X, y)
    text = est.privacy_.to_json()
    record = json.loads(text)
    assert record["mechanism"]
    assert "curator_notes" not in record
    assert "rows_clipped" not in text
    assert str(seed) not in text  # what a release writes holds no seed


class DataTouched(BaseException):
    """Raised when the data are read (a BaseException, so that no handler swallows it)."""


class Untouchable:
    """Data that must not be read: every use raises :class:`DataTouched`."""

    def __getattr__(self, name):
        raise DataTouched(name)

    def __array__(self, *args, **kwargs):
        raise DataTouched("__array__")

    def __len__(self):
        raise DataTouched("__len__")

    def __iter__(self):
        raise DataTouched("__iter__")


BAD_PARAMS = [
    ("budget", None, ValueError),
    ("budget", 1.0, TypeError),
    ("bounds", None, ValueError),
    ("bounds", "x", ValueError),
    ("bounds", 1.0, TypeError),
    ("neighbors", "x", ValueError),
    ("random_state", "x", ValueError),
    ("random_state", True, TypeError),
    ("noise", "x", ValueError),
    ("report_delta", 0, ValueError),
    ("allow_invalid", 0, TypeError),  # 0 == False, yet 0 is not a flag
    ("alpha", -1.0, ValueError),
    ("alpha", True, TypeError),
    ("max_iter", 0, ValueError),
    ("tol", "x", TypeError),
    ("ridge", -1.0, ValueError),
    ("fit_intercept", 1, TypeError),
    ("covariance_estimator", None, TypeError),
    ("noise_sigma", "x", TypeError),
    ("diag_fraction", 1.0, ValueError),
]


_INNER = ("budget", "bounds", "neighbors", "random_state", "noise")
_REGISTRY_COMMON = ("budget", "bounds", "neighbors", "random_state")


def _applies(case: str, param: str) -> bool:
    name, make = CASES[case]
    if case.startswith("method:"):
        # make_estimator passes the common parameters and the method's declared options.
        return param in _REGISTRY_COMMON or param in METHODS[name][2]
    if name == "PrivateLinearRegression" and param in _INNER:
        return True
    return _takes(make(), param)


BAD_CASES = [
    pytest.param(case, param, value, error, id=f"{case}-{param}={value!r}")
    for case in IDS
    for param, value, error in BAD_PARAMS
    if _applies(case, param)
]


def test_every_estimator_has_bad_parameter_cases():
    covered = {p.values[0] for p in BAD_CASES}
    assert covered == set(IDS)
    budgeted = {p.values[0] for p in BAD_CASES if p.values[1] == "budget"}
    assert budgeted == set(BOUNDED_IDS)


@pytest.mark.parametrize(("case", "param", "value", "error"), BAD_CASES)
def test_bad_parameters_refused_before_the_data_are_read(case, param, value, error):
    name, make = CASES[case]
    est = make(**{param: value})
    with pytest.raises(error) as caught:
        _fit(name, est, Untouchable(), Untouchable())
    assert str(caught.value).startswith(param) or f"{param} " in str(caught.value)
    if error is TypeError:
        assert isinstance(caught.value, ParameterTypeError)


@pytest.mark.parametrize(("cls", "bounds"), [
    (PrivateCovariance, "l2:1"), (SSPCovariance, "box:1"), (DiagonalCovariance, "box:1"),
])
def test_one_column_covariance_is_allowed(cls, bounds):
    X = np.random.default_rng(1).uniform(-1, 1, size=(N, 1))
    est = cls(budget=ZCDP(1.0), bounds=bounds, random_state="secure").fit(X)
    assert est.covariance_.shape == (1, 1)
    assert est.covariance_[0, 0] >= 0
    exact = cls(budget=NonPrivate(), bounds=bounds).fit(X)
    assert exact.covariance_[0, 0] == pytest.approx(np.mean(X[:, 0] ** 2))


def test_one_column_graph_refused_with_a_message():
    X = np.random.default_rng(1).uniform(-1, 1, size=(N, 1))
    with pytest.raises(ValueError, match="GraphicalLasso needs at least 2 variables"):
        GraphicalLasso(budget=ZCDP(1.0), bounds="l2:1").fit(X)
    with pytest.raises(ValueError, match="NeighborhoodSelection needs at least 2 variables"):
        NeighborhoodSelection(noise_sigma=0.0).fit(X)


@pytest.mark.parametrize("make_sparse", [sp.csr_matrix, sp.csc_array, sp.coo_matrix])
def test_sparse_input_refused_by_name(make_sparse):
    X, _ = _data()
    with pytest.raises(TypeError, match="sparse matrices are not supported"):
        PrivateCovariance(budget=ZCDP(1.0), bounds="l2:1").fit(make_sparse(X))
    with pytest.raises(TypeError, match="sparse matrices are not supported"):
        SCIO(noise_sigma=0.0).fit(make_sparse(X))


def test_complex_input_refused():
    X, _ = _data()
    with pytest.raises(ValueError, match="Complex data not supported"):
        PrivateCovariance(budget=ZCDP(1.0), bounds="l2:1").fit(X + 1j)
    with pytest.raises(ValueError, match="Complex data not supported"):
        PACECovariance(budget=ZCDP(1.0), bounds="box:1").fit(pd.DataFrame(X + 0j))


@pytest.mark.parametrize("regressor", [
    AdaSSP(budget=ZCDP(1.0), bounds="l2:1", y_bound=1.0),
    PrivateLinearRegression(covariance_estimator=PrivateCovariance(budget=ZCDP(1.0),
                                                                   bounds="l2:1")),
])
def test_regressors_check_column_names_at_predict(regressor):
    X, y = _data("frame")
    model = clone(regressor).fit(X, y)
    same = model.predict(X)
    reordered = X[["b", "a", "c", "d"]]
    with pytest.raises(ValueError, match="same names in a different order"):
        model.predict(reordered)
    renamed = X.rename(columns={"a": "z"})
    with pytest.raises(ValueError, match=r"unseen at fit time: \['z'\]"):
        model.predict(renamed)
    with pytest.warns(UserWarning, match="X has no feature names"):
        np.testing.assert_array_equal(model.predict(X.to_numpy()), same)
    with pytest.raises(TypeError, match="sparse matrices are not supported"):
        model.predict(sp.csr_matrix(X.to_numpy()))
    with pytest.raises(ValueError, match="Complex data not supported"):
        model.predict(X.to_numpy() + 1j)
    unnamed = clone(regressor).fit(X.to_numpy(), y)
    with pytest.warns(UserWarning, match="fitted without feature names"):
        unnamed.predict(X)


def test_pipeline_with_fitted_preprocessing_is_flagged():
    X, _ = _data()
    pipe = Pipeline([("scale", StandardScaler()),
                     ("cov", PrivateCovariance(budget=ZCDP(1.0), bounds="l2:1"))])
    with pytest.warns(FittedOnPrivateDataWarning, match="'scale'"):
        pipe.fit(X)
    alone = Pipeline([("cov", PrivateCovariance(budget=ZCDP(1.0), bounds="l2:1"))])
    with warnings.catch_warnings():
        warnings.simplefilter("error", FittedOnPrivateDataWarning)
        alone.fit(X)
    passthrough = Pipeline([("skip", "passthrough"),
                            ("cov", SSPCovariance(budget=ZCDP(1.0), bounds="box:1"))])
    with warnings.catch_warnings():
        warnings.simplefilter("error", FittedOnPrivateDataWarning)
        passthrough.fit(X)


def test_feature_names_from_a_csv_header(tmp_path):
    X, _ = _data("frame")
    path = tmp_path / "records.csv"
    X.to_csv(path, index=False)
    est = PACECovariance(budget=ZCDP(1.0), bounds="box:1").fit(path)
    assert isinstance(est.feature_names_in_, np.ndarray)
    assert est.feature_names_in_.tolist() == ["a", "b", "c", "d"]


def test_numpy_strings_and_integers_are_accepted_as_parameters():
    X, _ = _data()
    est = PrivateCovariance(budget=ZCDP(1.0), bounds=np.str_("l2:1"),
                            neighbors=np.str_("replace"), random_state=np.int64(3)).fit(X)
    assert est.covariance_.shape == (P, P)
    with pytest.raises(TypeError, match="neighbors must be one of 'replace', 'add-remove'"):
        PrivateCovariance(budget=ZCDP(1.0), bounds="l2:1", neighbors=True).fit(X)


def test_scalar_validators_share_one_error_policy():
    from dpggm.estimators._contract import check_flag, check_fraction, check_integer, check_number

    assert check_integer(3, name="k") == 3 and check_flag(np.bool_(True), name="f") is True
    assert check_number(0, name="x", low=0) == 0.0 and check_fraction(0.5, name="q") == 0.5
    for call, value, error, message in [
        (check_integer, True, ParameterTypeError, "k must be an integer >= 1; got True"),
        (check_integer, 0, ValueError, "k must be an integer >= 1; got 0"),
        (check_flag, 0, ParameterTypeError, "k must be True or False; got 0"),
        (check_number, float("nan"), ValueError, "k must be a finite number; got nan"),
        (check_fraction, 1, ValueError, r"k must be a number in \(0, 1\); got 1"),
        (check_fraction, "x", ParameterTypeError, r"k must be a number in \(0, 1\); got 'x'"),
    ]:
        with pytest.raises(error, match=message) as caught:
            call(value, name="k")
        assert isinstance(caught.value, TypeError) == (error is ParameterTypeError)
