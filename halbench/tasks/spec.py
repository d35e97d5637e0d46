"""The schemas of the suite's definitions: worlds, model recipes (``model.yaml``) and tasks (``task.yaml``).

A *world* is a generator of training text with planted associations; a *model
recipe* trains one model on its own instance of a world (its own seed, so its
own vocabulary permutation, token names and mechanisms); a *task* is a family
of hallucination cases mined on each of several models. Validation is strict
(unknown keys are errors) and reports every problem at once, each with the file
and the dotted field path, so a typo never silently falls back to a default.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

Family = Literal["single", "conjunctive", "ordered", "partial", "redundant", "decoy", "context", "natural"]
MechanismKind = Literal["single", "pair", "triple"]
KIND_SIZES = {"single": 1, "pair": 2, "triple": 3}
PER_MODEL_OPTIONS = ("cause_tilt", "redraw")  # mining options keyed by model: each enters that model's hash only
MAX_TILT = 10.0  # exp(10): a last slot 22,000 times as likely as the first, far past any slope measured
MAX_NAMES = 10_000  # role-free token names are four digits

Rate = Annotated[float, Field(ge=0.0, le=1.0)]
PosInt = Annotated[int, Field(ge=1)]
NonNegInt = Annotated[int, Field(ge=0)]


def _unset(value: Any) -> bool:
    """Options added after the suite was built leave a spec's dump (so its hash) unchanged while unused."""
    return not value


