"""``estimator.save``: a fit's released files written whole or not at all, owner-only until
delivered, charged to a ledger before they appear -- for Python users as for the command
line (one implementation, :mod:`dpggm.io`)."""

from __future__ import annotations

import json
import os
import stat

import numpy as np
import pytest

from dpggm import ZCDP, GraphicalLasso, NoisyGraphicalLasso, PureDP
from dpggm.exceptions import BudgetExceededError, IncompatibleBudgetError
from dpggm.io import STAGING_PREFIX, write_atomic
from dpggm.privacy.ledger import Ledger


@pytest.fixture
def X():
    return np.random.default_rng(0).uniform(-0.5, 0.5, size=(400, 4))


def _no_debris(directory):
    return not [p for p in directory.iterdir() if p.name.startswith(STAGING_PREFIX)]


def test_save_without_a_ledger_writes_the_released_files(tmp_path, X):
    est = GraphicalLasso(budget=ZCDP(1.0), bounds="l2:1").fit(X)
    out = est.save(tmp_path / "o")
    names = {p.name for p in (tmp_path / "o").iterdir()}
    assert {"result.json", "covariance.npy", "precision.npy", "edges.csv"} <= names
    assert out["ledger"] is None and {p.name for p in out["written"]} == names
    record = json.loads((tmp_path / "o" / "result.json").read_text())
    assert record["privacy"]["budget"] == {"notion": "zcdp", "rho": 1.0}
    assert record["converged"] is True and "random_state" not in record["parameters"]
    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE((tmp_path / "o").stat().st_mode) == 0o777 & ~mask
    with pytest.raises(FileExistsError):
        est.save(tmp_path / "o")
    assert _no_debris(tmp_path)


def test_save_charges_the_ledger_before_the_files_appear(tmp_path, X):
    ledger = Ledger(tmp_path / "l.db")
    ledger.declare("d", ZCDP(1.5))
    est = GraphicalLasso(budget=ZCDP(1.0), bounds="l2:1").fit(X)
    delivered = est.save(tmp_path / "o", ledger=ledger, dataset="d")
    (spend,) = ledger.history("d")
    assert delivered["ledger"]["spend"] == spend.sequence
    assert json.loads((tmp_path / "o" / "ledger.json").read_text())["output_id"] == (
        spend.details["output_id"])
    # A second release of the same budget would overspend: refused, nothing written.
    with pytest.raises(BudgetExceededError):
        est.save(tmp_path / "p", ledger=str(tmp_path / "l.db"), dataset="d")
    assert not (tmp_path / "p").exists() and _no_debris(tmp_path)
    assert len(ledger.history("d")) == 1


def test_save_refuses_what_a_ledger_cannot_book(tmp_path, X):
    ledger = Ledger(tmp_path / "l.db")
    ledger.declare("d", PureDP(5.0))
    est = GraphicalLasso(budget=ZCDP(0.5), bounds="l2:1").fit(X)
    with pytest.raises(IncompatibleBudgetError):
        est.save(tmp_path / "o", ledger=ledger, dataset="d")
    assert not (tmp_path / "o").exists() and _no_debris(tmp_path)
    with pytest.raises(ValueError, match="not fitted"):
        GraphicalLasso(budget=ZCDP(0.5), bounds="l2:1").save(tmp_path / "q")


def test_post_processing_fits_save_too(tmp_path, X):
    est = NoisyGraphicalLasso(alpha=0.05, noise_sigma=0.0).fit(X)
    est.save(tmp_path / "o")
    assert (tmp_path / "o" / "edges.csv").exists()


def test_write_atomic_never_clobbers_without_overwrite(tmp_path):
    target = tmp_path / "f.txt"
    write_atomic(target, lambda fh: fh.write("one"))
    with pytest.raises(FileExistsError):
        write_atomic(target, lambda fh: fh.write("two"), overwrite=False)
    write_atomic(target, lambda fh: fh.write("three"))
    assert target.read_text() == "three" and _no_debris(tmp_path)


def test_no_seed_of_a_nested_estimator_reaches_the_record(tmp_path):
    from dpggm import PrivateCovariance, PrivateLinearRegression

    rng = np.random.default_rng(3)
    X = rng.uniform(-0.4, 0.4, size=(300, 3))
    y = X @ np.array([0.3, -0.2, 0.1])
    inner = PrivateCovariance(budget=ZCDP(1.0), bounds="l2:1", random_state=1234)
    est = PrivateLinearRegression(covariance_estimator=inner).fit(X, y)
    est.save(tmp_path / "o")
    text = (tmp_path / "o" / "result.json").read_text()
    parameters = json.loads(text)["parameters"]
    assert "1234" not in text
    assert not [key for key in parameters if key.endswith("random_state")]
    assert "covariance_estimator__budget" in parameters  # nested parameters are kept


