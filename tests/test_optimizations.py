"""plan.optimizations: the registry's precision entries, their requirements (skip reasons), which
CPUs run them natively (``native_on``, ``precision_note`` on real captured cpuinfo), and, as
integration tests, each entry's ``prepare`` steps run for real by the model workload
(``measure.workloads.model.optimize``) on ResNet-18 at 32x32 in its own process (as in a cell: one
optimization per process), checked against float32 eager and traced through oneDNN."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import FIXTURES, REPO

from numa_effects.measure.workloads import model as model_workload
from numa_effects.plan import cpu
from numa_effects.plan import optimizations as opts

OPT = opts.OPTIMIZATIONS


def caps(name: str) -> cpu.Capabilities:
    return cpu.capabilities(cpu.read_cpuinfo(str(FIXTURES / "cpu" / f"{name}.cpuinfo")))


def test_each_entry_carries_dtype_graph_cache_label_and_colour():
    assert list(OPT) == [
        "none",
        "script",
        "channels_last",
        "compile",
        "bf16",
        "bf16_aot",
        "bf16_eager",
        "int8",
        "int8_bf16",
    ]
    table = {n: (o.dtype, o.graph, o.compile_cache) for n, o in OPT.items()}
    assert table["compile"] == ("float32", "inductor", True)
    assert table["bf16"] == ("bfloat16", "inductor", True)
    assert table["bf16_eager"] == ("bfloat16", "eager", False)
    assert table["bf16_aot"] == ("bfloat16", "aoti", True)
    assert OPT["bf16_aot"].native == "bf16" and OPT["bf16_aot"].requires == ("cxx",)
    assert table["int8"] == table["int8_bf16"] == ("int8", "inductor", True)
    assert all(o.graph != "inductor" or o.compile_cache for o in OPT.values())
    colors = [o.color for o in OPT.values()]
    assert None not in colors and len(set(colors)) == len(colors)
    assert len({o.legend for o in OPT.values()}) == len(OPT)
    assert OPT["bf16"].bytes_per_element == 2 and OPT["int8"].bytes_per_element == 1


def test_every_step_an_entry_names_is_one_the_model_workload_runs():
    """The registry is metadata: its ``prepare`` names steps, the model workload runs them
    (``STEPS``); a compiled entry has a step that sets inductor up first."""
    assert all(set(o.prepare) <= set(model_workload.STEPS) for o in OPT.values())
    for o in OPT.values():
        compiled = any(s in model_workload.COMPILED for s in o.prepare)
        assert compiled == (o.graph in ("inductor", "aoti")), o.name
    assert OPT["none"].prepare == () and OPT["bf16"].prepare[-1] == "autocast_bf16"


def test_requirements_give_a_skip_reason_with_the_install_line():
    everything = {name: True for name in opts.REQUIREMENTS}
    assert all(opts.skip_reason(o, everything) is None for o in OPT.values())
    reason = opts.skip_reason(OPT["int8"], {"cxx": True, "torchao": False})
    assert reason.startswith("optimization int8 needs torchao (install: pip install torchao==")
    reason = opts.skip_reason(OPT["bf16"], {})
    assert "needs cxx" in reason and "apt-get install g++" in reason
    assert opts.skip_reason(OPT["bf16_eager"], {}) is None  # eager needs nothing
    assert opts.skip_reason(OPT["none"], {}) is None


def test_availability_asks_only_for_known_requirements():
    got = opts.availability()
    assert set(got) == set(opts.REQUIREMENTS) and all(isinstance(v, bool) for v in got.values())
    assert opts.availability(["cxx"]).keys() == {"cxx"}


@pytest.mark.parametrize(
    "cpuinfo, bf16, int8",
    [
        ("amd-epyc-zen3-kvm", False, False),
        ("intel-xeon-gold-6326-icelake", False, True),
        ("amd-epyc-9654-zen4", True, True),
        ("intel-xeon-8480-sapphirerapids", True, True),
    ],
)
def test_native_on_follows_the_cpu(cpuinfo, bf16, int8):
    c = caps(cpuinfo)
    assert opts.native_on(OPT["bf16"], c) is bf16 and opts.native_on(OPT["bf16_eager"], c) is bf16
    assert opts.native_on(OPT["int8"], c) is int8
    assert opts.native_on(OPT["compile"], c) and opts.native_on(OPT["none"], c)
    assert opts.native_on(OPT["bf16"], c.to_dict()) is bf16  # a result's recorded dict works too


def test_a_non_native_precision_carries_a_note():
    note = opts.precision_note(OPT["bf16"], caps("amd-epyc-zen3-kvm"))
    assert note.startswith("bf16 aten_fallback: oneDNN refuses bf16 here")
    note = opts.precision_note(OPT["bf16_eager"], caps("intel-xeon-gold-6326-icelake"))
    assert note.startswith("bf16 onednn_emulated: oneDNN emulates bf16 with AVX-512")
    assert opts.precision_note(OPT["int8"], caps("amd-epyc-zen3-kvm")).startswith("int8 no_vnni")
    assert opts.precision_note(OPT["bf16"], caps("amd-epyc-9654-zen4")) is None
    assert opts.precision_note(OPT["script"], caps("amd-epyc-zen3-kvm")) is None


# -- real prepare, one process per optimization --------------------------------------------------
CHILD = """
import json, sys, time, torch, torchvision
from numa_effects.measure import numerics, onednn
from numa_effects.measure.workloads import model as workload
from numa_effects.plan.optimizations import OPTIMIZATIONS
name, cache = sys.argv[1], sys.argv[2]
torch.set_num_threads(1)
torch.manual_seed(0)
model = torchvision.models.resnet18(weights=None).eval()
x = torch.randn(1, 3, 32, 32, generator=torch.Generator().manual_seed(0))
ref = numerics.reference_output(model, x)
t0 = time.perf_counter()
with torch.inference_mode():  # as the model workload's convert
    fn, x = workload.optimize(name, model, x, {"compile_cache_dir": cache})
