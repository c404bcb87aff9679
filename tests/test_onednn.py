"""measure.onednn: oneDNN verbose text -> what ran. Unit tests on verbose text captured on this
machine (tests/fixtures/onednn/, written by its capture.py: ResNet-18, batch 1, 64x64, one call
after warm-up, per optimization) and on lines quoted from public oneDNN issues for the CPUs this
machine is not (AMX) and for oneDNN 1.x's format; integration tests capture for real."""

from __future__ import annotations

import ctypes
import os
import sys

import pytest
from conftest import FIXTURES

from numa_effects.measure import onednn

ONEDNN = FIXTURES / "onednn"


def parsed(opt: str) -> dict:
    return onednn.parse((ONEDNN / f"resnet18-{opt}.verbose.txt").read_text())


def test_compiled_float32_ran_every_convolution_through_onednn():
    p = parsed("compile")
    assert p["ran"] and p["isa"] == "Intel AVX2" and p["version"] == "v3.12.0"
    assert p["n_exec"] == 20 and p["n_lines"] == 27
    assert {(x["kind"], x["impl"], x["src"], x["wei"], x["count"]) for x in p["primitives"]} == {
        ("convolution", "brg_conv_fwd:avx2", "f32", "f32", 17),
        ("convolution", "brgconv_1x1:avx2", "f32", "f32", 3),
    }
    assert p["summary"].startswith("convolution brg_conv_fwd:avx2 f32/f32 x17")
    assert onednn.compute_dtypes(p) == ["f32/f32"]


def test_eager_float32_ran_one_convolution_through_onednn_and_reorders():
    p = parsed("none")
    assert p["n_exec"] == 3 and onednn.compute_dtypes(p) == ["f32/f32"]
    assert p["summary"].split("; ")[0] == "convolution jit:avx2 f32/f32 x1"  # compute first
    assert {x["kind"] for x in p["primitives"]} == {"convolution", "reorder"}


def test_int8_ran_u8_s8_kernels():
    p = parsed("int8")
    assert onednn.compute_dtypes(p) == ["u8/s8"]
    kinds = {(x["kind"], x["impl"]) for x in p["primitives"]}
    assert ("convolution", "jit_uni_int8:avx2") in kinds and ("matmul", "gemm:jit") in kinds


def test_bf16_without_avx512_ran_no_onednn_primitive_and_says_so():
    for opt in ("bf16", "bf16_eager"):
        p = parsed(opt)
        assert p["ran"] is False and p["n_lines"] == 0 and p["isa"] is None
        assert p["summary"] == onednn.NO_PRIMITIVE == "no oneDNN primitive ran"
        assert onednn.compute_dtypes(p) == []


# https://github.com/uxlfoundation/oneDNN/issues/2088 (benchdnn, bf16 convolution on AMX)
AMX_BF16 = (
    "onednn_verbose,v1,primitive,exec,cpu,convolution,brg_conv_fwd:avx10_1_512_amx,"
    "forward_training,src:bf16:a:blocked:acdb::f0 wei:bf16:a:blocked:AcdB16a2b::f0 "
    "bia:bf16:a:blocked:a::f0 dst:bf16:a:blocked:acdb::f0,attr-post-ops:eltwise_relu:0:1,"
    "alg:convolution_direct,mb1_ic16oc16_ih208oh208kh3sh1dh0ph1_iw32ow32kw3sw1dw0pw1,0.0310059"
)
# https://github.com/uxlfoundation/oneDNN/issues/832 (oneDNN v1.6, Skylake-SP)
V16 = """dnnl_verbose,info,oneDNN v1.6.0 (commit 8186817fa59b97c602944f4ff46ce9b5b63d217c)
dnnl_verbose,info,cpu,runtime:OpenMP
dnnl_verbose,info,cpu,isa:Intel AVX-512 with AVX512BW, AVX512VL, and AVX512DQ extensions
dnnl_verbose,info,gpu,runtime:none
dnnl_verbose,create:cache_miss,cpu,convolution,jit:avx512_common,forward_inference,\
src_f32::blocked:abcd:f0 wei_f32::blocked:Acdb16a:f0 bia_undef::undef::f0 \
dst_f32::blocked:aBcd16b:f0,,alg:convolution_direct,mb1_ic3oc64_ih224oh112kh7sh2dh0ph3_\
iw224ow112kw7sw2dw0pw3,0.573975
dnnl_verbose,exec,cpu,convolution,jit:avx512_common,forward_inference,\
src_f32::blocked:abcd:f0 wei_f32::blocked:Acdb16a:f0 bia_undef::undef::f0 \
dst_f32::blocked:aBcd16b:f0,,alg:convolution_direct,mb1_ic3oc64_ih224oh112kh7sh2dh0ph3_\
iw224ow112kw7sw2dw0pw3,0.988037
"""


