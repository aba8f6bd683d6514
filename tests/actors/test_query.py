"""The query actor's boundary covers the catalog of files too: a change it fails to apply
is logged, the catalog is read again from the index, and the instance keeps serving."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from rifflux import Rifflux
from rifflux.core.catalog import Catalog

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