t1 = time.perf_counter()
checked = numerics.check(fn, x, ref, OPTIMIZATIONS[name].dtype)
t2 = time.perf_counter()
with torch.inference_mode():
    _, trace = onednn.traced_call(fn, x)
print(json.dumps({"checked": checked, "trace": trace, "prepare_s": t1 - t0,
                  "first_call_s": t2 - t1, "freezing": torch._inductor.config.freezing}))
"""


def run_child(name: str, cache) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "workflow" / "scripts")])}
    if os.environ.get("PYTHONPATH"):
        env["PYTHONPATH"] += os.pathsep + os.environ["PYTHONPATH"]
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, name, str(cache)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    print(name, {k: out[k] for k in ("prepare_s", "first_call_s")}, out["trace"]["summary"])
    return out


def _needs(name: str):
    reason = opts.skip_reason(OPT[name], opts.availability())
    if reason:
        pytest.skip(reason)


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("inductor-cache")


@pytest.mark.integration
def test_compile_freezes_and_runs_float32_through_onednn(cache):
    _needs("compile")
    out = run_child("compile", cache)
    assert out["freezing"] and out["checked"]["verdict"]["ok"], out["checked"]
    assert out["checked"]["agreement"]["max_rel_err"] < 1e-4
    assert out["trace"]["ran"] and set(cpu_dtypes(out)) == {"f32/f32"}


def cpu_dtypes(out: dict) -> list[str]:
    from numa_effects.measure import onednn

    return onednn.compute_dtypes(out["trace"])


def _bf16_trace_matches_this_cpu(out: dict):
    from numa_effects.measure import onednn

    state = cpu.of_machine(onednn_bf16=onednn.onednn_takes_bf16()).bf16
    if state == "aten_fallback":
        assert not out["trace"]["ran"], out["trace"]["summary"]  # nothing through oneDNN
    else:
        assert "bf16/bf16" in cpu_dtypes(out), out["trace"]["summary"]


@pytest.mark.integration
def test_bf16_compiled_outputs_bf16_that_agree_with_float32(cache):
    _needs("bf16")
    out = run_child("bf16", cache)
    assert out["checked"]["verdict"]["ok"], out["checked"]
    assert out["checked"]["agreement"]["output_dtype"] == "bfloat16" and out["freezing"]
    _bf16_trace_matches_this_cpu(out)


@pytest.mark.integration
def test_bf16_eager_needs_no_compiler_and_agrees(cache):
    out = run_child("bf16_eager", cache)
    assert out["checked"]["verdict"]["ok"] and not out["freezing"]
    assert out["checked"]["agreement"]["output_dtype"] == "bfloat16"
    assert out["first_call_s"] < 20  # no compilation hidden in the first call
    _bf16_trace_matches_this_cpu(out)


@pytest.mark.integration
def test_int8_is_calibrated_quantized_compiled_and_runs_u8_s8_kernels(cache):
    _needs("int8")
    out = run_child("int8", cache)
    agree = out["checked"]["agreement"]
    assert out["checked"]["verdict"]["ok"], out["checked"]
    assert agree["cosine"] < 0.99999  # really quantized: not bit-equal to float32
    assert cpu_dtypes(out) == ["u8/s8"], out["trace"]["summary"]


@pytest.mark.integration
def test_int8_mixed_with_bf16_keeps_int8_kernels_and_outputs_bf16(cache):
    _needs("int8_bf16")
    out = run_child("int8_bf16", cache)
    assert out["checked"]["verdict"]["ok"], out["checked"]
    assert out["checked"]["agreement"]["output_dtype"] == "bfloat16"
    assert "u8/s8" in cpu_dtypes(out), out["trace"]["summary"]


@pytest.mark.integration
def test_bf16_aot_is_built_by_the_first_process_and_loaded_by_the_next(tmp_path):
    """Two processes of the same cell shape share one AOTInductor package in the run's compile
    cache: the first exports and compiles it (its conversion holds that), the second only
    loads it (no compilation in its conversion or its first call); both run bf16 through
    oneDNN where this CPU does and agree with float32 eager."""
    _needs("bf16_aot")
    cache = tmp_path / "cache"
    first = run_child("bf16_aot", cache)
    packages = sorted((cache / model_workload.AOT_FOLDER).glob("*.pt2"))
    assert len(packages) == 1, packages
    built = packages[0].stat().st_mtime_ns
    second = run_child("bf16_aot", cache)
    assert sorted((cache / model_workload.AOT_FOLDER).glob("*.pt2")) == packages
    assert packages[0].stat().st_mtime_ns == built  # loaded, not rebuilt
    assert second["prepare_s"] < first["prepare_s"] / 3, (first["prepare_s"], second["prepare_s"])
    for out in (first, second):
        assert out["checked"]["verdict"]["ok"], out["checked"]
        assert out["checked"]["agreement"]["output_dtype"] == "bfloat16"
        assert out["freezing"]
        _bf16_trace_matches_this_cpu(out)
    assert second["checked"]["agreement"] == first["checked"]["agreement"]


def test_an_aot_package_is_keyed_by_weights_input_and_threads():
    """``aot_package_key``: the same model and input give the same key; other weights, another
    input shape or memory format, another thread count each give another (a package is
    compiled code with its weights inside, its kernels generated for one thread count)."""
    import torch

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU()).eval()
    x = torch.randn(1, 3, 8, 8)
    key = model_workload.aot_package_key(model, x)
    assert key == model_workload.aot_package_key(model, x.clone())
    assert key != model_workload.aot_package_key(model, torch.randn(2, 3, 8, 8))
    assert key != model_workload.aot_package_key(model, x.to(memory_format=torch.channels_last))
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(threads + 1)
        assert key != model_workload.aot_package_key(model, x)
    finally:
        torch.set_num_threads(threads)
    with torch.no_grad():
        model[0].weight[0, 0, 0, 0] += 1.0
    assert key != model_workload.aot_package_key(model, x)
