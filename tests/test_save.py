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
