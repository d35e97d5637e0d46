"""Starting a worker: under bubblewrap when it works, as a plain subprocess only when the user trusts the code.

The sandbox (``bwrap``) gives the worker no network and no other process (``--unshare-all``), no
capabilities, a fresh session, a minimal environment, and a filesystem of exactly what Python needs, read-only:
the system's ``/usr`` (and its ``/lib`` links), the Python installation and virtual environment, and the
halbench package (at ``/opt/halbench``). Writable are only two fresh tmpfs, ``/tmp`` and the scratch
directory it runs in, which also holds a read-only copy of the submission's ``method.py``. Task files,
results, other submissions and everything else of the repository are simply not there. It dies with the
harness. ``$HALBENCH_BWRAP`` names another ``bwrap`` (a path that does not exist simulates its absence).

Without a working bwrap, untrusted code is refused unless ``trust`` is set; then the same worker runs as a
plain subprocess: still its own process with the same protocol, but with the user's access to everything.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import halbench
from halbench.isolation.protocol import Channel

BWRAP_ENV = "HALBENCH_BWRAP"
SCRATCH = "/scratch"
PACKAGE_ROOT = "/opt/halbench"
METHOD_FILE = "method.py"
TMPFS_BYTES = 1 << 30
WORKER = ("-s", "-B", "-P", "-m", "halbench.isolation.worker")
# Variables that pick numeric kernels (BLAS core type, cache sizes, torch's CPU capability): the worker
# inherits them so a method's arithmetic (captum's regressions, scikit-learn) takes the same code paths
# inside as in the harness; without them OpenBLAS autodetects another core and the last bits differ.
KERNEL_VARS = (
    "OPENBLAS_CORETYPE",
    "OPENBLAS_L2_SIZE",
    "OPENBLAS_VERBOSE",
    "GOTOBLAS_CORETYPE",
    "MKL_CBWR",
    "MKL_ENABLE_INSTRUCTIONS",
    "MKL_DEBUG_CPU_TYPE",
    "ATEN_CPU_CAPABILITY",
    "NPY_DISABLE_CPU_FEATURES",
    "NPY_ENABLE_CPU_FEATURES",
)
SYSTEM_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/fonts", "/etc/localtime")


class SandboxUnavailable(RuntimeError):
    """No working bubblewrap, and the code is not trusted."""


@functools.lru_cache(maxsize=8)
def _probe(bwrap: str) -> str | None:
    """Why ``bwrap`` cannot sandbox here (None when it can)."""
    if not (os.path.isfile(bwrap) and os.access(bwrap, os.X_OK)):
        return f"{bwrap} is not an executable file"
    try:
        done = subprocess.run(
            [bwrap, "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "true"],
            capture_output=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{bwrap} cannot run: {exc}"
    if done.returncode:
        return f"{bwrap} fails here: {done.stderr.decode(errors='replace').strip()[:300]}"
    return None


def find_bwrap() -> tuple[str | None, str]:
    """The working bwrap to use, or None and why not."""
    configured = os.environ.get(BWRAP_ENV)
    path = configured if configured is not None else shutil.which("bwrap")
    if not path:
        return None, "bubblewrap (bwrap) is not installed"
    problem = _probe(path)
    return (None, problem) if problem else (path, "")


def choose(trust: bool) -> str | None:
    """The bwrap to run workers under; None (a plain subprocess) only when trusted. Refuses otherwise."""
    bwrap, why = find_bwrap()
    if bwrap is None and not trust:
        raise SandboxUnavailable(
            f"refusing to run untrusted code: {why}, so it cannot be sandboxed. Install Debian's bubblewrap "
            "(apt-get install bubblewrap), or pass --trust to run it as a plain subprocess with your own access "
            "to every file (only for code you have read)."
        )
    return bwrap


def _env(home: str, tmp: str, pythonpath: str) -> dict[str, str]:
    kernels = {key: os.environ[key] for key in KERNEL_VARS if key in os.environ}
    return kernels | {
        "PATH": "/usr/bin:/bin",
        "HOME": home,
        "TMPDIR": tmp,
        "LANG": "C.UTF-8",
        "PYTHONPATH": pythonpath,
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONNOUSERSITE": "1",
        "HALBENCH_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "MPLCONFIGDIR": f"{tmp}/matplotlib",
        "HF_HUB_OFFLINE": "1",
        "CUDA_VISIBLE_DEVICES": "",
    }


def _python_roots() -> list[str]:
    """The installation directories Python runs from (the venv and the interpreter it was made from)."""
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    roots.add(str(Path(sys.executable).resolve().parent.parent))
    return sorted(r for r in roots if not (r == "/usr" or r.startswith("/usr/")))


def bwrap_command(bwrap: str, method_file: Path | None) -> list[str]:
    """The bwrap command line that runs the worker (``method_file``, if any, appears as ``/scratch/method.py``)."""
    args = [bwrap, "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL", "--clearenv"]
    for key, value in _env("/tmp", "/tmp", PACKAGE_ROOT).items():
        args += ["--setenv", key, value]
    # /tmp first: the binds below then land inside it, so a venv or checkout under /tmp stays visible
    args += ["--size", str(TMPFS_BYTES), "--tmpfs", "/tmp"]
    args += ["--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    for path in SYSTEM_FILES:
        args += ["--ro-bind-try", path, path]
    for root in _python_roots():
        args += ["--ro-bind", root, root]
    args += ["--ro-bind", str(Path(halbench.__file__).resolve().parent), f"{PACKAGE_ROOT}/halbench"]
    args += ["--proc", "/proc", "--dev", "/dev"]
    args += ["--size", str(TMPFS_BYTES), "--tmpfs", SCRATCH]
    if method_file is not None:
        args += ["--ro-bind", str(method_file), f"{SCRATCH}/{METHOD_FILE}"]
    args += ["--chdir", SCRATCH, "--remount-ro", "/", sys.executable, *WORKER]
    return args


class WorkerProcess:
    """One running worker: its channel to the harness, and how to stop it and say why it stopped."""

    def __init__(self, method_file: Path | None, bwrap: str | None):
        self.sandboxed = bwrap is not None
        self.folder = Path(tempfile.mkdtemp(prefix="halbench-worker-"))
        copy = None
        if method_file is not None:
            copy = self.folder / METHOD_FILE
            shutil.copyfile(method_file, copy)
            copy.chmod(0o444)
        self.stderr_path = self.folder / "stderr.log"
        with open(self.stderr_path, "wb") as stderr:
            if bwrap is not None:
                command, env, cwd = bwrap_command(bwrap, copy), None, None
            else:
                command, env, cwd = self._plain(copy)
            self.process = subprocess.Popen(
                command,
                bufsize=0,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                env=env,
                cwd=cwd,
                start_new_session=True,  # Ctrl-C in the harness's terminal is the harness's alone
            )
        self.channel = Channel(self.process.stdout.fileno(), self.process.stdin.fileno())

    def _plain(self, copy: Path | None) -> tuple[list[str], dict[str, str], str]:
        """A trusted worker: the same command, in a scratch folder of its own, without the sandbox."""
        scratch = self.folder / "scratch"
        scratch.mkdir()
        if copy is not None:
            shutil.copyfile(copy, scratch / METHOD_FILE)
        packages = self.folder / "packages"
        packages.mkdir()
        (packages / "halbench").symlink_to(Path(halbench.__file__).resolve().parent)
        return [sys.executable, *WORKER], _env(str(scratch), str(scratch), str(packages)), str(scratch)

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self, grace: float = 0.0) -> None:
        """Stop the worker (after ``grace`` seconds to exit by itself) and remove its files."""
        if self.process.poll() is None and grace:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(grace)
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):  # its own session: the worker and anything it started
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            with contextlib.suppress(OSError):
                stream.close()
        shutil.rmtree(self.folder, ignore_errors=True)

    def exit_reason(self) -> str:
        """How the worker ended, in words, with the last line of what it wrote to stderr."""
        try:
            code = self.process.wait(2.0)
        except subprocess.TimeoutExpired:
            return "stopped answering"
        if code < 0 or (self.sandboxed and code > 128 and code - 128 in signal.valid_signals()):
            number = -code if code < 0 else code - 128
            what = f"was killed by signal {signal.Signals(number).name}"
        else:
            what = f"exited with status {code}"
        tail = self.stderr_tail()
        return f"{what}{f' (last output: {tail})' if tail else ''}"

    def stderr_tail(self, chars: int = 200) -> str:
        try:
            with open(self.stderr_path, "rb") as f:
                f.seek(max(0, f.seek(0, os.SEEK_END) - 4096))
                text = f.read().decode(errors="replace")
        except OSError:
            return ""
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        fatal = [line for line in lines if line.startswith("Fatal Python error")]  # faulthandler's crash report
        last = (fatal or lines or [""])[-1]
        return "".join(c if c.isprintable() else "?" for c in last)[-chars:]
