"""Isolation, end to end: every built-in gives bit-identical results through the worker, and cheats get nothing.

Each test starts real workers (under bubblewrap where it works here, else as trusted subprocesses) on the
tiny random instance; nothing is mocked. The attacks that only the sandbox can stop (reading task files,
walking memory for ground truth, the network) are skipped without bubblewrap.
"""

from __future__ import annotations

import os
import signal
import socket
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest

from halbench.isolation import sandbox
from halbench.isolation.method import IsolatedMethod, read_declared
from halbench.methods.base import Attribution, get_method, masked_scores, registered
from halbench.runner import EvalConfig, case_rng, score_case
from halbench.tasks.registry import REPO_ROOT

BWRAP = sandbox.find_bwrap()[0]
TRUST = BWRAP is None  # without bubblewrap the protocol is still tested, as a trusted subprocess
needs_bwrap = pytest.mark.skipif(BWRAP is None, reason="bubblewrap is not usable here")
BUDGETS = (16, 64)
CASES = 2


def attribute(method, bundle, record: dict, budget: int) -> tuple[Attribution | str, dict]:
    """The attribution (or the failure, as the runner words it) and the rows spent, with a fresh scorer."""
    scorer = bundle.scorer(record, budget=budget)
    try:
        result = method.attribute(scorer.case, scorer, case_rng(0, record["id"]))
    except (Exception, SystemExit) as exc:
        result = f"{type(exc).__name__}: {exc}"
    return result, {k: v for k, v in scorer.cost.as_record().items() if k != "seconds"}


def assert_same(local: Attribution | str, isolated: Attribution | str) -> None:
    if isinstance(local, str) or isinstance(isolated, str):
        assert isolated == local
        return
    expected, got = np.asarray(local.scores), np.asarray(isolated.scores)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    assert got.tobytes() == expected.tobytes(), "scores differ in some bit"
    assert isolated.subsequence == local.subsequence
    assert isolated.extras == local.extras


CONFORMANCE = [(name, {}) for name in registered()] + [
    ("sat", {"samples": 2}),  # sampled generation: the harness draws the seed from the worker's rng
    ("sat", {"replacement": "neighbours", "mode": "bernoulli"}),  # Scorer.perturb, neighbour lists
    ("occlusion", {"replacement": "mask"}),
    ("integrated_gradients", {"replacement": "uniform"}),  # baseline_embedding from the fetched table
]


@pytest.mark.parametrize(("name", "params"), CONFORMANCE, ids=[f"{n}{p or ''}" for n, p in CONFORMANCE])
def test_builtin_conforms(name, params, tiny_bundle):
    """Scores, subsequence, extras and rows through the worker are exactly those in-process."""
    local = get_method(name, **params)
    isolated = IsolatedMethod(f"builtin:{name}", params, trust=TRUST)
    try:
        assert (isolated.name, isolated.kind, isolated.defaults) == (local.name, local.kind, local.defaults)
        assert isolated.uses_dev == local.uses_dev
        if local.uses_dev:
            dev = tiny_bundle.dev_cases()
            local.fit(dev, tiny_bundle.vocabulary, tiny_bundle.unigram)
            isolated.fit(dev, tiny_bundle.vocabulary, tiny_bundle.unigram)
        for record in tiny_bundle.cases("test")[:CASES]:
            for budget in BUDGETS:
                expected, expected_cost = attribute(local, tiny_bundle, record, budget)
                got, got_cost = attribute(isolated, tiny_bundle, record, budget)
                assert_same(expected, got)
                assert got_cost == expected_cost
    finally:
        isolated.close()


# ------------------------------------------------------------------------------------------------ submissions

SPEC = """\
name: {slug}
authors: [tester]
description: a test submission
licence: MIT
kind: {kind}
hyperparameters: {{}}
"""

TEMPLATE = """\
import numpy as np

from halbench.methods.base import Attribution, Method, masked_scores

{helpers}


class Submitted(Method):
    name = {slug!r}
    description = "a test submission"
    kind = {kind!r}

    def attribute(self, case, scorer, rng):
{body}
"""


