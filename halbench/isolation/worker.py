"""The worker process: one method, public case data, and pipes to the harness; nothing else.

Started by :mod:`halbench.isolation.sandbox` as ``python -m halbench.isolation.worker`` (under bubblewrap,
or as a plain subprocess when trusted). It answers ``init``, ``fit``, ``attribute`` and ``close``
requests read from stdin, on stdout. Before anything else it moves those pipes to private descriptors and
points fd 1 at stderr, so nothing a method prints can corrupt the protocol. A method's exception, ``SystemExit``
included, fails only that request: it is reported by type name and message, and the worker goes on.
"""

from __future__ import annotations

import faulthandler
import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np

from halbench.case import DevCase, PublicCase
from halbench.isolation.protocol import DTYPES, Channel, ProtocolError, error_record, json_scalars
from halbench.isolation.proxy import Context, Link, ScorerProxy
from halbench.methods.base import Attribution, Method, MethodError, registered
from halbench.runtime import configure_threads

SUBMISSION_MODULE = "halbench_submission"
BIT_GENERATORS = {name: getattr(np.random, name) for name in ("PCG64", "PCG64DXSM", "Philox", "SFC64", "MT19937")}


def restore_rng(state: Any) -> np.random.Generator:
    """The method's generator, in exactly the state the harness's was in."""
    name = state.get("bit_generator") if isinstance(state, dict) else None
    if name not in BIT_GENERATORS:
        raise ValueError(f"unsupported bit generator {name!r}")
    bits = BIT_GENERATORS[name]()
    bits.state = state
    return np.random.Generator(bits)


def load_submission(path: Path) -> type[Method]:
    """The one named ``Method`` subclass that ``path`` defines (executed here, inside the sandbox, only)."""
    spec = importlib.util.spec_from_file_location(SUBMISSION_MODULE, path)
    if spec is None or spec.loader is None:
        raise MethodError(f"cannot load {path.name}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[SUBMISSION_MODULE] = module
    spec.loader.exec_module(module)
    found = [
        c
        for c in vars(module).values()
        if isinstance(c, type) and issubclass(c, Method) and c.__module__ == SUBMISSION_MODULE and "name" in c.__dict__
    ]
    if len(found) != 1:
        names = ", ".join(c.__name__ for c in found) or "none"
        raise MethodError(f"{path.name} must define exactly one Method subclass with a name (found: {names})")
    return found[0]


def builtin(name: str, module: Any = None) -> type[Method]:
    """A built-in method's class, importing only its own module when named (the others may be slow to import)."""
    if isinstance(module, str) and module.startswith("halbench.methods."):
        for value in vars(importlib.import_module(module)).values():
            if isinstance(value, type) and issubclass(value, Method) and value.__dict__.get("name") == name:
                return value
    methods = registered()
    if name not in methods:
        raise MethodError(f"unknown built-in method {name!r}")
    return methods[name]


class Worker:
    """The request loop: one method, built at ``init``, then fitted and asked for attributions."""

    def __init__(self, channel: Channel):
        self.channel = channel
        self.link = Link(channel)
        self.method: Method | None = None
        self.context: Context | None = None

    def serve(self) -> None:
        handlers = {"init": self._init, "fit": self._fit, "attribute": self._attribute}
        while True:
            message = self.channel.recv()
            op = message["op"]
            if op == "close":
                return
            if op not in handlers:
                raise ProtocolError(f"unknown request {op!r}")
            try:
                reply = handlers[op](message)
            except ProtocolError:  # the harness is gone, or no longer understood: nothing left to answer
                raise
            except BaseException as exc:  # the method's failure (SystemExit included) fails this request only
                reply = {"op": "error", "error": error_record(exc)}
            try:
                self.channel.send(reply)
            except TypeError as exc:  # something in the reply cannot cross
                self.channel.send({"op": "error", "error": error_record(exc)})

    def _init(self, message: dict) -> dict:
        name, kind = message["name"], message["kind"]
        if message["source"] == "builtin":
            cls = builtin(name, message.get("module"))
        else:
            cls = load_submission(Path(message["file"]))
        if cls.name != name or cls.kind != kind:
            raise MethodError(
                f"method.py defines {cls.name!r} of kind {cls.kind!r}, but the submission declares {name!r} of "
                f"kind {kind!r} (the folder's name and submission.yaml's kind)"
            )
        self.method = cls(**message["params"])
        return {"op": "ready", "uses_dev": bool(cls.uses_dev)}

    def _fit(self, message: dict) -> dict:
        dev = [DevCase.from_record(r) for r in message["dev"]]
        self._method().fit(dev, [str(t) for t in message["vocabulary"]], message["unigram"])
        return {"op": "done"}

    def _attribute(self, message: dict) -> dict:
        if message.get("context") is not None:
            self.context = Context(self.link, message["context"])
        if self.context is None:
            raise ProtocolError("attribute before any context")
        case = PublicCase.from_record(message["case"])
        rng = restore_rng(message["rng"])
        scorer = ScorerProxy(self.link, case, message["budget"], self.context)
        attribution = self._method().attribute(case, scorer, rng)
        attribution.validate(case)
        return {"op": "result", "rng": rng.bit_generator.state, **_crossing(attribution)}

    def _method(self) -> Method:
        if self.method is None:
            raise MethodError("no method loaded (init failed)")
        return self.method


def _crossing(attribution: Attribution) -> dict:
    """The parts of a valid attribution that go back: numeric scores, int positions, scalar extras."""
    scores = np.asarray(attribution.scores)
    if scores.dtype.name not in DTYPES:
        raise MethodError(f"scores must be real numbers, got dtype {scores.dtype}")
    subsequence = None if attribution.subsequence is None else [int(p) for p in attribution.subsequence]
    return {"scores": scores, "subsequence": subsequence, "extras": json_scalars(attribution.extras)}


def _private_channel() -> Channel:
    """The protocol's pipes on private descriptors; fd 0 reads nothing and fd 1 goes to stderr."""
    read_fd, write_fd = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    return Channel(read_fd, write_fd, allow_torch=True)


def main() -> None:
    channel = _private_channel()
    faulthandler.enable()
    configure_threads()
    try:
        Worker(channel).serve()
    except ProtocolError:
        pass  # the harness closed the pipe or broke the protocol: just exit
    finally:
        channel.close()


if __name__ == "__main__":
    main()
