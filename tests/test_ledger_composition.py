"""An (epsilon, delta) ledger total composes its spends in zCDP: the rho of
its releases add up while their sum implies (epsilon, delta) by the tight conversion.

Before, a (3, 1e-6) total booked one ``graph --rho 0.1`` as (2.14, 1e-6) by basic
composition and refused every later release (delta was used up); ``budget show`` cut the
figures to "epsilon=..." at 80 columns. The limits are checked against the tight
conversion in 60-digit arithmetic (tests/privacy_reference.py), independently of the
library's root finding.
"""

from __future__ import annotations

import json
import math
from fractions import Fraction

import mpmath
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import privacy_reference as reference
from dpggm.cli.main import app
from dpggm.datasets import make_raw_chain
from dpggm.exceptions import BudgetExceededError, IncompatibleBudgetError
from dpggm.privacy import GDP, ZCDP, ApproxDP, Ledger, PrivacyAccountant, PrivacyGuarantee, PureDP

runner = CliRunner()


def _release(budget, *equivalent):
    return PrivacyGuarantee(budget=budget, neighbors="replace", bounds={"kind": "box"},
                            mechanism="graph", equivalent=equivalent)


def _tight_limit_holds(rho: float, epsilon: float, delta: float) -> bool:
    """Whether rho-zCDP implies (epsilon, delta), by the tight conversion in 60 digits."""
    return reference.zcdp_delta(rho, epsilon) <= mpmath.mpf(delta)


@pytest.mark.parametrize("epsilon, expected", [(3.0, 0.185), (5.0, 0.463)])
def test_the_rho_limit_is_the_tight_conversion_of_the_total(tmp_path, epsilon, expected):
    ledger = Ledger(tmp_path / "l.db")
    ledger.declare("d", ApproxDP(epsilon, 1e-6))
    limit = ledger.status("d").limit.rho
    assert round(limit, 3) == expected  # the figures of the issue
    # Inside the total, and within a relative 1e-5 of the largest rho that implies it.
    assert _tight_limit_holds(limit, epsilon, 1e-6)
    assert not _tight_limit_holds(limit * (1 + 1e-5), epsilon, 1e-6)
    assert ledger.remaining("d") == ZCDP(limit)


def test_a_five_in_a_million_total_takes_three_tenths_and_refuses_a_fifth(tmp_path):
    ledger = Ledger(tmp_path / "l.db")
    ledger.declare("d", ApproxDP(5.0, 1e-6))
    for _ in range(3):
        ledger.spend("d", _release(ZCDP(0.1), ApproxDP(2.142, 1e-6)))
    before = ledger.history("d")
    with pytest.raises(BudgetExceededError, match=r"rho = 0.163\d* remains"):
        ledger.spend("d", _release(ZCDP(0.2), ApproxDP(3.2, 1e-6)))
    assert ledger.history("d") == before
    assert ledger.exact_spent("d") == (0, 0, 3 * Fraction(0.1))
    # What was released so far holds (epsilon, 1e-6) with epsilon at most the total's.
    spent = ledger.spent("d")
    assert spent.delta == 1e-6 and spent.epsilon < 5.0
    assert _tight_limit_holds(3 * 0.1, spent.epsilon, 1e-6)


def test_a_three_in_a_million_total_takes_a_tenth_and_then_eight_hundredths(tmp_path):
    ledger = Ledger(tmp_path / "l.db")
    ledger.declare("d", ApproxDP(3.0, 1e-6))
    ledger.spend("d", _release(ZCDP(0.1), ApproxDP(2.142, 1e-6)))
    ledger.spend("d", _release(ZCDP(0.08), ApproxDP(1.9, 1e-6)))
    status = ledger.status("d")
    assert status.spends == 2 and status.spent == ZCDP(0.18000000000000002)
    assert _tight_limit_holds(0.18000000000000002, 3.0, 1e-6)
    # One more release asked as (epsilon, 1e-6) -- run in the rho that implies it -- fits.
    following = status.next_release
    assert following.delta == 1e-6 and 0.4 < following.epsilon < 0.45
    ledger.check("d", _rho_of(following))
    with pytest.raises(BudgetExceededError):
        ledger.check("d", ZCDP(status.remaining.rho * (1 + 1e-9)))


def _rho_of(budget):
    from dpggm.privacy.budgets import accounting_total

    return accounting_total(budget, ZCDP)