def test_output_perturbation_writes_no_outcome_of_its_non_private_solve(tmp_path, X):
    from dpggm import OutputPerturbationPrecision

    est = OutputPerturbationPrecision(budget=PureDP(1.0), bounds="l2:1", alpha=0.1,
                                      allow_invalid=True, random_state=0).fit(X)
    assert est.solver_ is None and est.non_private_solver_ is not None
    est.save(tmp_path / "o")
    record = json.loads((tmp_path / "o" / "result.json").read_text())
    assert "n_iter" not in record and "converged" not in record


def test_post_processing_save_refuses_a_ledger_and_books_nothing(tmp_path, X):
    from dpggm.mechanisms.publish import publish

    release = publish(X, bounds="l2:1", mu=1.0)
    assert release.privacy_.budget == ZCDP(0.5)
    ledger = Ledger(tmp_path / "l.db")
    ledger.declare("d", ZCDP(2.0))
    est = NoisyGraphicalLasso(release=release, alpha=0.05).fit(release.data)
    # The release's 0.5 was booked when it was published; saving must not book it again.
    with pytest.raises(ValueError, match="spends nothing"):
        est.save(tmp_path / "o", ledger=ledger, dataset="d")
    assert ledger.history("d") == [] and not (tmp_path / "o").exists()
    assert _no_debris(tmp_path)
    delivered = est.save(tmp_path / "o")
    assert delivered["ledger"] is None and (tmp_path / "o" / "edges.csv").exists()


def _saved_edges(directory):
    import pandas as pd

    return pd.read_csv(directory / "edges.csv")


def _pairs(edges):
    return {frozenset(pair) for pair in zip(edges["source"], edges["target"])}


def test_private_graph_saves_its_own_edge_list_and_record(tmp_path):
    import pandas as pd

    from dpggm import PrivateGraph
    from dpggm.datasets import make_raw_chain
    from dpggm.estimators.edges import edges_csv_text
    from dpggm.estimators.graph import graph_result_record

    frame, _ = make_raw_chain(n_samples=4000, n_features=6, random_state=1)
    graph = PrivateGraph(budget=ZCDP(1.0), random_state=0).fit(frame)
    # The false-discovery selection keeps fewer pairs than the lasso's non-zeros here, so a
    # list re-read off precision_ would differ from edges_.
    assert len(graph.edges_) < int((np.triu(graph.precision_, 1) != 0).sum())
    graph.save(tmp_path / "o")
    out = tmp_path / "o"
    assert {p.name for p in out.iterdir()} == {"result.json", "edges.csv", "precision.npy",
                                               "centrality.csv"}
    assert (out / "edges.csv").read_text() == edges_csv_text(graph.edges_)
    centrality = pd.read_csv(out / "centrality.csv", dtype={"node": str})
    pd.testing.assert_frame_equal(centrality, graph.centrality_, check_exact=False, rtol=1e-9)
    pd.testing.assert_frame_equal(_saved_edges(out), graph.edges_, check_exact=False,
                                  rtol=1e-9)
    record = json.loads((out / "result.json").read_text())
    assert record == json.loads(json.dumps(graph_result_record(graph)))
    assert record["n_edges"] == len(graph.edges_) and "random_state" not in record["parameters"]
    np.testing.assert_array_equal(np.load(out / "precision.npy"), graph.precision_)


def test_a_graph_estimator_saves_its_adjacency_not_its_precision_pattern(tmp_path):
    from dpggm import GWishartGraph

    rng = np.random.default_rng(2)
    X = rng.normal(size=(300, 4))
    X[:, 1] += X[:, 0]
    est = GWishartGraph(noise_sigma=0.0, n_iter=600, random_state=0).fit(X)
    # The posterior mean precision is non-zero wherever a sampled graph had the edge; the
    # graph is the edges of probability above one half.
    assert np.triu(est.precision_ != 0, 1).sum() > np.triu(est.adjacency_, 1).sum()
    est.save(tmp_path / "o")
    names = [f"x{j}" for j in range(4)]
    expected = {frozenset((names[a], names[b])) for a, b in zip(*np.nonzero(np.triu(
        est.adjacency_, 1)))}
    assert _pairs(_saved_edges(tmp_path / "o")) == expected


def test_pace_saves_its_measured_pattern(tmp_path):
    from dpggm import PACECovariance

    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(2000, 5))
    X[:, 1] = np.clip(X[:, 0] + 0.3 * X[:, 1], -1, 1)
    est = PACECovariance(budget=ZCDP(1.0), bounds="box:1", random_state=0).fit(X)
    est.save(tmp_path / "o")
    names = [f"x{j}" for j in range(5)]
    expected = {frozenset((names[a], names[b])) for a, b in zip(*np.nonzero(np.triu(
        est.adjacency_, 1)))}
    assert expected and _pairs(_saved_edges(tmp_path / "o")) == expected


def _regression_data():
    import pandas as pd

    rng = np.random.default_rng(5)
    X = pd.DataFrame(rng.uniform(-0.4, 0.4, size=(600, 3)), columns=["a", "b", "c"])
    y = X.to_numpy() @ np.array([0.5, -0.3, 0.2]) + 0.1
    return X, y


