"""Messages between the harness and an untrusted worker: a JSON header plus raw numeric buffers, never pickle.

The worker may be hostile, so the harness parses its bytes by rules of its own: a frame is a magic word, a
size-capped JSON header, and the raw bytes of plain numeric arrays whose dtype comes from an allow-list and
whose shape the header states. Nothing beyond JSON values and such arrays is ever rebuilt from what the
worker sends, and every read and write can carry a deadline, so a stalled worker cannot stall the harness.

Exceptions cross the pipe as a type name and a message (:func:`error_record`); :func:`rebuild_error`
raises them again on the other side by name, so a failure reads the same isolated as in-process.
"""

from __future__ import annotations

import contextlib
import json
import keyword
import math
import os
import select
import struct
import time
import traceback
from typing import Any

import numpy as np
import torch

MAGIC = b"HBW1"
MAX_HEADER = 64 << 20  # bytes of JSON per message
MAX_BUFFERS = 4 << 30  # bytes of arrays per message
MAX_NDIM = 8
MAX_DEPTH = 32
MAX_MESSAGE = 2000  # characters of an exception's message that cross
DTYPES = frozenset(
    ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "float32", "float64")
)
ARRAY = "\u0000array"  # the placeholder key for an array; refused as a key of any value sent
_PREFIX = struct.Struct("<4sI")


class ProtocolError(RuntimeError):
    """The other side sent something that is not a well-formed message."""


class ChannelClosed(ProtocolError):
    """The other side closed its end (it exited, or was killed)."""


class ChannelTimeout(TimeoutError):
    """A deadline passed while waiting for the other side."""


# ------------------------------------------------------------------------------------------------ values


def _encode(value: Any, buffers: list[np.ndarray], depth: int = 0) -> Any:
    if depth > MAX_DEPTH:
        raise TypeError("value nested too deeply to send")
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value
    if isinstance(value, np.generic):
        return _encode(value.item(), buffers, depth + 1)
    if isinstance(value, torch.Tensor):
        buffers.append(_plain(value.detach().cpu().contiguous().numpy()))
        return {ARRAY: len(buffers) - 1, "torch": True}
    if isinstance(value, np.ndarray):
        buffers.append(_plain(value))
        return {ARRAY: len(buffers) - 1}
    if isinstance(value, dict):
        if any(not isinstance(k, str) or k == ARRAY for k in value):
            raise TypeError("dictionary keys sent must be strings (and not the array placeholder)")
        return {k: _encode(v, buffers, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_encode(v, buffers, depth + 1) for v in value]
    raise TypeError(f"cannot send a {type(value).__name__}: only JSON values and numeric arrays cross")


def _plain(array: np.ndarray) -> np.ndarray:
    """A C-contiguous, native-order array of an allowed dtype (or a TypeError)."""
    if array.dtype.name not in DTYPES or array.ndim > MAX_NDIM:
        raise TypeError(f"cannot send an array of dtype {array.dtype} with {array.ndim} dimensions")
    return np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("="))


def _decode(value: Any, arrays: list[np.ndarray], allow_torch: bool, depth: int = 0) -> Any:
    if depth > MAX_DEPTH:
        raise ProtocolError("message nested too deeply")
    if isinstance(value, list):
        return [_decode(v, arrays, allow_torch, depth + 1) for v in value]
    if not isinstance(value, dict):
        return value
    if ARRAY in value:
        index = value[ARRAY]
        if type(index) is not int or not 0 <= index < len(arrays):
            raise ProtocolError("message refers to an array it does not carry")
        return torch.from_numpy(arrays[index]) if allow_torch and value.get("torch") is True else arrays[index]
    return {k: _decode(v, arrays, allow_torch, depth + 1) for k, v in value.items()}


def _layout(specs: Any) -> list[tuple[np.dtype, tuple[int, ...], int]]:
    """The arrays a header announces, checked: (dtype, shape, bytes) each, within the size cap."""
    if not isinstance(specs, list):
        raise ProtocolError("header has no array list")
    out, total = [], 0
    for spec in specs:
        if not (isinstance(spec, list) and len(spec) == 2 and spec[0] in DTYPES and isinstance(spec[1], list)):
            raise ProtocolError("malformed array description")
        shape = spec[1]
        if len(shape) > MAX_NDIM or any(type(n) is not int or not 0 <= n <= MAX_BUFFERS for n in shape):
            raise ProtocolError(f"bad array shape {shape!r}")
        dtype = np.dtype(spec[0])
        size = math.prod(shape) * dtype.itemsize
        total += size
        if total > MAX_BUFFERS:
            raise ProtocolError(f"message carries more than {MAX_BUFFERS} bytes of arrays")
        out.append((dtype, tuple(shape), size))
    return out


# ------------------------------------------------------------------------------------------------ the pipe


