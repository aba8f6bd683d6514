"""``ServeOptions``: which hosts and origins a server answers to, and what it refuses."""

from __future__ import annotations

import pytest

from rifflux.cli.arguments import parse_args
from rifflux.errors import InvalidArgumentError
from rifflux.http.options import ServeOptions, is_loopback, options_from_args, split_host


@pytest.mark.parametrize(("header", "name"), [
    ("127.0.0.1:7474", "127.0.0.1"), ("localhost", "localhost"), ("[::1]:80", "::1"),
    ("Example.COM:8080", "example.com"), ("::1", "::1")])
def test_the_name_in_a_host_header_is_read_without_its_port(header: str, name: str) -> None:
    assert split_host(header) == name


def test_loopback_names_and_ip_addresses_are_answered_and_other_names_are_not() -> None:
    options = ServeOptions()
    assert all(options.host_allowed(h) for h in ("localhost", "127.0.0.1", "127.9.9.9",
                                                  "::1", "192.168.1.20"))
    assert not any(options.host_allowed(h) for h in ("evil.example", "localhost.evil.example",
                                                      "127.0.0.1.nip.io"))
    assert ServeOptions(allow_hosts=("notes.lan",)).host_allowed("notes.lan")
    assert is_loopback("[::1]") and not is_loopback("10.0.0.1")


def test_only_the_servers_own_origin_and_those_given_are_allowed() -> None:
    options = ServeOptions(allow_origins=("http://localhost:5173",))
    assert options.origin_allowed("http://127.0.0.1:7474", "127.0.0.1:7474")
    assert options.origin_allowed("http://localhost:5173", "127.0.0.1:7474")
    assert not options.origin_allowed("http://127.0.0.1:7475", "127.0.0.1:7474")
    assert not options.origin_allowed("null", "127.0.0.1:7474")


@pytest.mark.parametrize("kwargs", [
    {"port": 70000}, {"token": "two words"}, {"token": "  "}, {"max_body_bytes": 10},
    {"allow_origins": ("localhost:5173",)}, {"allow_origins": ("http://x.example/path",)}])
def test_unusable_options_are_refused_saying_what_to_give(kwargs: dict[str, object]) -> None:
    with pytest.raises(InvalidArgumentError):
        ServeOptions(**kwargs)  # type: ignore[arg-type]


def test_a_token_is_required_off_loopback() -> None:
    with pytest.raises(InvalidArgumentError, match="RIFFLUX_TOKEN"):
        ServeOptions(host="0.0.0.0").check_exposure()
    ServeOptions(host="0.0.0.0", token="s3cret").check_exposure()
    ServeOptions(host="::1").check_exposure()


def test_serve_listens_on_loopback_port_7474_and_takes_its_token_from_the_flag_first() -> None:
    plain = options_from_args(parse_args(["serve"]), {})
    assert (plain.host, plain.port, plain.token) == ("127.0.0.1", 7474, None)
    from_env = options_from_args(parse_args(["serve"]), {"RIFFLUX_TOKEN": "from-env"})
    assert from_env.token == "from-env"
    both = options_from_args(parse_args(["serve", "--token", "from-flag"]),
                             {"RIFFLUX_TOKEN": "from-env"})
    assert both.token == "from-flag"
    assert options_from_args(parse_args(["serve"]), {"RIFFLUX_TOKEN": ""}).token is None
