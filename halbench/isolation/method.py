"""``IsolatedMethod``: a Method whose code runs in a sandboxed worker process, never in the harness.

The harness keeps the model, the ground truth and the row counter; the worker gets the public case, the
rng's state and the budget, and reaches the model only through scorer calls that this class serves from
the real :class:`~halbench.scoring.Scorer`, which charges them. The harness learns a submission's name,
kind, description and defaults from its folder and ``submission.yaml`` (:func:`read_declared`), without
executing ``method.py``; the worker loads it and checks that it matches.

One worker serves every case, started on first use; a case that crashes it, exits it or outlasts
``timeout`` fails with the reason, and the next case gets a fresh worker (fitted again if the method
learns from dev). ``KeyboardInterrupt`` in the harness stops the worker and propagates.
"""

from __future__ import annotations

import contextlib
import time
import weakref
from pathlib import Path
from typing import Any

import numpy as np

from halbench.case import DevCase, PublicCase
from halbench.isolation import sandbox
from halbench.isolation.protocol import (
    ChannelClosed,
    ChannelTimeout,
    ProtocolError,
    json_scalars,
    rebuild_error,
)
from halbench.isolation.proxy import RemoteRng, context_record, serve
from halbench.methods.base import Attribution, Method, MethodError, registered
from halbench.scoring import Scorer
from halbench.submissions.spec import SPEC_FILE, SubmissionError, load_spec, validate_slug

DEFAULT_TIMEOUT = 600.0  # seconds per case (and per fit)
START_TIMEOUT = 300.0  # seconds for a worker to start and load the method
BUILTIN = "builtin:"


class IsolationError(RuntimeError):
    """The worker could not answer: it failed to load, crashed, exited, timed out or broke the protocol."""


def read_declared(folder: Path) -> tuple[str, str, str, dict[str, Any]]:
    """``(name, kind, description, defaults)`` of a submission folder, from its name and ``submission.yaml`` only."""
    folder = Path(folder)
    name = validate_slug(folder.name)
    spec = load_spec(folder / SPEC_FILE)
    if not (folder / sandbox.METHOD_FILE).is_file():
        raise SubmissionError(f"{folder / sandbox.METHOD_FILE}: (top level): file not found")
    return name, spec.kind, spec.description, dict(spec.hyperparameters)


def _builtin(name: str) -> type[Method]:
    methods = registered()
    if name not in methods:
        raise MethodError(f"unknown method {name!r} (available: {', '.join(methods)})")
    return methods[name]


def _stop_all(workers: list[sandbox.WorkerProcess]) -> None:
    while workers:
        workers.pop().stop()


