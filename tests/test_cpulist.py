import pytest

from numa_effects.plan import cpulist


@pytest.mark.parametrize(
    ("text", "cpus"),
    [
        ("0", (0,)),
        ("0-3", (0, 1, 2, 3)),
        ("0-3,8,10-11", (0, 1, 2, 3, 8, 10, 11)),
        ("0,2,4-6\n", (0, 2, 4, 5, 6)),
        ("0-6:2", (0, 2, 4, 6)),
        ("", ()),
        ("3,1,1-2", (1, 2, 3)),
    ],
)
def test_parse(text, cpus):
    assert cpulist.parse(text) == cpus


@pytest.mark.parametrize("bad", ["3-1", "a", "0,,1", "0-6:0", "-1"])
def test_parse_rejects_malformed(bad):
    with pytest.raises(ValueError):
        cpulist.parse(bad)


@pytest.mark.parametrize(
    ("cpus", "text"),
    [((0,), "0"), ((0, 1, 2, 3, 8), "0-3,8"), ((0, 2, 4), "0,2,4"), ((), ""), ((5, 4, 3), "3-5")],
)
def test_format(cpus, text):
    assert cpulist.format(cpus) == text


def test_round_trip_on_sparse_lists():
    cpus = (0, 1, 2, 16, 17, 18, 40, 42, 44, 63)
    assert cpulist.parse(cpulist.format(cpus)) == cpus