def submission(root: Path, slug: str, body: str, helpers: str = "", kind: str = "baseline", name: str = "") -> Path:
    """A submission folder ``root/slug`` whose method runs ``body`` (the inside of ``attribute``)."""
    folder = root / slug
    folder.mkdir(parents=True)
    (folder / "submission.yaml").write_text(SPEC.format(slug=slug, kind=kind))
    code = TEMPLATE.format(slug=name or slug, kind=kind, helpers=helpers, body=textwrap.indent(body.strip(), " " * 8))
    (folder / "method.py").write_text(code)
    return folder


ZEROS = "return Attribution(masked_scores(np.zeros(case.length), case))"


def run_cases(method, bundle, records: list[dict], budget: int = 64) -> list[dict]:
    config = EvalConfig(method.name, budget=budget, refills=2)
    return [score_case(method, bundle, record, config)[0] for record in records]


@pytest.fixture
def isolated(tmp_path):
    """Builds IsolatedMethods for submission folders, closing their workers after the test."""
    made = []

    def make(folder: Path, **kwargs) -> IsolatedMethod:
        made.append(IsolatedMethod(folder, trust=TRUST, **kwargs))
        return made[-1]

    yield make
    for method in made:
        method.close()


def test_read_declared_does_not_run_the_code(tmp_path):
    folder = submission(tmp_path, "declared", "raise SystemExit('never')", helpers="raise SystemExit('imported')")
    assert read_declared(folder) == ("declared", "baseline", "a test submission", {})


# The probe calls the whole Scorer surface and digests every answer: in the worker and in-process alike.
PROBE = """
import hashlib

import torch

from halbench.scoring import BudgetExceeded


def digest(value):
    if isinstance(value, (list, tuple)):
        return "|".join(digest(v) for v in value)
    array = np.ascontiguousarray(value.detach().numpy() if isinstance(value, torch.Tensor) else value)
    return f"{array.dtype}{array.shape}:" + hashlib.sha256(array.tobytes()).hexdigest()[:16]


def probe(case, scorer, rng):
    ids, reps, token = scorer.prompt[None], scorer.replacements, int(scorer.prompt[1])
    out = {"budget": scorer.budget, "rows_left": scorer.rows_left(10_000), "prompt": digest(scorer.prompt)}
    out["target_scores"] = digest(scorer.target_scores(np.repeat(ids, 3, axis=0)))
    out["target_prob"] = digest(scorer.target_prob(ids))
    out["next_token_logprobs"] = digest(scorer.next_token_logprobs())
    out["generate_greedy"] = digest(scorer.generate(ids, new_tokens=2))
    out["generate_sampled"] = digest(scorer.generate(ids, rng, new_tokens=2, temperature=0.7))
    out["sampled_hallucination"] = digest(scorer.sampled_hallucination(ids, rng, samples=3))
    out["decode"] = "|".join(scorer.decode(scorer.prompt[None, :4]))
    out["tokenizer"] = scorer.tokenizer.decode([token]) + f"|{scorer.tokenizer.eos_token_id}"
    out["embedding_matrix"] = digest(scorer.embedding_matrix())
    out["input_embeddings"] = digest(scorer.input_embeddings(np.repeat(ids, 2, axis=0)))
    for kind in ("unigram", "uniform", "mask"):
        out[f"baseline_{kind}"] = digest(scorer.baseline_embedding(kind))
    embeds = scorer.input_embeddings().requires_grad_()
    value = scorer.target_logprob_from_embeddings(embeds)
    value.sum().backward()
    out["from_embeddings"] = digest([value.detach(), embeds.grad])
    out["logprob_and_grad"] = digest(scorer.logprob_and_grad(scorer.input_embeddings()))
    out["attentions"] = digest(scorer.attentions())
    out["perturb"] = digest(scorer.perturb(rng, 4, 0.5))
    out["perturb_neighbours"] = digest(scorer.perturb(rng, 4, 0.5, "neighbours"))
    out["neighbours"] = digest(reps.neighbours(token))
    out["nearest"] = digest(reps.nearest(token, 5))
    out["tokens"] = digest(reps.tokens("unigram", rng, (3, 4)))
    out["replacements"] = f"{digest([reps.pool, reps.unigram_p])}|{reps.k}|{reps.mask_id}|{reps.default}"
    out["vocabulary_size"] = reps.vocabulary_size
    try:
        scorer.target_logprob(np.zeros((1, 3), dtype=np.int64))
    except ValueError as exc:
        out["value_error"] = str(exc)
    try:
        scorer.target_logprob(np.repeat(ids, 10_000, axis=0))
    except BudgetExceeded as exc:
        out["budget_error"] = str(exc)
    out["rows"] = scorer.cost.rows
    out["remaining"] = scorer.remaining
    out["last_draw"] = int(rng.integers(1 << 30))
    return out
"""


