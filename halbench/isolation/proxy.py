"""The Scorer as an isolated method sees it: both ends of a remote scorer call.

Worker end: :class:`ScorerProxy` offers a :class:`~halbench.scoring.Scorer`'s surface. Every call that
needs the model (target scores, generation, gradients, attention, embeddings) goes to the harness, whose
real Scorer charges it; the row counter here is only a mirror of the harness's. The calls that need no
model are the Scorer's own code run on this side (``rows_left``, ``perturb``, ``baseline_embedding``,
``target_logprob_from_embeddings`` through ``_EmbeddingGrad``...), and :class:`ProxyReplacements` is a
:class:`~halbench.replacements.Replacements` with the harness's data, so a method draws from its rng
exactly as it would in-process; nearest-neighbour lists and token strings are fetched once and cached.

Harness end: :func:`serve` answers one call against the real Scorer, from an allow-list of operations,
treating every argument as untrusted data.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from halbench.case import PublicCase
from halbench.isolation.protocol import Channel, ChannelTimeout, ProtocolError, error_record, rebuild_error
from halbench.replacements import Replacements
from halbench.scoring import BudgetExceeded, Cost, Scorer, _EmbeddingGrad

# Exceptions of the harness's scorer that a method receives as the same types (others: RemoteError by name).
SCORER_ERRORS: dict[str, type[Exception]] = {
    cls.__name__: cls for cls in (BudgetExceeded, ValueError, TypeError, IndexError, KeyError, RuntimeError)
}
TOKENIZER_IDS = ("eos_token_id", "bos_token_id", "pad_token_id", "unk_token_id", "mask_token_id")


# ================================================================================================ worker end


class Link:
    """The worker's end of scorer calls: send one, answer the harness's rng draws, return its reply."""

    def __init__(self, channel: Channel):
        self.channel = channel

    def call(self, method: str, args: dict, cost: Cost | None = None, rng: np.random.Generator | None = None) -> Any:
        self.channel.send({"op": "call", "method": method, "args": args})
        while True:
            message = self.channel.recv()
            op = message["op"]
            if op == "draw" and rng is not None:
                self.channel.send({"op": "drawn", "value": int(rng.integers(int(message["high"])))})
            elif op in ("reply", "raise"):
                if cost is not None and isinstance(message.get("cost"), dict):
                    _mirror(cost, message["cost"])
                if op == "raise":
                    raise rebuild_error(message.get("error"), SCORER_ERRORS)
                return message.get("value")
            else:
                raise ProtocolError(f"unexpected {op!r} while waiting for a scorer reply")


def _mirror(cost: Cost, record: dict) -> None:
    cost.forward_rows = int(record.get("forward_rows", 0))
    cost.backward_rows = int(record.get("backward_rows", 0))
    cost.seconds = float(record.get("seconds", 0.0))


def _array(values: Any, dtype: torch.dtype | None = None) -> np.ndarray:
    """A method's ids or embeddings as a plain array to send (what the Scorer would make of them)."""
    if isinstance(values, torch.Tensor):
        values = values.detach().cpu()
        if dtype is not None or values.dtype in (torch.bfloat16, torch.complex64, torch.complex128):
            values = values.to(dtype or torch.float32)
        return values.numpy()
    array = np.asarray(values)
    if dtype is not None:
        array = torch.as_tensor(array, dtype=dtype).numpy()
    return array


class ProxyReplacements(Replacements):
    """The harness's replacement strategies: same pool and probabilities, neighbour lists fetched on demand.

    ``__init__`` is the Replacements' data, not its constructor: the worker never holds the embedding table
    the neighbours come from, only the lists the harness computed from it.
    """

    def __init__(self, link: Link, data: dict):  # not super().__init__: there is no embedding here
        self._link = link
        self.pool = np.asarray(data["pool"], dtype=np.int64)
        self.unigram_p = np.asarray(data["unigram_p"], dtype=np.float64)
        self.has_unigram = bool(data["has_unigram"])
        self.mask_id = None if data["mask_id"] is None else int(data["mask_id"])
        self.k = int(data["k"])
        self.default = str(data["default"])
        self._vocabulary_size = int(data["vocabulary_size"])
        self._cache: dict[int, np.ndarray] = {}
        self._nearest: dict[tuple[int, int], np.ndarray] = {}

    @property
    def vocabulary_size(self) -> int:
        return self._vocabulary_size

    def neighbours(self, token: int) -> np.ndarray:
        if token not in self._cache:
            self._cache[token] = np.asarray(self._link.call("neighbours", {"token": int(token)}), dtype=np.int64)
        return self._cache[token]

    def nearest(self, token: int, k: int) -> np.ndarray:
        key = (int(token), int(k))
        if key not in self._nearest:
            found = self._link.call("nearest", {"token": key[0], "k": key[1]})
            self._nearest[key] = np.asarray(found, dtype=np.int64)
        return self._nearest[key]


