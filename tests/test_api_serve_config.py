"""``scrapy serve``'s configuration: where it listens (and whether that is this machine only),
TLS, trusted proxies, and the defaults that keep anonymous answers free of names."""

from __future__ import annotations

from ipaddress import ip_network
from pathlib import Path

import pytest
from scrapy.settings import Settings

from crawler.api.auth import bearer_matches
from crawler.api.serve_config import ServeConfig, is_loopback
from tests.helpers import project_settings


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.0.0.53", True),
        ("::1", True),
        ("localhost", True),
        ("LOCALHOST", True),
        ("0.0.0.0", False),
        ("::", False),
        ("192.168.1.10", False),
        ("10.0.0.1", False),
        ("2001:db8::1", False),
        ("crawler.example", False),
        ("localhost.example", False),
        ("", False),
    ],
)
def test_which_addresses_keep_the_server_to_this_machine(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def _config(**settings: object) -> ServeConfig:
    return ServeConfig.from_settings(Settings(project_settings(**settings)))


def test_the_defaults_name_no_domain_in_metrics_and_trust_no_proxy() -> None:
    config = _config()
    assert config.metrics_top_domains == 0
    assert config.trusted_proxies.networks == ()
    assert (config.login_failures, config.login_failure_window) == (10, 900.0)
    assert (config.scheme, config.cookie_secure) == ("http", False)


@pytest.mark.parametrize("value", ["10.0.0.0/8,fd00::/8", '["10.0.0.0/8", "fd00::/8"]', ["10.0.0.0/8", "fd00::/8"]])
def test_trusted_proxies_in_every_form_of_a_list_setting(value: object) -> None:
    networks = _config(CRAWLER_API_TRUSTED_PROXIES=value).trusted_proxies.networks
    assert networks == (ip_network("10.0.0.0/8"), ip_network("fd00::/8"))


def test_a_bad_trusted_proxy_names_the_setting() -> None:
    with pytest.raises(ValueError, match="^CRAWLER_API_TRUSTED_PROXIES: 'nope' is not a network"):
        _config(CRAWLER_API_TRUSTED_PROXIES="nope")


def test_tls_marks_the_cookie_secure_and_wants_both_files() -> None:
    config = ServeConfig.from_settings(Settings(project_settings()), None, "cert.pem", "key.pem")
    assert (config.scheme, config.cookie_secure) == ("https", True)
    for certfile, keyfile in (("cert.pem", None), (None, "key.pem")):
        with pytest.raises(ValueError, match="both --certfile and --keyfile"):
            ServeConfig.from_settings(Settings(project_settings()), None, certfile, keyfile)


def test_the_metrics_token_from_the_setting_or_its_file(tmp_path: Path) -> None:
    token = "x" * 20
    assert ServeConfig.from_settings(Settings(project_settings())).metrics_token is None
    assert ServeConfig.from_settings(Settings(project_settings(CRAWLER_API_METRICS_TOKEN=token))).metrics_token == token
    (tmp_path / "token").write_text(token + "\n")
    from_file = Settings(project_settings(CRAWLER_API_METRICS_TOKEN_FILE=str(tmp_path / "token")))
    assert ServeConfig.from_settings(from_file).metrics_token == token
    with pytest.raises(ValueError, match="at least 16 characters"):
        ServeConfig.from_settings(Settings(project_settings(CRAWLER_API_METRICS_TOKEN="short")))
    with pytest.raises(ValueError, match="CRAWLER_API_METRICS_TOKEN_FILE: cannot read"):
        ServeConfig.from_settings(Settings(project_settings(CRAWLER_API_METRICS_TOKEN_FILE=str(tmp_path / "none"))))


@pytest.mark.parametrize(
    ("authorization", "matches"),
    [
        ("Bearer a-scrape-token-of-the-tests", True),
        ("Bearer  a-scrape-token-of-the-tests ", True),
        ("Bearer a-scrape-token-of-the-test", False),
        ("bearer a-scrape-token-of-the-tests", False),
        ("Basic a-scrape-token-of-the-tests", False),
        ("", False),
        (None, False),
    ],
)
def test_a_scraper_is_known_by_its_bearer_token(authorization: str | None, matches: bool) -> None:
    assert bearer_matches(authorization, "a-scrape-token-of-the-tests") is matches
    assert bearer_matches(authorization, None) is False
