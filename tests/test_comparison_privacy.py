"""The privacy of a group comparison, by neighbouring pairs: a record that changes group
(replace-one), a record replaced within its group, a record added or removed. For each
case the change of every released statistic is computed from the records as the release
clips them, turned into the zCDP loss of its Gaussian step with the noise the release
used (``Delta**2 / (2 sigma**2)``, independently of the library's calibration), and
compared with what the comparison booked for that case."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpggm import ZCDP
from dpggm.datasets import make_group_networks
from dpggm.estimators.comparison import MIN_GROUP_ROWS, PrivateGraphComparison
from dpggm.mechanisms.bounds import RowNorm

LEVELS = ("patients", "controls")
#: Steps whose loss is their exponential mechanisms' (score sensitivity 1 under either
#: relation: tests/test_graph.py::test_quantile_score_sensitivity_holds_for_neighbours).
EXPONENTIAL_STEPS = ("bounds", "norm bound")


@pytest.fixture(scope="module")
def data():
    return make_group_networks(n_samples=(300, 300), n_features=5, chain=0.3,
                               n_differences=1, difference=0.35, random_state=1)


def _fit(data, neighbors: str, **options) -> PrivateGraphComparison:
    return PrivateGraphComparison(budget=ZCDP(1.0), levels=data.levels, group="group",
                                  neighbors=neighbors, random_state=3,
                                  **options).fit(data.frame)


def _steps(est: PrivateGraphComparison, level: str) -> dict[str, dict]:
    return {s["step"].split(": ", 1)[1]: s for s in est.privacy_.noise["breakdown"]
            if s["group"] == level}


def _clipped(graph, z: np.ndarray) -> np.ndarray:
    """The record the release sees for a record whose scaled values are ``z``: mapped back
    to raw units, then clipped to the group's ranges and norm bound as the release does."""
    ranges = graph.ranges_
    raw = ranges.center + np.asarray(z, dtype=float) * ranges.half_width
    scaled, _ = ranges.transform(raw[None, :])
    clipped, _ = RowNorm(graph.norm_bound_.bound).clip(scaled)
    return clipped[0]


def _contribution(graph, record: np.ndarray | None, p: int) -> dict[str, np.ndarray]:
    """What one record adds to each Gaussian step's statistic (``None``: no record)."""
    if record is None:
        return {"count": np.zeros(1), "missing counts": np.zeros(p),
                "mean": np.zeros(p), "second moment": np.zeros((p, p))}
    return {"count": np.ones(1), "missing counts": np.ones(p), "mean": record,
            "second moment": np.outer(record, record)}


def _loss(steps: dict[str, dict], before: dict, after: dict) -> float:
    """zCDP loss of one release between two neighbouring record sets, from the change of
    each Gaussian statistic and the noise it got; exponential steps at their booked cost."""
    total = 0.0
    for name, step in steps.items():
        if name in EXPONENTIAL_STEPS:
            total += step["budget"].rho
            continue
        sigma = step.get("count_sigma", step.get("sigma"))
        change = np.linalg.norm(np.ravel(after[name] - before[name]))
        total += change**2 / (2 * sigma**2)
    return total


def _extreme(graph, p: int, sign: float = 1.0) -> np.ndarray:
    """A record at the corner of the box: clipped onto the norm bound."""
    return _clipped(graph, sign * np.ones(p) * 5)


def test_group_change_under_replace_one_moves_both_releases(data):
    # A record of the first group replaced by one of the second: the first release loses a
    # record, the second gains one, each an add/remove neighbour at its own cost.
    est = _fit(data, "replace")
    p = est.n_features_in_
    assert est.spend_.group_relation == "add-remove"
    moved = 0.0
    for level, sign in zip(LEVELS, (1.0, -1.0)):
        graph = est.groups_[level]
        steps = _steps(est, level)
        record = _extreme(graph, p, sign)
        assert np.linalg.norm(record) == pytest.approx(graph.norm_bound_.bound, rel=1e-9)
        with_record = _contribution(graph, record, p)
        without = _contribution(graph, None, p)
        loss = _loss(steps, without, with_record)
        booked = est.spend_.group_budgets[level].rho
        # The worst record moves the release by exactly its budget (the discrete
        # Gaussian's sigma is rounded up onto a grid: a hair below).
        assert loss <= booked * (1 + 1e-12)
        assert loss >= booked * 0.995
        moved += loss
    case = est.spend_.cases["record moved to another group"].rho
    assert moved == pytest.approx(case, rel=5e-3) and moved <= case * (1 + 1e-12)
    assert est.privacy_.budget.rho == pytest.approx(1.0) and case <= 1.0
    # Both groups' sizes are released, as noisy counts.
    assert est.privacy_.notes["group_sizes_are"] == "released as noisy counts"