class ProxyTokenizer:
    """The model's tokenizer as far as methods use it: special token ids, and ``decode`` (asked of the harness)."""

    def __init__(self, link: Link, ids: dict):
        self._link = link
        self._texts: dict[tuple, str] = {}
        for name in TOKENIZER_IDS:
            value = ids.get(name)
            setattr(self, name, None if value is None else int(value))

    def decode(self, token_ids: Any, skip_special_tokens: bool = False, **_: Any) -> str:
        ids = tuple(int(i) for i in np.asarray(_array(token_ids)).reshape(-1))
        key = (ids, bool(skip_special_tokens))
        if key not in self._texts:
            args = {"ids": list(ids), "skip_special_tokens": key[1]}
            self._texts[key] = str(self._link.call("tokenizer_decode", args))
        return self._texts[key]


class Context:
    """What the worker keeps of one task instance across its cases: replacements, tokenizer, embedding table."""

    def __init__(self, link: Link, data: dict):
        self.link = link
        self.replacements = ProxyReplacements(link, data["replacements"])
        self.tokenizer = None if data["tokenizer"] is None else ProxyTokenizer(link, data["tokenizer"])
        self._table: torch.Tensor | None = None

    def embedding_matrix(self) -> torch.Tensor:
        if self._table is None:
            self._table = self.link.call("embedding_matrix", {})
        return self._table.clone()


class ScorerProxy:
    """A Scorer for a method in the worker: the same calls, the model's answered and charged by the harness.

    There is no ``model`` here, no ground truth and no row counter of its own: ``cost`` mirrors the harness's
    after every call, and changing it (or ``budget``) changes nothing the harness enforces.
    """

    def __init__(self, link: Link, case: PublicCase, budget: int | None, context: Context):
        self._link = link
        self._context = context
        self.case = case
        self.budget = budget
        self.cost = Cost()
        self.prompt = np.asarray(case.prompt_ids, dtype=np.int64)
        self.replacements = context.replacements
        self.tokenizer = context.tokenizer
        self._target = torch.tensor(case.target_ids, dtype=torch.long)

    def _call(self, method: str, rng: np.random.Generator | None = None, **args: Any) -> Any:
        return self._link.call(method, args, self.cost, rng)

    # The Scorer's own code for everything that needs no model: same draws, same arithmetic.
    remaining = Scorer.remaining
    rows_left = Scorer.rows_left
    target_logprob = Scorer.target_logprob
    target_prob = Scorer.target_prob
    sampled_hallucination = Scorer.sampled_hallucination
    baseline_embedding = Scorer.baseline_embedding
    perturb = Scorer.perturb

    def target_scores(self, input_ids: Any) -> tuple[np.ndarray, np.ndarray]:
        values, hits = self._call("target_scores", ids=_array(input_ids))
        return values, hits

    def next_token_logprobs(self, input_ids: Any = None) -> np.ndarray:
        return self._call("next_token_logprobs", ids=None if input_ids is None else _array(input_ids))

    def generate(
        self,
        input_ids: Any,
        rng: np.random.Generator | None = None,
        new_tokens: int | None = None,
        temperature: float = 1.0,
    ) -> np.ndarray:
        args = {"ids": _array(input_ids), "new_tokens": new_tokens, "temperature": temperature}
        return self._call("generate", rng, sampled=rng is not None, **args)

    def decode(self, ids: Any) -> list[str]:
        return self._call("decode", ids=_array(ids))

    def embedding_matrix(self) -> torch.Tensor:
        return self._context.embedding_matrix()

    def input_embeddings(self, input_ids: Any = None) -> torch.Tensor:
        return self._call("input_embeddings", ids=None if input_ids is None else _array(input_ids))

    def logprob_and_grad(self, embeds: Any) -> tuple[torch.Tensor, torch.Tensor]:
        values, grads = self._call("logprob_and_grad", embeds=_array(embeds, torch.float32))
        return values, grads

    def target_logprob_from_embeddings(self, embeds: torch.Tensor) -> torch.Tensor:
        return _EmbeddingGrad.apply(embeds, self.logprob_and_grad)

    def attentions(self, input_ids: Any = None) -> list[torch.Tensor]:
        return self._call("attentions", ids=None if input_ids is None else _array(input_ids))


# ================================================================================================ harness end


