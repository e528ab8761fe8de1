"""What an Avro body decodes to, counted before it is decoded.

The explorer decodes an Avro body on the broker's event loop, and a few bytes can
claim a great deal: an array or map says how many items follow, and an item of a
type that takes no bytes (null, a record of nulls, a fixed of size 0) costs no
input to read, so five bytes can claim 2**62 of them; a decimal's bytes become a
number in time quadratic in their length (100 KB: 1.5 s). :func:`measure` walks
the body against the schema (as fastavro parses it), building nothing, and stops
as soon as the values, the JSON they would make or the nesting pass the limits
given; a body within them decodes in time and memory bounded by those limits.
"""
from __future__ import annotations

MAX_DEPTH = 64          # levels of records, arrays, maps and unions (recursive types)
DECIMAL_MAX_BYTES = 64  # ~154 digits: a decimal's bytes become a number in quadratic time


class TooLarge(ValueError):
    """The body decodes past a limit: it is not decoded."""
    values = 0


class Malformed(ValueError):
    """The body does not decode with the schema."""
    values = 0


def measure(schema, named: dict, data: bytes, max_values: int, max_chars: int) -> tuple[int, int]:
    """(values, approximate characters of JSON) that ``data`` decodes to with
    ``schema`` (fastavro's parsed form; ``named``: its named types by full name).
    Raises :class:`TooLarge` past ``max_values`` or ``max_chars`` or
    :data:`MAX_DEPTH`, :class:`Malformed` if the body does not fit the schema; either
    says in ``values`` how many values it walked (the work it took)."""
    walk = _Walk(data, named, max_values, max_chars)
    try:
        walk.value(schema, 0)
    except (TooLarge, Malformed) as exc:
        exc.values = walk.values
        raise
    return walk.values, walk.chars


class _Walk:
    __slots__ = ("data", "pos", "named", "values", "chars", "max_values", "max_chars")

    def __init__(self, data: bytes, named: dict, max_values: int, max_chars: int) -> None:
        self.data, self.pos, self.named = data, 0, named
        self.values = self.chars = 0
        self.max_values, self.max_chars = max_values, max_chars

    def count(self, chars: int) -> None:
        """One value more, of about ``chars`` characters of JSON."""
        self.values += 1
        self.chars += chars
        if self.values > self.max_values:
            raise TooLarge(f"it decodes to more than {self.max_values:,} values")
        if self.chars > self.max_chars:
            raise TooLarge(f"it decodes to more than {self.max_chars:,} characters of JSON")

    def long(self) -> int:
        """A zigzag varint (Avro's int and long)."""
        data, p = self.data, self.pos
        if p < len(data) and data[p] < 0x80:  # one byte: most counts, lengths, indexes
            self.pos = p + 1
            return (data[p] >> 1) ^ -(data[p] & 1)
        result = shift = 0
        while True:
            if p >= len(data):
                raise Malformed("the body ends inside a number")
            b = data[p]
            p += 1
            result |= (b & 0x7F) << shift
            if b < 0x80:
                break
            shift += 7
            if shift > 63:
                raise Malformed("a number is longer than 10 bytes")
        self.pos = p
        return (result >> 1) ^ -(result & 1)

    def skip(self, n: int) -> None:
        if n < 0 or self.pos + n > len(self.data):
            raise Malformed(f"a length of {n} runs past the body's end")
        self.pos += n

    def value(self, schema, depth: int) -> None:
        if depth > MAX_DEPTH:
            raise TooLarge(f"it nests more than {MAX_DEPTH} levels deep")
        if isinstance(schema, list):  # a union: the branch's index, then its value
            branch = self.long()
            if not 0 <= branch < len(schema):
                raise Malformed(f"union branch {branch} is not one of 0..{len(schema) - 1}")
            return self.value(schema[branch], depth + 1)
        if isinstance(schema, str):
            if schema in self.named:
                schema = self.named[schema]
            else:
                return self.primitive(schema, None)
        kind = schema["type"]
        if not isinstance(kind, str):  # {"type": {"type": ...}}
            return self.value(kind, depth + 1)
        if kind in ("record", "error"):
            self.count(2)
            for field in schema["fields"]:
                self.chars += len(field["name"]) + 4
                self.value(field["type"], depth + 1)
        elif kind in ("array", "map"):
            self.count(2)
            items = schema["items"] if kind == "array" else schema["values"]
            while True:
                block = self.long()
                if block == 0:
                    break
                if block < 0:  # a negative count is followed by the block's size in bytes
                    block = -block
                    self.long()
                # Each item counts a value: the loop ends at max_values whatever the
                # count says, even for items that take no bytes.
                for _ in range(block):
                    if kind == "map":
                        n = self.long()
                        self.skip(n)
                        self.chars += n + 4
                    self.value(items, depth + 1)
        elif kind == "enum":
            index = self.long()
            symbols = schema["symbols"]
            if not 0 <= index < len(symbols):
                raise Malformed(f"enum index {index} is not one of 0..{len(symbols) - 1}")
            self.count(len(symbols[index]) + 2)
        elif kind == "fixed":
            size = schema["size"]
            self._decimal(schema, size)
            self.skip(size)
            self.count(2 * size + 2)
        else:
            self.primitive(kind, schema)

    def primitive(self, kind: str, schema: dict | None) -> None:
        if kind == "null":
            self.count(4)
        elif kind == "boolean":
            self.skip(1)
            self.count(5)
        elif kind in ("int", "long"):
            start = self.pos
            self.long()
            # ~2 digits a byte, a sign and a comma; a date or time: its ISO text
            self.count(3 * (self.pos - start) + 1 if schema is None or "logicalType" not in schema else 40)
        elif kind == "float":
            self.skip(4)
            self.count(24)
        elif kind == "double":
            self.skip(8)
            self.count(24)
        elif kind in ("bytes", "string"):
            n = self.long()
            if schema is not None:
                self._decimal(schema, n)
            self.skip(n)
            self.count((2 * n if kind == "bytes" else n) + 2)  # bytes are shown as hex
        else:
            raise Malformed(f"the schema names a type {kind[:80]!r} that it does not define")

    @staticmethod
    def _decimal(schema: dict, n: int) -> None:
        if schema.get("logicalType") == "decimal" and n > DECIMAL_MAX_BYTES:
            raise TooLarge(f"it holds a decimal of {n:,} bytes (more than {DECIMAL_MAX_BYTES})")
