"""
Numbers as Python's repr writes them (text.hpp), and JSON values (JsonText).
"""

from collections.abc import Sequence


def json(obj: object | None, level: int, fallback: object) -> str: ...

def numbers(items: object, separators: Sequence[str]) -> object: ...