def context_record(scorer: Scorer) -> dict:
    """The instance-wide data a worker's :class:`Context` is built from (public: no model, no causes)."""
    reps, tok = scorer.replacements, scorer.tokenizer
    replacements = {
        "pool": reps.pool,
        "unigram_p": reps.unigram_p,
        "has_unigram": bool(reps.has_unigram),
        "mask_id": reps.mask_id,
        "k": reps.k,
        "default": reps.default,
        "vocabulary_size": reps.vocabulary_size,
    }
    ids = None if tok is None else {name: _int_or_none(getattr(tok, name, None)) for name in TOKENIZER_IDS}
    return {"replacements": replacements, "tokenizer": ids}


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class RemoteRng:
    """The one thing the Scorer asks of a generator (``integers(high)``), drawn by the worker from the method's rng."""

    def __init__(self, ask: Callable[[int], int]):
        self._ask = ask

    def integers(self, high: int) -> int:
        return self._ask(int(high))


def _ids(value: Any) -> np.ndarray:
    if not isinstance(value, np.ndarray):
        raise TypeError("ids must be an array")
    return value


def _optional_ids(value: Any) -> np.ndarray | None:
    return None if value is None else _ids(value)


def _token(value: Any, scorer: Scorer) -> int:
    size = scorer.replacements.vocabulary_size
    if type(value) is not int or not 0 <= value < size:
        raise ValueError(f"token must be an id in [0, {size})")
    return value


def _decode_ids(value: Any) -> list[int]:
    if not isinstance(value, list) or not all(type(i) is int for i in value):
        raise TypeError("decode needs a list of token ids")
    return value


def _tokenizer_decode(scorer: Scorer, args: dict) -> str:
    if scorer.tokenizer is None:
        raise ValueError("this scorer has no tokenizer to decode with")
    return scorer.tokenizer.decode(
        _decode_ids(args.get("ids")), skip_special_tokens=args.get("skip_special_tokens") is True
    )


def _nearest(scorer: Scorer, args: dict) -> np.ndarray:
    k = args.get("k")
    if type(k) is not int or k < 1:
        raise ValueError("k must be a positive integer")
    return scorer.replacements.nearest(_token(args.get("token"), scorer), k)


def _generate(scorer: Scorer, args: dict, rng: RemoteRng) -> np.ndarray:
    new_tokens, temperature = args.get("new_tokens"), args.get("temperature")
    if new_tokens is not None and type(new_tokens) is not int:
        raise TypeError("new_tokens must be an integer or None")
    if type(temperature) not in (int, float):
        raise TypeError("temperature must be a number")
    return scorer.generate(_ids(args.get("ids")), rng if args.get("sampled") is True else None, new_tokens, temperature)


def _embeddings(value: Any) -> torch.Tensor:
    if not isinstance(value, np.ndarray):
        raise TypeError("embeddings must be an array")
    return torch.as_tensor(value)


_CALLS: dict[str, Callable[[Scorer, dict, RemoteRng], Any]] = {
    "target_scores": lambda s, a, _: list(s.target_scores(_ids(a.get("ids")))),
    "next_token_logprobs": lambda s, a, _: s.next_token_logprobs(_optional_ids(a.get("ids"))),
    "generate": _generate,
    "decode": lambda s, a, _: s.decode(_ids(a.get("ids"))),
    "tokenizer_decode": lambda s, a, _: _tokenizer_decode(s, a),
    "embedding_matrix": lambda s, a, _: s.embedding_matrix(),
    "input_embeddings": lambda s, a, _: s.input_embeddings(_optional_ids(a.get("ids"))),
    "logprob_and_grad": lambda s, a, _: list(s.logprob_and_grad(_embeddings(a.get("embeds")))),
    "attentions": lambda s, a, _: s.attentions(_optional_ids(a.get("ids"))),
    "neighbours": lambda s, a, _: s.replacements.neighbours(_token(a.get("token"), s)),
    "nearest": lambda s, a, _: _nearest(s, a),
}


def serve(scorer: Scorer, message: dict, rng: RemoteRng) -> dict:
    """The harness's answer to one ``call`` message: the value and the cost so far, or the error it raised."""
    method, args = message.get("method"), message.get("args")
    try:
        if method not in _CALLS or not isinstance(args, dict):
            raise ValueError(f"the scorer has no call {str(method)[:80]!r}")
        reply = {"op": "reply", "value": _CALLS[method](scorer, args, rng)}
    except (ProtocolError, ChannelTimeout):  # the worker misbehaved while the scorer asked it for a draw
        raise
    except Exception as exc:  # the method gets the scorer's error, as in-process; the harness goes on
        reply = {"op": "raise", "error": error_record(exc, with_traceback=False)}
    reply["cost"] = scorer.cost.as_record()
    return reply