def test_proxy_offers_the_whole_scorer(tmp_path, tiny_bundle, isolated):
    """Every Scorer call through the proxy answers (and charges) exactly what it does in-process."""
    folder = submission(tmp_path, "probe", "return Attribution(np.zeros(case.length), extras=probe(case, scorer, rng))",
                        helpers=PROBE)  # fmt: skip
    method = isolated(folder)
    namespace = {"np": np}
    exec(PROBE, namespace)
    for record in tiny_bundle.cases("test")[:2]:
        scorer = tiny_bundle.scorer(record, budget=200)
        expected = namespace["probe"](scorer.case, scorer, case_rng(0, record["id"]))
        got, cost = attribute(method, tiny_bundle, record, 200)
        assert not isinstance(got, str), got
        assert got.extras == expected
        assert cost["rows"] == scorer.cost.rows == expected["rows"]


DISK = f"""
import os
found, read = [], {{}}
for path in ({str(REPO_ROOT / "tasks")!r}, {str(REPO_ROOT / "results")!r}, {str(REPO_ROOT / "submissions")!r}, CASES):
    try:
        read[path] = len(os.listdir(path)) if os.path.isdir(path) else len(open(path).read())
    except OSError as exc:
        read[path] = type(exc).__name__
try:
    repo = sorted(os.listdir({str(REPO_ROOT)!r}))
except OSError as exc:
    repo = [type(exc).__name__]
for root, dirs, files in os.walk("/"):
    if root in ("/proc", "/sys", "/dev", "/usr"):
        dirs[:] = []
        continue
    found += [os.path.join(root, f) for f in files if f in ("cases.jsonl", "MANIFEST.json", "verification.json")]
extras = {{"found": len(found), "repo": ",".join(repo), **{{"read:" + p: str(v) for p, v in read.items()}}}}
return Attribution(masked_scores(np.zeros(case.length), case), extras=extras)
"""


def score_extras(method, bundle) -> dict:
    """The extras a submission returns on the first test case (what its cheat found)."""
    got, _ = attribute(method, bundle, bundle.cases("test")[0], 64)
    assert not isinstance(got, str), got
    return got.extras


@needs_bwrap
def test_disk_oracle_sees_no_task_files(tmp_path, tiny, tiny_bundle, isolated):
    cases = tiny.folder / "cases.jsonl"
    assert cases.is_file()
    extras = score_extras(isolated(submission(tmp_path, "disk-oracle", DISK, helpers=f"CASES = {str(cases)!r}")),
                          tiny_bundle)  # fmt: skip
    assert extras["found"] == 0
    reads = {k: v for k, v in extras.items() if k.startswith("read:")}
    assert len(reads) == 4 and set(reads.values()) <= {"FileNotFoundError", "PermissionError"}, reads
    assert not {"tasks", "results", "submissions", "tests"} & set(extras["repo"].split(","))


