"""A tracer that counts the statements a store sends, for tests that bound them."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

T = TypeVar("T")


class Counter:
    def __init__(self) -> None:
        self.sent = 0
        self.texts: list[str] = []  # every statement sent, in order

    def __call__(self, statement: str, params: Mapping[str, Any] | None, seconds: float) -> None:
        self.sent += 1
        self.texts.append(statement)

    def sent_by(self, read: Callable[[], T]) -> tuple[T, int]:
        """What ``read`` answered, and how many statements it sent."""
        before = self.sent
        value = read()
        return value, self.sent - before
