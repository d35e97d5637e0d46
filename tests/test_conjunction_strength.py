"""scripts/conjunction_strength.py: entity swaps touch only the entity, and on a committed conjunctive
instance the whole cause brings the target back far more often than one part of it."""

from __future__ import annotations

import importlib.util
import json

import numpy as np

from halbench.tasks.bundle import load_bundle
from halbench.tasks.registry import REPO_ROOT
from halbench.tasks.verify import Refills

from .conftest import BUILT, built

spec = importlib.util.spec_from_file_location("conjunction_strength", REPO_ROOT / "scripts" / "conjunction_strength.py")
strength = importlib.util.module_from_spec(spec)
spec.loader.exec_module(strength)

NAME = next((n for n in sorted(BUILT) if n.startswith("conjunctive/")), "conjunctive/grammar-llama-c")


def test_conjunctive_causes_are_stronger_whole_than_in_part():
    ref = built(NAME)
    bundle = load_bundle(ref, device="cpu")
    world = json.loads((ref.model_folder / "world.json").read_text())
    refills = Refills.from_records({}, bundle.unigram)
    records = bundle.cases("test")[:4]
    for record in records:  # the entity swap replaces the entity's occurrences and nothing else
        facts = world["facts"]
        swaps = strength.entity_swaps(record, world, bundle.tokenizer, refills, np.random.default_rng(0), 8)
        positions, entities = swaps[", other entity"]
        assert positions and all(facts[record["prompt_tokens"][p]] == record["faithful_tokens"][0] for p in positions)
        names = bundle.tokenizer.convert_ids_to_tokens(entities[:, 0].tolist())
        assert all(facts[n] not in (record["faithful_tokens"][0], record["target_tokens"][0]) for n in names)
        assert not set(positions) & {q for alt in record["causes"] for q in alt}
    rates = [strength.case_rates(bundle, r, world, refills, 8) for r in records]
    whole = np.mean([r["whole"] for r in rates])
    part = np.mean([r["part"] for r in rates])
    assert whole >= 0.5, rates  # verified: unigram sufficiency >= 0.7 per case (on another draw)
    assert part < whole - 0.2, rates
