"""What a figure shows of a cell (``Metric``): latency or throughput, its columns, CI, axis
label and how its degradation reads."""

from __future__ import annotations

from dataclasses import dataclass

from numa_effects import stats


@dataclass(frozen=True)
class Metric:
    """``key``: its column in the figure data (``lat``, ``thr``; ``<key>_lo``, ``_hi``,
    ``_status``)."""

    key: str
    name: str  # "latency": in headings, labels and degradation.csv's column names
    value: str  # cells.csv column; {statistic} = median or mean (stats.latency_statistic)
    ci: tuple[str, str]  # cells.csv columns of the value's 95 % CI
    ci_statistic: str | None  # the CI is of this statistic only (None: any)
    axis: str  # y axis label; {statistic} as in ``value``
    worse: str  # what a positive degradation means
    formula: str  # the degradation, with {placement}, {baseline} and {statistic}
    measure: str  # what the degradation is of, with {statistic}

    @property
    def title(self) -> str:
        return self.name.title()

    def column(self, statistic: str) -> str:
        return self.value.format(statistic=statistic)

    def ci_columns(self, statistic: str) -> tuple[str, str] | None:
        return self.ci if self.ci_statistic in (None, statistic) else None

    def axis_label(self, statistic: str) -> str:
        return self.axis.format(statistic=statistic)

    def degradation(self, placement: str, baseline: str, statistic: str) -> str:
        return self.formula.format(placement=placement, baseline=baseline, statistic=statistic)

    def of(self, statistic: str) -> str:
        return self.measure.format(statistic=statistic)

    @property
    def degradation_columns(self) -> dict[str, str]:
        """degradation.csv columns of this metric -> the figure data's."""
        return pct_columns(f"{self.name}_degradation")


def pct_columns(stem: str) -> dict[str, str]:
    """A table's % change ``<stem>_pct`` and its CI's columns -> the figure data's."""
    return dict(zip(stats.with_ci(stem, "_pct"), ("pct", "pct_lo", "pct_hi"), strict=True))


LATENCY = Metric(
    key="lat",
    name="latency",
    value="latency_{statistic}_ms",
    ci=("latency_ci_low_ms", "latency_ci_high_ms"),
    ci_statistic="median",
    axis="Latency per batch, {statistic} (ms)",
    worse="slower",
    formula="({placement} − {baseline}) / {baseline} × 100 of the {statistic} latency",
    measure="{statistic} latency",
)
THROUGHPUT = Metric(
    key="thr",
    name="throughput",
    value="throughput_ips",
    ci=("throughput_ci_low_ips", "throughput_ci_high_ips"),
    ci_statistic=None,
    axis="Throughput (images/s)",
    worse="fewer images/s",
    formula="({baseline} − {placement}) / {baseline} × 100 of the throughput",
    measure="throughput",
)
METRICS = (LATENCY, THROUGHPUT)
