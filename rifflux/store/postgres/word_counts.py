"""The word counts FTS5's bm25 needs, kept in PostgreSQL by triggers as rows come and go
(ordinary, WAL-logged tables: whole after a restart and on a replica), for any table
whose rows carry a ``length`` (their tokens): the chunks' (``schema``) and the commits'
(``history_schema``)."""

from __future__ import annotations


def counted_words(*, table: str, totals: str, lexicon: str, count: str, terms: str,
                  function: str, trigger: str, replace: bool = False) -> str:
    """The triggers that keep ``table``'s word counts as rows come and go: ``totals`` (its
    rows and their tokens: ``count``, ``tokens``) and ``lexicon`` (how many rows hold each
    term; ``terms``: the statement that lists (term, rows) of the rows in ``{rows}``).
    Their functions are ``function``_in and _out, the triggers ``trigger``_in and _out.
    With ``replace``: the functions alone, replacing those there (an upgrade)."""
    functions = f"""
CREATE OR REPLACE FUNCTION {function}_in() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
    UPDATE {totals} SET {count} = {count} + n.c, tokens = tokens + n.t
        FROM (SELECT count(*) AS c, COALESCE(sum(length), 0) AS t FROM new_rows) n;
    INSERT INTO {lexicon}(term, {count}) {terms.format(rows="new_rows")}
        ON CONFLICT (term) DO UPDATE SET {count} = {lexicon}.{count} + excluded.{count};
    RETURN NULL; END $$;
CREATE OR REPLACE FUNCTION {function}_out() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
    UPDATE {totals} SET {count} = {count} - o.c, tokens = tokens - o.t
        FROM (SELECT count(*) AS c, COALESCE(sum(length), 0) AS t FROM old_rows) o;
    UPDATE {lexicon} l SET {count} = l.{count} - o.n
        FROM ({terms.format(rows="old_rows")}) AS o(w, n) WHERE l.term = o.w;
    RETURN NULL; END $$;
"""
    if replace:
        return functions
    return functions + f"""
CREATE TRIGGER {trigger}_in AFTER INSERT ON {table} REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION {function}_in();
CREATE TRIGGER {trigger}_out AFTER DELETE ON {table} REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION {function}_out();
"""
