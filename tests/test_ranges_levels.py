"""Private ranges that keep the levels of discrete columns apart: skewed Likert items, 0/1
flags split 50/50 or 90/10, mixed tables; the spread's target and the center's score keep
their sensitivities; the plan states what it keeps and refuses ranges it cannot locate."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm

from dpggm import PrivateGraph
from dpggm.mechanisms.private_bounds import (
    STAGE_COUNT_WEIGHTS,
    UNTIED_SHARE,
    RangeStages,
    cell_scores,
    kept_untied_share,
    range_budget_needed,
    range_epsilons,
    range_shares,
    score_sensitivity,
    spread_target,
    stage_epsilons_needed,
    target_rank,
)
from dpggm.mechanisms.random import RandomSource
from dpggm.privacy.budgets import ZCDP, ApproxDP, PureDP


def skewed_items(n: int, *, seed: int, n_items: int = 20, n_skewed: int = 8,
                 peak: float = 0.78) -> tuple[pd.DataFrame, np.ndarray]:
    """Likert answers 1-6 from a four-factor Gaussian; ``n_skewed`` items put ``peak`` of
    their answers on level 5 (levels 1-6: 2.2/3.3/4.4/4.8/78/7.3 %)."""
    rng = np.random.default_rng(seed)
    latent = (0.7 * np.repeat(rng.standard_normal((n, 4)), n_items // 4, axis=1)
              + math.sqrt(1 - 0.49) * rng.standard_normal((n, n_items)))
    shares = np.array([0.1, 0.15, 0.2, 0.22, 0.0, 0.33]) * (1 - peak)
    shares[4] = peak
    peaked = norm.ppf(np.cumsum(shares)[:-1])
    symmetric = norm.ppf(np.arange(1, 6) / 6)
    skewed = np.sort(rng.permutation(n_items)[:n_skewed])
    X = np.column_stack([1 + np.searchsorted(peaked if j in skewed else symmetric, latent[:, j])
                         for j in range(n_items)]).astype(float)
    return pd.DataFrame(X, columns=[f"item_{j + 1}" for j in range(n_items)]), skewed


def _outside_share(graph: PrivateGraph, n: int) -> np.ndarray:
    return np.array(list(graph.clipping_["outside_by_column"].values())) / n


# -- the defect: discrete columns collapsed onto one value --------------------------------


@pytest.mark.parametrize("seed", [0, 1])
def test_skewed_likert_items_keep_their_levels(seed):
    # 8 of 20 items with 78 % of the answers on level 5: the plain MAD is 0, and the range
    # used to be 5 +- 0.005 (21-24 % of the rows clipped onto it).
    X, skewed = skewed_items(1000, seed=seed)
    graph = PrivateGraph(budget=ZCDP(1.0), random_state=seed).fit(X)
    outside = _outside_share(graph, 1000)
    assert outside.max() < 0.05, outside
    values = X.to_numpy()
    for j in skewed:
        levels, counts = np.unique(values[:, j], return_counts=True)
        held = levels[counts > 0.02 * len(values)]
        assert graph.ranges_.lower[j] <= held.min() and held.max() <= graph.ranges_.upper[j]


def test_skewed_likert_items_under_an_epsilon_delta_budget():
    X, _ = skewed_items(2500, seed=3)
    graph = PrivateGraph(budget=ApproxDP(1.0, 1e-6), random_state=3).fit(X)
    assert _outside_share(graph, 2500).max() < 0.05


def _mixed(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((n, 6))
    z[:, 1:] = 0.6 * z[:, :-1] + 0.8 * z[:, 1:]  # a chain of dependence
    frame = pd.DataFrame({"age": 50 + 10 * z[:, 0], "bmi": 26 + 4 * z[:, 1],
                          "sbp": 120 + 15 * z[:, 2]})
    frame["sex"] = (z[:, 3] > 0.0).astype(float)  # 50/50
    frame["smoker"] = (z[:, 4] > norm.ppf(0.9)).astype(float)  # 90/10
    frame["treated"] = (z[:, 5] > norm.ppf(0.8)).astype(float) + 1.0  # coded 1/2, 80/20
    return frame


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_binary_columns_keep_both_values(seed):
    X = _mixed(4000, seed)
    graph = PrivateGraph(budget=ZCDP(1.0), random_state=seed).fit(X)
    # The plan resolves the 90/10 flag (10 % of its values off its most common one).
    assert graph.plan_.notes["tied_columns_keep_levels_from_untied_share"] < 0.1
    names = list(X.columns)
    for flag, (low, high) in {"sex": (0, 1), "smoker": (0, 1), "treated": (1, 2)}.items():
        j = names.index(flag)
        assert graph.ranges_.lower[j] <= low and high <= graph.ranges_.upper[j], flag
        assert graph.clipping_["outside_by_column"][flag] == 0
    # The continuous columns keep nearly all of their rows.
    for name in ("age", "bmi", "sbp"):
        assert graph.clipping_["outside_by_column"][name] < 0.01 * 4000


def test_a_non_private_reference_run_keeps_the_levels_too():
    from dpggm.privacy.budgets import NonPrivate

    X = _mixed(2000, 0)
    graph = PrivateGraph(budget=NonPrivate()).fit(X)
    assert graph.clipping_["outside_by_column"]["sex"] == 0
    assert graph.clipping_["outside_by_column"]["smoker"] == 0


# -- the mechanisms ------------------------------------------------------------------------


def test_spread_target_is_the_median_of_the_untied_deviations():
    counted = np.array([100, 100, 100, 101])
    tied = np.array([0, 78, 50, 0])
    np.testing.assert_array_equal(spread_target(counted, tied),
                                  [50, 78 + 11, 50 + 25, 50])  # round(50.5) = 50
    assert spread_target(np.array([7]), np.array([7]))[0] == 7


def test_a_tied_column_spread_lands_on_the_next_level():
    # 78 of 100 values tied with the center (deviation 0), the rest at deviation 1 or 2.
    stages = RangeStages(epsilons={"spread": 50.0})
    deviations = np.sort(np.r_[np.zeros(78), np.ones(15), np.full(7, 2.0)])
    below = np.searchsorted(deviations, stages.spread_edges, side="left")[None, :]
    spread = stages.choose_spread(below, np.array([78]), np.array([100]),
                                  RandomSource.of(0))
    assert 0.9 <= spread[0] <= 1.2


def _neighbour_pairs(values: list[float], domain: list[float]):
    """Every replace-one neighbour and every add-one neighbour of ``values``."""
    for i, v in itertools.product(range(len(values)), domain):
        yield values, values[:i] + [v] + values[i + 1:]
    for v in domain:
        yield values, values + [v]


def _spread_scores(values: list[float], edges: np.ndarray, radius: float) -> np.ndarray:
    deviations = np.sort(np.abs(np.asarray(values)))
    tied = int(np.searchsorted(deviations, radius, side="right"))
    below = np.searchsorted(deviations, edges, side="left")
    return cell_scores(below, int(spread_target(np.array([len(values)]),
                                                 np.array([tied]))[0]))


def test_the_spread_score_has_sensitivity_one_under_both_relations():
    edges = np.array([0.25, 0.5, 1.0, 2.0, 4.0])
    domain = [0.0, 0.1, 0.3, 0.7, 1.5, 3.0, 9.0]
    rng = np.random.default_rng(0)
    for _ in range(40):
        values = list(rng.choice(domain, size=int(rng.integers(1, 9))))
        for a, b in _neighbour_pairs(values, domain):
            change = np.abs(_spread_scores(a, edges, 0.2) - _spread_scores(b, edges, 0.2))
            assert change.max() <= 1.0, (a, b)


def test_the_center_score_has_sensitivity_one_plus_its_count_weight():
    edges = np.array([-1.0, 0.0, 0.5, 1.0, 2.0, 3.0])
    domain = [-5.0, 0.0, 0.7, 1.0, 2.0, 2.5, 9.0]
    weight = STAGE_COUNT_WEIGHTS["median"]
    assert score_sensitivity(weight) == 2.0
    rng = np.random.default_rng(1)
    seen = 0.0
    for _ in range(40):
        values = list(rng.choice(domain, size=int(rng.integers(1, 9))))
        for a, b in _neighbour_pairs(values, domain):
            scores = [cell_scores(np.searchsorted(np.sort(v), edges, side="left"),
                                  target_rank(len(v), 0.5), weight) for v in (a, b)]
            change = np.abs(scores[0] - scores[1]).max()
            assert change <= score_sensitivity(weight), (a, b)
            seen = max(seen, change)
    assert seen == 2.0  # the bound is reached


def test_the_center_of_a_column_split_half_and_half_lands_on_a_value():
    # 0/1 split 50/50: every empty cell between 0 and 1 is a median; the count term makes
    # the mechanism pick a cell that holds one of the two values.
    values = np.sort(np.r_[np.zeros(500), np.ones(500)])
    stages = RangeStages(epsilons={"median": 0.5, "refine": 0.5})
    below = np.searchsorted(values, stages.median_edges, side="left")[None, :]
    hits = 0
    rng = RandomSource.of(0)
    for _ in range(20):
        lower, upper = stages.choose_median(below, np.array([1000]), rng)
        hits += bool((lower[0] <= 0.0 < upper[0]) or (lower[0] <= 1.0 < upper[0]))
    assert hits == 20


# -- the plan --------------------------------------------------------------------------------


def test_the_shares_add_up_and_follow_the_budget():
    n = 1000
    for notion in (ZCDP, PureDP):
        for per_column in np.geomspace(1e-6, 10.0, 40):
            shares = range_shares(n=n, per_column=float(per_column), notion=notion)
            assert sum(shares.values()) == 1 and all(v > 0 for v in shares.values())
    # Enough for everything: in proportion to the needs.
    need = stage_epsilons_needed(n=n)
    big = range_shares(n=n, per_column=1.0)
    total = sum(e * e / 8 for e in need.values())
    for k, e in need.items():
        assert float(big[k]) == pytest.approx(e * e / 8 / total, abs=1e-8)
    # At exactly the locate budget every stage gets its locate need.
    locate = stage_epsilons_needed(n=n, locate=True)
    at = float(range_budget_needed(n=n, p=1, locate=True).rho)
    eps = range_epsilons(ZCDP(at), 1, n=n)
    for k in locate:
        assert eps[k] == pytest.approx(locate[k], rel=1e-6)


def test_the_plan_states_which_tied_columns_it_keeps_apart():
    plan = PrivateGraph(budget=ZCDP(1.0)).plan(n_samples=2500, n_features=20)
    kept = plan.notes["tied_columns_keep_levels_from_untied_share"]
    bounds = {s.step: s for s in plan.steps}["bounds"]
    assert kept == pytest.approx(kept_untied_share(n=2500,
                                                   epsilon_spread=bounds.noise["epsilon_spread"]))
    # "auto" picks the smallest share that resolves UNTIED_SHARE where it can.
    assert kept <= UNTIED_SHARE
    assert Fraction(plan.notes["bound_fraction"]) <= Fraction(1, 16)


def test_ranges_that_cannot_locate_their_columns_are_refused_before_any_draw(monkeypatch):
    count = {"words": 0}
    original = RandomSource.words

    def counting(self, n):
        count["words"] += int(n)
        return original(self, n)

    monkeypatch.setattr(RandomSource, "words", counting)
    X, _ = skewed_items(442, seed=0)
    with pytest.raises(ValueError, match=r"bounds='auto' cannot locate the columns: with 442 "
                                         r"records and 20 columns.*column_ranges="):
        PrivateGraph(budget=ApproxDP(1.0, 1e-6), random_state=None).fit(X)
    assert count["words"] == 0
    # Declaring the scales is the way out: nothing to locate.
    declared = {c: (1, 6) for c in X.columns}
    graph = PrivateGraph(budget=ApproxDP(1.0, 1e-6), column_ranges=declared,
                         random_state=0).fit(X)
    assert graph.clipping_["outside_ranges"] == 0
