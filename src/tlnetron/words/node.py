"""Everything said about one drawn node, worded once into :class:`NodeWords`: the artifact's
builder (its metadataProps and docString) and the companion (its metric and diff rows) both
read the record, so a node's facts and diff are never worded twice."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..ir.drawing import PNode
from .diff import diff_rows, diff_sentence
from .facts import companion_metric_rows, fact_rows

__all__ = ["NodeWords", "word_node", "word_nodes", "words_of"]


@dataclass(frozen=True, slots=True)
class NodeWords:
    """One node's words, as every file states them."""

    metadata: tuple[tuple[str, str], ...]
    """Its metadataProps as written: its facts and own rows sorted, then its diff rows."""
    diff: tuple[tuple[str, str], ...]
    """Its diff rows alone (the last of ``metadata``), which the companion repeats as rows."""
    metrics: tuple[tuple[str, Any], ...]
    """The companion's metric rows of its facts, in the companion's order (none when worded
    for an export that writes no companion)."""
    doc: str
    """Its docString: the description, then the diff sentence when it has diff facts."""


def word_node(node: PNode, companion: bool = True) -> NodeWords:
    """Word ``node`` once (see :class:`NodeWords`); ``companion``: word its companion rows too."""
    diff = diff_rows(node.diff) if node.diff is not None else ()
    facts = fact_rows(node.facts)
    rows: Iterable[tuple[str, str]] = sorted([*facts, *node.metadata]) if facts else node.metadata
    doc = node.doc if node.diff is None else f"{node.doc}\n{diff_sentence(dict(diff))}"
    metrics = tuple(companion_metric_rows(node.facts)) if companion else ()
    return NodeWords((*rows, *diff), diff, metrics, doc)


def word_nodes(nodes: Iterable[PNode], companion: bool = True) -> dict[str, NodeWords]:
    """Every node's words by its name (``companion``: as :func:`word_node`). A name two nodes
    share (a drawing the checker then refuses) has no entry: readers word those nodes where
    they meet them (:func:`words_of`)."""
    words: dict[str, NodeWords] = {}
    shared: set[str] = set()
    for node in nodes:
        if node.name in words:
            shared.add(node.name)
        words[node.name] = word_node(node, companion)
    for name in shared:
        del words[name]
    return words


def words_of(node: PNode, words: Mapping[str, NodeWords] | None) -> NodeWords:
    """``node``'s record from ``words``, or worded now (no record, or a name nodes share)."""
    said = None if words is None else words.get(node.name)
    return word_node(node) if said is None else said
