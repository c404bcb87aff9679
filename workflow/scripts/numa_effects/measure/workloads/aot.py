"""``bf16_aot``'s parts that need torch at import: ``AutocastBF16`` (importable, so that a child
process can unpickle it) and the packaging child, ``python -m numa_effects.measure.workloads.aot
MODULE INPUT PACKAGE THREADS``: it exports and packages one module (``torch.save`` files) with
AOTInductor at the measuring process's thread count, so that every measuring process only loads
the package (``workloads.model.aot_package``)."""

from __future__ import annotations

import sys

import torch


class AutocastBF16(torch.nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, z):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return self.inner(z)


def build(module_path: str, input_path: str, package: str, threads: int) -> None:
    import torch._inductor

    torch.set_num_threads(threads)
    module = torch.load(module_path, weights_only=False)
    x = torch.load(input_path)
    with torch.no_grad():
        exported = torch.export.export(module, (x,))
        torch._inductor.aoti_compile_and_package(
            exported, package_path=package, inductor_configs={"freezing": True}
        )


if __name__ == "__main__":
    build(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]))