def test_replacement_within_a_group_costs_its_case_at_most(data):
    est = _fit(data, "replace")
    p = est.n_features_in_
    level = LEVELS[0]
    graph, steps = est.groups_[level], _steps(est, level)
    bound = graph.norm_bound_.bound
    u = np.zeros(p)
    u[:2] = bound / np.sqrt(2)
    v = u.copy()
    v[1] = -v[1]
    # Pairs of records of the same group that each reach a step's worst change: opposite
    # corners (the column sums move by 2B), orthogonal records (the Gram matrix by
    # sqrt(2) B**2), a complete record against an empty one (the counts of values present).
    raw = [(_clipped(graph, u), _clipped(graph, -u))]
    raw.append((_clipped(graph, u), _clipped(graph, v)))
    worst: dict[str, float] = {}
    for a, b in raw:
        before, after = _contribution(graph, a, p), _contribution(graph, b, p)
        for name, step in steps.items():
            if name in EXPONENTIAL_STEPS:
                continue
            sigma = step.get("count_sigma", step.get("sigma"))
            loss = np.linalg.norm(np.ravel(after[name] - before[name])) ** 2 / (2 * sigma**2)
            worst[name] = max(worst.get(name, 0.0), loss)
    worst["missing counts"] = p / (2 * steps["missing counts"]["sigma"] ** 2)
    assert worst["count"] == 0.0
    assert worst["mean"] == pytest.approx(4 * steps["mean"]["budget"].rho, rel=5e-3)
    assert worst["second moment"] == pytest.approx(2 * steps["second moment"]["budget"].rho, rel=5e-3)
    total = sum(worst.values()) + sum(steps[n]["budget"].rho for n in EXPONENTIAL_STEPS)
    case = est.spend_.cases["record replaced within its group"].rho
    assert total <= case * (1 + 1e-12) and total == pytest.approx(case, rel=5e-3)
    assert case <= est.privacy_.budget.rho


def test_add_remove_moves_one_release_by_the_whole_budget(data):
    # Adding a record to one group leaves the other's records (and release) as they were:
    # parallel composition, each group's release at the whole budget.
    est = _fit(data, "add-remove")
    p = est.n_features_in_
    assert list(est.spend_.cases) == ["record added or removed"]
    for level in LEVELS:
        graph = est.groups_[level]
        loss = _loss(_steps(est, level), _contribution(graph, None, p),
                     _contribution(graph, _extreme(graph, p), p))
        assert loss == pytest.approx(1.0, rel=5e-3) and loss <= 1.0 + 1e-12
    assert est.spend_.total.rho == pytest.approx(1.0)
    assert est.privacy_.neighbors == "add-remove"


def test_added_record_changes_one_groups_records_only(data):
    from dpggm.estimators.comparison import _split_records

    est = PrivateGraphComparison(budget=ZCDP(1.0), levels=data.levels, group="group",
                                 neighbors="add-remove")
    settings = est._settings()
    frame = data.frame
    extra = frame.iloc[[0]].copy()
    extra["group"] = LEVELS[0]
    before = _split_records(frame, None, settings, est)
    after = _split_records(pd.concat([frame, extra]), None, settings, est)
    assert after.frames[LEVELS[1]].equals(before.frames[LEVELS[1]])
    assert len(after.frames[LEVELS[0]]) == len(before.frames[LEVELS[0]]) + 1


def test_declared_sizes_make_the_groups_parallel_replace_one_releases(data):
    sizes = {level: int((data.frame["group"] == level).sum()) for level in LEVELS}
    est = _fit(data, "replace", group_sizes=sizes)
    assert est.spend_.sizes == "declared" and est.spend_.group_relation == "replace"
    assert list(est.spend_.cases) == ["record replaced within its group"]
    assert est.spend_.total.rho == pytest.approx(1.0)
    assert est.group_sizes_ == sizes
    with pytest.raises(ValueError, match="declares 299 records"):
        _fit(data, "replace", group_sizes={LEVELS[0]: sizes[LEVELS[0]] - 1,
                                           LEVELS[1]: sizes[LEVELS[1]]})


def test_a_small_level_is_refused_before_any_draw(data):
    frame = data.frame.copy()
    keep = frame.index[frame["group"] == LEVELS[1]][: MIN_GROUP_ROWS - 1]
    frame = frame[(frame["group"] == LEVELS[0]) | frame.index.isin(keep)]
    rng = np.random.default_rng(7)
    state = rng.bit_generator.state
    est = PrivateGraphComparison(budget=ZCDP(1.0), levels=LEVELS, group="group",
                                 random_state=rng)
    with pytest.raises(ValueError, match=f"fewer than {MIN_GROUP_ROWS} records"):
        est.fit(frame)
    assert rng.bit_generator.state == state
    assert not hasattr(est, "privacy_")


def test_levels_are_declared_never_read_off_the_data(data):
    with pytest.raises(ValueError, match="levels is required: declare the groups"):
        PrivateGraphComparison(budget=ZCDP(1.0), group="group").fit(data.frame)
    with pytest.raises(ValueError, match="between two groups"):
        PrivateGraphComparison(budget=ZCDP(1.0), group="group",
                               levels=("a", "b", "c")).fit(data.frame)