def test_pure_and_gaussian_dp_spends_count_in_zcdp(tmp_path):
    ledger = Ledger(tmp_path / "l.db")
    ledger.declare("d", ApproxDP(3.0, 1e-6))
    ledger.spend("d", PureDP(0.3), mechanism="laplace")
    ledger.spend("d", GDP(0.2), mechanism="gaussian")
    assert ledger.exact_spent("d") == (0, 0, Fraction(0.3) ** 2 / 2 + Fraction(0.2) ** 2 / 2)


def test_an_approx_only_release_is_booked_by_basic_composition_first(tmp_path):
    # A release stated only in (epsilon, delta) -- no zCDP form -- is booked by basic
    # composition, and the zCDP spends that follow may add up to the rho implied by what it
    # left: here (2, 9e-7).
    ledger = Ledger(tmp_path / "l.db")
    ledger.declare("d", ApproxDP(3.0, 1e-6))
    ledger.spend("d", _release(ApproxDP(1.0, 1e-7)))
    left = ledger.status("d").limit.rho
    assert _tight_limit_holds(left, 2.0, 9e-7)
    assert not _tight_limit_holds(left * (1 + 1e-5), 2.0, 9e-7)
    ledger.spend("d", _release(ZCDP(left)))
    assert ledger.remaining("d") == ZCDP(0.0)
    guarantee = ledger.spent("d")
    assert guarantee.delta == 1e-6 and guarantee.epsilon <= 3.0


def test_an_approx_only_release_after_a_zcdp_one_is_refused_with_the_way_out(tmp_path):
    ledger = Ledger(tmp_path / "l.db")
    ledger.declare("d", ApproxDP(3.0, 1e-6))
    ledger.spend("d", _release(ZCDP(0.1)))
    with pytest.raises(IncompatibleBudgetError, match=r"--rho.*rho = 0.08\d* remains"):
        ledger.spend("d", _release(ApproxDP(0.5, 1e-8)))
    assert len(ledger.history("d")) == 1


def test_a_zero_delta_total_stays_pure(tmp_path):
    ledger = Ledger(tmp_path / "l.db")
    ledger.declare("d", ApproxDP(1.0, 0.0))
    ledger.spend("d", PureDP(0.5), mechanism="laplace")
    assert ledger.status("d").composition == "additive"
    with pytest.raises(IncompatibleBudgetError):
        ledger.spend("d", ZCDP(0.01), mechanism="gaussian")


# --------------------------------------------------------------------------- the CLI


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    frame, _ = make_raw_chain(n_samples=1000, n_features=4, random_state=0)
    path = tmp_path_factory.mktemp("data") / "d.csv"
    frame.to_csv(path, index=False)
    return path


def _graph(data, out, ledger, rho):
    return runner.invoke(app, ["graph", str(data), "--rho", str(rho), "--out", str(out),
                               "--ledger", str(ledger), "--dataset", "d"])


def test_cli_five_in_a_million_accepts_three_graphs_and_refuses_a_fourth(data, tmp_path):
    ledger = tmp_path / "l.db"
    init = runner.invoke(app, ["budget", "init", str(ledger), "--dataset", "d", "--epsilon",
                               "5", "--delta", "1e-6"])
    assert init.exit_code == 0, init.output
    assert "may add up to rho = 0.463" in init.output
    for k in range(3):
        done = _graph(data, tmp_path / f"g{k}", ledger, 0.1)
        assert done.exit_code == 0, done.output
        receipt = json.loads((tmp_path / f"g{k}" / "ledger.json").read_text())
        assert receipt["spend"] == k + 1 and len(receipt["chain"]) == 64
    refused = _graph(data, tmp_path / "g3", ledger, 0.2)
    assert refused.exit_code == 2
    assert "would exceed the total" in refused.output
    assert not (tmp_path / "g3").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]
    assert len(Ledger(ledger, create=False).history("d")) == 3


def test_cli_three_in_a_million_accepts_a_tenth_then_eight_hundredths(data, tmp_path):
    ledger = tmp_path / "l.db"
    assert runner.invoke(app, ["budget", "init", str(ledger), "--dataset", "d", "--epsilon",
                               "3", "--delta", "1e-6"]).exit_code == 0
    for k, rho in enumerate((0.1, 0.08)):
        done = _graph(data, tmp_path / f"g{k}", ledger, rho)
        assert done.exit_code == 0, done.output
    shown = runner.invoke(app, ["budget", "show", str(ledger)])
    assert shown.exit_code == 0, shown.output
    lines = shown.output.splitlines()
    # Readable at 80 columns: no line longer, nothing cut with an ellipsis.
    assert all(len(line) <= 80 for line in lines) and "…" not in shown.output
    text = " ".join(shown.output.split())
    assert "total epsilon = 3, delta = 1e-06" in text
    assert "spent rho = 0.18 in 2 spends" in text
    assert "all releases so far: epsilon = 2.955, delta = 1e-06" in text
    assert "remaining rho = 0.005069" in text
    assert "one more release of up to epsilon = 0.4331, delta = 1e-06" in text
    verified = runner.invoke(app, ["budget", "verify", str(ledger), "--output",
                                   str(tmp_path / "g0"), "--output", str(tmp_path / "g1")])
    assert verified.exit_code == 0, verified.output
    assert "spend #2 of 'd' (rho = 0.08) matches" in " ".join(verified.output.split())


