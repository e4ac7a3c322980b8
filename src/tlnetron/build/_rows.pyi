from collections.abc import Sequence
from typing import Any

def value_rows(
    out: list[dict[str, Any]], kind: str, names: tuple[str, ...], pairs: Sequence[tuple[str, Any]], /
) -> None: ...
def survey(rows: Sequence[dict[str, Any]], /) -> tuple[bool, list[tuple[str, str]], float, list[Any]]: ...