class Channel:
    """Framed messages over a pair of pipe descriptors; ``deadline`` (``time.monotonic``) bounds any wait."""

    def __init__(self, read_fd: int, write_fd: int, allow_torch: bool = False):
        self.read_fd, self.write_fd, self.allow_torch = read_fd, write_fd, allow_torch
        os.set_blocking(read_fd, False)
        os.set_blocking(write_fd, False)

    def send(self, message: dict, deadline: float | None = None) -> None:
        buffers: list[np.ndarray] = []
        body = _encode(message, buffers)
        layout = [[a.dtype.name, list(a.shape)] for a in buffers]
        header = json.dumps({"m": body, "b": layout}, separators=(",", ":")).encode()
        if len(header) > MAX_HEADER:
            raise TypeError(f"message header of {len(header)} bytes exceeds {MAX_HEADER}")
        self._write(_PREFIX.pack(MAGIC, len(header)) + header, deadline)
        for array in buffers:
            if array.size:
                self._write(memoryview(array).cast("B"), deadline)

    def recv(self, deadline: float | None = None) -> dict:
        magic, size = _PREFIX.unpack(self._read(_PREFIX.size, deadline))
        if magic != MAGIC or size > MAX_HEADER:
            raise ProtocolError("not a message frame")
        try:
            header = json.loads(bytes(self._read(size, deadline)))
        except (ValueError, RecursionError) as exc:
            raise ProtocolError(f"header is not JSON ({exc})") from None
        if not isinstance(header, dict):
            raise ProtocolError("header is not a JSON object")
        arrays = []
        for dtype, shape, nbytes in _layout(header.get("b")):
            data = self._read(nbytes, deadline) if nbytes else bytearray()
            arrays.append(np.frombuffer(data, dtype=dtype).reshape(shape) if nbytes else np.zeros(shape, dtype))
        message = _decode(header.get("m"), arrays, self.allow_torch)
        if not isinstance(message, dict) or not isinstance(message.get("op"), str):
            raise ProtocolError("message has no op")
        return message

    def close(self) -> None:
        for fd in {self.read_fd, self.write_fd}:
            with contextlib.suppress(OSError):
                os.close(fd)

    def _wait(self, fd: int, event: int, deadline: float | None) -> None:
        poller = select.poll()
        poller.register(fd, event)
        while True:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise ChannelTimeout("the other side did not answer in time")
            if poller.poll(None if left is None else max(1, int(left * 1000))):
                return

    def _read(self, size: int, deadline: float | None) -> bytearray:
        data = bytearray(size)
        view, got = memoryview(data), 0
        while got < size:
            self._wait(self.read_fd, select.POLLIN, deadline)
            try:
                n = os.readv(self.read_fd, [view[got:]])
            except BlockingIOError:
                continue
            if n == 0:
                raise ChannelClosed("the other side closed the channel")
            got += n
        return data

    def _write(self, data: bytes | memoryview, deadline: float | None) -> None:
        view, sent = memoryview(data), 0
        while sent < len(view):
            self._wait(self.write_fd, select.POLLOUT, deadline)
            try:
                sent += os.write(self.write_fd, view[sent:])
            except BlockingIOError:
                continue
            except (BrokenPipeError, ConnectionResetError):
                raise ChannelClosed("the other side closed the channel") from None


# ------------------------------------------------------------------------------------------------ errors


class RemoteError(Exception):
    """An exception raised on the other side, re-raised here under its type's name with its message."""

    def __init__(self, message: str, remote_traceback: str = ""):
        super().__init__(message)
        self.message = message
        self.remote_traceback = remote_traceback

    def __str__(self) -> str:
        return self.message


# Built-in exception types a remote error also derives from, so ``except ValueError`` catches it as in-process.
_BASES: dict[str, type[Exception]] = {
    cls.__name__: cls
    for cls in (ValueError, TypeError, KeyError, IndexError, LookupError, RuntimeError, AttributeError,
                ArithmeticError, ZeroDivisionError, AssertionError, NotImplementedError, OSError,
                FileNotFoundError, PermissionError, MemoryError, RecursionError, TimeoutError)
}  # fmt: skip
_CLASSES: dict[str, type[RemoteError]] = {}


def error_record(exc: BaseException, with_traceback: bool = True) -> dict:
    """What crosses the pipe of an exception: its type's name, its message and traceback, truncated."""
    message = str(exc)
    if len(message) > MAX_MESSAGE:
        message = message[: MAX_MESSAGE - 3] + "..."
    trace = "".join(traceback.format_exception(exc))[-4000:] if with_traceback else ""
    return {"type": type(exc).__name__[:100], "message": message, "traceback": trace}


def rebuild_error(record: Any, known: dict[str, type[Exception]] | None = None) -> Exception:
    """The exception ``record`` describes: a ``known`` type itself, else a :class:`RemoteError` of that name."""
    if not isinstance(record, dict):
        return ProtocolError("malformed error report")
    name, message = str(record.get("type", "")), str(record.get("message", ""))[:MAX_MESSAGE]
    trace = str(record.get("traceback", ""))[-4000:]
    if known and name in known:
        return known[name](message)
    if not name.isidentifier() or keyword.iskeyword(name) or len(name) > 100:
        name = "RemoteError"
    if name not in _CLASSES:
        bases = (RemoteError, _BASES[name]) if name in _BASES else (RemoteError,)
        _CLASSES[name] = type(name, bases, {"__module__": __name__})
    return _CLASSES[name](message, trace)


def json_scalars(values: Any, max_items: int = 64, max_text: int = 1000) -> dict[str, Any]:
    """The JSON scalars of a mapping (an Attribution's ``extras``), the rest dropped: all that may cross."""
    out: dict[str, Any] = {}
    if not isinstance(values, dict):
        return out
    for key, value in list(values.items())[:max_items]:
        if isinstance(value, np.generic):
            value = value.item()
        if isinstance(value, str):
            value = value[:max_text]
        if value is None or isinstance(value, bool | int | float | str):
            out[str(key)[:100]] = value
    return out
