"""docs/deploy.md, "Building the model as measured in your program": the table lists every
optimization of the registry with its steps, each step has its code, and that code, run as a
user's program runs it, builds what the cell builds (``measure/workloads/model.py``): the same
kind of callable, input memory format and output dtype and shape (resnet18, 32 x 32 images,
one thread, no weights)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
from conftest import REPO

from numa_effects.plan import optimizations as opts

DOC = REPO / "docs" / "deploy.md"
SECTION = "### Building the model as measured in your program"
IMAGE = 32
# in one fresh process (threads can be set once): the documented code, then the cell's build
CHILD = """
import json, os, sys, torch
ns = {}
exec(sys.stdin.read(), ns)
from numa_effects.measure.workloads import model as m
fn, x, *_ = m.make(ns["name"], os.environ["NUMA_EFFECTS_OPT"], ns["batch"], IMAGE, 0, {})

def describe(f, z):
    with torch.inference_mode():
        y = f(z)
    cl = z.is_contiguous(memory_format=torch.channels_last) and not z.is_contiguous()
    return {"kind": type(f).__name__, "channels_last": cl, "dtype": str(y.dtype),
            "shape": list(y.shape)}

print(json.dumps([describe(ns["model"], ns["x"]), describe(fn, x)]))
""".replace("IMAGE", str(IMAGE))


def section() -> str:
    text = DOC.read_text()
    start = text.index(SECTION)
    end = text.find("\n## ", start)
    return text[start : end if end > 0 else None]


def blocks() -> tuple[str, dict[str, str]]:
    """(the prelude, {step: its code}) as the manual shows them."""
    text = section()
    prelude = re.search(r"```python\n(.*?)```", text, re.S)[1]
    steps = dict(re.findall(r"^`(\w+)`[^\n]*:\n\n```python\n(.*?)```", text, re.S | re.M))
    return prelude, steps


def test_the_table_is_the_registry_and_every_step_has_its_code():
    rows = re.findall(r"^\| `(\w+)` \| (.*) \|$", section(), re.M)
    want = {n: [f"`{s}`" for s in o.prepare] for n, o in opts.OPTIMIZATIONS.items()}
    got = {n: [] if steps == "none (eager)" else steps.split(", ") for n, steps in rows}
    assert got == want
    used = {s for o in opts.OPTIMIZATIONS.values() for s in o.prepare}
    assert set(blocks()[1]) == used


def program(opt: str) -> str:
    prelude, steps = blocks()
    prelude = prelude.replace("3, 224, 224", f"3, {IMAGE}, {IMAGE}")  # the tiny input
    assert f"3, {IMAGE}, {IMAGE}" in prelude
    return "\n".join([prelude, *(steps[s] for s in opts.OPTIMIZATIONS[opt].prepare)])


@pytest.mark.integration
@pytest.mark.parametrize("opt", list(opts.OPTIMIZATIONS))
def test_the_documented_code_builds_what_the_cell_builds(opt, tmp_path):
    entry = opts.OPTIMIZATIONS[opt]
    why = opts.skip_reason(entry, opts.availability(entry.requires))
    if why:
        pytest.skip(why)
    env = {**os.environ, "PYTHONPATH": str(REPO / "workflow" / "scripts")}
    env |= {"NUMA_EFFECTS_THREADS": "1", "NUMA_EFFECTS_INTEROP_THREADS": "1"}
    env |= {"NUMA_EFFECTS_MODEL": "resnet18", "NUMA_EFFECTS_BATCH": "1", "NUMA_EFFECTS_OPT": opt}
    env |= {"TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor"), "OMP_NUM_THREADS": "1"}
    got = subprocess.run(
        [sys.executable, "-c", CHILD], input=program(opt), capture_output=True, text=True,
        env=env, cwd=tmp_path, timeout=1200,
    )  # fmt: skip
    assert got.returncode == 0, got.stderr[-3000:]
    documented, measured = json.loads(got.stdout.splitlines()[-1])
    assert documented == measured
    # and what the registry says it computes in: bf16 outputs where bf16 autocast runs
    bf16 = entry.dtype == "bfloat16" or "autocast_bf16" in entry.prepare
    assert measured["dtype"] == ("torch.bfloat16" if bf16 else "torch.float32")
