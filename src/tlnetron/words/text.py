"""Words: text shaping every surface shares (one-line fields, cut texts, parameter lists, plurals)."""

from __future__ import annotations

from collections.abc import Iterable

from .._generated.vocab import (
    NODE_TEXT_MAX_LENGTH,
)

__all__ = ["full_texts", "one_line", "params_text", "plural", "shortened"]


def one_line(text: str) -> str:
    """Text for a single-line field: line breaks shown as ``\\n`` instead of breaking rows,
    and :func:`shortened` past the schema's limit."""
    if "\n" in text or "\r" in text:
        text = text.replace("\r\n", "\\n").replace("\n", "\\n").replace("\r", "\\r")
    return shortened(text) if len(text) > NODE_TEXT_MAX_LENGTH else text


def shortened(text: str, limit: int = NODE_TEXT_MAX_LENGTH) -> str:
    """``text`` cut in the middle to ``limit`` characters, saying how much was left out and
    where the whole of it is (the node's description, see :func:`full_texts`)."""
    if len(text) <= limit:
        return text
    marker = f" …[{len(text):,} characters in all; the whole text is in the description]… "
    keep = limit - len(marker)
    return text[: keep - keep // 3] + marker + text[len(text) - keep // 3 :]


def full_texts(fields: Iterable[tuple[str, str | None]]) -> str:
    """Description lines giving the whole of each field too long for its attribute, or ""."""
    return "".join(f"\n{name} (whole): {text}" for name, text in fields if text and len(text) > NODE_TEXT_MAX_LENGTH)


def params_text(params: tuple[tuple[str, tuple[int, ...]], ...]) -> str | None:
    """An op's parameters, ``weight 768×768, bias 768`` (None: it has none)."""
    if not params:
        return None
    return ", ".join(f"{one_line(n)} {'×'.join(str(d) for d in s) if s else 'scalar'}" for n, s in params)


def plural(n: int, one: str, many: str | None = None) -> str:
    return f"{n:,} {one if n == 1 else (many or one + 's')}"
