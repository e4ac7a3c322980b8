from collections.abc import Sequence

def onepass(
    items: Sequence[tuple[int, int, Sequence[int], Sequence[int]]], /
) -> list[tuple[float, float, float, float, int, int]]: ...