def _regression(name):
    from dpggm import AdaSSP, PrivateCovariance, PrivateLinearRegression

    # Unseeded: a seeded fit is an experiment, which no ledger books.
    if name == "AdaSSP":
        return AdaSSP(budget=ZCDP(1.0), bounds="l2:1", y_bound=1.0, fit_intercept=True,
                      random_state="secure")
    return PrivateLinearRegression(
        covariance_estimator=PrivateCovariance(budget=ZCDP(1.0), bounds="l2:2",
                                               center="none", random_state="secure"),
        fit_intercept=True)


@pytest.mark.parametrize("name", ["AdaSSP", "PrivateLinearRegression"])
def test_a_saved_regression_writes_its_coefficients(tmp_path, name):
    import pandas as pd

    X, y = _regression_data()
    est = _regression(name).fit(X, y)
    ledger = Ledger(tmp_path / "l.db")
    ledger.declare("d", ZCDP(1.0))
    est.save(tmp_path / "o", ledger=ledger, dataset="d")
    assert len(ledger.history("d")) == 1
    coef = pd.read_csv(tmp_path / "o" / "coef.csv")
    assert list(coef.columns) == ["term", "coefficient"]
    assert list(coef["term"]) == ["(Intercept)", "a", "b", "c"]
    # Written with 17 significant digits: read back exactly.
    assert coef["coefficient"].tolist() == [est.intercept_, *est.coef_.tolist()]


def test_adassp_under_add_remove_saves_a_private_count_as_null(tmp_path):
    from dpggm import AdaSSP

    X, y = _regression_data()
    est = AdaSSP(budget=ZCDP(1.0), bounds="l2:1", y_bound=1.0, neighbors="add-remove",
                 random_state=0).fit(X, y)
    assert not hasattr(est, "n_samples_")
    est.save(tmp_path / "o")
    record = json.loads((tmp_path / "o" / "result.json").read_text())
    assert record["n_samples"] is None and record["n_features"] == 3
    assert record["features"] == ["a", "b", "c"]
    assert (tmp_path / "o" / "coef.csv").exists()


def test_save_names_the_ledger_and_dataset_it_got(tmp_path, X):
    est = GraphicalLasso(budget=ZCDP(1.0), bounds="l2:1").fit(X)
    with pytest.raises(ValueError, match=r"ledger and dataset go together.*got "
                                         r"ledger=None, dataset='d'"):
        est.save(tmp_path / "o", dataset="d")
    assert not (tmp_path / "o").exists()


def test_save_fits_inside_the_delivery(tmp_path, X):
    """``save(out, X=...)``: the output location is refused before any record is read, and
    the files are those of a fit followed by ``save``."""
    (tmp_path / "file").write_text("not a directory")
    est = GraphicalLasso(budget=ZCDP(1.0), bounds="l2:1", random_state=3)
    with pytest.raises(FileExistsError):
        est.save(tmp_path / "file", X=X)
    assert not hasattr(est, "privacy_")
    delivered = est.save(tmp_path / "o", X=X)
    assert {p.name for p in delivered["written"]} >= {"result.json", "precision.npy"}
    GraphicalLasso(budget=ZCDP(1.0), bounds="l2:1", random_state=3).fit(X).save(tmp_path / "p")
    for name in ("precision.npy", "covariance.npy", "edges.csv", "result.json"):
        assert (tmp_path / "o" / name).read_bytes() == (tmp_path / "p" / name).read_bytes()
    assert _no_debris(tmp_path)


def test_a_failed_write_is_charged_when_save_ran_the_fit(tmp_path, X):
    """A write that fails after the fit's draw is charged when ``save`` ran the fit (the
    release is gone); after a fit of its own it charges nothing (the release is still in
    memory, saved again below)."""
    from dpggm.exceptions import ReleaseFailedError

    ledger = Ledger(tmp_path / "l.db")
    ledger.declare("d", ZCDP(5.0))

    def full(staged):
        raise OSError(28, "No space left on device")

    est = GraphicalLasso(budget=ZCDP(1.0), bounds="l2:1")
    with pytest.raises(ReleaseFailedError, match="charged"):
        est.save(tmp_path / "o", X=X, ledger=ledger, dataset="d", extra=full)
    (spend,) = ledger.history("d")
    assert spend.details["failed"] is True and spend.budget == ZCDP(1.0)
    with pytest.raises(OSError, match="No space left"):
        est.save(tmp_path / "p", ledger=ledger, dataset="d", extra=full)
    assert len(ledger.history("d")) == 1
    est.save(tmp_path / "p", ledger=ledger, dataset="d")
    assert len(ledger.history("d")) == 2 and (tmp_path / "p" / "ledger.json").exists()
    assert not (tmp_path / "o").exists() and _no_debris(tmp_path)