def test_cli_show_of_every_notion_fits_80_columns(tmp_path):
    ledger = tmp_path / "l.db"
    for name, options in (("pure", ["--epsilon", "2"]), ("zcdp", ["--rho", "1.25"]),
                          ("gdp", ["--mu", "1.5"]),
                          ("a-dataset-with-a-rather-long-name-for-the-test", ["--epsilon",
                                                                              "0.123456789",
                                                                              "--delta",
                                                                              "1e-9"])):
        assert runner.invoke(app, ["budget", "init", str(ledger), "--dataset", name,
                                   *options]).exit_code == 0
    book = Ledger(ledger, create=False)
    book.spend("zcdp", ZCDP(0.123456789), mechanism="m")
    book.spend("pure", PureDP(1e-7), mechanism="m")
    shown = runner.invoke(app, ["budget", "show", str(ledger)])
    assert shown.exit_code == 0, shown.output
    assert all(len(line) <= 80 for line in shown.output.splitlines())
    assert "…" not in shown.output
    text = " ".join(shown.output.split())
    # Spent rounded up, remaining down: never the unsafe way.
    assert "spent rho = 0.1235 in 1 spend" in text and "remaining rho = 1.126" in text
    assert "spent epsilon = 1e-07" in text and "remaining epsilon = 1.999" in text
    assert "total epsilon = 0.123456789, delta = 1e-09" in text
    history = runner.invoke(app, ["budget", "history", str(ledger), "--dataset", "zcdp"])
    assert "…" not in history.output and "rho = 0.123456789" in history.output


# --------------------------------------------------------------------------- properties

_SPENDS = st.one_of(
    st.builds(ZCDP, st.floats(0.0, 0.2)),
    st.builds(PureDP, st.floats(0.0, 0.6)),
    st.builds(GDP, st.floats(0.0, 0.6)),
    st.builds(ApproxDP, st.floats(0.0, 1.5), st.sampled_from([0.0, 1e-8, 3e-7, 1e-6])),
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow],
          derandomize=True, database=None)
@given(epsilon=st.sampled_from([1.0, 3.0, 8.0]), delta=st.sampled_from([1e-9, 1e-6]),
       spends=st.lists(_SPENDS, max_size=6))
def test_composing_spends_never_exceeds_the_total(tmp_path_factory, epsilon, delta, spends):
    total = ApproxDP(epsilon, delta)
    ledger = Ledger(tmp_path_factory.mktemp("l") / "l.db")
    ledger.declare("d", total)
    accountant = PrivacyAccountant(total, composition="zcdp")
    for budget in spends:
        before = (ledger.exact_spent("d"), ledger.history("d"))
        try:
            ledger.spend("d", budget, mechanism="m")
        except (BudgetExceededError, IncompatibleBudgetError) as refusal:
            # A refused spend leaves the ledger unchanged, and the accountant refuses too.
            assert (ledger.exact_spent("d"), ledger.history("d")) == before
            with pytest.raises(type(refusal)):
                accountant.spend(budget)
            continue
        accountant.spend(budget)
        assert accountant.exact_spent == ledger.exact_spent("d")
    epsilon_a, delta_a, rho = ledger.exact_spent("d")
    assert epsilon_a <= Fraction(epsilon) and delta_a <= Fraction(delta)
    if rho > 0:
        # The zCDP part implies what the basic part left, by the tight conversion.
        left = float(Fraction(epsilon) - epsilon_a)
        assert reference.zcdp_delta(float(rho), left) <= mpmath.mpf(delta) - mpmath.mpf(
            delta_a.numerator) / delta_a.denominator
    stated = ledger.spent("d")
    assert stated.epsilon <= epsilon and stated.delta <= delta
    assert math.isfinite(ledger.remaining("d").rho)