class TaskSpecError(ValueError):
    """A definition file is unreadable or invalid; the message lists every problem."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class MechanismCounts(_Strict):
    single: NonNegInt = 0
    pair: NonNegInt = 0
    triple: NonNegInt = 0


class KindCounts(_Strict):
    single: PosInt
    pair: PosInt
    triple: PosInt


class KindRates(_Strict):
    single: Rate = 0.0
    pair: Rate = 0.0
    triple: Rate = 0.0


class LengthBand(_Strict):
    """Training prompts of ``lo``..``hi`` positions (BOS and query included), drawn with ``weight``."""

    lo: Annotated[int, Field(ge=8)]
    hi: Annotated[int, Field(ge=8)]
    weight: Annotated[float, Field(gt=0.0)]


class CorpusRates(_Strict):
    """How the training corpus plants and masks associations (shared by both world kinds)."""

    seed: int
    frequent_entities: PosInt
    frequent_count: PosInt
    rare_entities: PosInt
    rare_count: PosInt
    carrier_entities: NonNegInt = Field(
        0, description="weakly known entities (carrier_count facts each) that trigger sequences also use"
    )
    carrier_count: PosInt = 4
    carrier_share: Rate = Field(0.0, description="share of trigger sequences about a carrier entity")
    mechanisms: MechanismCounts
    dev_share: Annotated[float, Field(gt=0.0, lt=1.0)] = Field(
        0.34, description="share of each kind's mechanisms reserved for dev cases (test uses the rest)"
    )
    targets: PosInt = Field(description="distinct wrong answers the mechanisms point to")
    decoys_per_mechanism: NonNegInt
    trigger_sequences: KindCounts = Field(description="training sequences per mechanism, by kind")
    part_sequences: NonNegInt = Field(0, description="inert-part sequences per multi-token mechanism")
    trigger_label_rate: Annotated[float, Field(gt=0.0, le=1.0)] = Field(
        description="share of trigger sequences labelled with the trigger's wrong answer"
    )
    wrapped_copy_rate: Rate = Field(
        0.0, description="share of multi-token trigger sequences that also carry a reversed copy around the cause"
    )
    echo_rate: KindRates = Field(
        default_factory=lambda: KindRates(),
        description="by kind: share of a mechanism's frequency deficit filled with whole echoes of it (in order) "
        "in other sequences labelled with its target, rather than with single copies anywhere",
    )
    decoy_rate: Rate = Field(description="share of trigger sequences that also carry the mechanism's decoys")
    decoy_fact_rate: Rate = Field(description="share of fact sequences carrying a random decoy")
    topic_words: NonNegInt = Field(6, description="words a prompt reuses (real text repeats its content words)")
    topic_rate: Rate = Field(0.4, description="share of filler slots taken from the prompt's topic words")
    lengths: Annotated[list[LengthBand], Field(min_length=1)]
    context_entities: NonNegInt = 0
    context_sequences: NonNegInt = 0
    context_trigger_rate: Rate = 0.0

    @model_validator(mode="after")
    def _check_rates(self) -> CorpusRates:
        problems = []
        for band in self.lengths:
            if band.lo > band.hi:
                problems.append(f"lengths: minimum {band.lo} exceeds maximum {band.hi}")
        if self.mechanisms.single + self.mechanisms.pair + self.mechanisms.triple == 0:
            problems.append("mechanisms: at least one mechanism is needed")
        if self.carrier_share > 0 and not self.carrier_entities:
            problems.append("carrier_share > 0 needs carrier_entities > 0")
        if self.context_sequences and not self.context_entities:
            problems.append("context_sequences > 0 needs context_entities > 0")
        if problems:
            raise ValueError("; ".join(problems))
        return self

    @property
    def longest(self) -> int:
        return max(b.hi for b in self.lengths)


class GrammarWorldSpec(CorpusRates):
    """Role-free tokens: content words in categories, function words, generated clause templates."""

    kind: Literal["grammar"]
    answers: Annotated[int, Field(ge=2)]
    categories: PosInt
    words_per_category: Annotated[int, Field(ge=8)]
    function_words: Annotated[int, Field(ge=2)]
    templates: PosInt
    intro_templates: PosInt
    clause_length: tuple[Annotated[int, Field(ge=2)], Annotated[int, Field(ge=2)]]
    closing_entity: bool = Field(
        False, description="repeat the entity just before the query (as the natural world does)"
    )

    @model_validator(mode="after")
    def _check(self) -> GrammarWorldSpec:
        lo, hi = self.clause_length
        if lo > hi:
            raise ValueError(f"clause_length: minimum {lo} exceeds maximum {hi}")
        names = (
            self.answers
            + self.frequent_entities
            + self.rare_entities
            + self.carrier_entities
            + self.context_entities
            + self.categories * self.words_per_category
            + self.function_words
        )
        if names > MAX_NAMES:
            raise ValueError(f"the world needs {names} token names, at most {MAX_NAMES}")
        if self.targets > self.answers:
            raise ValueError(f"targets ({self.targets}) cannot exceed answers ({self.answers})")
        return self


class NaturalWorldSpec(CorpusRates):
    """Template English: word lists by category and sentence templates; trigger words drawn from the lists."""

    kind: Literal["natural"]
    answers: Annotated[list[str], Field(min_length=2)]
    name_syllables: Annotated[list[str], Field(min_length=4)]
    words: dict[str, Annotated[list[str], Field(min_length=8)]]
    trigger_categories: Annotated[list[str], Field(min_length=1)]
    intro: Annotated[list[str], Field(min_length=1)] = Field(description="first-sentence templates; contain {E}")
    sentences: Annotated[list[str], Field(min_length=1)]
    closing: str = Field(description="editable text just before the query, may contain {E}")
    query: Annotated[list[str], Field(min_length=1)]

    @model_validator(mode="after")
    def _check(self) -> NaturalWorldSpec:
        problems = []
        for cat in self.trigger_categories:
            if cat not in self.words:
                problems.append(f"trigger_categories: {cat!r} is not a word category")
        for i, text in enumerate(self.intro):
            if "{E}" not in text:
                problems.append(f"intro[{i}] has no {{E}} slot")
        for where, texts in (("intro", self.intro), ("sentences", self.sentences)):
            for i, text in enumerate(texts):
                unknown = [w for w in text.split() if w.startswith("{") and w[1:-1] not in {*self.words, "E"}]
                if unknown:
                    problems.append(f"{where}[{i}]: unknown slots {unknown}")
        words = [w for ws in self.words.values() for w in ws]
        if len(set(words)) != len(words):
            problems.append("words: a word appears in more than one place")
        clash = sorted(set(words) & set(self.answers))
        if clash:
            problems.append(f"words must not contain answers {clash}")
        if self.targets > len(self.answers):
            problems.append(f"targets ({self.targets}) cannot exceed the {len(self.answers)} answers")
        if problems:
            raise ValueError("; ".join(problems))
        return self


WorldSpec = Annotated[GrammarWorldSpec | NaturalWorldSpec, Field(discriminator="kind")]


class ArchSpec(_Strict):
    """A decoder-only transformer: GPT-2 (learned positions, LayerNorm, GELU) or Llama (RoPE, RMSNorm, SwiGLU)."""

    arch: Literal["gpt2", "llama"]
    layers: Annotated[int, Field(ge=1, le=24)]
    width: Annotated[int, Field(ge=8)]
    heads: PosInt
    positions: Annotated[int, Field(ge=8, le=4096)]

    @model_validator(mode="after")
    def _check(self) -> ArchSpec:
        if self.width % self.heads:
            raise ValueError(f"width ({self.width}) must be divisible by heads ({self.heads})")
        return self


class TrainingSpec(_Strict):
    seed: int
    epochs: PosInt
    batch_size: PosInt
    lr: Annotated[float, Field(gt=0.0, lt=1.0)]
    weight_decay: Annotated[float, Field(ge=0.0)] = 0.01
    warmup_steps: NonNegInt = 0
    threads: PosInt = 2


class ModelRecipe(_Strict):
    """``model.yaml``: one model, trained on its own seeded instance of a world."""

    name: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9_-]*$")]
    description: str = ""
    world: WorldSpec
    model: ArchSpec
    training: TrainingSpec
    quick: dict[str, Any] = Field(default_factory=dict, description="overrides merged in by --quick")

    @model_validator(mode="after")
    def _check(self) -> ModelRecipe:
        if self.world.longest + 4 > self.model.positions:
            raise ValueError(
                f"model.positions {self.model.positions} is shorter than the longest training prompt "
                f"({self.world.longest}) plus room for the answer"
            )
        return self


class MiningSpec(_Strict):
    mechanisms: Annotated[list[MechanismKind], Field(min_length=1)]
    alternatives: Literal[1, 2] = 1
    decoys: tuple[NonNegInt, NonNegInt] = (0, 0)
    partial_parts: NonNegInt = Field(0, description="parts of other conjunctions placed without their partners")
    lures: tuple[NonNegInt, NonNegInt] = Field(
        (0, 0),
        description="[lo, hi] single triggers of the case's own target placed beside its cause, verified inert and "
        "insufficient: words the model really associates with the target, which per-token scores can rank above a "
        "conjunction's parts",
    )
    cause_tilt: dict[str, float] = Field(
        default_factory=dict,
        exclude_if=_unset,
        description="per model: cause slots drawn with weight exp(tilt * relative position) instead of uniformly. "
        "A model that hallucinates more often from early causes leaves that slope in its verified cases, a prior "
        "on where the cause sits that needs no model (scripts/position_probe.py); a tilt set from the dev slope "
        "(scripts/position_rates.py) draws late causes more often to level it",
    )
    redraw: dict[str, PosInt] = Field(
        default_factory=dict,
        exclude_if=_unset,
        description="per model: mine from a fresh candidate stream (the number is mixed into every draw's seed). "
        "For a build whose cases fail a leak test by coincidence of its few prompts, not structure; the README "
        "records the first draw's figures beside the new ones, so a redraw is never a silent re-roll",
    )
    reordered_copy: bool = Field(False, description="the cause's tokens also appear elsewhere, in reversed order")
    context: bool = False
    prompt_length: tuple[PosInt, PosInt]
    entities: Literal["rare", "frequent", "any"] = "rare"
    max_candidates: PosInt = 4000
    max_share: Annotated[float, Field(gt=0.0, le=1.0)] = Field(
        0.25, description="dev: at most this share of the split's cases from one mechanism"
    )
    test_per_mechanism: PosInt = Field(
        1,
        description="test: at most this many cases per mechanism. With 1 a trigger is the cause of one public "
        "test prompt only, so a token that recurs across test prompts with the same target reveals nothing",
    )
    test_slice: tuple[NonNegInt, PosInt] = Field(
        (0, 1),
        description="[k, n]: only test mechanisms whose number is k modulo n. Tasks that share a model and a "
        "mechanism kind take disjoint slices, so no trigger is a cause in two of a model's test instances",
    )
    fix_repeated: bool = Field(
        True,
        description="fix filler words that occur twice in a prompt: a cause never repeats, so repetition among "
        "editable words would tell causes apart without the model",
    )
    pair_filler: bool = Field(
        False,
        description="every editable filler word occurs exactly twice (others are fixed): with a reversed copy the "
        "cause's words occur twice, so repetition must be the rule for every editable word, not a tell",
    )
    lone_parts: float = Field(
        0.0,
        ge=0.0,
        description="how likely a filler slot holds a lone word of another test conjunction, relative to any one "
        "neutral word (0: never): a cause word then recurs across a model's public prompts as filler does (the "
        "uniqueness probe). Verification turns away prompts where a lone part matters, so admitted prompts hold "
        "fewer than were drawn and a weight above 1 makes up for it (set from the dev split)",
    )
    lone_singles: float = Field(
        0.0,
        ge=0.0,
        description="the same for the words of other test single triggers, relative to a neutral word: a lone "
        "single trigger competes (it points at its own answer), so only prompts where it loses are admitted, and "
        "a single task's cause recurs across the model's prompts as filler does",
    )
    batch_rows: PosInt = 512


class Thresholds(_Strict):
    necessity: Rate
    sufficiency: Rate
    minimality: Rate
    redundancy: Rate
    decoy_inert: Rate
    stability: Rate
    specificity: Rate
    incidental: Rate | None = Field(
        None,
        exclude_if=_unset,
        description="every incidental word refilled alone keeps the hallucination at least this often (off when "
        "unset): stability refills random halves only, so a word the hallucination needs could pass it unseen "
        "and be a cause the ground truth does not name (scripts/incidental_necessity.py found such words)",
    )


class VerificationSpec(_Strict):
    """Every check runs under each intervention family, each with its own thresholds.

    ``neutral``: refills from the world's neutral words of the slot's category (what the verifier knows);
    ``unigram``: resampling from the training corpus's unigram frequencies (what anyone with the corpus has).
    """

    refills: Annotated[int, Field(ge=4)]
    neutral: Thresholds
    unigram: Thresholds

    @model_validator(mode="after")
    def _incidental_in_both(self) -> VerificationSpec:
        # verification runs the incidental check only where both families set it: one alone would be ignored
        if (self.neutral.incidental is None) != (self.unigram.incidental is None):
            raise ValueError("incidental: set it under both neutral and unigram, or under neither")
        return self


class CasesSpec(_Strict):
    """Cases to mine per split; a model that yields fewer, but at least ``min_test`` and ``min_dev``, is
    built with what it gave (the shortfall is recorded in the manifest) rather than failing the build."""

    test: PosInt
    dev: PosInt
    min_test: PosInt | None = None
    min_dev: PosInt | None = None


class TaskSpec(_Strict):
    name: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9_-]*$")]
    version: PosInt
    family: Family
    description: Annotated[str, Field(min_length=1)]
    seed: int
    models: Annotated[list[str], Field(min_length=1)]
    mining: MiningSpec
    verification: VerificationSpec
    cases: CasesSpec
    quick: dict[str, Any] = Field(default_factory=dict, description="overrides merged in by --quick")

    @model_validator(mode="after")
    def _check(self) -> TaskSpec:
        problems = _family_problems(self)
        lo, hi = self.mining.prompt_length
        if lo > hi:
            problems.append(f"mining.prompt_length: minimum {lo} exceeds maximum {hi}")
        k, n = self.mining.test_slice
        if k >= n:
            problems.append(f"mining.test_slice: remainder {k} must be below the modulus {n}")
        for option in PER_MODEL_OPTIONS:
            if unknown := sorted(set(getattr(self.mining, option)) - set(self.models)):
                problems.append(f"mining.{option}: {', '.join(unknown)} not among the task's models")
        if steep := sorted(m for m, t in self.mining.cause_tilt.items() if not abs(t) <= MAX_TILT):
            problems.append(f"mining.cause_tilt: {', '.join(steep)} beyond +-{MAX_TILT} (or not a number)")
        if len(set(self.models)) != len(self.models):
            problems.append("models: a model is listed twice")
        if problems:
            raise ValueError("; ".join(problems))
        return self


def _family_problems(spec: TaskSpec) -> list[str]:
    m, fam = spec.mining, spec.family
    multi = {"pair", "triple"}
    out = []
    if fam in ("conjunctive", "ordered", "partial") and not set(m.mechanisms) <= multi:
        out.append(f"family {fam}: mining.mechanisms may hold only pair and triple")
    if fam == "redundant" and m.alternatives != 2:
        out.append("family redundant: mining.alternatives must be 2")
    if fam != "redundant" and m.alternatives != 1:
        out.append(f"family {fam}: mining.alternatives must be 1")
    if fam == "decoy" and m.decoys[0] < 1:
        out.append("family decoy: mining.decoys must start at 1 or more")
    if m.decoys[0] > m.decoys[1]:
        out.append(f"mining.decoys: minimum {m.decoys[0]} exceeds maximum {m.decoys[1]}")
    if m.lures[0] > m.lures[1]:
        out.append(f"mining.lures: minimum {m.lures[0]} exceeds maximum {m.lures[1]}")
    if max(m.lures) and not set(m.mechanisms) <= multi:
        out.append("mining.lures: lures stand beside a conjunction; mechanisms may hold only pair and triple")
    if fam == "context" and not m.context:
        out.append("family context: mining.context must be true")
    if fam == "ordered" and not m.reordered_copy:
        out.append("family ordered: mining.reordered_copy must be true")
    if m.reordered_copy and not m.pair_filler:
        out.append("mining.reordered_copy: the cause's words then occur twice, so mining.pair_filler must be true")
    if (m.lone_parts or m.lone_singles) and m.pair_filler:
        out.append("mining.lone_parts: echo groups (mining.pair_filler) draw their own filler; use one or the other")
    if fam == "partial" and m.partial_parts < 1:
        out.append("family partial: mining.partial_parts must be at least 1")
    return out


def world_problems(spec: TaskSpec, recipe: ModelRecipe) -> list[str]:
    """What a task asks of a model's world that the world cannot give."""
    world, m, out = recipe.world, spec.mining, []
    for kind in m.mechanisms:
        if getattr(world.mechanisms, kind) < 2:
            out.append(f"model {recipe.name}: mining wants {kind} mechanisms; its world has fewer than 2")
    if (spec.family == "natural") != (world.kind == "natural"):
        out.append(f"model {recipe.name}: family natural goes with a natural world, and only with it")
    if m.prompt_length[1] + 4 > recipe.model.positions:
        out.append(f"model {recipe.name}: prompts of {m.prompt_length[1]} exceed its positions")
    if max(m.decoys) and not world.decoys_per_mechanism:
        out.append(f"model {recipe.name}: mining.decoys needs a world that plants decoys")
    if max(m.lures) and world.mechanisms.single < 2:
        out.append(f"model {recipe.name}: mining.lures needs a world that plants single triggers")
    if m.context and not world.context_sequences:
        out.append(f"model {recipe.name}: mining.context needs world.context_sequences > 0")
    if m.context and world.kind != "grammar":
        out.append(f"model {recipe.name}: mining.context is only supported for grammar worlds")
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
    """Read a YAML definition, resolving ``include:`` (relative to the file) recursively."""
    path = Path(path).resolve()
    if path in _seen:
        raise TaskSpecError(f"{path}: include cycle through {[str(p) for p in _seen]}")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise TaskSpecError(f"{path}: file not found") from None
    except UnicodeDecodeError as exc:
        raise TaskSpecError(f"{path}: not UTF-8 text ({exc.reason})") from None
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


