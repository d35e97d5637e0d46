"""Importing this module registers every built-in method."""

from halbench.methods import (  # noqa: F401
    attention,
    gradients,
    occlusion,
    random_baseline,
    sat,
    surrogates,
)
