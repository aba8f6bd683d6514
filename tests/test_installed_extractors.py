"""An extractor an installed package adds (the ``rifflux.extractors`` entry point group)
reads its files in the parse workers too: they are handed the entry points their
parent found (``kinds.given``) rather than looking for them again."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from rifflux import Rifflux
from rifflux.core.extract import registry
from rifflux.kinds import entry_point_specs, installed

from .helpers import CountingEmbedder

pytestmark = pytest.mark.anyio

_MODULE = '''
from rifflux.core.extract import Extracted, Section


class Reversed:
    """A .rev file holds its text backwards."""

    kind, suffixes, unit, globs = "rev", (".rev",), "line", ("*.rev",)

    def extract(self, source, limits):
        text = source.data.decode()[::-1]
        return Extracted(text=text, sections=[Section(start=0, end=len(text))],
                         encoding="utf-8")


REVERSED = Reversed()
'''


@pytest.fixture
def installed_package(tmp_path: Path) -> Iterator[None]:
    """A package installed in a folder on the path (as pip would: a dist-info with its
    entry points), seen by this process and the parse workers it starts."""
    site = tmp_path / "site"
    dist = site / "revtext-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: revtext\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[rifflux.extractors]\nrev = revtext:REVERSED\n")
    (site / "revtext.py").write_text(_MODULE)
    sys.path.insert(0, str(site))
    caches = (entry_point_specs, installed, registry)
    for cache in caches:
        cache.cache_clear()
    try:
        yield
    finally:
        sys.path.remove(str(site))
        sys.modules.pop("revtext", None)
        for cache in caches:
            cache.cache_clear()


@pytest.mark.usefixtures("installed_package")
async def test_an_installed_extractor_reads_its_files_in_the_parse_workers(
        tmp_path: Path) -> None:
    root = tmp_path / "notes"
    root.mkdir()
    for i in range(80):  # (more than a job parses in threads: the workers read them)
        (root / f"n{i}.rev").write_text(f"heron number {i} wades"[::-1])
    async with Rifflux(tmp_path / "i.db", embedder=CountingEmbedder(),
                       include=["**/*.rev"]) as rf:
        done = await rf.reindex(root)
        assert done["indexed_files"] == 80 and not done["errors"], done["errors"]
        hits = await rf.search('"heron number 7 wades"', mode="lexical", top_k=3)
    assert [(h["path"], h["kind"]) for h in hits[:1]] == [("n7.rev", "rev")]
