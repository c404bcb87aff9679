"""Each cell's memory, estimated while planning (no torch import): a lower bound, so a cell
skipped for it certainly cannot run: the weights plus batch x the largest input + output of
any single layer for one image, scaled from 224 x 224 by the image area. A cell below it may
still fail as ``out-of-memory``. ``FOOTPRINT`` was measured on the meta device (regenerate after
a torchvision upgrade with ``tests/footprint.py``); models missing
from it (RegNets cannot be built on the meta device) are never skipped for memory.
"""

from __future__ import annotations

FLOAT32_BYTES = 4
REFERENCE_SIZE = 224

# model: (parameters + buffers, bytes of the largest layer's input + output, one 224 x 224 image)
FOOTPRINT: dict[str, tuple[int, int]] = {
    "alexnet": (61100840, 1548800),
    "convnext_base": (88591464, 12845056),
    "convnext_large": (197767336, 19267584),
    "convnext_small": (50223688, 9633792),
    "convnext_tiny": (28589128, 9633792),
    "densenet121": (8062625, 6422528),
    "densenet161": (28901097, 9633792),
    "densenet169": (14308049, 6422528),
    "densenet201": (20243185, 6422528),
    "efficientnet_b0": (5330613, 9633792),
    "efficientnet_b1": (7856301, 9633792),
    "efficientnet_b2": (9177631, 9633792),
    "efficientnet_b3": (12320606, 14450688),
    "efficientnet_b4": (19466912, 14450688),
    "efficientnet_b5": (30562636, 14450688),
    "efficientnet_b6": (43265270, 19267584),
    "efficientnet_b7": (66658843, 19267584),
    "efficientnet_v2_l": (119028065, 6422528),
    "efficientnet_v2_m": (54431545, 4816896),
    "efficientnet_v2_s": (21612470, 4816896),
    "googlenet": (13020019, 6422528),
    "inception_v3": (27197584, 6083072),
    "maxvit_t": (31020096, 25690112),
    "mnasnet0_5": (2239188, 2408448),
    "mnasnet0_75": (3200068, 4816896),
    "mnasnet1_0": (4421284, 4816896),
    "mnasnet1_3": (6331124, 7225344),
    "mobilenet_v2": (3539036, 9633792),
    "mobilenet_v3_large": (5507478, 6422528),
    "mobilenet_v3_small": (2555002, 1806336),
    "resnet101": (44654608, 6422528),
    "resnet152": (60344387, 6422528),
    "resnet18": (11699132, 6422528),
    "resnet34": (21814732, 6422528),
    "resnet50": (25610205, 6422528),
    "resnext101_32x8d": (88994320, 12845056),
    "resnext101_64x4d": (83658256, 12845056),
    "resnext50_32x4d": (25097181, 6422528),
    "shufflenet_v2_x0_5": (1374800, 2408448),
    "shufflenet_v2_x1_0": (2294840, 2408448),
    "shufflenet_v2_x1_5": (3527120, 2408448),
    "shufflenet_v2_x2_0": (7427768, 3060736),
    "squeezenet1_0": (1248424, 9124608),
    "squeezenet1_1": (1235496, 6308352),
    "swin_b": (87825848, 12845056),
    "swin_s": (49663882, 9633792),
    "swin_t": (28317166, 9633792),
    "swin_v2_b": (88039952, 12845056),
    "swin_v2_s": (49846546, 9633792),
    "swin_v2_t": (28406122, 9633792),
    "vgg11": (132863336, 25690112),
    "vgg11_bn": (132874352, 25690112),
    "vgg13": (133047848, 25690112),
    "vgg13_bn": (133059634, 25690112),
    "vgg16": (138357544, 25690112),
    "vgg16_bn": (138374453, 25690112),
    "vgg19": (143667240, 25690112),
    "vgg19_bn": (143689272, 25690112),
    "vit_b_16": (86567656, 4841472),
    "vit_b_32": (88224232, 1228800),
    "vit_h_14": (632045800, 10526720),
    "vit_l_16": (304326632, 6455296),
    "vit_l_32": (306535400, 1638400),
    "wide_resnet101_2": (127024656, 6422528),
    "wide_resnet50_2": (68951517, 6422528),
}


def estimate(
    model: str, batch_size: int, image_size: int, bytes_per_element: int = FLOAT32_BYTES
) -> int | None:
    """Bytes a cell needs at least (weights + one batch's largest layer), or None if unknown;
    ``FOOTPRINT``'s float32 bytes scale with ``bytes_per_element``."""
    if model not in FOOTPRINT:
        return None
    params, layer = FOOTPRINT[model]
    area = (int(image_size) / REFERENCE_SIZE) ** 2
    scale = bytes_per_element / FLOAT32_BYTES
    return int(params * bytes_per_element + int(batch_size) * layer * area * scale)


def machine_bytes(topo=None) -> int | None:
    """This machine's memory (MemTotal); None when planning for a ``topology`` file."""
    if topo is not None and getattr(topo, "source", "") != "sysfs:/":
        return None
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def gib(n: int) -> str:
    return f"{n / 2**30:.1f} GiB"


def skip_reason(
    model: str,
    batch_size: int,
    image_size: int,
    memory: int | None,
    bytes_per_element: int = FLOAT32_BYTES,
) -> str | None:
    """Why the cell cannot fit in ``memory`` bytes (None if it may, or if unknown)."""
    need = estimate(model, batch_size, image_size, bytes_per_element)
    if need is None or memory is None or need <= memory:
        return None
    return (
        f"needs at least {gib(need)} (estimated: weights + activations of batch {batch_size} "
        f"at {image_size} x {image_size}), more than this machine's {gib(memory)} of memory"
    )
