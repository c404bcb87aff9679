"""The measurement settings: the config keys that decide how a cell is measured, with the
timing loop's defaults (``measure.timing``). They travel in every cell's spec, so changing one
re-measures every cell; keys that only decide whether a cell fails (its timeout,
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
# specs (and results) it had before they existed (``canary``: docs/performance.md).
OPTIONAL_KEYS = ("canary",)
TIMEOUT_MARGIN_S = 120.0

# One window of a peak (measure.workloads.dtype_peaks): at least 2 untimed steps, then at least
# PEAK_SECONDS and 6 timed ones (the smallest n with a 95 % CI of the median). The contention
# keys are the config's, as for the cells it is the denominator of (``with_contention``).
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


# The memory probe of one node pair (measure.workloads.memory_probe): steps of ~0.1 - 0.5 s,
# at least 6 and MEMORY_SECONDS of them; contention keys as for the peak.
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


def of(config: dict) -> dict:
    """The measurement settings of a (checked) config."""
    return {k: config.get(k) for k in KEYS} | {k: True for k in OPTIONAL_KEYS if config.get(k)}


def with_defaults(settings: dict, defaults: dict = DEFAULTS) -> dict:
    """``settings`` with every missing (or null) key of ``defaults`` set to its default."""
    return {k: v if settings.get(k) is None else settings[k] for k, v in defaults.items()}


def _margin(config: dict, default: float) -> float:
    margin = config.get("cell_timeout_margin_s")
    return float(default if margin is None else margin)


def memory_timeout_s(config: dict) -> float:
    """Seconds before a memory job is killed, with the config's ``cell_timeout_margin_s``."""
    return MEMORY_TIMEOUT_S + _margin(config, 0.0)


def cell_timeout_s(config: dict) -> float:
    """Seconds before a cell is killed: 3 x its time budget plus ``cell_timeout_margin_s``. The
    cell job reads it from the config, never as a rule parameter: raising it re-runs nothing."""
    return 3 * float(config["max_seconds_per_cell"]) + _margin(config, TIMEOUT_MARGIN_S)
