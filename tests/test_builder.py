"""measure.builder: a cell that does not compile imports its ResNet module alone (no
``import torchvision``, no ``torch._dynamo``), and gets the same model as through the package.

Each case runs in a fresh interpreter (what is imported is the point)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from numa_effects.measure import builder

SCRIPTS = Path(__file__).resolve().parents[1] / "workflow" / "scripts"

PROBE = """
import json, sys, torch
from numa_effects.measure import builder
torch.manual_seed(0)
model, how = builder.get_model({name!r}, {graph!r})
model = model.eval()
x = torch.randn(2, 3, 32, 32, generator=torch.Generator().manual_seed(0))
with torch.inference_mode():
    y = model(x)
if {graph!r} == "torchscript":
    s = torch.jit.freeze(torch.jit.script(model))
    with torch.inference_mode():
        ys = s(x)
    assert torch.allclose(ys, y, rtol=1e-3, atol=1e-4), float((ys - y).abs().max())
print(json.dumps({{
    "how": how,
    "dynamo": "torch._dynamo" in sys.modules,
    "ops": "torchvision.ops" in sys.modules,
    "cls": type(model).__module__ + "." + type(model).__qualname__,
    "params": sum(p.numel() for p in model.parameters()),
    "state": [float(v.double().sum()) for v in model.state_dict().values()][:40],
    "out": y.double().sum().item(),
    "version": sys.modules["torchvision"].__version__,
}}))
"""


def probe(name: str, graph: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", PROBE.format(name=name, graph=graph)],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(SCRIPTS), "PATH": "/usr/bin:/bin"},
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_rule_follows_the_graph_mode_and_the_model_family():
    assert builder.lean_possible("resnet50", "eager")
    assert builder.lean_possible("wide_resnet50_2", "torchscript")
    assert not builder.lean_possible("resnet50", "inductor")  # compiles: dynamo anyway
    assert not builder.lean_possible("mobilenet_v2", "eager")  # its module needs torchvision.ops


def test_lean_import_gives_the_packages_model_without_the_compiler():
    """TorchScript: the eager model's output, and its scripted and frozen form agree with it."""
    lean = probe("resnet18", "torchscript")
    assert lean["how"] == "lean" and not lean["dynamo"] and not lean["ops"]
    # the same model as `import torchvision` gives: the class, every parameter, the output
    full = probe("resnet18", "inductor")  # a compiling graph imports the package
    assert full["how"] == "package" and full["dynamo"]
    for key in ("cls", "params", "state", "out", "version"):
        assert lean[key] == full[key], key
    assert lean["cls"] == "torchvision.models.resnet.ResNet"
