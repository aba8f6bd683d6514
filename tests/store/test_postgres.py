"""The PostgreSQL store on a real server: what only it does (search legs inside the
database and their paths, the ranking without pg_textsearch, errors of an unreachable
server, read-only opens, the schema made once, two instances on one database) and that
it answers as the SQLite store does. The retrieval contract itself runs on both stores
(the ``db`` fixture)."""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from rifflux import (
    IndexUnreachableError,
    InvalidArgumentError,
    Rifflux,
    RiffluxError,
    SchemaVersionError,
    Settings,
)
from rifflux.location import DatabaseUrl
from rifflux.store.postgres import lexical, semantic
from rifflux.store.postgres.schema import SCHEMA_VERSION

from ..gitrepo import commit, init
from ..helpers import (
    SEARCH_DOCS,
    CountingEmbedder,
    bm25,
    call,
    eventually,
    index_rows,
    mcp_session,
    rifflux_cli,
    write,
    write_all,
    write_note,
)
from ..postgres import PostgresServer

pytestmark = pytest.mark.anyio

MODES = ("lexical", "semantic", "hybrid")


def _decoys_and_five(root: Path) -> None:
    for i in range(300):  # more about the query than the files wanted
        write_note(root, f"decoys/d{i}.md", "garden compost garden compost garden compost " * 5
                   + f"decoy number {i}.")
    for i in range(5):
        write_note(root, f"small/s{i}.md", f"A short remark on garden compost, item {i}.")


