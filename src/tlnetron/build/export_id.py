"""The export id: one id in the artifact and in its companion, derived from both.

Every export writes an export id into the artifact's model metadata
(``torchlens.export_id``) and into its companion (the model row of the same name), so a
pair can be matched (:func:`tlnetron.check.pairs.pair_mismatch`). The id is derived from
the files' content, so exports stay deterministic: both files are first built with
:data:`PLACEHOLDER` (32 ``'0'`` characters) where the id goes, and the id is the first 32
hex digits of the sha256 of the artifact's bytes followed by the companion's bytes (the
artifact's alone when no companion is written; :func:`export_id_of`). The builder then
encodes the artifact again with the id in place, its JSON and its proto
(:func:`tlnetron.build.artifact.build_model`), and :func:`companion_with_id` writes the id over
the companion's placeholder. Anyone can check an id the same way: put the placeholder back
in both files and hash them.
"""

from __future__ import annotations

import hashlib

from .._generated.vocab import CompanionKind, CompanionRow, MetaKey
from .serialize import dumps_bytes

__all__ = ["ID_LENGTH", "PLACEHOLDER", "companion_with_id", "export_id_of"]

ID_LENGTH = 32
"""Hex digits of an export id (128 bits)."""

PLACEHOLDER = "0" * ID_LENGTH
"""What the files hold where the id goes while the id is computed."""

if CompanionRow.TORCHLENS_EXPORT_ID != MetaKey.EXPORT_ID:  # pragma: no cover - the schemas say so
    raise AssertionError("the companion's export id row must have the artifact's metadata key as its name")

# The companion's id row up to the end of the placeholder: unescaped quotes cannot occur
# inside a JSON string and no other model row has this name, so the first match is the one
# (it is the first row, near the top of the file).
_COMPANION_MARKER = dumps_bytes(
    {"kind": CompanionKind.MODEL, "target": "", "name": CompanionRow.TORCHLENS_EXPORT_ID, "value": PLACEHOLDER}
)[1:-2]


def export_id_of(artifact_json: bytes, companion: bytes | None) -> str:
    """The id of an artifact (and companion) holding :data:`PLACEHOLDER` where the id goes."""
    digest = hashlib.sha256(artifact_json)
    if companion is not None:
        digest.update(companion)
    return digest.hexdigest()[:ID_LENGTH]


def companion_with_id(companion: bytes, export_id: str) -> bytes:
    """``companion`` with ``export_id`` written over the placeholder of its id row.

    Raises:
        ValueError: the companion has no id row holding the placeholder (a bug in tlnetron).
    """
    at = companion.find(_COMPANION_MARKER)
    if at < 0:
        raise ValueError("no export id placeholder in the companion")
    end = at + len(_COMPANION_MARKER)
    view = memoryview(companion)
    return b"".join((view[: end - ID_LENGTH], export_id.encode("ascii"), view[end:]))  # one copy
