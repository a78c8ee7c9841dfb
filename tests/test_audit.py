"""Tests of the empirical privacy audit (dpggm.audit, `dpggm audit`)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import optimize, stats
from typer.testing import CliRunner

from dpggm.audit import (
    Release,
    Target,
    audit,
    audit_target,
    clopper_pearson,
    epsilon_lower_bound,
    gaussian_reachable,
    laplace_reachable,
    numpy_laplace_value,
)
from dpggm.audit.mironov import float_support_attack
from dpggm.cli.main import app

# ----------------------------------------------------------------- Clopper–Pearson


@pytest.mark.parametrize("k,n", [(0, 50), (1, 50), (17, 50), (49, 50), (50, 50), (300, 1000)])
def test_clopper_pearson_matches_the_binomial_tails(k, n):
    alpha = 0.05
    lower, upper = clopper_pearson(k, n, alpha)
    # Independent definition: lower solves P[Bin(n, p) >= k] = alpha, upper solves
    # P[Bin(n, p) <= k] = alpha.
    if k == 0:
        assert lower == 0.0
    else:
        expected = optimize.brentq(lambda p: stats.binom.sf(k - 1, n, p) - alpha, 1e-12, 1 - 1e-12)
        assert lower == pytest.approx(expected, rel=1e-6)
    if k == n:
        assert upper == 1.0
    else:
        expected = optimize.brentq(lambda p: stats.binom.cdf(k, n, p) - alpha, 1e-12, 1 - 1e-12)
        assert upper == pytest.approx(expected, rel=1e-6)
    assert lower == (0.0 if k == 0 else stats.beta.ppf(alpha, k, n - k + 1))


def test_clopper_pearson_rejects_bad_counts():
    with pytest.raises(ValueError, match="k must be"):
        clopper_pearson(5, 4, 0.05)
    with pytest.raises(ValueError, match="alpha"):
        clopper_pearson(1, 4, 1.5)


def test_epsilon_lower_bound_formula():
    k0, k1, n, delta, alpha = 400, 100, 1000, 0.01, 0.05
    lo, _ = clopper_pearson(k0, n, alpha / 2)
    _, up = clopper_pearson(k1, n, alpha / 2)
    assert epsilon_lower_bound(k0, n, k1, n, delta=delta, alpha=alpha) == pytest.approx(
        math.log((lo - delta) / up)
    )
    # No separation: no bound.
    assert epsilon_lower_bound(100, n, 100, n, delta=0.0, alpha=alpha) == 0.0


def _randomised_response(epsilon: float) -> Target:
    p = math.exp(epsilon) / (1 + math.exp(epsilon))

    def release(bit, relation, rng, runs):
        flip = rng.random(runs) < p
        return Release((np.where(flip, bit, 1 - bit)).astype(float)[:, None], (epsilon, 0.0))

    return Target(
        name="randomised-response", summary="", relations=("replace",),
        datasets=lambda relation: {"0": 0, "1": 1},
        pairs=lambda relation: [("0", "1")], release=release,
    )


def test_bound_on_bernoulli_outputs_with_known_epsilon():
    # Randomised response with epsilon = 1 is exactly 1-DP and no event does better than
    # the output itself: the bound must approach 1 from below and never exceed it.
    result = audit_target(_randomised_response(1.0), "replace", samples=200_000, seed=3)
    assert result.verdict == "pass"
    assert 0.9 < result.epsilon_lower_bound <= 1.0
    # The same outputs contradict a claim of 0.8.
    claim_low = _randomised_response(1.0)
    low = Target(**{**claim_low.__dict__, "release": lambda b, r, g, n: Release(
        claim_low.release(b, r, g, n).values, (0.8, 0.0))})
    assert audit_target(low, "replace", samples=200_000, seed=3).verdict == "fail"


# ----------------------------------------------------------------- mechanisms


def test_wishart_pure_fails():
    (result,) = audit("wishart-pure", samples=600, relations=("replace",))
    assert result.verdict == "fail"
    assert result.epsilon_lower_bound > 1.5
    assert "lambda_min" in result.event


def test_broken_double_fails():
    (result,) = audit("broken-ssp-half-sensitivity", quick=True)
    assert result.double
    assert result.verdict == "fail", result.event


def test_output_perturbation_fails():
    (result,) = audit("output-perturbation", samples=600, relations=("replace",))
    assert result.verdict == "fail", result.event


def test_ssp_passes_under_replace_apart_from_float_support():
    (result,) = audit("ssp", samples=1000, relations=("replace",), float_support=False)
    assert result.verdict == "pass", result.event
    assert result.claimed == {"epsilon": 1.0, "delta": 1e-3}


def test_ssp_passes_under_replace():
    (result,) = audit("ssp", samples=1000, relations=("replace",))
    assert result.verdict == "pass", result.event


def test_exponential_passes():
    (result,) = audit("exponential", samples=4000)
    assert result.verdict == "pass", result.event


@pytest.mark.parametrize("name", ["private-median-cell", "private-norm-bound",
                                  "private-spread-cell", "private-median-cell-missing",
                                  "private-center-cell"])
def test_private_bound_quantiles_pass_under_both_relations(name):
    results = audit(name, samples=4000)
    assert {r.relation for r in results} == {"replace", "add-remove"}
    assert all(r.verdict == "pass" for r in results), [r.event for r in results]


def test_a_quantile_with_a_third_of_its_sensitivity_fails():
    # The same worst-case pair catches a median cell run at three times its stated epsilon
    # (what a score sensitivity of 1/3 would give).
    import dataclasses

    from dpggm.audit.core import Release, audit_target
    from dpggm.audit.targets import _QUANTILE_GRID, get_target
    from dpggm.mechanisms.private_bounds import private_quantile_cell

    def overstated(values, relation, rng, runs):
        ordered = np.sort(values)
        picks = [private_quantile_cell(ordered, 0.5, edges=_QUANTILE_GRID, epsilon=3.0,
                                       rng=rng)[0] for _ in range(runs)]
        return Release(np.asarray(picks, dtype=float)[:, None], (1.0, 0.0))

    broken = dataclasses.replace(get_target("private-median-cell"), release=overstated,
                                 expected="fail", double=True)
    result = audit_target(broken, "replace", samples=4000, seed=0)
    assert result.verdict == "fail"
    assert result.epsilon_lower_bound > 1.0


def test_a_center_cell_stated_at_sensitivity_1_fails():
    # The center's score moves by 2 (rank distance and count together) on this pair: run
    # as if its sensitivity were 1, it loses 1.27 on an event of probability >= 0.1
    # (computed exactly) against the 1 it claims, and the audit sees it.
    import dataclasses
    import functools

    from dpggm.audit.core import audit_target
    from dpggm.audit.targets import center_cell_release, get_target

    broken = dataclasses.replace(
        get_target("private-center-cell"),
        release=functools.partial(center_cell_release, sensitivity=1.0),
        expected="fail", double=True)
    result = audit_target(broken, "replace", samples=20000, seed=0)
    assert result.verdict == "fail"
    assert result.epsilon_lower_bound > 1.0


def test_refused_relation_is_reported():
    results = {r.relation: r for r in audit("wishart", samples=40)}
    assert results["add-remove"].verdict == "refused"
    assert "replace-one" in results["add-remove"].note


def test_audit_is_reproducible():
    a = audit("exponential", samples=400, seed=5)[0]
    b = audit("exponential", samples=400, seed=5)[0]
    assert a.epsilon_lower_bound == b.epsilon_lower_bound and a.event == b.event


# ----------------------------------------------------------------- float support


def test_numpy_laplace_value_reproduces_numpy():
    raw = np.random.PCG64(11).random_raw(500)
    draws = np.random.Generator(np.random.PCG64(11)).laplace(0.0, 0.7, size=500)
    ks = [int(r >> np.uint64(11)) for r in raw]
    assert all(numpy_laplace_value(k, 0.7) == d for k, d in zip(ks, draws))


def test_laplace_reachable_on_draws_and_shifted_draws():
    draws = np.random.default_rng(2).laplace(0.0, 0.3, size=2000)
    assert laplace_reachable(draws, 0.0, 0.3).all()
    shifted = 0.1 + draws
    assert laplace_reachable(shifted, 0.1, 0.3).all()  # reachable from its own center
    assert laplace_reachable(shifted, 0.0, 0.3).mean() < 0.5  # mostly not from 0
    assert not laplace_reachable(np.array([np.nan]), 0.0, 0.3).any()


def test_gaussian_reachable_on_draws_and_shifted_draws():
    draws = np.random.default_rng(3).normal(0.0, 0.37, size=3000)
    # All but the rare tail of ziggurat layer 0.
    assert gaussian_reachable(draws, 0.0, 0.37).mean() > 0.998
    shifted = 0.1 + draws
    assert gaussian_reachable(shifted, 0.1, 0.37).mean() > 0.998
    assert gaussian_reachable(shifted, 0.0, 0.37).mean() < 0.95


def _mironov_bound(mechanism: str = "laplace", **options) -> float:
    return float_support_attack(mechanism, **options)["epsilon_lower_bound"]


def test_mironov_attack_breaks_the_float_laplace_path():
    # The float path is kept behind noise="float"; the attack must keep catching it.
    assert _mironov_bound(noise="float") > 1.0


def test_float_support_attack_breaks_the_float_gaussian_path():
    assert _mironov_bound("gaussian", noise="float") > 1.0


@pytest.mark.parametrize("name", ["ssp-float", "laplace-float"])
def test_float_noise_targets_fail_the_audit(name):
    # noise="float" is reported "invalid"; the audit must show why (issue 20).
    (result,) = audit(name, quick=True)
    assert result.expected == "fail" and not result.double
    # Through the quick audit's pilot (one pair): the known-invalid still fail.
    assert "chosen by a pilot" in result.note
    assert result.verdict == "fail", result.event
    assert "reachable from" in result.event
    assert result.epsilon_lower_bound > 2 * result.claimed["epsilon"]


def test_mironov_attack_does_not_separate_the_grid_path():
    # The default, exact noise on a grid: the event no longer separates the data sets.
    assert _mironov_bound() <= 1.0


# ----------------------------------------------------------------- CLI


def test_cli_wishart_pure_json_fails():
    result = CliRunner().invoke(
        app, ["audit", "--mechanism", "wishart-pure", "--samples", "400", "--json"]
    )
    record = json.loads(result.stdout)
    assert record["mechanism"] == "wishart-pure"
    assert record["verdict"] == "fail"
    assert record["epsilon_lower_bound"] > record["claimed"]["epsilon"]
    assert {"claimed", "samples", "relations"} <= set(record)
    assert result.exit_code == 0  # failing a known-broken mechanism is the expected outcome


def test_cli_list_and_usage_errors():
    runner = CliRunner()
    listed = runner.invoke(app, ["audit", "--list"])
    assert listed.exit_code == 0
    for name in ("ssp", "exponential", "publish-discrete", "broken-ssp-half-sensitivity"):
        assert name in listed.stdout
    assert runner.invoke(app, ["audit"]).exit_code == 2
    assert runner.invoke(app, ["audit", "--mechanism", "nope"]).exit_code == 2


# ----------------------------------------------------------------- --quick has power


def test_quick_gives_the_cheap_targets_an_informative_bound():
    # 4000 runs gave 0.166 against the claim 0.9; the quick number costs a fifth of a
    # second here.
    (result,) = audit("discrete-gaussian", quick=True)
    assert result.verdict == "pass" and result.epsilon_lower_bound > 0.3, result.event


def test_the_pilot_finds_the_worst_case_pair():
    from dpggm.audit import TARGETS, most_separated_pair

    # The second moment moves most (Frobenius sqrt(2)) between rows e1 and e2.
    pair = most_separated_pair(TARGETS["broken-ssp-half-sensitivity"], "replace",
                               samples=2000)
    assert set(pair) == {"D[0]=e1", "D[0]=e2"}


def test_audits_in_parallel_equal_the_serial_ones():
    from dpggm.cli.audit import _audit_all

    names = ["discrete-gaussian", "broken-ssp-half-sensitivity", "exponential"]
    options = {"samples": 2000, "quick": False, "seed": 3, "confidence": 0.95,
               "float_support": True}
    serial = _audit_all(names, options, jobs=1, report=None)
    parallel = _audit_all(names, options, jobs=2, report=None)
    assert {k: [r.to_dict() for r in v] for k, v in serial.items()} == {
        k: [r.to_dict() for r in v] for k, v in parallel.items()}


def test_a_renamed_target_keeps_its_earlier_name_and_streams():
    from dpggm.audit.targets import get_target

    target = get_target("private-centre-cell")
    assert target is get_target("private-center-cell")
    # The runs recorded in docs/audit.md drew from the earlier name's streams.
    assert target.streams == "private-centre-cell" != target.name
