"""The query actor's boundary covers the catalog of files too: a change it fails to apply,
or a load of the catalog that fails (building it, or replaying the changes seen while it
was read), is logged, the catalog is read again from the index, and the instance keeps
serving."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import anyio
import pytest

from rifflux import Rifflux
from rifflux.core.catalog import Catalog
from rifflux.store.sqlite.reader import Reader

from ..helpers import CountingEmbedder, eventually, write

pytestmark = pytest.mark.anyio


async def test_a_catalog_change_that_fails_is_logged_and_the_catalog_is_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
) -> None:
    root = tmp_path / "docs"
    write(root, "otters.md", "---\ntags: [rivers]\n---\n# Otters\n\nOtters sleep holding hands.\n")
    real = Catalog.update
    failed: list[int] = []

    def update(self: Catalog, *args: Any, **kwargs: Any) -> None:
        if not failed:  # the next change, before any of it is applied
            failed.append(1)
            raise KeyError("a bug in the catalog (injected)")
        real(self, *args, **kwargs)

    async with Rifflux(tmp_path / "i.db", embedder=CountingEmbedder()) as rf:
        await rf.reindex(root)
        assert await rf.list_tags() == [{"tag": "rivers", "files": 1}]
        monkeypatch.setattr(Catalog, "update", update)
        write(root, "herons.md", "---\ntags: [birds]\n---\n# Herons\n\nHerons stand still.\n")
        with caplog.at_level(logging.ERROR, logger="rifflux.actors.query"):
            assert (await rf.reindex(root))["indexed_files"] == 1
            assert failed  # the change the catalog failed on

            async def rebuilt() -> bool:
                tags = await rf.list_tags()
                return {t["tag"] for t in tags} == {"rivers", "birds"}

            await eventually(rebuilt)
        assert "could not apply a change to the catalog" in caplog.text
        found = await rf.search("herons", mode="lexical", tags=["birds"])
        assert [hit["path"] for hit in found] == ["herons.md"]
        write(root, "bread.md", "---\ntags: [baking]\n---\n# Bread\n\nKnead the dough.\n")
        assert (await rf.reindex(root))["indexed_files"] == 1  # and changes apply again
        found = await rf.search("dough", mode="lexical", tags=["baking"])
        assert [hit["path"] for hit in found] == ["bread.md"]
        assert (await rf.status())["files"] == 3


def _counting_reads(monkeypatch: pytest.MonkeyPatch, held: anyio.Event | None = None,
                    reading: anyio.Event | None = None) -> list[int]:
    """Counts the catalog's reads from the index (one item each); the first waits for
    ``held`` when given, after setting ``reading``."""
    real = Reader.catalog
    reads: list[int] = []

    async def catalog(self: Reader) -> Any:
        reads.append(1)
        if held is not None and len(reads) == 1:
            assert reading is not None
            reading.set()
            await held.wait()
        return await real(self)

    monkeypatch.setattr(Reader, "catalog", catalog)
    return reads


def _failing_once(monkeypatch: pytest.MonkeyPatch, name: str) -> list[int]:
    """``Catalog.<name>`` raising the first time it is called (one item when it has)."""
    real = getattr(Catalog, name)
    failed: list[int] = []

    def once(self: Catalog, *args: Any, **kwargs: Any) -> None:
        if not failed:
            failed.append(1)
            raise KeyError(f"a bug in Catalog.{name} (injected)")
        real(self, *args, **kwargs)

    monkeypatch.setattr(Catalog, name, once)
    return failed


async def _filtered(rf: Rifflux, query: str, tag: str) -> list[str]:
    return [hit["path"] for hit in await rf.search(query, mode="lexical", tags=[tag])]


async def _still_serving(rf: Rifflux, root: Path) -> None:
    write(root, "bread.md", "---\ntags: [baking]\n---\n# Bread\n\nKnead the dough.\n")
    assert (await rf.reindex(root))["indexed_files"] == 1  # and changes apply again
    assert await _filtered(rf, "dough", "baking") == ["bread.md"]
    assert await _filtered(rf, "otters", "rivers") == ["otters.md"]


async def test_a_catalog_that_fails_to_build_is_logged_and_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
) -> None:
    root = tmp_path / "docs"
    write(root, "otters.md", "---\ntags: [rivers]\n---\n# Otters\n\nOtters hold hands.\n")
    write(root, "herons.md", "---\ntags: [birds]\n---\n# Herons\n\nHerons stand still.\n")
    async with Rifflux(tmp_path / "i.db", embedder=CountingEmbedder()) as rf:
        await rf.reindex(root)
    reads = _counting_reads(monkeypatch)
    failed = _failing_once(monkeypatch, "replace")
    with caplog.at_level(logging.ERROR, logger="rifflux.actors.query"):
        async with Rifflux(tmp_path / "i.db", embedder=CountingEmbedder()) as rf:
            assert await _filtered(rf, "herons", "birds") == ["herons.md"]  # (once loaded)
            assert failed and len(reads) == 2  # it failed, and was read again
            assert "could not build the catalog of files (attempt 1 of 2)" in caplog.text
            assert "KeyError: 'a bug in Catalog.replace (injected)'" in caplog.text
            assert (await rf.status())["catalog_state"] == "ready"
            await _still_serving(rf, root)


async def test_a_change_that_fails_to_replay_on_a_loading_catalog_is_logged_and_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
) -> None:
    root = tmp_path / "docs"
    write(root, "otters.md", "---\ntags: [rivers]\n---\n# Otters\n\nOtters hold hands.\n")
    async with Rifflux(tmp_path / "i.db", embedder=CountingEmbedder()) as rf:
        await rf.reindex(root)
    held, reading = anyio.Event(), anyio.Event()
    reads = _counting_reads(monkeypatch, held, reading)
    failed = _failing_once(monkeypatch, "update")
    with caplog.at_level(logging.ERROR, logger="rifflux.actors.query"):
        async with Rifflux(tmp_path / "i.db", embedder=CountingEmbedder()) as rf:
            with anyio.fail_after(10):
                await reading.wait()  # the catalog is being read: changes wait to replay
            write(root, "herons.md",
                  "---\ntags: [birds]\n---\n# Herons\n\nHerons stand still.\n")
            assert (await rf.reindex(root))["indexed_files"] == 1
            assert (await rf.status())["catalog_state"] == "loading" and not failed
            held.set()  # the read ends; replaying the change fails
            assert await _filtered(rf, "herons", "birds") == ["herons.md"]
            assert failed and len(reads) == 2  # read again, with the change in it
            assert "could not build the catalog of files (attempt 1 of 2)" in caplog.text
            assert "KeyError: 'a bug in Catalog.update (injected)'" in caplog.text
            await _still_serving(rf, root)
