"""Per-domain controls from the setting and from operators: parsing, pattern matching and
precedence."""

from __future__ import annotations

import pytest

from crawler.politeness.overrides import NO_CONTROL, ControlTable, DomainControl, normal_pattern, parse_overrides
from crawler.politeness.policy import DomainState


def test_the_setting_is_parsed_into_controls() -> None:
    controls = parse_overrides(
        {
            "Example.COM": {"concurrency": 10},
            "*.strict.org": {"concurrency": 2, "min_delay": 5},
            "*": {"min_delay": 0.5},
        }
    )
    assert controls == {
        "example.com": DomainControl(concurrency=10),
        "*.strict.org": DomainControl(concurrency=2, min_delay=5.0),
        "*": DomainControl(min_delay=0.5),
    }


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ({"a.example": 3}, "must be a dict"),
        ({"a.example": {"delay": 1}}, "must be a dict"),
        ({"a.example": {"concurrency": 0}}, "concurrency must be a whole number"),
        ({"a.example": {"concurrency": 2.5}}, "concurrency must be a whole number"),
        ({"a.example": {"concurrency": True}}, "concurrency must be a whole number"),
        ({"a.example": {"min_delay": -1}}, "min_delay must be a number"),
        ({"a.example": {"min_delay": "1"}}, "min_delay must be a number"),
        ({"*.": {"concurrency": 1}}, "not a domain pattern"),
        ({"a.*.example": {"concurrency": 1}}, "not a domain pattern"),
        ({"example.com/path": {"concurrency": 1}}, "not a domain pattern"),
    ],
)
def test_a_wrong_entry_is_refused_with_its_reason(setting: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_overrides(setting)


def test_normal_pattern() -> None:
    assert normal_pattern(" *.Example.com ") == "*.example.com"
    assert normal_pattern("*") == "*"


TABLE = ControlTable(
    {
        "example.com": DomainControl(concurrency=10),
        "example.com:8080": DomainControl(concurrency=1),
        "*.example.com": DomainControl(concurrency=4, min_delay=0.5),
        "*.deep.example.com": DomainControl(concurrency=2),
        "[::1]": DomainControl(concurrency=7),
        "*": DomainControl(min_delay=3.0),
    }
)


@pytest.mark.parametrize(
    ("domain", "expected"),
    [
        ("example.com", DomainControl(concurrency=10)),  # exact
        ("EXAMPLE.com", DomainControl(concurrency=10)),
        ("example.com:8443", DomainControl(concurrency=10)),  # a host pattern matches any port
        ("example.com:8080", DomainControl(concurrency=1)),  # host:port is more specific
        ("www.example.com", DomainControl(concurrency=4, min_delay=0.5)),  # wildcard, not the apex
        ("a.b.example.com", DomainControl(concurrency=4, min_delay=0.5)),  # at any depth
        ("x.deep.example.com", DomainControl(concurrency=2)),  # the longest wildcard
        ("badexample.com", DomainControl(min_delay=3.0)),  # only whole labels match
        ("other.org", DomainControl(min_delay=3.0)),  # everything else
        ("[::1]:8080", DomainControl(concurrency=7)),
    ],
)
def test_the_most_specific_pattern_wins(domain: str, expected: DomainControl) -> None:
    assert TABLE.for_domain(domain) == expected


def test_no_pattern_no_control() -> None:
    assert ControlTable({"a.example": DomainControl(concurrency=3)}).for_domain("b.example") == NO_CONTROL


def test_operators_win_field_by_field() -> None:
    table = TABLE.with_runtime(
        {"www.example.com": DomainControl(concurrency=6), "*.example.com": DomainControl(paused=True)}
    )
    assert table.for_domain("www.example.com") == DomainControl(concurrency=6, min_delay=0.5)
    assert table.for_domain("api.example.com") == DomainControl(concurrency=4, min_delay=0.5, paused=True)
    assert table.for_domain("example.com") == DomainControl(concurrency=10)
    assert not table.crawl_paused


def test_the_whole_crawl_pause_is_not_a_pause_of_each_domain() -> None:
    table = TABLE.with_runtime({"*": DomainControl(concurrency=5, paused=True)})
    assert table.crawl_paused
    assert table.for_domain("other.org") == DomainControl(concurrency=5, min_delay=3.0)
    assert not TABLE.crawl_paused


def test_a_control_applies_to_a_state_and_says_whether_it_changed() -> None:
    state = DomainState(learned_delay=2.0)
    assert DomainControl(concurrency=3, min_delay=0.1, paused=True).apply(state)
    assert (state.override_concurrency, state.override_delay, state.paused, state.learned_delay) == (3, 0.1, True, 2.0)
    assert not DomainControl(concurrency=3, min_delay=0.1, paused=True).apply(state)
    assert NO_CONTROL.apply(state)
    assert (state.override_concurrency, state.override_delay, state.paused) == (None, None, False)
