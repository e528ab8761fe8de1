"""Whole numbers in text a client or an operator sent: a path or query value, a
partition id in an address, a selector's offset, a port in the environment.

``str.isdigit`` takes '²' (which ``int`` refuses) and '١' (which ``int`` reads as
1), and ``int`` refuses more than 4,300 digits: each raised, or took a number the
client never wrote, where a front end checked digits that way. One check, here,
so each front end can answer in its own terms (a 404, an AMQP condition)."""
from __future__ import annotations

__all__ = ["whole_number"]


def whole_number(text: str, signed: bool = False, most: int = 40) -> int | None:
    """``text`` as a whole number of at most ``most`` ASCII digits (after a leading
    ``-`` where ``signed``), else None."""
    digits = text[1:] if signed and text[:1] == "-" else text
    if not digits or len(digits) > most or not digits.isascii() or not digits.isdigit():
        return None
    return int(text)
