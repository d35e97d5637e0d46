"""Importing this module registers every built-in method."""

from halbench.methods import (  # noqa: F401
    attention,
    gradients,
    occlusion,
    probes,
    random_baseline,
    reagent,
    sat,
    surrogates,
)
