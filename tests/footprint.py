"""The memory table's numbers (``plan.memory.FOOTPRINT``) measured on torch's meta device: after
a torchvision upgrade, ``.venv/bin/python tests/footprint.py`` prints the table to paste."""

import os
import sys
from pathlib import Path


def footprint(model: str, image_size: int = 224) -> tuple[int, int]:
    """(parameters + buffers, largest layer's input + output bytes) of one image, on "meta"."""
    import torch
    import torchvision

    def nbytes(x) -> int:
        if isinstance(x, torch.Tensor):
            return x.numel() * x.element_size()
        if isinstance(x, (list, tuple)):
            return sum(nbytes(v) for v in x)
        if isinstance(x, dict):
            return sum(nbytes(v) for v in x.values())
        return 0

    with torch.device("meta"):
        net = torchvision.models.get_model(model, weights=None).eval()
    params = sum(p.numel() for p in net.parameters()) + sum(b.numel() for b in net.buffers())
    largest = 0

    def hook(_module, inputs, output):
        nonlocal largest
        largest = max(largest, nbytes(inputs) + nbytes(output))

    for module in net.modules():
        if not list(module.children()):
            module.register_forward_hook(hook)
    with torch.inference_mode():
        net(torch.empty(1, 3, image_size, image_size, device="meta"))
    return params, largest


def main() -> None:
    """Print FOOTPRINT for every checked-in torchvision model (paste it into plan.memory)."""
    from numa_effects.plan.models import CLASSIFICATION_MODELS

    for name in CLASSIFICATION_MODELS:
        try:
            params, largest = footprint(name)
        except Exception as exc:  # e.g. RegNets cannot be built on the meta device
            print(f"    # {name}: {type(exc).__name__}", flush=True)
            continue
        print(f'    "{name}": ({params}, {largest}),', flush=True)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workflow" / "scripts"))
    main()
