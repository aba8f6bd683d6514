"""A name's definition first: a query that is one name finds the code that defines it
before the code that calls it, on both stores, in the modes that read words."""

from __future__ import annotations

from pathlib import Path

import pytest

from rifflux import Rifflux, Settings
from rifflux.core.definitions import named
from rifflux.location import index_location
from rifflux.types import SearchResult

from .helpers import CountingEmbedder, Location, write

pytestmark = pytest.mark.anyio

DEFINED = '''"""Reading configuration files."""


def parse_config(text):
    """The settings a configuration file's text holds."""
    return dict(line.split("=", 1) for line in text.splitlines())


class Loader:
    def load(self, path):
        return parse_config(open(path).read())
'''
#: Uses the name far more often than its definition does: BM25 alone ranks it first.
CALLS = '''from config import parse_config


def test_parse_config_reads_pairs():
    assert parse_config("a=1") == {"a": "1"}
    assert parse_config("a=1\\nb=2") == {"a": "1", "b": "2"}
    assert parse_config("") == {}
    assert parse_config("x=") == {"x": ""}
'''
NOTE = ("# parse_config\n\nThe notes on parse_config: parse_config reads the settings;"
        " call parse_config once per file, parse_config is cheap.\n")


def index_of(db: Location) -> Rifflux:
    settings = Settings(db_path=index_location(db), embedding_backend="hash",
                        kinds=("default", "code"))
    return Rifflux(settings=settings, embedder=CountingEmbedder())


def code_folder(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    write(root, "config.py", DEFINED)
    write(root, "tests/test_config.py", CALLS)
    write(root, "notes/parsing.md", NOTE)
    return root


def where(hit: SearchResult) -> tuple[str, str]:
    return hit["path"], hit["heading_path"]


def test_a_query_that_is_one_name_is_read_as_its_names() -> None:
    assert named("parse_config") == ("parse_config",)
    assert named(" Rifflux.search() ") == ("Rifflux", "search")
    assert named("Parser::parse") == ("Parser", "parse")
    assert named("Loader#load") == ("Loader", "load")
    assert named("parse config") is None
    assert named("parse_config(text)") is None
    assert named("état") is None  # (not a name a parser of these languages reads)


@pytest.mark.parametrize("mode", ["lexical", "hybrid"])
async def test_a_functions_name_finds_its_definition_before_its_callers(
    db: Location, tmp_path: Path, mode: str
) -> None:
    root = code_folder(tmp_path)
    async with index_of(db) as rf:
        await rf.reindex(root)
        plain = await rf.search("parse_config", mode=mode, top_k=3, explain=True)
        words = await rf.search("parse config", mode="lexical", top_k=5)
        method = await rf.search("Loader.load", mode=mode, top_k=3, explain=True)
    assert where(plain[0]) == ("config.py", "parse_config")
    assert plain[0]["explain"].get("definition") is True
    assert all("definition" not in h["explain"] for h in plain[1:])
    # the same words, not one name: BM25's order, the test that calls it most first
    assert where(words[0]) != ("config.py", "parse_config")
    assert where(method[0]) == ("config.py", "Loader > load")


async def test_a_definition_below_the_first_hits_asked_for_still_comes_first(
    db: Location, tmp_path: Path
) -> None:
    root = code_folder(tmp_path)
    for i in range(12):  # more callers than top_k, each ahead of the definition on BM25
        write(root, f"tests/test_more_{i}.py", CALLS.replace("reads_pairs", f"case_{i}"))
    async with index_of(db) as rf:
        await rf.reindex(root)
        first = await rf.search("parse_config", mode="lexical", top_k=1)
        bm25 = await rf.search("parse config", mode="lexical", top_k=20)
    assert [where(h) for h in bm25].index(("config.py", "parse_config")) >= 1
    assert [where(h) for h in first] == [("config.py", "parse_config")]


async def test_a_name_nothing_defines_and_a_markdown_heading_change_nothing(
    db: Location, tmp_path: Path
) -> None:
    root = tmp_path / "notes"
    write(root, "parsing.md", NOTE)
    write(root, "other.md", "# Other\n\nparse_config is mentioned once.\n")
    async with index_of(db) as rf:
        await rf.reindex(root)
        hits = await rf.search("parse_config", mode="lexical", explain=True)
    assert [h["path"] for h in hits] == ["parsing.md", "other.md"]
    assert not any("definition" in h["explain"] for h in hits)
