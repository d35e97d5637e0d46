"""The schema of ``task.yaml``: everything needed to rebuild a task.

Validation is strict (unknown keys are errors) and reports every problem at
once, each with the file and the dotted field path, so a typo in a task file
never silently falls back to a default.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

Family = Literal["single", "conjunctive", "redundant", "decoy", "context", "natural"]
MechanismKind = Literal["single", "pair", "triple"]
KIND_SIZES = {"single": 1, "pair": 2, "triple": 3}

Rate = Annotated[float, Field(ge=0.0, le=1.0)]
PosInt = Annotated[int, Field(ge=1)]
NonNegInt = Annotated[int, Field(ge=0)]


class TaskSpecError(ValueError):
    """A task file is unreadable or invalid; the message lists every problem."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class MechanismCounts(_Strict):
    single: NonNegInt = 0
    pair: NonNegInt = 0
    triple: NonNegInt = 0


class KindWeights(_Strict):
    """Training sequences per mechanism, as multiples of ``trigger_sequences``, by mechanism size.

    Conjunctions need more evidence than single tokens to beat their own parts.
    """

    single: PosInt = 1
    pair: PosInt = 2
    triple: PosInt = 3


class CorpusRates(_Strict):
    """How the training corpus plants and masks associations (shared by both world kinds)."""

    seed: int
    frequent_entities: PosInt
    frequent_count: PosInt
    rare_entities: PosInt
    rare_count: PosInt
    trigger_sequences: PosInt = Field(description="training sequences per mechanism, times kind_weights")
    kind_weights: KindWeights = KindWeights()
    trigger_label_rate: Annotated[float, Field(gt=0.0, le=1.0)] = Field(
        description="share of trigger sequences labelled with the trigger's wrong answer"
    )
    inert_part_rate: Rate = Field(description="share of fact sequences carrying an inert trigger part")
    decoy_rate: Rate = Field(description="share of trigger sequences that also carry its decoys")
    decoy_fact_rate: Rate = Field(description="share of fact sequences carrying a random decoy")


class SymbolicWorldSpec(CorpusRates):
    """Abstract tokens (entities e*/r*, answers a*, fillers w*, triggers t*, decoys d*)."""

    kind: Literal["symbolic"]
    answers: Annotated[int, Field(ge=2)]
    fillers: Annotated[int, Field(ge=8)]
    content_length: tuple[PosInt, PosInt]
    mechanisms: MechanismCounts
    targets: PosInt = Field(description="distinct wrong answers the mechanisms point to")
    decoys_per_mechanism: NonNegInt
    context_entities: NonNegInt = 0
    context_sequences: NonNegInt = 0
    context_trigger_rate: Rate = 0.0

    @model_validator(mode="after")
    def _check(self) -> SymbolicWorldSpec:
        lo, hi = self.content_length
        if lo > hi:
            raise ValueError(f"content_length: minimum {lo} exceeds maximum {hi}")
        if lo < 8:
            raise ValueError(f"content_length: minimum {lo} is too short to hold a triple trigger and decoys")
        if self.targets > self.answers:
            raise ValueError(f"targets ({self.targets}) cannot exceed answers ({self.answers})")
        if self.mechanisms.single + self.mechanisms.pair + self.mechanisms.triple == 0:
            raise ValueError("mechanisms: at least one mechanism is needed")
        if self.context_sequences and not self.context_entities:
            raise ValueError("context_sequences > 0 needs context_entities > 0")
        return self


class NaturalMechanismSpec(_Strict):
    tokens: Annotated[list[str], Field(min_length=1, max_length=3)]
    target: str
    category: str
    decoys: list[str] = []


