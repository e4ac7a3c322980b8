"""Pages' heat map: the colour-scheme vocabulary (generated from schema/) and its refusal.

The colouring itself runs in the page (``heatmap.js``), from the companion and artifact the
page hands Netron; Python only checks the choice and passes it on.
"""

from __future__ import annotations

from typing import Any

from .._generated.vocab import COLOUR_SCHEME, ColourScheme, ColourSchemeName, ErrorCode
from ..errors import TlnetronError

__all__ = ["COLOUR_SCHEME", "check_colour", "page_colours"]


def check_colour(value: Any, flag: str = "colour_by") -> ColourSchemeName:
    """``value`` if it is a colour scheme, else refuse with ``invalid_colour_scheme`` listing them."""
    if isinstance(value, str) and value in COLOUR_SCHEME:
        return value
    choices = ", ".join(COLOUR_SCHEME)
    raise TlnetronError(
        ErrorCode.INVALID_COLOUR_SCHEME,
        f"{flag} {value!r} is not a colour scheme; nothing was written.",
        where=flag,
        remedy=f"choose one of: {choices} (default {ColourScheme.NONE}).",
    )


def page_colours(colour_by: str) -> dict[str, Any]:
    """What a page's script reads: the schemes to offer and the first choice."""
    return {"schemes": list(COLOUR_SCHEME), "colour": check_colour(colour_by)}
