"""The one release record: every release of a matrix statistic is a ``Release``, its
noise a ``NoiseDescription``; the older names are that type."""

from __future__ import annotations

import numpy as np
import pytest

from dpggm import ZCDP, GraphicalLasso, PrivateGraph, PureDP
from dpggm.datasets import make_raw_chain
from dpggm.mechanisms import NoiseDescription, Release
from dpggm.mechanisms.bounds import RowNorm
from dpggm.mechanisms.context import ReleaseContext
from dpggm.mechanisms.release import SecondMomentRelease, release_second_moment
from dpggm.privacy.budgets import ApproxDP, NonPrivate


def test_the_older_names_are_the_one_record():
    from dpggm.estimators.graph import ReleasedMoment
    from dpggm.estimators.noisy_glasso import ReleaseNoise

    assert SecondMomentRelease is Release and ReleasedMoment is Release
    assert ReleaseNoise is NoiseDescription


@pytest.mark.parametrize("budget", [ApproxDP(1.0, 1e-5), NonPrivate()])
def test_the_second_moment_release_is_a_release(budget):
    X = np.random.default_rng(0).normal(size=(40, 3))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    ctx = ReleaseContext(neighbors="replace", bounds=RowNorm(1.0), random_state=1)
    release = release_second_moment(X.T @ X, n=40, bounds=RowNorm(1.0), budget=budget,
                                     mechanism="gaussian", ctx=ctx)
    assert isinstance(release, Release)
    assert release.n_samples == 40 and release.n_features == 3
    assert release.noise.kind == "gaussian"
    assert release.noise_variance == float(release.noise.std) ** 2
    assert (release.noise.std == 0.0) == isinstance(budget, NonPrivate)


def test_a_private_graph_and_a_graphical_lasso_read_the_one_record():
    frame, _ = make_raw_chain(n_samples=2000, n_features=5, random_state=2)
    graph = PrivateGraph(budget=ZCDP(0.5), random_state=3).fit(frame)
    release = graph.release_
    assert isinstance(release, Release) and isinstance(release.noise, NoiseDescription)
    assert release.statistic is graph.noisy_covariance_
    assert release.noise.std == graph.entry_noise_std_
    assert release.guarantee is graph.privacy_
    assert release.columns == list(frame.columns)
    assert release.precision is not None and release.alpha == graph.alpha_
    pure = PrivateGraph(budget=PureDP(2.0), random_state=3).fit(frame)
    assert pure.release_.noise.kind == "laplace" == pure.release_.noise_distribution

    X = frame.to_numpy()
    est = GraphicalLasso(budget=ZCDP(0.5), bounds="l2:12", random_state=0).fit(X)
    assert est._release.statistic is est.noisy_covariance_
    assert est._release.n_samples == est.n_samples_
    assert est._release.noise.variance == est.entry_noise_std_ ** 2


def test_the_graph_release_keeps_its_covariance_name():
    import numpy as np

    from dpggm import ZCDP, PrivateGraph

    X = np.random.default_rng(1).normal(size=(300, 3))
    release = PrivateGraph(budget=ZCDP(1.0), random_state=0).fit(X).release_
    assert release.covariance is release.statistic
