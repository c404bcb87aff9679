"""Linux CPU-list strings, as in sysfs ``cpulist`` files and ``numactl --physcpubind``."""

from __future__ import annotations

from collections.abc import Iterable


def parse(text: str) -> tuple[int, ...]:
    """Parse "0-3,8,10-11" (or the kernel's stride form "0-15:2") into a sorted tuple of unique
    ints; empty text is the empty tuple."""
    cpus: set[int] = set()
    text = text.strip()
    if not text:
        return ()
    for part in text.split(","):
        part = part.strip()
        if not part:
            raise ValueError(f"empty element in CPU list {text!r}")
        stride = 1
        if ":" in part:
            part, stride_text = part.split(":", 1)
            stride = int(stride_text)
            if stride <= 0:
                raise ValueError(f"bad stride in CPU list {text!r}")
        if "-" in part:
            lo_text, hi_text = part.split("-", 1)
            lo, hi = int(lo_text), int(hi_text)
            if lo > hi:
                raise ValueError(f"descending range {part!r} in CPU list {text!r}")
            cpus.update(range(lo, hi + 1, stride))
        else:
            value = int(part)
            if value < 0:
                raise ValueError(f"negative CPU in {text!r}")
            cpus.add(value)
    return tuple(sorted(cpus))


def format(cpus: Iterable[int]) -> str:
    """Format ints as the shortest kernel-style CPU list: (0, 1, 2, 3, 8) -> "0-3,8"."""
    values = sorted(set(cpus))
    parts: list[str] = []
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and values[j + 1] == values[j] + 1:
            j += 1
        parts.append(str(values[i]) if i == j else f"{values[i]}-{values[j]}")
        i = j + 1
    return ",".join(parts)
