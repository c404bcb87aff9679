"""Which oneDNN kernels a model really ran: its ISA and the implementation and data types of each
primitive, read from oneDNN's verbose output around one untimed call.

oneDNN prints one ``onednn_verbose,...`` line per primitive it creates or executes, on the C
``stdout`` (file descriptor 1), not through Python's ``sys.stdout``. ``capture_fd1`` therefore
points fd 1 at a temporary file for the duration of the call; ``traced_call`` switches verbose
mode on (``torch.backends.mkldnn.verbose``) around exactly one call and ``parse`` turns the text
into a small dict::

    {"ran": True, "isa": "Intel AVX2 with ...", "n_lines": 40, "n_exec": 20,
     "primitives": [{"kind": "convolution", "impl": "brg_conv_fwd:avx2",
                     "src": "f32", "wei": "f32", "count": 20}, ...],
     "summary": "convolution brg_conv_fwd:avx2 f32/f32 x20"}

A call that ran no oneDNN primitive at all (bf16 on a CPU without AVX-512 falls back to ATen's
own kernels) is said explicitly: ``ran`` is False and ``summary`` is ``NO_PRIMITIVE``.

Verbose lines look like (oneDNN 3.x; older versions have no ``v1``, may carry a timestamp after
the prefix, and oneDNN 1.x wrote ``dnnl_verbose,exec,...`` with ``src_f32`` descriptors: all are
accepted)::

    onednn_verbose,v1,info,cpu,isa:Intel AVX2 with Intel DL Boost
    onednn_verbose,v1,primitive,exec,cpu,convolution,brg_conv_fwd:avx2,forward_inference,
        src:f32::blocked:acdb::f0 wei:f32:a:blocked:Acdb8a::f0 dst:f32::blocked:acdb::f0,...
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
    """Capture everything written to file descriptor 1 (C-level stdout, where oneDNN prints)
    while the block runs; the text is in ``box["text"]`` afterwards. Python's ``sys.stdout``
    is flushed first, so earlier prints are not captured, and the C library's buffers are
    flushed before fd 1 is restored, so no verbose line is lost or leaks out."""
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
    """Data type of memory argument ``name`` (``src``, ``wei``, ...) in a descriptor field
    like ``src:f32::blocked:acdb::f0 wei:s8:a:blocked:Acdb16a::f0``."""
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
    """One line for a table: the compute primitives first, e.g.
    ``convolution brg_conv_fwd:avx2 f32/f32 x20; reorder simple:any f32/- x2``."""
    if not primitives:
        return NO_PRIMITIVE
    order = sorted(primitives, key=lambda p: (p["kind"] not in COMPUTE_KINDS, -p["count"]))
    return "; ".join(
        f"{p['kind']} {p['impl']} {p['src'] or '-'}/{p['wei'] or '-'} x{p['count']}" for p in order
    )


def compute_dtypes(parsed: dict) -> list[str]:
    """The distinct ``src/wei`` data types of the compute primitives that ran, e.g.
    ``["u8/s8"]`` for an int8 model, ``["bf16/bf16"]`` for a native bf16 one."""
    seen = []
    for p in parsed.get("primitives", []):
        if p["kind"] in COMPUTE_KINDS:
            pair = f"{p['src'] or '-'}/{p['wei'] or '-'}"
            if pair not in seen:
                seen.append(pair)
    return seen


def traced_call(fn, *args, **kwargs) -> tuple[object, dict]:
    """Run ``fn(*args, **kwargs)`` once with oneDNN verbose on and fd 1 captured: the result
    and ``parse`` of what oneDNN printed. Meant for one untimed call after warm-up (the first
    call of a compiled or prepacked model also creates primitives, which is noise here)."""
    import torch

    with capture_fd1() as box, torch.backends.mkldnn.verbose(torch.backends.mkldnn.VERBOSE_ON):
        out = fn(*args, **kwargs)
    return out, parse(box["text"])


def onednn_takes_bf16() -> bool | None:
    """oneDNN's own answer whether it runs bf16 convolutions on this CPU (natively or emulated
    with AVX-512; ``plan.cpu.bf16_state`` tells which). None if this torch cannot say."""
    import torch

    check = getattr(torch.ops.mkldnn, "_is_mkldnn_bf16_supported", None)
    if check is None or not torch.backends.mkldnn.is_available():
        return None
    try:
        return bool(check())
    except RuntimeError:
        return None


def aten_ops(fn, *args, top: int = 5) -> list[dict]:
    """The ``top`` ATen operators by self CPU time of one call (torch.profiler): what ran when
    oneDNN did not, e.g. ``aten::_slow_conv2d_forward`` for bf16 without AVX-512."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        fn(*args)
    rows = sorted(prof.key_averages(), key=lambda e: -e.self_cpu_time_total)
    return [
        {"op": e.key, "count": int(e.count), "self_cpu_us": round(float(e.self_cpu_time_total), 1)}
        for e in rows[:top]
    ]


def aten_cpu_capability() -> str | None:
    """ATen's own vector dispatch level (``AVX2``, ``AVX512``, ...): the ISA of the kernels that
    run when oneDNN does not (no ``isa`` line is printed then)."""
    import torch

    try:
        return str(torch.backends.cpu.get_cpu_capability())
    except (AttributeError, RuntimeError):
        return None