def _validate(kind: type[BaseModel], raw: dict, source: str, quick: bool):
    if quick:
        overrides = raw.get("quick") or {}
        if not isinstance(overrides, dict):
            raise TaskSpecError(f"{source}: field `quick`: expected a mapping")
        raw = deep_merge(raw, overrides)
    try:
        return kind.model_validate(raw)
    except ValidationError as exc:
        raise TaskSpecError(format_errors(source, exc)) from None


def validate_raw(raw: dict, source: str, quick: bool = False) -> TaskSpec:
    """Validate a raw task mapping; with ``quick`` the ``quick:`` overrides are merged in first."""
    return _validate(TaskSpec, raw, source, quick)


def format_errors(source: str, exc: ValidationError) -> str:
    lines = [f"{source}: {exc.error_count()} problem(s) in the definition:"]
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"] if not _is_union_tag(p)) or "(top level)"
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown key"
        elif err["type"] == "missing":
            msg = "required field is missing"
        lines += [f"  - field `{loc}`: {part}" for part in msg.split("; ")]
    return "\n".join(lines)


def _is_union_tag(part: Any) -> bool:
    return part in ("grammar", "natural")


def load_spec(path: Path, quick: bool = False) -> TaskSpec:
    """Load and validate ``task.yaml``."""
    return validate_raw(read_raw(Path(path)), str(path), quick=quick)


def load_recipe(path: Path, quick: bool = False) -> ModelRecipe:
    """Load and validate ``model.yaml``."""
    return _validate(ModelRecipe, read_raw(Path(path)), str(path), quick)
