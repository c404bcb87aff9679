"""The measurement settings: the config keys that decide how a cell is measured, with the
timing loop's defaults (``measure.timing``). They travel in every cell's spec, so changing
one re-measures every cell; keys that only decide whether a cell fails (its timeout,
``max_memory_mb``) are read from the config by the job instead and re-run nothing."""

from __future__ import annotations

DEFAULTS = {
    "protocol": "adaptive",
    "warmup": 2,
    "min_iterations": 6,
    "max_iterations": 1000,
    "max_seconds_per_cell": 30.0,
    "target_rel_ci": 0.02,
    "fixed_iterations": 100,
    "min_warmup_seconds": 0.0,
    "min_timed_seconds": 0.0,
    "exclude_foreign_pct": 10.0,
    "contended_retries": 2,
    "contended_backoff_s": 5.0,
}
# Every key a cell's spec carries: the timing loop's, and the seed of the input and weights.
KEYS = (*DEFAULTS, "seed")
# Keys a spec carries only when the config turns them on, so that a run without them keeps the
# specs (and results) it had before they existed. ``canary``: after each timed step the cell
# process times a fixed cache-resident kernel (measure.cell.make_canary; docs/performance.md).
OPTIONAL_KEYS = ("canary",)
TIMEOUT_MARGIN_S = 120.0

# One window of the peak of one (placement, threads, dtype) (measure.workloads.dtype_peaks: the
# denominator of efficiency; plan.peaks spreads the windows over the run): each step calls every
# kernel of the dtype back to back (torch.mm, oneDNN's convolutions), at least 2 untimed steps,
# then at least PEAK_SECONDS of timed ones (and 6, the smallest n with a 95 % CI of the median).
# The contention keys are the config's, as for the cells it is the denominator of
# (``peak_settings``): a run that keeps disturbed iterations keeps disturbed peak steps too (the
# peak is the best clean rate, so noise can only lower it; the other windows make up for it).
PEAK_SECONDS = 1.0
PEAK_TIMEOUT_S = 300
PEAK_SETTINGS = {
    "protocol": "adaptive",
    "warmup": 2,
    "min_warmup_seconds": 0.0,
    "min_iterations": 6,
    "min_timed_seconds": PEAK_SECONDS,
    "target_rel_ci": 0.02,
    "max_iterations": 100_000,
    "max_seconds_per_cell": 3 * PEAK_SECONDS,
}


# The memory probe of one node pair (measure.workloads.memory_probe): each step is one pointer
# chase and one read pass (~0.1 - 0.5 s), at least 6 timed steps and MEMORY_SECONDS of them; its
# buffer is linked before the first step (~1 - 3 s for 256 MiB). The contention keys are the
# config's, as for the peak.
MEMORY_SECONDS = 1.0
MEMORY_TIMEOUT_S = 300
MEMORY_SETTINGS = {
    **PEAK_SETTINGS,
    "min_timed_seconds": MEMORY_SECONDS,
    "max_seconds_per_cell": 4 * MEMORY_SECONDS,
}


CONTENTION_KEYS = ("exclude_foreign_pct", "contended_retries", "contended_backoff_s")


def with_contention(base: dict, config: dict) -> dict:
    """``base`` with the config's contention keys (where it sets them)."""
    return {**base, **{k: config[k] for k in CONTENTION_KEYS if config.get(k) is not None}}


def peak_settings(config: dict) -> dict:
    """``PEAK_SETTINGS`` with the config's contention keys (where it sets them)."""
    return with_contention(PEAK_SETTINGS, config)


def memory_settings(config: dict) -> dict:
    """``MEMORY_SETTINGS`` with the config's contention keys (where it sets them)."""
    return with_contention(MEMORY_SETTINGS, config)


def of(config: dict) -> dict:
    """The measurement settings of a (checked) config."""
    return {k: config.get(k) for k in KEYS} | {k: True for k in OPTIONAL_KEYS if config.get(k)}


def with_defaults(settings: dict) -> dict:
    """``settings`` with every missing (or null) timing key set to its default."""
    return {k: v if settings.get(k) is None else settings[k] for k, v in DEFAULTS.items()}


def memory_timeout_s(config: dict) -> float:
    """Seconds before a memory job is killed: ``MEMORY_TIMEOUT_S``, plus the config's
    ``cell_timeout_margin_s`` where it sets one (a slow machine, e.g. the TCG test guest, whose
    Python start, compile and buffer linking take minutes there)."""
    margin = config.get("cell_timeout_margin_s")
    return MEMORY_TIMEOUT_S + (float(margin) if margin is not None else 0.0)


def cell_timeout_s(config: dict) -> float:
    """Seconds before a cell is killed: 3 x its time budget plus ``cell_timeout_margin_s`` for
    process start, model build and optimization. Read from the config by the cell job itself
    (not a rule parameter), so raising the margin re-runs nothing but ``make retry-failed``."""
    margin = config.get("cell_timeout_margin_s")
    return 3 * float(config["max_seconds_per_cell"]) + float(
        TIMEOUT_MARGIN_S if margin is None else margin
    )
