"""Which oneDNN kernels a model really ran: its ISA and the implementation and data types of each
primitive, read from oneDNN's verbose output around one untimed call (``traced_call``).

oneDNN prints one line per primitive on the C ``stdout`` (fd 1), not through ``sys.stdout``, so
``capture_fd1`` points fd 1 at a temporary file. A line looks like (older versions have no
``v1``, may carry a timestamp, or write ``dnnl_verbose,exec,...`` with ``src_f32``: all are
accepted)::

    onednn_verbose,v1,primitive,exec,cpu,convolution,brg_conv_fwd:avx2,forward_inference,
        src:f32::blocked:acdb::f0 wei:f32:a:blocked:Acdb8a::f0 dst:f32::blocked:acdb::f0,...

A call that ran no oneDNN primitive (bf16 without AVX-512 falls back to ATen's own kernels) is
said explicitly: ``ran`` is False and ``summary`` is ``NO_PRIMITIVE``.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections import Counter

PREFIX = "onednn_verbose"
PREFIXES = (PREFIX, "dnnl_verbose")  # oneDNN >= 2.3 | before (torch < 1.10)
DTYPES = ("f32", "bf16", "f16", "s8", "u8", "s32", "f64", "undef")
NO_PRIMITIVE = "no oneDNN primitive ran"
# Primitive kinds that carry the arithmetic (the rest move data: reorder, eltwise, ...).
COMPUTE_KINDS = ("convolution", "matmul", "inner_product", "deconvolution")


@contextlib.contextmanager
def capture_fd1():
    """Capture what is written to fd 1 while the block runs, into ``box["text"]``; Python's and
    the C library's buffers are flushed on both sides, so no line is lost or leaks out."""
    import ctypes

    libc = ctypes.CDLL(None)
    sys.stdout.flush()
    libc.fflush(None)
    saved = os.dup(1)
    box: dict = {"text": ""}
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        os.dup2(tmp.fileno(), 1)
        try:
            yield box
        finally:
            sys.stdout.flush()
            libc.fflush(None)
            os.dup2(saved, 1)
            os.close(saved)
            tmp.seek(0)
            box["text"] = tmp.read().decode(errors="replace")


def _fields(line: str) -> list[str] | None:
    """The comma-separated fields after the prefix, version marker and timestamp."""
    parts = line.strip().split(",")
    if not parts or parts[0] not in PREFIXES:
        return None
    rest = parts[1:]
    while rest and rest[0] not in ("info", "primitive", "graph", "common", "error", "exec"):
        rest = rest[1:]  # "v1", a timestamp, ...
    if rest[:1] == ["exec"]:  # oneDNN 1.x/2.x: dnnl_verbose,exec,cpu,convolution,...
        rest = ["primitive", *rest]
    return rest


def _dtype(descriptors: str, name: str) -> str | None:
    """Data type of memory argument ``name`` (``src``, ``wei``, ...) in a descriptor field."""
    for desc in descriptors.split():
        key, _, rest = desc.partition(":")
        if key == name:
            return rest.split(":", 1)[0] or None
        if key.startswith(name + "_"):
            suffix = key[len(name) + 1 :]
            # oneDNN 1.x wrote the type into the name: src_f32::blocked:abcd:f0
            return suffix if suffix in DTYPES else (rest.split(":", 1)[0] or None)
    return None


def parse(text: str) -> dict:
    """oneDNN verbose text -> {ran, isa, version, n_lines, n_exec, primitives, summary}."""
    isa = version = None
    n_lines = n_exec = 0
    counts: Counter = Counter()
    for line in text.splitlines():
        fields = _fields(line)
        if fields is None:
            continue
        n_lines += 1
        if fields[:1] == ["info"]:
            joined = ",".join(fields)
            if "isa:" in joined and isa is None:
                isa = joined.split("isa:", 1)[1].strip()
            elif "oneDNN v" in joined and version is None:
                version = joined.split("oneDNN ", 1)[1].split(" ", 1)[0]
            continue
        if fields[:2] != ["primitive", "exec"] or len(fields) < 7:
            continue
        n_exec += 1
        # primitive,exec,<engine>,<kind>,<impl>,<prop>,<memory descriptors>,...
        kind, impl, descriptors = fields[3], fields[4], fields[6]
        counts[(kind, impl, _dtype(descriptors, "src"), _dtype(descriptors, "wei"))] += 1
    primitives = [
        {"kind": k, "impl": i, "src": s, "wei": w, "count": n}
        for (k, i, s, w), n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0][:2]))
    ]
    return {
        "ran": n_exec > 0,
        "isa": isa,
        "version": version,
        "n_lines": n_lines,
        "n_exec": n_exec,
        "primitives": primitives,
        "summary": summary(primitives),
    }


def summary(primitives: list[dict]) -> str:
    """One line for a table, the compute primitives first (``convolution ... f32/f32 x20``)."""
    if not primitives:
        return NO_PRIMITIVE
    order = sorted(primitives, key=lambda p: (p["kind"] not in COMPUTE_KINDS, -p["count"]))
    return "; ".join(
        f"{p['kind']} {p['impl']} {p['src'] or '-'}/{p['wei'] or '-'} x{p['count']}" for p in order
    )


def compute_dtypes(parsed: dict) -> list[str]:
    """The distinct ``src/wei`` data types of the compute primitives that ran (``u8/s8``)."""
    pairs = (
        f"{p['src'] or '-'}/{p['wei'] or '-'}"
        for p in parsed.get("primitives", [])
        if p["kind"] in COMPUTE_KINDS
    )
    return list(dict.fromkeys(pairs))


def traced_call(fn, *args) -> tuple[object, dict]:
    """(result, ``parse`` of what oneDNN printed) of one call with verbose on; meant for an
    untimed call after warm-up (a first call also creates primitives)."""
    import torch

    with capture_fd1() as box, torch.backends.mkldnn.verbose(torch.backends.mkldnn.VERBOSE_ON):
        out = fn(*args)
    return out, parse(box["text"])


def onednn_takes_bf16() -> bool | None:
    """oneDNN's own answer whether it runs bf16 convolutions here (None: cannot say)."""
    import torch

    check = getattr(torch.ops.mkldnn, "_is_mkldnn_bf16_supported", None)
    if check is None or not torch.backends.mkldnn.is_available():
        return None
    try:
        return bool(check())
    except RuntimeError:
        return None


def aten_ops(fn, *args, top: int = 5) -> list[dict]:
    """The ``top`` ATen operators by self CPU time of one call: what ran when oneDNN did not."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        fn(*args)
    rows = sorted(prof.key_averages(), key=lambda e: -e.self_cpu_time_total)
    return [
        {"op": e.key, "count": int(e.count), "self_cpu_us": round(float(e.self_cpu_time_total), 1)}
        for e in rows[:top]
    ]


def aten_cpu_capability() -> str | None:
    """ATen's own vector dispatch level (``AVX2``, ``AVX512``, ...)."""
    import torch

    try:
        return str(torch.backends.cpu.get_cpu_capability())
    except (AttributeError, RuntimeError):
        return None