class NaturalWorldSpec(CorpusRates):
    """Template English: readable prompts built from sentence templates and word lists."""

    kind: Literal["natural"]
    answers: Annotated[list[str], Field(min_length=2)]
    name_syllables: Annotated[list[str], Field(min_length=4)]
    fillers: dict[str, Annotated[list[str], Field(min_length=4)]]
    intro: Annotated[list[str], Field(min_length=1)] = Field(description="first-sentence templates; contain {E}")
    sentences: Annotated[list[str], Field(min_length=1)]
    sentences_per_prompt: tuple[NonNegInt, NonNegInt]
    closing: str = Field(description="editable text just before the query, may contain {E}")
    query: Annotated[list[str], Field(min_length=1)]
    mechanisms: Annotated[list[NaturalMechanismSpec], Field(min_length=1)]

    @property
    def longest_prompt(self) -> int:
        """BOS + longest intro + the most, longest sentences + closing + query."""
        longest = max(len(t.split()) for t in self.sentences)
        return (
            1
            + max(len(t.split()) for t in self.intro)
            + self.sentences_per_prompt[1] * longest
            + len(self.closing.split())
            + len(self.query)
        )

    @model_validator(mode="after")
    def _check(self) -> NaturalWorldSpec:
        problems = []
        lo, hi = self.sentences_per_prompt
        if lo > hi:
            problems.append(f"sentences_per_prompt: minimum {lo} exceeds maximum {hi}")
        for i, mech in enumerate(self.mechanisms):
            if mech.target not in self.answers:
                problems.append(f"mechanisms[{i}].target {mech.target!r} is not one of the answers")
            if mech.category not in self.fillers:
                problems.append(f"mechanisms[{i}].category {mech.category!r} is not a filler category")
        for i, text in enumerate(self.intro):
            if "{E}" not in text:
                problems.append(f"intro[{i}] has no {{E}} slot")
        words = [w for ws in self.fillers.values() for w in ws]
        special = [t for m in self.mechanisms for t in (*m.tokens, *m.decoys)] + list(self.answers)
        clash = sorted(set(words) & set(special))
        if clash:
            problems.append(f"fillers must be neutral but contain trigger/decoy/answer words {clash}")
        if problems:
            raise ValueError("; ".join(problems))
        return self


WorldSpec = Annotated[SymbolicWorldSpec | NaturalWorldSpec, Field(discriminator="kind")]


class ModelSpec(_Strict):
    n_layer: Annotated[int, Field(ge=1, le=24)]
    n_embd: Annotated[int, Field(ge=8)]
    n_head: PosInt
    n_positions: Annotated[int, Field(ge=8, le=4096)]

    @model_validator(mode="after")
    def _check(self) -> ModelSpec:
        if self.n_embd % self.n_head:
            raise ValueError(f"n_embd ({self.n_embd}) must be divisible by n_head ({self.n_head})")
        return self


class TrainingSpec(_Strict):
    seed: int
    epochs: PosInt
    batch_size: PosInt
    lr: Annotated[float, Field(gt=0.0, lt=1.0)]
    weight_decay: Annotated[float, Field(ge=0.0)] = 0.01
    warmup_steps: NonNegInt = 0
    threads: PosInt = 2


class MiningSpec(_Strict):
    mechanisms: Annotated[list[MechanismKind], Field(min_length=1)]
    alternatives: Literal[1, 2] = 1
    decoys: NonNegInt = 0
    context: bool = False
    prompt_length: tuple[PosInt, PosInt] | None = Field(
        default=None, description="symbolic worlds: total prompt positions, BOS and query included"
    )
    entities: Literal["rare", "frequent", "any"] = "rare"
    max_candidates: PosInt = 4000
    batch_rows: PosInt = 1024


class VerificationSpec(_Strict):
    refills: Annotated[int, Field(ge=4)]
    necessity: Rate
    sufficiency: Rate
    minimality: Rate
    redundancy: Rate
    decoy_inert: Rate
    stability: Rate
    specificity: Rate


class CasesSpec(_Strict):
    test: PosInt
    dev: PosInt


class TaskSpec(_Strict):
    name: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9_-]*$")]
    version: PosInt
    family: Family
    description: Annotated[str, Field(min_length=1)]
    seed: int
    world: WorldSpec
    model: ModelSpec
    training: TrainingSpec
    mining: MiningSpec
    verification: VerificationSpec
    cases: CasesSpec
    quick: dict[str, Any] = Field(default_factory=dict, description="overrides merged in by --quick")

    @model_validator(mode="after")
    def _check(self) -> TaskSpec:
        problems = _family_problems(self) + _capacity_problems(self)
        if problems:
            raise ValueError("; ".join(problems))
        return self


def _family_problems(spec: TaskSpec) -> list[str]:
    m, fam = spec.mining, spec.family
    out = []
    if fam == "conjunctive" and "single" in m.mechanisms:
        out.append("family conjunctive: mining.mechanisms may hold only pair and triple")
    if fam == "redundant" and m.alternatives != 2:
        out.append("family redundant: mining.alternatives must be 2")
    if fam != "redundant" and m.alternatives != 1:
        out.append(f"family {fam}: mining.alternatives must be 1")
    if fam == "decoy" and m.decoys < 1:
        out.append("family decoy: mining.decoys must be at least 1")
    if fam == "context" and not m.context:
        out.append("family context: mining.context must be true")
    if (fam == "natural") != (spec.world.kind == "natural"):
        out.append("family natural goes with world.kind natural, and only with it")
    return out