class IsolatedMethod(Method):
    """A method run in its own worker: ``source`` is a submission folder or ``builtin:<name>``."""

    def __init__(
        self,
        source: Path | str,
        params: dict[str, Any] | None = None,
        trust: bool = False,
        timeout: float = DEFAULT_TIMEOUT,
    ):
        text = str(source)
        if text.startswith(BUILTIN):
            cls = _builtin(text.removeprefix(BUILTIN))
            self.name, self.kind, self.description, self.defaults = cls.name, cls.kind, cls.description, cls.defaults
            self.paper, self.code = cls.paper, cls.code
            self._method_file: Path | None = None
            self._module: str | None = cls.__module__
            self._uses_dev: bool | None = cls.uses_dev
        else:
            folder = Path(source).resolve()
            self.name, self.kind, self.description, self.defaults = read_declared(folder)
            self._method_file = folder / sandbox.METHOD_FILE
            self._module = None
            self._uses_dev = None  # the worker says, once it has loaded the class
        super().__init__(**(params or {}))
        self.source = text
        self.timeout = float(timeout)
        self._bwrap = sandbox.choose(trust)  # refuses here, before any case, when untrusted code cannot be sandboxed
        self._worker: sandbox.WorkerProcess | None = None
        self._running: list[sandbox.WorkerProcess] = []  # for the finalizer: the worker dies with this object
        self._finalizer = weakref.finalize(self, _stop_all, self._running)
        self._broken: str | None = None  # why the method cannot run at all (it failed to load)
        self._fit_request: dict | None = None
        self._fitted: sandbox.WorkerProcess | None = None
        self._fit_failed: str | None = None
        self._sent: tuple[Any, int] | None = None  # (weak ref to the replacements, id of the tokenizer) sent

    # -- the Method contract ------------------------------------------------------------------------------
    @property
    def uses_dev(self) -> bool:  # type: ignore[override]  (a submission's flag is known once loaded)
        if self._uses_dev is None:
            try:
                self._ensure_worker()
            except IsolationError:
                return False  # every case will fail with the reason
        return bool(self._uses_dev)

    def fit(self, dev: list[DevCase], vocabulary: list[str], unigram: np.ndarray | None) -> None:
        """Forwarded to the worker; a failure there fails every case with the reason rather than the run."""
        self._fit_request = {
            "op": "fit",
            "dev": [case.as_record() for case in dev],
            "vocabulary": list(vocabulary),
            "unigram": unigram,
        }
        self._fit_failed = None
        worker = self._ensure_worker()  # a fresh worker is fitted as it starts
        if self._fitted is not worker:
            self._run_fit(worker)

    def attribute(self, case: PublicCase, scorer: Scorer, rng: np.random.Generator) -> Attribution:
        if self._fit_failed:
            raise IsolationError(self._fit_failed)
        self._ensure_worker()
        request = {
            "op": "attribute",
            "case": case.as_record(),
            "rng": rng.bit_generator.state,
            "budget": scorer.budget,
            "context": self._context(scorer),
        }
        reply = self._exchange(request, self.timeout, f"case {case.id}", scorer)
        if reply["op"] == "error":
            raise rebuild_error(reply.get("error"))
        if reply["op"] != "result":
            self._stop()
            raise IsolationError(f"the method's worker answered case {case.id} with {reply['op']!r}; it was stopped")
        return _attribution(reply, rng)

    def close(self) -> None:
        """Stop the worker (it is started again if the method is used again)."""
        self._stop(polite=True)

    # -- the worker ----------------------------------------------------------------------------------------
    def _ensure_worker(self) -> sandbox.WorkerProcess:
        if self._broken:
            raise IsolationError(self._broken)
        if self._worker is not None and self._worker.alive():
            return self._worker
        self._stop()
        self._worker = sandbox.WorkerProcess(self._method_file, self._bwrap)
        self._running.append(self._worker)
        init = {
            "op": "init",
            "source": "file" if self._method_file else "builtin",
            "file": sandbox.METHOD_FILE,
            "module": self._module,
            "name": self.name,
            "kind": self.kind,
            "params": self.params,
        }
        try:
            reply = self._exchange(init, START_TIMEOUT, "loading")
        except IsolationError as exc:
            self._broken = f"the method could not be loaded: {exc}"
            raise IsolationError(self._broken) from None
        if reply["op"] != "ready":
            error = rebuild_error(reply.get("error"))
            self._broken = f"the method could not be loaded: {type(error).__name__}: {error}"
            self._stop()
            raise IsolationError(self._broken)
        self._uses_dev = reply.get("uses_dev") is True
        if self._fit_request is not None:
            self._run_fit(self._worker)
        return self._worker

    def _run_fit(self, worker: sandbox.WorkerProcess) -> None:
        self._fitted = worker
        try:
            reply = self._exchange(self._fit_request, self.timeout, "fit")
        except IsolationError as exc:
            self._fit_failed = f"fit failed: {exc}"
            return
        if reply["op"] != "done":
            error = rebuild_error(reply.get("error"))
            self._fit_failed = f"fit failed: {type(error).__name__}: {error}"

    def _exchange(self, request: dict, timeout: float, what: str, scorer: Scorer | None = None) -> dict:
        """Send ``request`` and serve the worker's scorer calls until its answer (any op but ``call``)."""
        worker = self._worker
        deadline = time.monotonic() + timeout
        try:
            worker.channel.send(request, deadline)
            while True:
                message = worker.channel.recv(deadline)
                if message["op"] != "call":
                    return message
                if scorer is None:
                    raise ProtocolError("a scorer call outside any case")
                rng = RemoteRng(lambda high: self._draw(worker, high, deadline))
                worker.channel.send(serve(scorer, message, rng), deadline)
        except ChannelTimeout:
            self._stop()
            raise IsolationError(
                f"the method took longer than {timeout:g} s on {what}; its worker was stopped"
            ) from None
        except ChannelClosed:
            reason = worker.exit_reason()
            self._stop()
            raise IsolationError(f"the method's worker {reason} during {what}") from None
        except ProtocolError as exc:
            self._stop()
            raise IsolationError(
                f"the method's worker broke the protocol during {what} ({exc}); it was stopped"
            ) from None
        except BaseException:  # KeyboardInterrupt, or the harness failed mid-request: the worker cannot be reused
            self._stop()
            raise

    @staticmethod
    def _draw(worker: sandbox.WorkerProcess, high: int, deadline: float) -> int:
        """One ``rng.integers(high)`` of the method's generator, which lives in the worker."""
        worker.channel.send({"op": "draw", "high": high}, deadline)
        reply = worker.channel.recv(deadline)
        value = reply.get("value")
        if reply["op"] != "drawn" or type(value) is not int or not 0 <= value < high:
            raise ProtocolError("bad answer to a draw")
        return value

    def _context(self, scorer: Scorer) -> dict | None:
        """The instance's replacements and tokenizer data, when the worker does not have them yet."""
        reps, tok = scorer.replacements, scorer.tokenizer
        if self._sent is not None and self._sent[0]() is reps and self._sent[1] == id(tok):
            return None
        self._sent = (weakref.ref(reps), id(tok))
        return context_record(scorer)

    def _stop(self, polite: bool = False) -> None:
        worker, self._worker, self._sent, self._fitted = self._worker, None, None, None
        if worker is None:
            return
        if polite and worker.alive():
            with contextlib.suppress(ProtocolError, ChannelTimeout, OSError):
                worker.channel.send({"op": "close"}, time.monotonic() + 1.0)
        worker.stop(grace=1.0 if polite else 0.0)
        if worker in self._running:
            self._running.remove(worker)


def _attribution(reply: dict, rng: np.random.Generator) -> Attribution:
    """The worker's result as an Attribution, checked as untrusted data; the rng left where the method left it."""
    scores, subsequence = reply.get("scores"), reply.get("subsequence")
    if not isinstance(scores, np.ndarray):
        raise MethodError("the method returned no scores")
    if subsequence is not None and not (isinstance(subsequence, list) and all(type(p) is int for p in subsequence)):
        raise MethodError("subsequence must be a list of positions")
    state = reply.get("rng")
    if isinstance(state, dict) and state.get("bit_generator") == rng.bit_generator.state["bit_generator"]:
        with contextlib.suppress(TypeError, ValueError, KeyError, OverflowError):
            rng.bit_generator.state = state
    return Attribution(scores, None if subsequence is None else tuple(subsequence), json_scalars(reply.get("extras")))
