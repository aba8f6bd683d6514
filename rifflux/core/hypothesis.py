"""A hypothesis: what the answer would look like, written by the caller (an agent is
good at it), embedded by the semantic branch in place of the question, while the
lexical branch keeps the query's words (hypothetical-document search).

``semantic_text`` is the text the semantic branch embeds. Measured on Cranfield's 225
queries (``python -m benchmarks._quality_models``, each hypothesis the title of a
judged-relevant document: an upper bound), hypothesis alone -> hypothesis and query:
semantic nDCG@10 0.519 -> 0.544, recall@100 0.736 -> 0.809; hybrid nDCG@10 0.503 ->
0.492, recall@100 0.820 -> 0.838 (the query alone: hybrid 0.422 / 0.778). Both are
embedded: better on three figures of four, and the query keeps a wrong guess from
leading the semantic branch away alone.
"""

from __future__ import annotations

from ..errors import InvalidArgumentError
from ..limits import MAX_HYPOTHESIS_CHARS

__all__ = ["WITH_QUERY", "checked_hypothesis", "semantic_text"]

#: The semantic branch embeds the hypothesis followed by the query (True), or the
#: hypothesis alone (False): chosen by measurement (the module's docstring).
WITH_QUERY = True


def semantic_text(query: str, hypothesis: str | None) -> str:
    """What the semantic branch embeds for ``query`` and its ``hypothesis``."""
    if hypothesis is None:
        return query
    return f"{hypothesis}\n{query}" if WITH_QUERY else hypothesis


def checked_hypothesis(hypothesis: object, mode: str) -> str | None:
    """A caller's hypothesis, once known to be good (None: none given); raises
    ``InvalidArgumentError`` saying what to fix."""
    if hypothesis is None:
        return None
    if not isinstance(hypothesis, str):
        raise InvalidArgumentError("hypothesis must be a string: a sentence or a paragraph "
                                   "written as the answer would be")
    if not hypothesis.strip():
        raise InvalidArgumentError("hypothesis is blank: write what the answer would say, "
                                   "or leave it out")
    if len(hypothesis) > MAX_HYPOTHESIS_CHARS:
        raise InvalidArgumentError(
            f"hypothesis is {len(hypothesis):,} characters long, over the "
            f"{MAX_HYPOTHESIS_CHARS:,} it may be (the model reads only its first few hundred "
            "words): write a paragraph, as the answer would begin")
    if mode == "lexical":
        raise InvalidArgumentError(
            "a hypothesis is embedded by the semantic branch, which a lexical search does "
            "not run: search in hybrid or semantic mode, or leave the hypothesis out")
    return hypothesis
