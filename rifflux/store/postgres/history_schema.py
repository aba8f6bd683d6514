"""The history's tables on PostgreSQL (schema version 6, 7; ``store.sqlite.history_schema``
holds SQLite's): the git repositories holding indexed folders, their commits as
documents, the paths each commit changed. A commit's vector is in ``embeddings`` by the
hash of its text, as a chunk's is (embedded once, whoever's text it is).

The lexical leg (``history_lexical``) ranks as FTS5 ranks SQLite's ``commits_fts``, from
WAL-logged data only: ``commits.lexemes`` holds a commit's tokens (``core.lexemes``),
each field repeated as often as its weight in bm25 (``history.rows.WEIGHTS``: the title
10 times, the body twice, the paths and the change once), under a GIN index (which
commits match); ``commits.words`` their ``tsvector``, stored (a phrase's positions are
read, never parsed again: a commit's text is long), and ``title_words`` its title's (the
title phrase's commits, counted through an index of their own); ``commits.length`` its
tokens as FTS5 counts them (each field once), ``commit_totals`` the commits and their
tokens, and ``commit_lexicon`` each word with the commits holding it (a word's idf),
both kept by triggers in the transaction that writes the commits, as the chunks'
``lexical_totals`` and ``lexicon``. A BM25 index (``pg_textsearch``, ``HISTORY_BM25``)
finds the best candidates while it is whole, as the chunks' does (``bm25_index``).
"""

from __future__ import annotations

from .word_counts import counted_words

#: Each commit's distinct words (its stored ``tsvector``'s lexemes, without their
#: positions: 2.5 times faster than ``unnest(words)``), of the commits in ``{rows}``:
#: (term, commits holding it).
_TERMS = ("SELECT t.term, count(*) FROM {rows} c, unnest(tsvector_to_array(c.words)) AS "
          "t(term) GROUP BY t.term")

#: The name of the commits' BM25 index (``to_bm25query`` names it).
HISTORY_BM25 = "commits_bm25"

HISTORY_TABLES = """
CREATE TABLE history_repos(
    id bigserial PRIMARY KEY, git_dir text NOT NULL UNIQUE, worktree text NOT NULL,
    tips text NOT NULL DEFAULT '[]', shallow boolean NOT NULL DEFAULT false, problem text,
    read_at double precision, commits integer NOT NULL DEFAULT 0);
CREATE TABLE commits(
    id bigserial PRIMARY KEY,
    repo_id bigint NOT NULL REFERENCES history_repos(id) ON DELETE CASCADE,
    hash text COLLATE "C" NOT NULL, parents text NOT NULL, author_name text NOT NULL,
    author_email text NOT NULL, author_time bigint NOT NULL, committer_name text NOT NULL,
    committer_email text NOT NULL, commit_time bigint NOT NULL, title text NOT NULL,
    body text NOT NULL, paths text NOT NULL, summary text NOT NULL,
    cut boolean NOT NULL DEFAULT false, content_hash text NOT NULL, lexemes text NOT NULL,
    length integer NOT NULL,
    words tsvector GENERATED ALWAYS AS (to_tsvector('simple'::regconfig, lexemes)) STORED,
    title_words tsvector GENERATED ALWAYS AS
        (to_tsvector('simple'::regconfig, split_part(lexemes, ' | ', 1))) STORED,
    UNIQUE(repo_id, hash));
CREATE INDEX commits_by_hash ON commits(hash);
CREATE INDEX commits_by_time ON commits(commit_time);
CREATE INDEX commits_by_text ON commits(content_hash);
CREATE INDEX commits_words ON commits USING gin (words);
CREATE INDEX commits_title_words ON commits USING gin (title_words);
CREATE TABLE commit_paths(
    id bigserial PRIMARY KEY,
    commit_id bigint NOT NULL REFERENCES commits(id) ON DELETE CASCADE,
    path text NOT NULL, old_path text, change text NOT NULL,
    added integer NOT NULL DEFAULT 0, removed integer NOT NULL DEFAULT 0,
    is_binary boolean NOT NULL DEFAULT false);
CREATE INDEX commit_paths_by_path ON commit_paths(path, commit_id);
CREATE INDEX commit_paths_by_commit ON commit_paths(commit_id);
CREATE TABLE commit_totals(
    one boolean PRIMARY KEY DEFAULT true CHECK (one), commits bigint NOT NULL,
    tokens bigint NOT NULL);
INSERT INTO commit_totals(commits, tokens) VALUES (0, 0);
CREATE TABLE commit_lexicon(term text COLLATE "C" PRIMARY KEY, commits integer NOT NULL);
""" + counted_words(
    table="commits", totals="commit_totals", lexicon="commit_lexicon", count="commits",
    terms=_TERMS, function="rifflux_commits", trigger="commits_counted")

#: Version 7: the commits' word counts kept from their ``tsvector``'s lexemes alone (the
#: triggers' functions replaced, the triggers kept).
HISTORY_COUNTS = counted_words(
    table="commits", totals="commit_totals", lexicon="commit_lexicon", count="commits",
    terms=_TERMS, function="rifflux_commits", trigger="commits_counted", replace=True)

HISTORY_BM25_INDEX = (f"CREATE INDEX IF NOT EXISTS {HISTORY_BM25} ON commits USING "
                      "bm25(lexemes) WITH (text_config='simple', k1=1.2, b=0.75)")
