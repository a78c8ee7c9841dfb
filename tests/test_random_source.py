"""Release noise under random_state=None or "secure" comes from the operating system's
cryptographic generator, through one RandomSource."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dpggm import ZCDP, ApproxDP, Box, PureDP, RowNorm
from dpggm.estimators.baselines import (
    AdaptiveCovariance,
    DiagonalCovariance,
    SeparateCovariance,
    SSPCovariance,
)
from dpggm.estimators.covariance import PrivateCovariance
from dpggm.estimators.graph import PrivateGraph
from dpggm.estimators.pace import PACECovariance
from dpggm.estimators.precision import GraphicalLasso, ThresholdedCovariance
from dpggm.estimators.regression import AdaSSP
from dpggm.mechanisms import random as random_module
from dpggm.mechanisms.context import ReleaseContext
from dpggm.mechanisms.publish import publish
from dpggm.mechanisms.random import RandomSource, describe_random_state


@pytest.fixture(scope="module")
def X():
    rng = np.random.default_rng(5)
    return np.clip(rng.multivariate_normal(np.zeros(4), 0.5 * np.eye(4) + 0.5, size=300) / 3,
                   -1, 1)


def _releases(X, random_state):
    """Every kind of release noise: exact Gaussian and Laplace, the noisy count, the
    exponential mechanism (PACE, private quantiles), AboveThreshold (adaptive), publish."""
    common = {"random_state": random_state}
    y = X[:, 0] / 2
    return [
        lambda: PrivateCovariance(budget=ZCDP(0.5), bounds=RowNorm(1), **common).fit(X),
        lambda: PrivateCovariance(budget=PureDP(1), bounds=RowNorm(1), mechanism="laplace",
                                  neighbors="add-remove", **common).fit(X),
        lambda: PrivateCovariance(budget=ApproxDP(1, 1e-5), bounds=RowNorm(1), mechanism="sulq",
                                  center="private", **common).fit(X),
        lambda: PrivateCovariance(budget=ApproxDP(0.5, 1e-5), bounds=RowNorm(1),
                                  mechanism="wishart", **common).fit(X),
        lambda: PrivateCovariance(budget=ZCDP(0.5), bounds=RowNorm(1), noise="float",
                                  **common).fit(X),
        lambda: GraphicalLasso(alpha=0.1, budget=ZCDP(0.5), bounds=RowNorm(1), **common).fit(X),
        lambda: ThresholdedCovariance(budget=ZCDP(0.5), bounds=RowNorm(1), **common).fit(X),
        lambda: PACECovariance(budget=ZCDP(0.5), bounds=Box(1), max_rounds=3, **common).fit(X),
        lambda: SSPCovariance(budget=ZCDP(0.5), bounds=Box(1), **common).fit(X),
        lambda: DiagonalCovariance(budget=ZCDP(0.5), bounds=Box(1), **common).fit(X),
        lambda: SeparateCovariance(budget=ZCDP(0.5), bounds=Box(1), **common).fit(X),
        lambda: AdaptiveCovariance(budget=ZCDP(0.5), bounds=Box(1), **common).fit(X),
        lambda: AdaSSP(budget=ApproxDP(1, 1e-5), bounds=RowNorm(1), y_bound=1.0,
                       **common).fit(X[:, 1:], y),
        lambda: PrivateGraph(budget=ZCDP(1.0), **common).fit(X),
        lambda: PrivateGraph(budget=ZCDP(1.0), method="pace", **common).fit(X),
        lambda: PrivateGraph(budget=ApproxDP(4.0, 1e-6), **common).fit(X),
        lambda: publish(X, bounds=RowNorm(1), sigma=0.5, **common),
        lambda: publish((X * 10).astype(np.int64), bounds=RowNorm(30), sigma=2.0, discrete=True,
                        **common),
    ]


@pytest.mark.parametrize("random_state", [None, "secure"])
def test_no_pcg64_word_reaches_a_release(X, random_state, monkeypatch):
    # Any PCG64 stream -- a default_rng, a Generator seeded from secrets -- is refused while
    # the releases run; every word must come from os.urandom.
    requested = []
    real_urandom = random_module.os.urandom

    def counting_urandom(n):
        requested.append(n)
        return real_urandom(n)

    def refuse(*args, **kwargs):
        raise AssertionError("a PCG64 stream was built for release noise")

    monkeypatch.setattr(random_module.os, "urandom", counting_urandom)
    monkeypatch.setattr(np.random, "default_rng", refuse)
    monkeypatch.setattr(np.random, "PCG64", refuse)
    monkeypatch.setattr(random_module, "secure_generator", refuse)
    for run in _releases(X, random_state):
        before = len(requested)
        result = run()
        assert len(requested) > before, result
        assert "os.urandom" in result.privacy_.random_state


def test_the_context_holds_one_source_and_no_generator():
    ctx = ReleaseContext(neighbors="replace", bounds=None, random_state="secure")
    assert isinstance(ctx.source, RandomSource) and ctx.source.cryptographic
    assert not hasattr(ctx, "rng") and not hasattr(ctx, "secure")
    seeded = ReleaseContext(neighbors="replace", bounds=None, random_state=4)
    assert seeded.source.reproducible
    # A source handed on (to an inner estimator, say) is the same stream.
    assert RandomSource.of(ctx.source) is ctx.source


def test_seeded_sources_reproduce_numpy_streams():
    words = RandomSource(7).words(5)
    np.testing.assert_array_equal(
        words, np.random.default_rng(7).integers(0, 1 << 64, size=5, dtype=np.uint64))
    generator = np.random.default_rng(8)
    source = RandomSource(generator)
    first = source.normal(0.0, 2.0, size=3)
    np.testing.assert_array_equal(first, np.random.default_rng(8).normal(0.0, 2.0, size=3))
    assert describe_random_state(source).startswith("seeded")


def _fixed_words(monkeypatch, seed):
    """Make the cryptographic source read a fixed, seeded word stream: the float transforms
    are then tested deterministically."""
    stream = np.random.default_rng(seed)

    def words(self, count):
        return stream.integers(0, 1 << 64, size=int(count), dtype=np.uint64)

    monkeypatch.setattr(RandomSource, "words", words)
    return RandomSource("secure")


def test_cryptographic_float_draws_have_the_right_distributions(monkeypatch):
    source = _fixed_words(monkeypatch, 11)
    assert source.cryptographic
    n = 20000
    assert stats.kstest(source.normal(1.0, 2.0, size=n), stats.norm(1.0, 2.0).cdf).pvalue > 1e-3
    assert stats.kstest(source.laplace(0.0, 0.5, size=n), stats.laplace(0.0, 0.5).cdf
                        ).pvalue > 1e-3
    assert stats.kstest(source.chisquare(7.0, size=n), stats.chi2(7.0).cdf).pvalue > 1e-3
    draws = source.chisquare(np.array([3.0, 30.0]))
    assert draws.shape == (2,) and np.all(draws > 0)
    uniform = source._uniform((1000,))
    assert uniform.min() > 0 and uniform.max() < 1


def test_random_source_refuses_what_is_not_a_random_state():
    with pytest.raises(ValueError, match="random_state"):
        RandomSource("os")
    with pytest.raises(ValueError, match="non-negative"):
        RandomSource(-1)
    with pytest.raises(TypeError, match="RandomState is not supported"):
        RandomSource(np.random.RandomState(0))
    with pytest.raises(TypeError, match="random_state"):
        RandomSource(True)