@pytest.mark.parametrize("path", ["prefilter", "scan", "scan-then-lookup"])
async def test_a_filter_fills_its_list_whichever_way_each_leg_finds_it(
    new_postgres_index: Callable[[], str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    path: str,
) -> None:
    if path != "prefilter":  # the BM25 index scanned, read further while filtered out
        monkeypatch.setattr(lexical, "PREFILTER", 0)
        monkeypatch.setattr(lexical, "SCORE_COST", 10**9)
        monkeypatch.setattr(semantic, "EXACT_MOST", 0)  # HNSW's iterative scan
    if path == "scan-then-lookup":  # the scan gives up early: the exact lookup finds them
        monkeypatch.setattr(lexical, "SCAN_MOST", 200)
        monkeypatch.setattr(lexical, "POOL_LEAST", 0)  # (no deeper than twice asked)
    looked_up: list[str] = []  # the exact lookups of the lexical leg
    matched = lexical.Lexical._matched

    async def spied(self: lexical.Lexical, *args: Any) -> list[Any]:
        looked_up.append(path)
        return await matched(self, *args)

    monkeypatch.setattr(lexical.Lexical, "_matched", spied)
    root = tmp_path / "docs"
    _decoys_and_five(root)
    small = [f"small/s{i}.md" for i in range(5)]
    async with Rifflux(new_postgres_index(), embedder=CountingEmbedder()) as rf:
        await rf.reindex(root)
        for mode in MODES:
            for query in ("garden compost", '"garden compost"', "compo*"):
                hits = await rf.search(query, top_k=5, mode=mode, paths=["small/**"])
                assert sorted(r["path"] for r in hits) == small, (mode, query)
    assert bool(looked_up) == (path != "scan")  # (each path taken where it is meant to be)


def test_the_vectors_graph_is_searched_deeper_as_it_grows() -> None:
    # a graph's recall at one depth falls as it grows: never shallower than wanted, one
    # step per 150 vectors (the planner's estimate; -1 before the first ANALYZE), at most
    # pgvector's ceiling
    assert semantic.search_depth(10, -1.0) == 40
    assert semantic.search_depth(220, -1.0) == semantic.search_depth(220, 20_000.0) == 220
    assert semantic.search_depth(220, 100_571.0) == 670
    assert semantic.search_depth(220, 1_005_704.0) == semantic.search_depth(5_000, 0.0) == 1000


async def test_the_same_files_rank_the_same_with_the_same_bm25_on_both_stores(
    new_postgres_index: Callable[[], str], tmp_path: Path, search_docs: Path,
) -> None:
    write_all(search_docs, {f"extra/{i}.md": f"# Note {i}\n\ninstall search note {i} " * 3
                            for i in range(12)})
    write(search_docs, "breadcrumb.md", "# Search note install\n\nA note on search at "
          "length, " + "and more words that make it long, " * 20 + "with a search note.\n")
    queries = ("install windows", "hybrid search fusion", "pancakes", "note 7", '"search note"',
               "inst*", "search note install", "inst* brea* no*")
    answers: list[dict[tuple[str, str], list[tuple[str, int, object]]]] = []
    for where in (tmp_path / "i.db", new_postgres_index()):
        async with Rifflux(where, embedder=CountingEmbedder()) as rf:
            await rf.reindex(search_docs)
            answers.append({(mode, q): [(h["path"], h["chunk_index"],
                                         h["score_breakdown"].get("bm25")) for h in
                                        await rf.search(q, top_k=5, mode=mode)]
                            for mode in MODES for q in queries})
    sqlite, postgres = answers
    for key in sqlite:  # (a phrase and a prefix each one term, lengths as FTS5 counts them)
        assert sqlite[key], key
        assert postgres[key] == sqlite[key], key


async def test_without_pg_textsearch_lexical_ranks_by_ts_rank_cd_and_says_so(
    postgres_without_textsearch: PostgresServer, search_docs: Path,
) -> None:
    url = postgres_without_textsearch.create_database("no_bm25")
    commit(init(search_docs), "Add the pancake recipes")  # (its history: every match ranked)
    async with Rifflux(url, embedder=CountingEmbedder()) as rf:
        await rf.reindex(search_docs)
        await rf.wait_for_history()
        hits = await rf.search("pancakes", mode="lexical")
        history = await rf.search_history("pancake recipes", mode="lexical")
        status = await rf.status()
        assert await rf.search('"hybrid search"', mode="lexical")
        assert await rf.search("pancak*", mode="lexical")
    assert hits and hits[0]["path"] == "cooking.md"
    scores = [bm25(h) for h in hits]
    assert scores == sorted(scores) and scores[0] < 0  # lower is better, as BM25's
    assert status["store"] == "postgresql" and status["lexical_ranking"] == "ts_rank_cd"
    assert status["store_note"] and "pg_textsearch" in status["store_note"]
    assert [h["title"] for h in history["results"]] == ["Add the pancake recipes"]


async def test_an_unreachable_server_is_a_clear_error_naming_the_url_without_its_password(
) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # (closed again: nothing listens there)
    url = f"postgresql://rifflux:s3cret@127.0.0.1:{port}/notes"
    with pytest.raises(IndexUnreachableError) as caught:
        async with Rifflux(url, embedder=CountingEmbedder()):
            pass
    message = str(caught.value)
    assert f"postgresql://rifflux:***@127.0.0.1:{port}/notes" in message
    assert "s3cret" not in message and "check that the server is running" in message


@pytest.mark.parametrize("port", ["abc", "99999"])
def test_a_url_whose_port_is_not_one_is_refused_saying_how_without_its_password(
        port: str, tmp_path: Path) -> None:
    url = f"postgresql://rifflux:s3cret@127.0.0.1:{port}/notes"
    with pytest.raises(InvalidArgumentError) as caught:
        Rifflux(url, embedder=CountingEmbedder())
    message = str(caught.value)
    assert f"postgresql://rifflux:***@127.0.0.1:{port}/notes has no valid port" in message
    assert "s3cret" not in message and "host:5432/database" in message
    done = rifflux_cli(tmp_path, "--db", url, "search", "notes")  # (a usage error, no trace)
    assert done.returncode == 2 and "has no valid port" in done.stderr
    assert "s3cret" not in done.stderr and "Traceback" not in done.stderr


async def _scores_computed(pool: Any) -> int:
    """How many times this server computed a row's BM25 score from its text (the
    ``<@>`` operator's function; ``track_functions`` on), the sessions' counts flushed."""
    await pool.execute("SELECT pg_stat_force_next_flush()")
    return int(await pool.fetchval(
        "SELECT coalesce(sum(calls), 0) FROM pg_stat_user_functions WHERE funcname = "
        "'bm25_text_bm25query_score'"))


async def test_a_commits_scan_keeps_the_scores_its_bm25_index_computed(
        tmp_path: Path, new_postgres_index: Callable[[], str]) -> None:
    """pg_textsearch spares a row's score a second computation only when the statement was
    parsed last before it was planned; asyncpg plans a statement it keeps prepared again
    at each run, so each scan is prepared as it runs (``bm25_index.scanned``)."""
    import asyncpg

    from rifflux.history.rows import HistoryFilters
    from rifflux.store.postgres.history_lexical import HistoryLexical

    url = new_postgres_index()
    repo = init(tmp_path / "repo")
    for i in range(12):
        commit(repo, f"Tune the retry backoff, step {i}", {f"docs/{i}.md": f"# Retry {i}\n"})
    async with Rifflux(url, embedder=CountingEmbedder()) as rf:
        await rf.reindex(repo)
        await rf.wait_for_history()
    pool = await asyncpg.create_pool(url, min_size=1, max_size=1,
                                     server_settings={"track_functions": "all"})
    try:
        leg = HistoryLexical(pool, DatabaseUrl(url), bm25=True)
        first, _ = await leg.lexical("retry backoff", 40, HistoryFilters())
        await pool.fetchval("SELECT 41 + $1::int", 1)  # (parsed last on the connection)
        before = await _scores_computed(pool)
        again, _ = await leg.lexical("retry backoff", 40, HistoryFilters())
        assert len(again) == 12 and again == first
        assert await _scores_computed(pool) == before
    finally:
        await pool.close()


def test_a_connection_whose_protocol_broke_is_lost_and_made_again_not_a_failure() -> None:
    # (seen once in CI: the server cut the connection in the middle of an operation)
    import asyncpg

    from rifflux.store.postgres.connection import translate

    broke = asyncpg.InternalClientError(
        "cannot switch to state 15; another operation (2) is in progress")
    where = DatabaseUrl("postgresql://rifflux:s3cret@127.0.0.1:5432/notes")
    error = translate(broke, where)
    assert isinstance(error, IndexUnreachableError) and "s3cret" not in str(error)


def test_a_shared_statements_placeholders_are_numbered_but_never_inside_quotes() -> None:
    # the statements both stores share are written with ?, and asyncpg wants $1, $2, ...
    from rifflux.store.postgres.connection import numbered

    assert numbered("SELECT id FROM files WHERE root_id = ? AND rel_path LIKE ?") == \
        "SELECT id FROM files WHERE root_id = $1 AND rel_path LIKE $2"
    assert numbered("SELECT '?', \"a?\" FROM t WHERE x IN (?, ?) AND y = 'it''s?' || ?") == \
        "SELECT '?', \"a?\" FROM t WHERE x IN ($1, $2) AND y = 'it''s?' || $3"


async def test_a_read_only_open_searches_and_never_writes(
    new_postgres_index: Callable[[], str], search_docs: Path,
) -> None:
    url = new_postgres_index()
    async with Rifflux(url, embedder=CountingEmbedder()) as rf:
        await rf.reindex(search_docs)
    before = await index_rows(url, "SELECT max(seq) FROM changes")
    reading = Settings(db_path=DatabaseUrl(url), read_only=True)
    async with Rifflux(settings=reading, embedder=CountingEmbedder()) as rf:
        for mode in MODES:
            assert (await rf.search("pancakes", mode=mode))[0]["path"] == "cooking.md"
        with pytest.raises(RiffluxError, match="read-only"):
            await rf.reindex(search_docs)
        assert (await rf.status())["processes"] == []  # (and it is listed nowhere)
    assert await index_rows(url, "SELECT max(seq) FROM changes") == before
    empty = new_postgres_index()
    await index_rows(empty, "DROP TABLE meta")  # a database without an index
    with pytest.raises(SchemaVersionError, match="holds no Rifflux index"):
        async with Rifflux(settings=Settings(db_path=DatabaseUrl(empty), read_only=True)):
            pass


async def test_the_schema_is_made_once_when_several_open_a_new_database_at_once(
    postgres: PostgresServer, search_docs: Path,
) -> None:
    url = postgres.create_database("made_once")  # empty: no template
    opened: list[int] = []

    async def open_one() -> None:
        async with Rifflux(url, embedder=CountingEmbedder()) as rf:
            opened.append((await rf.status())["files"])

    async with anyio.create_task_group() as tg:
        for _ in range(3):
            tg.start_soon(open_one)
    assert opened == [0, 0, 0]
    assert await index_rows(url, "SELECT value FROM meta WHERE key = 'schema_version'") \
        == [(str(SCHEMA_VERSION),)]


_WORD_COUNTS = ("SELECT term, chunks FROM lexicon WHERE chunks > 0 ORDER BY term",
                "SELECT chunks, tokens FROM lexical_totals",
                # (by chunk: version 4 reads the files again, which writes their chunks anew)
                "SELECT f.rel_path, c.chunk_index, c.length FROM chunks c JOIN files f ON "
                "f.id = c.file_id ORDER BY 1, 2")


async def test_an_older_schema_is_upgraded_once_when_several_open_it_at_once(
    new_postgres_index: Callable[[], str], caplog: pytest.LogCaptureFixture, tmp_path: Path,
) -> None:
    url = new_postgres_index()
    write_all(tmp_path / "docs", SEARCH_DOCS)
    async with Rifflux(url, embedder=CountingEmbedder()) as rf:
        await rf.reindex(tmp_path / "docs")
    counted = [await index_rows(url, sql) for sql in _WORD_COUNTS]
    assert counted[1][0][0] == len(counted[2]) > 0
    told = "SELECT lang, count(*) FROM chunks WHERE lang IS NOT NULL GROUP BY lang"
    languages = await index_rows(url, told)
    assert languages
    await index_rows(url, "DROP TRIGGER changes_notified ON changes")  # as version 1 was
    await index_rows(url, "DROP FUNCTION rifflux_notify()")
    await index_rows(url, "DROP TRIGGER chunks_words_in ON chunks")  # (version 3's counts)
    await index_rows(url, "DROP TRIGGER chunks_words_out ON chunks")
    await index_rows(url, "DROP FUNCTION rifflux_words_in(), rifflux_words_out()")
    await index_rows(url, "DROP TABLE lexical_totals")
    await index_rows(url, "ALTER TABLE chunks DROP COLUMN length")
    await index_rows(url, "ALTER TABLE lexicon DROP COLUMN chunks")
    await index_rows(url, "ALTER TABLE files DROP COLUMN kind")  # (version 4's)
    await index_rows(url, "ALTER TABLE chunks DROP COLUMN page")
    await index_rows(url, "DROP INDEX files_langs_pending")  # (version 8's)
    await index_rows(url, "ALTER TABLE files DROP COLUMN langs_pending")
    await index_rows(url, "ALTER TABLE files DROP COLUMN langs")  # (version 5's)
    await index_rows(url, "ALTER TABLE chunks DROP COLUMN lang")
    await index_rows(url, "DROP TABLE commit_paths, commits, history_repos, commit_totals, "
                     "commit_lexicon")
    await index_rows(url, "DROP FUNCTION rifflux_commits_in(), rifflux_commits_out()")
    await index_rows(url, "UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    with pytest.raises(SchemaVersionError, match="older Rifflux.*without read_only"):
        async with Rifflux(settings=Settings(db_path=DatabaseUrl(url), read_only=True)):
            pass

    async def open_one() -> None:
        async with Rifflux(url, embedder=CountingEmbedder()) as rf:
            await rf.status()

    with caplog.at_level(logging.INFO, logger="rifflux.store.postgres.schema"):
        async with anyio.create_task_group() as tg:
            for _ in range(3):
                tg.start_soon(open_one)
    upgrades = [r for r in caplog.records if "schema upgraded" in r.getMessage()]
    assert len(upgrades) == 1
    assert await index_rows(url, "SELECT value FROM meta WHERE key = 'schema_version'") \
        == [(str(SCHEMA_VERSION),)]
    assert await index_rows(url, "SELECT count(*) FROM pg_trigger WHERE tgname = "
                            "'changes_notified'") == [(1,)]
    assert await index_rows(url, "SELECT commits, tokens FROM commit_totals") == [(0, 0)]
    assert [await index_rows(url, sql) for sql in _WORD_COUNTS] == counted
    # the files are read again at start (for their links), and each chunk is told its
    # language, from the stored chunks
    async with Rifflux(url, embedder=CountingEmbedder()) as rf:
        for job in (await rf.status())["jobs"]:  # (one that the first opens left unfinished)
            await rf.wait_for_job(job["id"])

        async def all_told() -> bool:
            return await index_rows(url, "SELECT count(*) FROM files WHERE "
                                         "langs_pending > 0") == [(0,)]

        await eventually(all_told, 30)
    assert await index_rows(url, told) == languages


async def test_two_instances_on_one_database_follow_each_other_and_embed_each_text_once(
    new_postgres_index: Callable[[], str], tmp_path: Path,
) -> None:
    url = new_postgres_index()
    one, two = CountingEmbedder(), CountingEmbedder()
    first, second = tmp_path / "first", tmp_path / "second"
    write_all(first, SEARCH_DOCS)
    write(second, "otters.md", "# Otters\n\nOtters hold hands while they sleep.\n")
    async with Rifflux(url, embedder=one) as a, Rifflux(url, embedder=two) as b:
        await a.reindex(first)
        await eventually(lambda: b.search("pancakes", mode="lexical"))
        await eventually(lambda: b.search("pancakes", mode="semantic", paths=["cooking.md"]))
        await b.reindex(second)
        await eventually(lambda: a.search("otters sleep", mode="lexical"))
        await eventually(lambda: a.search("otters", mode="semantic", paths=["otters.md"]))
        texts = await index_rows(url, "SELECT count(DISTINCT content_hash) FROM chunks")
        assert sorted(one.embedded + two.embedded) == sorted(set(one.embedded + two.embedded))
        assert len(one.embedded) + len(two.embedded) == texts[0][0]
        others = (await a.status())["processes"]
        assert len(others) == 1 and "indexer" in others[0]["roles"]


def test_the_command_line_indexes_and_searches_a_database(
    new_postgres_index: Callable[[], str], tmp_path: Path,
) -> None:
    url = new_postgres_index()
    write_all(tmp_path / "docs", SEARCH_DOCS)
    assert rifflux_cli(tmp_path, "--db", url, "index", "docs").returncode == 0
    done = rifflux_cli(tmp_path, "--db", url, "search", "pancakes", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["results"][0]["path"] == "cooking.md"


async def test_an_mcp_search_reads_a_database_by_its_url_in_db_path(
    new_postgres_index: Callable[[], str], tmp_path: Path, search_docs: Path,
) -> None:
    url = new_postgres_index()
    async with Rifflux(url, embedder=CountingEmbedder()) as rf:
        await rf.reindex(search_docs)
    async with mcp_session(tmp_path) as session:
        out = await call(session, "search_rifflux", query="pancakes", mode="lexical",
                         db_path=url)
        own = await call(session, "search_rifflux", query="pancakes", mode="lexical")
    assert out["count"] >= 1 and own["count"] == 0


def test_asyncpgs_warnings_while_the_server_is_away_are_one_line(
        caplog: pytest.LogCaptureFixture) -> None:
    # (its pool logged every failed reconnect with a traceback: 82 lines of stderr for
    # one `rifflux index` across a restart, beside Rifflux's own words)
    import rifflux.store.postgres.connection  # noqa: F401 (its filter, set at import)

    try:
        raise ConnectionRefusedError(111, "Connect call failed")
    except OSError:
        logging.getLogger("asyncpg.pool").warning(
            "Failed to restore the pool connection floor; retrying", exc_info=True)
    [record] = [r for r in caplog.records if r.name == "asyncpg.pool"]
    assert record.getMessage() == ("Failed to restore the pool connection floor; retrying "
                                   "(ConnectionRefusedError: [Errno 111] Connect call failed)")
    assert record.exc_info is None and "Traceback" not in caplog.text
