from collections.abc import Sequence

KINDS: tuple[str, ...]

def onepass(
    items: Sequence[tuple[int, int, Sequence[int], Sequence[int]]], /
) -> list[tuple[float | int | None, float | int | None, float | None, float | None, int, int, int, int]]: ...
def enqueue(state: tuple[object, ...], at: int, t: object, /) -> bool: ...