MEMORY = """
import gc, sys
def is_truth(value):
    return type(value) is dict and isinstance(value.get("causes"), list) and len(value["causes"]) > 0
hits = sum(1 for obj in gc.get_objects() if is_truth(obj))
frame, frames = sys._getframe(), 0
while frame is not None:
    hits += sum(1 for value in list(frame.f_locals.values()) if is_truth(value))
    frame, frames = frame.f_back, frames + 1
return Attribution(masked_scores(np.zeros(case.length), case), extras={"hits": hits, "frames": frames})
"""


@needs_bwrap
def test_frame_and_gc_oracle_finds_no_ground_truth(tmp_path, tiny_bundle, isolated):
    extras = score_extras(isolated(submission(tmp_path, "memory-oracle", MEMORY)), tiny_bundle)
    assert extras["hits"] == 0 and extras["frames"] > 1
    # Control: the same code in-process finds the runner's record, so the probe does see a leak where there is one.
    namespace = {"np": np, "Attribution": Attribution, "masked_scores": masked_scores}
    exec("def cheat(case, scorer, rng):\n" + textwrap.indent(MEMORY.strip(), "    "), namespace)

    class InProcess:
        extras = None

        def attribute(self, case, scorer, rng):
            result = namespace["cheat"](case, scorer, rng)
            self.extras = result.extras
            return result

    control = InProcess()
    score_case(control, tiny_bundle, tiny_bundle.cases("test")[0], EvalConfig("control", budget=8, refills=2))
    assert control.extras["hits"] > 0


def test_scorer_has_no_model(tmp_path, tiny_bundle, isolated):
    folder = submission(tmp_path, "free-rows", "scorer.model\n" + ZEROS)
    (record,) = run_cases(isolated(folder), tiny_bundle, tiny_bundle.cases("test")[:1])
    assert record["status"] == "failed"
    assert record["reason"].startswith("AttributeError") and "model" in record["reason"]
    assert record["cost"]["rows"] == 0


@needs_bwrap
def test_network_is_unreachable(tmp_path, tiny_bundle, isolated):
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        server.setblocking(False)
        port = server.getsockname()[1]
        body = f"""
import socket
for address in (("127.0.0.1", {port}), ("1.1.1.1", 80)):
    try:
        socket.create_connection(address, timeout=2).close()
        return Attribution(masked_scores(np.zeros(case.length), case), extras={{"connected": str(address)}})
    except OSError as exc:
        error = exc
raise error
"""
        (record,) = run_cases(
            isolated(submission(tmp_path, "network", body)), tiny_bundle, tiny_bundle.cases("test")[:1]
        )
        with pytest.raises(BlockingIOError):
            server.accept()
    assert record["status"] == "failed", record
    assert "Error" in record["reason"]


def test_exits_and_crashes_fail_only_their_case(tmp_path, tiny_bundle, isolated):
    records = tiny_bundle.cases("test")[:4]
    actions = {
        records[0]["id"]: "sys.exit(0)",
        records[1]["id"]: "os._exit(3)",
        records[2]["id"]: "ctypes.string_at(0)",
    }
    body = f"import ctypes, os, sys\nexec({actions!r}.get(case.id, 'pass'))\n" + ZEROS
    out = run_cases(isolated(submission(tmp_path, "exits", body)), tiny_bundle, records)
    assert [r["status"] for r in out] == ["failed", "failed", "failed", "ok"]
    assert out[0]["reason"] == "SystemExit: 0"
    assert "exited with status 3" in out[1]["reason"]
    assert "SIGSEGV" in out[2]["reason"]


BUDGET = (
    """
from halbench.scoring import BudgetExceeded
rows = np.repeat(scorer.prompt[None], 10, axis=0)
try:
    while True:
        scorer.target_logprob(rows)
except BudgetExceeded:
    pass
scorer.budget, scorer.cost.forward_rows = None, 0  # forging the mirror changes nothing the harness counts
scorer.target_logprob(np.repeat(scorer.prompt[None], 100, axis=0))
"""
    + ZEROS
)