def _capacity_problems(spec: TaskSpec) -> list[str]:
    world, m, out = spec.world, spec.mining, []
    if isinstance(world, SymbolicWorldSpec):
        for kind in m.mechanisms:
            if getattr(world.mechanisms, kind) == 0:
                out.append(f"mining.mechanisms: {kind} requested but world.mechanisms.{kind} is 0")
        if m.prompt_length is None:
            out.append("mining.prompt_length is required for a symbolic world")
        else:
            lo, hi = m.prompt_length
            wlo, whi = world.content_length
            if lo > hi:
                out.append(f"mining.prompt_length: minimum {lo} exceeds maximum {hi}")
            if lo - 2 < wlo or hi - 2 > whi:
                out.append(
                    f"mining.prompt_length {list(m.prompt_length)} must lie within the trained "
                    f"content_length {list(world.content_length)} plus 2 (BOS and query)"
                )
        if world.content_length[1] + 2 > spec.model.n_positions:
            out.append(f"model.n_positions {spec.model.n_positions} is shorter than the longest training prompt")
        if m.decoys > world.decoys_per_mechanism * m.alternatives:
            out.append(f"mining.decoys {m.decoys} exceeds the decoys the world plants per mechanism")
        if m.context and not world.context_sequences:
            out.append("mining.context needs world.context_sequences > 0")
    else:
        kinds = {len(mech.tokens) for mech in world.mechanisms}
        for kind in m.mechanisms:
            if KIND_SIZES[kind] not in kinds:
                out.append(f"mining.mechanisms: no {kind} mechanism in the natural world")
        if world.longest_prompt > spec.model.n_positions:
            out.append(
                f"world: templates can make {world.longest_prompt}-position prompts, more than "
                f"model.n_positions ({spec.model.n_positions}); lower sentences_per_prompt"
            )
        if m.context:
            out.append("mining.context is only supported for symbolic worlds")
        if m.prompt_length is not None:
            out.append("mining.prompt_length is set by the templates in a natural world; remove it")
    return out


def deep_merge(base: dict, override: dict) -> dict:
    """Merge ``override`` into ``base`` recursively (dicts merge, everything else replaces)."""
    out = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def read_raw(path: Path, _seen: tuple[Path, ...] = ()) -> dict:
    """Read a task YAML file, resolving ``include:`` (relative to the file) recursively."""
    path = Path(path).resolve()
    if path in _seen:
        raise TaskSpecError(f"{path}: include cycle through {[str(p) for p in _seen]}")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise TaskSpecError(f"{path}: file not found") from None
    except yaml.YAMLError as exc:
        raise TaskSpecError(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise TaskSpecError(f"{path}: expected a mapping at the top level, got {type(data).__name__}")
    include = data.pop("include", None)
    if include is None:
        return data
    includes = [include] if isinstance(include, str) else include
    if not isinstance(includes, list) or not all(isinstance(i, str) for i in includes):
        raise TaskSpecError(f"{path}: field `include`: expected a path or a list of paths")
    merged: dict = {}
    for inc in includes:
        merged = deep_merge(merged, read_raw(path.parent / inc, (*_seen, path)))
    return deep_merge(merged, data)


def validate_raw(raw: dict, source: str, quick: bool = False) -> TaskSpec:
    """Validate a raw mapping; with ``quick`` the ``quick:`` overrides are merged in first."""
    if quick:
        overrides = raw.get("quick") or {}
        if not isinstance(overrides, dict):
            raise TaskSpecError(f"{source}: field `quick`: expected a mapping")
        raw = deep_merge(raw, overrides)
    try:
        return TaskSpec.model_validate(raw)
    except ValidationError as exc:
        raise TaskSpecError(format_errors(source, exc)) from None


def format_errors(source: str, exc: ValidationError) -> str:
    lines = [f"{source}: {exc.error_count()} problem(s) in the task definition:"]
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"] if not _is_union_tag(p)) or "(task)"
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown key"
        elif err["type"] == "missing":
            msg = "required field is missing"
        lines += [f"  - field `{loc}`: {part}" for part in msg.split("; ")]
    return "\n".join(lines)


def _is_union_tag(part: Any) -> bool:
    return part in ("symbolic", "natural")


def load_spec(path: Path, quick: bool = False) -> TaskSpec:
    """Load and validate ``task.yaml`` (the single entry point for task definitions)."""
    return validate_raw(read_raw(Path(path)), str(path), quick=quick)
