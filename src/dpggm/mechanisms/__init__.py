"""Noise mechanisms, sensitivities, bounds and clipping: the only code that adds noise."""

from __future__ import annotations

from typing import TYPE_CHECKING

from dpggm._lazy import lazy_exports

# Name -> module; imported on first use (see dpggm._lazy) so that start-up stays fast.
_EXPORTS = {
    "Box": "dpggm.mechanisms.bounds",
    "RowNorm": "dpggm.mechanisms.bounds",
    "bounds_from_data": "dpggm.mechanisms.bounds",
    "parse_bounds": "dpggm.mechanisms.bounds",
    "discrete_gaussian_pmf": "dpggm.mechanisms.discrete_gaussian",
    "discrete_gaussian_variance": "dpggm.mechanisms.discrete_gaussian",
    "sample_discrete_gaussian": "dpggm.mechanisms.discrete_gaussian",
    "exponential_mechanism": "dpggm.mechanisms.noise",
    "exponential_mechanism_probabilities": "dpggm.mechanisms.noise",
    "symmetric_gaussian_noise": "dpggm.mechanisms.noise",
    "symmetric_laplace_noise": "dpggm.mechanisms.noise",
    "wishart_noise": "dpggm.mechanisms.noise",
    "NoisyRelease": "dpggm.mechanisms.publish",
    "publish": "dpggm.mechanisms.publish",
    "read_release_metadata": "dpggm.mechanisms.publish",
    "check_random_state": "dpggm.mechanisms.random",
    "secure_generator": "dpggm.mechanisms.random",
    "NoiseDescription": "dpggm.mechanisms.record",
    "Release": "dpggm.mechanisms.record",
    "release_second_moment": "dpggm.mechanisms.release",
    "mean_l2_sensitivity": "dpggm.mechanisms.sensitivity",
    "row_l2_sensitivity": "dpggm.mechanisms.sensitivity",
    "second_moment_entry_sensitivity": "dpggm.mechanisms.sensitivity",
    "second_moment_l1_sensitivity": "dpggm.mechanisms.sensitivity",
    "second_moment_l2_sensitivity": "dpggm.mechanisms.sensitivity",
}

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

# ``publish`` is both a submodule and a function exported here. Importing the submodule
# binds the package attribute to the module (and a lazy __getattr__ is then never asked),
# so the function is bound eagerly, as before.
from dpggm.mechanisms.publish import publish  # noqa: E402

if TYPE_CHECKING:  # pragma: no cover
    from dpggm.mechanisms.bounds import (
        Box,
        RowNorm,
        bounds_from_data,
        parse_bounds,
    )
    from dpggm.mechanisms.discrete_gaussian import (
        discrete_gaussian_pmf,
        discrete_gaussian_variance,
        sample_discrete_gaussian,
    )
    from dpggm.mechanisms.noise import (
        exponential_mechanism,
        exponential_mechanism_probabilities,
        symmetric_gaussian_noise,
        symmetric_laplace_noise,
        wishart_noise,
    )
    from dpggm.mechanisms.publish import (
        NoisyRelease,
        publish,
        read_release_metadata,
    )
    from dpggm.mechanisms.random import (
        check_random_state,
        secure_generator,
    )
    from dpggm.mechanisms.record import (
        NoiseDescription,
        Release,
    )
    from dpggm.mechanisms.release import (
        release_second_moment,
    )
    from dpggm.mechanisms.sensitivity import (
        mean_l2_sensitivity,
        row_l2_sensitivity,
        second_moment_entry_sensitivity,
        second_moment_l1_sensitivity,
        second_moment_l2_sensitivity,
    )

__all__ = [
    "NoiseDescription",
    "NoisyRelease",
    "Release",
    "publish",
    "read_release_metadata",
    "Box",
    "RowNorm",
    "bounds_from_data",
    "check_random_state",
    "discrete_gaussian_pmf",
    "discrete_gaussian_variance",
    "exponential_mechanism",
    "exponential_mechanism_probabilities",
    "mean_l2_sensitivity",
    "parse_bounds",
    "release_second_moment",
    "row_l2_sensitivity",
    "sample_discrete_gaussian",
    "second_moment_entry_sensitivity",
    "second_moment_l1_sensitivity",
    "second_moment_l2_sensitivity",
    "secure_generator",
    "symmetric_gaussian_noise",
    "symmetric_laplace_noise",
    "wishart_noise",
]
