"""How far an optimized model's outputs are from the float32 eager model's on the same input: a
sanity check of the conversion, not an accuracy result (the weights are random).

What can go wrong is the conversion itself (wrong quantization scales, a layout mix-up, a
dropped bias, NaNs), which shows as outputs unrelated to the reference: ``cosine`` of the
flattened logits (unrelated outputs are near 0), ``max_rel_err`` (``max |y - ref| / max |ref|``:
by the largest logit, so logits near zero do not inflate it) and ``top1_agree`` (reported,
never used to flag: random weights give near-ties that a correct conversion may flip).

``verdict`` flags a conversion below ``THRESHOLDS``. Measured (ResNet-18/50): bf16 cos 0.99998,
max_rel_err 0.004-0.005; int8 PT2E cos 0.9997, ~0.02; compiled float32 1 - cos < 1e-6. The bounds
sit 10-30x beyond those, so rounding never trips them, while anything worse is not a faster
version of the same model.
"""

from __future__ import annotations

import math

# dtype -> (minimum cosine, maximum max_rel_err)
THRESHOLDS = {
    "float32": (0.9999, 1e-3),
    "bfloat16": (0.99, 0.1),
    "float16": (0.99, 0.1),
    "int8": (0.99, 0.1),
}


def _array(t):
    """float64 numpy array of a tensor or array-like (bf16 tensors cast through float32)."""
    import numpy as np

    if hasattr(t, "detach"):
        t = t.detach().float().cpu().numpy()
    return np.asarray(t, dtype=np.float64)


def agreement(y, ref) -> dict:
    """Cosine, max relative and absolute error and top-1 agreement of ``y`` with ``ref``."""
    import numpy as np

    a, b = _array(y), _array(ref)
    if a.shape != b.shape:
        raise ValueError(f"output shape {a.shape} differs from the reference's {b.shape}")
    finite = bool(np.isfinite(a).all())
    fa, fb = a.ravel(), b.ravel()
    if finite:
        norm = float(np.linalg.norm(fa) * np.linalg.norm(fb))
        cosine = float(fa @ fb / norm) if norm > 0 else float(np.array_equal(fa, fb))
        max_abs = float(np.max(np.abs(fa - fb))) if fa.size else 0.0
        scale = float(np.max(np.abs(fb))) if fb.size else 0.0
        max_rel = max_abs / scale if scale > 0 else (0.0 if max_abs == 0 else math.inf)
    else:
        cosine, max_abs, max_rel = math.nan, math.nan, math.nan
    rows_a = a.reshape(a.shape[0], -1) if a.ndim > 1 else a.reshape(1, -1)
    rows_b = b.reshape(rows_a.shape)
    top1 = float(np.mean(rows_a.argmax(axis=1) == rows_b.argmax(axis=1))) if rows_a.size else 1.0
    return {
        "cosine": cosine,
        "max_rel_err": max_rel,
        "max_abs_err": max_abs,
        "top1_agree": top1,
        "finite": finite,
        "n": int(fa.size),
    }


def verdict(agree: dict, dtype: str) -> dict:
    """``ok`` False (with ``reasons``) when the outputs are not those of the same model."""
    min_cos, max_rel = THRESHOLDS.get(dtype, THRESHOLDS["int8"])
    reasons = []
    if not agree["finite"]:
        reasons.append("outputs contain NaN or infinity")
    else:
        if not agree["cosine"] >= min_cos:
            reasons.append(f"cosine {agree['cosine']:.5f} < {min_cos}")
        if not agree["max_rel_err"] <= max_rel:
            reasons.append(f"max_rel_err {agree['max_rel_err']:.3g} > {max_rel}")
    return {
        "ok": not reasons,
        "dtype": dtype,
        "min_cosine": min_cos,
        "max_rel_err_limit": max_rel,
        "reasons": reasons,
    }


# The reference is computed on the batch's first rows only: in eval mode an output row depends
# on its own image only, and a large batch does not pay for a second full eager forward.
REFERENCE_ROWS = 8


def reference_output(model, x):
    """The float32 eager output of ``model`` on ``x``'s first ``REFERENCE_ROWS`` images. Call it
    BEFORE the optimization's ``prepare``: several convert the model in place."""
    import torch

    with torch.inference_mode():
        return model(x[:REFERENCE_ROWS]).detach().float().clone()


def check(fn, x, ref, dtype: str) -> dict:
    """``judge`` of one untimed call of the optimized ``fn`` on ``x``."""
    import torch

    with torch.inference_mode():
        y = fn(x)
    return judge(y, ref, dtype)


def judge(y, ref, dtype: str) -> dict:
    """``{"agreement", "verdict"}`` of output ``y`` (its first rows, as many as ``ref``'s)."""
    if hasattr(y, "shape") and hasattr(ref, "shape") and len(y.shape) and len(ref.shape):
        y = y[: ref.shape[0]]
    agree = agreement(y, ref)
    agree["output_dtype"] = str(getattr(y, "dtype", "")).removeprefix("torch.")
    return {"agreement": agree, "verdict": verdict(agree, dtype)}


def failure_message(result: dict) -> str:
    """One line for a cell that failed the check (cause ``numerics``)."""
    v, a = result["verdict"], result["agreement"]
    return (
        f"{v['dtype']} outputs disagree with float32 eager: {'; '.join(v['reasons'])} "
        f"(top-1 agreement {a['top1_agree']:.0%}); a broken conversion, not a speedup"
    )
