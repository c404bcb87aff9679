"""measure.numerics: agreement of an optimized model's outputs with float32 eager, and the verdict
that flags a broken conversion. Synthetic arrays for every branch; one real small model."""

from __future__ import annotations

import math

import numpy as np
import pytest

from numa_effects.measure import numerics

RNG = np.random.default_rng(0)
REF = RNG.normal(size=(4, 1000)) * 3.0


def test_identical_outputs_agree_exactly():
    a = numerics.agreement(REF.copy(), REF)
    assert a["cosine"] == pytest.approx(1.0) and a["max_rel_err"] == 0 and a["top1_agree"] == 1
    assert a["finite"] and a["n"] == 4000
    assert numerics.verdict(a, "float32")["ok"]


def test_max_rel_err_is_the_largest_error_over_the_largest_reference_logit():
    y = REF.copy()
    y[2, 5] += 0.6
    a = numerics.agreement(y, REF)
    assert a["max_abs_err"] == pytest.approx(0.6)
    assert a["max_rel_err"] == pytest.approx(0.6 / np.abs(REF).max())


def test_bf16_like_rounding_passes_and_int8_like_noise_passes():
    bf16 = REF * (1 + RNG.normal(scale=2**-8, size=REF.shape))  # ~bf16's relative precision
    v = numerics.verdict(numerics.agreement(bf16, REF), "bfloat16")
    assert v["ok"], v
    int8 = REF + RNG.normal(scale=0.02 * 3, size=REF.shape)  # ~2 % of the logit scale
    a = numerics.agreement(int8, REF)
    assert 0.99 < a["cosine"] < 0.9999 and numerics.verdict(a, "int8")["ok"]
    assert not numerics.verdict(a, "float32")["ok"]  # far too loose for float32


@pytest.mark.parametrize(
    "garbage, reason",
    [
        (RNG.normal(size=REF.shape) * 3.0, "cosine"),  # unrelated outputs
        (-REF, "cosine"),  # a sign flip
        (REF * 40.0, "max_rel_err"),  # a wrong quantization scale: same direction, wrong size
        (np.roll(REF, 1, axis=1), "cosine"),  # a layout mix-up
    ],
)
def test_garbage_is_flagged(garbage, reason):
    v = numerics.verdict(numerics.agreement(garbage, REF), "int8")
    assert not v["ok"] and any(r.startswith(reason) for r in v["reasons"]), v


def test_nan_is_flagged_and_shapes_must_match():
    y = REF.copy()
    y[0, 0] = math.nan
    a = numerics.agreement(y, REF)
    assert not a["finite"] and math.isnan(a["cosine"])
    assert numerics.verdict(a, "bfloat16")["reasons"] == ["outputs contain NaN or infinity"]
    with pytest.raises(ValueError, match="shape"):
        numerics.agreement(REF[:2], REF)


def test_top1_is_reported_per_row_and_never_flags():
    y = REF.copy()
    row = y[1]
    i, j = np.argsort(row)[-2:]
    row[i], row[j] = row[j], row[i]  # swap the two largest logits of one row
    a = numerics.agreement(y, REF)
    assert a["top1_agree"] == 0.75
    assert numerics.verdict(a, "int8")["ok"]


def test_failure_message_names_the_reasons():
    result = {"agreement": numerics.agreement(-REF, REF)}
    result["verdict"] = numerics.verdict(result["agreement"], "int8")
    msg = numerics.failure_message(result)
    assert msg.startswith("int8 outputs disagree with float32 eager: cosine -1.00000 < 0.99")
    assert "not a speedup" in msg


def test_a_real_model_converted_to_bf16_agrees_and_a_broken_one_does_not():
    """ResNet-18 at 32x32: bf16 autocast agrees within the bounds; the same model with one
    convolution's weights negated (a broken conversion) is flagged."""
    import torch
    import torchvision

    torch.manual_seed(0)
    model = torchvision.models.resnet18(weights=None).eval()
    x = torch.randn(2, 3, 32, 32)
    ref = numerics.reference_output(model, x)

    def bf16(z):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return model(z)

    good = numerics.check(bf16, x, ref, "bfloat16")
    assert good["verdict"]["ok"], good
    assert good["agreement"]["output_dtype"] == "bfloat16"
    with torch.no_grad():
        model.layer4[1].conv2.weight.mul_(-1)
    bad = numerics.check(model, x, ref, "float32")
    assert not bad["verdict"]["ok"]


def test_the_reference_of_the_first_rows_is_the_full_batchs_first_rows():
    """A large batch pays for a reference of its first REFERENCE_ROWS images only: in eval mode
    each output row depends on its own image, so the compared rows are the same."""
    import torch
    import torchvision

    torch.manual_seed(0)
    model = torchvision.models.resnet18(weights=None).eval()
    x = torch.randn(numerics.REFERENCE_ROWS + 3, 3, 32, 32)
    ref = numerics.reference_output(model, x)
    assert ref.shape[0] == numerics.REFERENCE_ROWS
    with torch.inference_mode():
        full = model(x)
    got = numerics.judge(full, ref, "float32")
    assert got["verdict"]["ok"] and got["agreement"]["n"] == ref.numel()
    assert got["agreement"]["max_rel_err"] < 1e-5


def test_a_cell_whose_outputs_disagree_fails_with_cause_numerics_and_keeps_its_timings():
    """The model workload's check, as the front door applies it (``job.decide``): a broken
    conversion is a failed cell (no statistics, never a speedup); the timings stay in
    ``measurement``; an agreeing one is untouched."""
    from numa_effects.measure import job, runner
    from numa_effects.plan import placement, spec, topology

    good = numerics.judge([[1.0, 2.0, 3.0]], [[1.0, 2.0, 3.0]], "int8")
    bad = numerics.judge([[3.0, 2.0, 1.0]], [[-3.0, -2.0, -1.0]], "int8")
    plan = placement.plan(topology.current(), 1, "sequential")
    cell = {"model": "m", "opt": "int8", "placement": "sequential", "threads": 1, "batch_size": 1}
    one = spec.one(spec.MODEL, cell, plan, {})

    def record(num):
        measured = runner.Measured(
            stats={"median_s": 0.01},
            throughput={"ips": 100.0},
            measurement={"latencies_s": [0.01, 0.01]},
            report={"numerics": num},
            provenance={"command_line": "env ... numactl ..."},
        )
        return job.decide(one, measured, None)

    assert record(good).status == "ok"
    assert record(None).status == "ok"  # eager: its own reference
    got = record(bad)
    assert got.status == "failed" and got.stats is None and got.throughput is None
    assert got.failure.cause == "numerics" and got.summary["numerics"] == bad
    assert got.failure.message.startswith("int8 outputs disagree with float32 eager")
    assert got.measurement["latencies_s"] == [0.01, 0.01]