def test_rows_beyond_the_budget_are_refused_and_counted(tmp_path, tiny_bundle, isolated):
    (record,) = run_cases(isolated(submission(tmp_path, "overspend", BUDGET)), tiny_bundle,
                          tiny_bundle.cases("test")[:1], budget=64)  # fmt: skip
    assert record["status"] == "failed"
    assert record["reason"].startswith("BudgetExceeded")
    assert record["cost"]["rows"] == 60


def test_timeout_and_interrupt(tmp_path, tiny_bundle, isolated):
    """A case past the timeout fails and its worker is stopped; Ctrl-C in the harness propagates."""
    records = tiny_bundle.cases("test")[:2]
    body = f"import time\nif case.id == {records[1]['id']!r}:\n    time.sleep(60)\n" + ZEROS
    folder = submission(tmp_path, "sleeper", body)
    patient = isolated(folder, timeout=120)  # the interrupt must come first, however loaded the machine
    assert run_cases(patient, tiny_bundle, records[:1])[0]["status"] == "ok"
    # a background job of a non-interactive shell starts with SIGINT ignored: Ctrl-C must be Ctrl-C here
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            attribute(patient, tiny_bundle, records[1], 64)
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
    assert patient._worker is None  # stopped, not left running
    method = isolated(folder, timeout=4)
    slow, fast = run_cases(method, tiny_bundle, records[::-1])
    assert slow["status"] == "failed" and "longer than 4 s" in slow["reason"]
    assert fast["status"] == "ok"


def test_declaration_must_match_the_code(tmp_path, tiny_bundle, isolated):
    folder = submission(tmp_path, "declared-name", ZEROS, name="another-name")
    method = isolated(folder)
    out = run_cases(method, tiny_bundle, tiny_bundle.cases("test")[:2])
    assert all(r["status"] == "failed" and "declares 'declared-name'" in r["reason"] for r in out), out


def test_refuses_without_bubblewrap_unless_trusted(tmp_path, tiny_bundle, monkeypatch):
    monkeypatch.setenv(sandbox.BWRAP_ENV, "/nonexistent/bwrap")
    folder = submission(tmp_path, "plain", ZEROS)
    for source in (folder, "builtin:random"):
        with pytest.raises(sandbox.SandboxUnavailable, match="bubblewrap") as refused:
            IsolatedMethod(source)
        assert "--trust" in str(refused.value)
    method = IsolatedMethod(folder, trust=True)
    try:
        assert method._bwrap is None
        (record,) = run_cases(method, tiny_bundle, tiny_bundle.cases("test")[:1])
        assert record["status"] == "ok", record
    finally:
        method.close()


def test_a_venv_under_tmp_stays_visible_in_the_sandbox(monkeypatch):
    """/tmp is a fresh tmpfs, mounted before the Python roots are bound, so a checkout under /tmp still runs."""
    monkeypatch.setattr(sandbox, "_python_roots", lambda: ["/tmp/checkout/.venv"])
    args = sandbox.bwrap_command("bwrap", None)
    tmpfs = next(i for i in range(len(args) - 1) if args[i] == "--tmpfs" and args[i + 1] == "/tmp")
    bind = next(i for i in range(len(args) - 1) if args[i] == "--ro-bind" and args[i + 1] == "/tmp/checkout/.venv")
    assert tmpfs < bind


def test_the_worker_inherits_the_numeric_kernel_choice(monkeypatch):
    """A forced BLAS core type reaches the worker (else OpenBLAS autodetects another and kernel_shap's bits
    differ); credentials and other variables of the harness do not."""
    monkeypatch.setenv("OPENBLAS_CORETYPE", "Haswell")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "hunter2")
    args = sandbox.bwrap_command("bwrap", None)
    pairs = {args[i + 1]: args[i + 2] for i in range(len(args) - 2) if args[i] == "--setenv"}
    assert pairs["OPENBLAS_CORETYPE"] == "Haswell"
    assert "AWS_SECRET_ACCESS_KEY" not in pairs
    monkeypatch.delenv("OPENBLAS_CORETYPE")
    assert "OPENBLAS_CORETYPE" not in sandbox._env("/h", "/t", "/p")
