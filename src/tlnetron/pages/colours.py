"""Pages' heat map: the colour-scheme vocabulary (generated from schema/) and its refusal.

The colouring itself runs in the page (``heatmap.js``), from the companion and artifact the
page hands Netron; Python only checks the choice and passes it on.
"""

from __future__ import annotations

from typing import Any

from .._generated.vocab import COLOUR_SCHEME, COLOUR_SCHEMES, ColourSchemeName
from ..options import check_colour_by

__all__ = ["COLOUR_SCHEME", "check_colour", "page_colours"]


def check_colour(value: Any) -> ColourSchemeName:
    """``value`` if it is a colour scheme, else refuse with ``invalid_colour_scheme``.

    The rule is :func:`tlnetron.options.check_colour_by`'s.
    """
    return check_colour_by(value)


def page_colours(colour_by: str) -> dict[str, Any]:
    """What a page's script reads: the schemes to offer (none, then the schema's table: label and
    where each node's value comes from) and the first choice."""
    schemes = [{"name": name, "label": name} if name == "none" else COLOUR_SCHEMES[name] for name in COLOUR_SCHEME]
    return {"schemes": schemes, "colour": check_colour(colour_by)}