def test_an_amx_bf16_line_from_a_sapphire_rapids_class_cpu():
    p = onednn.parse(AMX_BF16 + "\n")
    assert p["primitives"] == [
        {
            "kind": "convolution",
            "impl": "brg_conv_fwd:avx10_1_512_amx",
            "src": "bf16",
            "wei": "bf16",
            "count": 1,
        }
    ]
    assert onednn.compute_dtypes(p) == ["bf16/bf16"]


def test_the_oneDNN_1_x_format_is_read_too():
    p = onednn.parse(V16)
    assert p["version"] == "v1.6.0" and p["isa"].startswith("Intel AVX-512 with AVX512BW")
    assert p["n_lines"] == 6 and p["n_exec"] == 1  # the create line is not an execution
    assert p["summary"] == "convolution jit:avx512_common f32/f32 x1"


def test_lines_that_are_not_onednn_are_ignored_and_timestamps_skipped():
    text = (
        "hello\nonednn_verbose,1700000000.1,primitive,exec,cpu,reorder,jit:uni,undef,"
        "src:f32::blocked:abcd::f0 dst:bf16::blocked:abcd::f0,,,2x3,0.01\nnot,onednn\n"
    )
    p = onednn.parse(text)
    assert (p["n_lines"], p["n_exec"]) == (1, 1)
    assert p["primitives"][0]["src"] == "f32" and p["primitives"][0]["wei"] is None
    assert p["summary"] == "reorder jit:uni f32/- x1"


def test_capture_fd1_takes_what_c_code_prints_and_nothing_leaks(capfd):
    libc = ctypes.CDLL(None)
    print("before", flush=True)
    with onednn.capture_fd1() as box:
        libc.printf(b"from C, buffered\n")  # stays in stdio's buffer until the flush
        os.write(1, b"raw fd 1\n")
    print("after", flush=True)
    # stdio's buffer is flushed at the end, so only the set of lines is fixed
    assert sorted(box["text"].splitlines()) == ["from C, buffered", "raw fd 1"]
    out = capfd.readouterr().out
    assert "before" in out and "after" in out and "raw fd 1" not in out


# -- real captures -----------------------------------------------------------------------------
@pytest.mark.integration
def test_a_real_convolution_is_traced():
    """A ResNet stem convolution (7x7, stride 2): eager PyTorch sends it to oneDNN (at one
    thread it keeps many small 3x3 convolutions on its own kernels)."""
    import torch

    torch.set_num_threads(1)
    conv = torch.nn.Conv2d(3, 16, 7, stride=2, padding=3).eval()
    x = torch.randn(1, 3, 32, 32)
    with torch.inference_mode():
        conv(x)
        y, p = onednn.traced_call(conv, x)
    assert y.shape == (1, 16, 16, 16)
    assert p["ran"] and p["isa"] and onednn.compute_dtypes(p) == ["f32/f32"], p
    print(p["summary"], file=sys.stderr)


@pytest.mark.integration
def test_the_onednn_bf16_probe_agrees_with_the_prediction_from_the_flags():
    from numa_effects.plan import cpu

    probe = onednn.onednn_takes_bf16()
    if probe is None:
        pytest.skip("this torch cannot say whether oneDNN takes bf16")
    flags = cpu.read_cpuinfo().flags
    assert probe == cpu.onednn_bf16_predicted(flags)
    assert onednn.aten_cpu_capability()


@pytest.mark.integration
def test_bf16_without_onednn_runs_atens_own_kernels():
    import torch

    from numa_effects.plan import cpu

    if onednn.onednn_takes_bf16() is not False:
        pytest.skip("oneDNN takes bf16 on this CPU: no ATen fallback to see")
    assert cpu.of_machine(onednn_bf16=False).bf16 == "aten_fallback"
    conv = torch.nn.Conv2d(16, 16, 3, padding=1).eval()
    x = torch.randn(1, 16, 14, 14)

    def f(z):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return conv(z)

    with torch.inference_mode():
        y, p = onednn.traced_call(f, x)
        ops = [o["op"] for o in onednn.aten_ops(f, x, top=10)]
    assert y.dtype == torch.bfloat16 and not p["ran"]
    assert any("conv" in o for o in ops), ops
