"""Numbers as Python's repr writes them (text.hpp)."""

from collections.abc import Sequence


def numbers(items: object, separators: Sequence[str]) -> object: ...
