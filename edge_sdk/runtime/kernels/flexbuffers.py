"""A small, bounds-checked FlexBuffers reader for custom-op options.

TFLM's "signal" custom ops keep their parameters in a FlexBuffers map in ``Operator.custom_options``. This
module decodes such a buffer into plain Python values (dict, list, int, float, bool, str, bytes, None).
Every read is checked against the buffer's length, every offset must point strictly backwards (FlexBuffers
writes children before parents, so a well-formed buffer never needs anything else), and nesting is limited:
a malformed buffer raises ``FlexBufferError`` (a ModelError) instead of reading out of bounds or looping.

Layout in brief: the last byte of the buffer is the root's byte width, the byte before it the root's packed
type (type << 2 | log2 of the width of the data it points to). Scalars are stored inline in their parent's
width; strings, blobs, vectors and maps are stored as unsigned offsets back to their data, with the element
count just before the data. Untyped vectors and maps follow their elements with one packed-type byte per
element; a map additionally stores, before its count, an offset to a typed vector of keys and that vector's
byte width.
"""

from __future__ import annotations

import struct

from edge_sdk.errors import ModelError

__all__ = ["FlexBufferError", "loads", "read_map"]

# Value types (FlexBuffers' Type enum)
NULL, INT, UINT, FLOAT, KEY, STRING = 0, 1, 2, 3, 4, 5
INDIRECT_INT, INDIRECT_UINT, INDIRECT_FLOAT = 6, 7, 8
MAP, VECTOR = 9, 10
VECTOR_INT, VECTOR_UINT, VECTOR_FLOAT, VECTOR_KEY, VECTOR_STRING_DEPRECATED = 11, 12, 13, 14, 15
VECTOR_INT2, VECTOR_UINT2, VECTOR_FLOAT2 = 16, 17, 18
VECTOR_INT3, VECTOR_UINT3, VECTOR_FLOAT3 = 19, 20, 21
VECTOR_INT4, VECTOR_UINT4, VECTOR_FLOAT4 = 22, 23, 24
BLOB, BOOL, VECTOR_BOOL = 25, 26, 36

_TYPED_VECTORS = {
    VECTOR_INT: INT,
    VECTOR_UINT: UINT,
    VECTOR_FLOAT: FLOAT,
    VECTOR_KEY: KEY,
    VECTOR_STRING_DEPRECATED: STRING,
    VECTOR_BOOL: BOOL,
}
_FIXED_VECTORS = {
    VECTOR_INT2: (INT, 2), VECTOR_UINT2: (UINT, 2), VECTOR_FLOAT2: (FLOAT, 2),
    VECTOR_INT3: (INT, 3), VECTOR_UINT3: (UINT, 3), VECTOR_FLOAT3: (FLOAT, 3),
    VECTOR_INT4: (INT, 4), VECTOR_UINT4: (UINT, 4), VECTOR_FLOAT4: (FLOAT, 4),
}
_MAX_DEPTH = 32


class FlexBufferError(ModelError):
    """A FlexBuffers buffer that cannot be decoded (truncated, bad offsets, unknown types)."""


class _Reader:
    def __init__(self, buf: bytes):
        self.buf = bytes(buf)
        self.n = len(self.buf)

    def fail(self, message: str) -> FlexBufferError:
        return FlexBufferError(f"malformed FlexBuffer ({self.n} bytes): {message}")

    def _span(self, pos: int, width: int) -> None:
        if pos < 0 or width < 0 or pos + width > self.n:
            raise self.fail(f"read of {width} bytes at offset {pos} is out of bounds")

    def uint(self, pos: int, width: int) -> int:
        self._span(pos, width)
        return int.from_bytes(self.buf[pos : pos + width], "little", signed=False)

    def int(self, pos: int, width: int) -> int:
        self._span(pos, width)
        return int.from_bytes(self.buf[pos : pos + width], "little", signed=True)

    def float(self, pos: int, width: int) -> float:
        self._span(pos, width)
        if width == 4:
            return struct.unpack_from("<f", self.buf, pos)[0]
        if width == 8:
            return struct.unpack_from("<d", self.buf, pos)[0]
        raise self.fail(f"float of byte width {width} at offset {pos}")

    def target(self, pos: int, width: int) -> int:
        """Follow the offset stored at ``pos`` (``width`` bytes) back to the data it points to."""
        offset = self.uint(pos, width)
        if offset == 0 or offset > pos:
            raise self.fail(f"offset {offset} at {pos} does not point backwards into the buffer")
        return pos - offset

    def count(self, data: int, width: int) -> int:
        size = self.uint(data - width, width)
        if size > self.n:
            raise self.fail(f"element count {size} at {data - width} exceeds the buffer")
        return size

    def key(self, pos: int) -> str:
        if pos < 0 or pos >= self.n:
            raise self.fail(f"key at offset {pos} is out of bounds")
        end = self.buf.find(b"\0", pos)
        if end < 0:
            raise self.fail(f"key at offset {pos} has no terminating NUL")
        try:
            return self.buf[pos:end].decode("utf-8")
        except UnicodeDecodeError:
            raise self.fail(f"key at offset {pos} is not UTF-8") from None

    def value(self, pos: int, parent_width: int, packed: int, depth: int):
        """The value whose reference is stored at ``pos`` in ``parent_width`` bytes, of packed type ``packed``."""
        if depth > _MAX_DEPTH:
            raise self.fail(f"nesting deeper than {_MAX_DEPTH}")
        vtype, width = packed >> 2, 1 << (packed & 3)
        if vtype == NULL:
            return None
        if vtype == INT:
            return self.int(pos, parent_width)
        if vtype == UINT:
            return self.uint(pos, parent_width)
        if vtype == BOOL:
            return self.uint(pos, parent_width) != 0
        if vtype == FLOAT:
            return self.float(pos, parent_width)
        data = self.target(pos, parent_width)
        if vtype == INDIRECT_INT:
            return self.int(data, width)
        if vtype == INDIRECT_UINT:
            return self.uint(data, width)
        if vtype == INDIRECT_FLOAT:
            return self.float(data, width)
        if vtype == KEY:
            return self.key(data)
        if vtype in (STRING, BLOB):
            size = self.count(data, width)
            self._span(data, size)
            raw = self.buf[data : data + size]
            if vtype == BLOB:
                return raw
            try:
                return raw.decode("utf-8")
            except UnicodeDecodeError:
                raise self.fail(f"string at offset {data} is not UTF-8") from None
        if vtype == VECTOR:
            return self.untyped(data, width, self.count(data, width), depth)
        if vtype == MAP:
            return self.map(data, width, depth)
        if vtype in _TYPED_VECTORS:
            return self.typed(data, width, self.count(data, width), _TYPED_VECTORS[vtype], depth)
        if vtype in _FIXED_VECTORS:
            elem, size = _FIXED_VECTORS[vtype]
            return self.typed(data, width, size, elem, depth)
        raise self.fail(f"unknown value type {vtype} at offset {pos}")

    def untyped(self, data: int, width: int, size: int, depth: int) -> list:
        self._span(data, size * width + size)
        types = data + size * width
        return [self.value(data + i * width, width, self.buf[types + i], depth + 1) for i in range(size)]

    def typed(self, data: int, width: int, size: int, elem: int, depth: int) -> list:
        self._span(data, size * width)
        packed = (elem << 2) | (width.bit_length() - 1)  # an element's own data has the vector's width
        return [self.value(data + i * width, width, packed, depth + 1) for i in range(size)]

    def map(self, data: int, width: int, depth: int) -> dict:
        size = self.count(data, width)
        keys_at = data - 3 * width
        keys = self.target(keys_at, width)
        keys_width = self.uint(data - 2 * width, width)
        if keys_width not in (1, 2, 4, 8):
            raise self.fail(f"map at {data}: key vector byte width {keys_width}")
        if self.count(keys, keys_width) != size:
            raise self.fail(f"map at {data}: {size} values but a different number of keys")
        self._span(keys, size * keys_width)
        names = [self.key(self.target(keys + i * keys_width, keys_width)) for i in range(size)]
        values = self.untyped(data, width, size, depth)
        out: dict = {}
        for k, v in zip(names, values):
            if k in out:
                raise self.fail(f"map at {data}: duplicate key '{k}'")
            out[k] = v
        return out


def loads(buf: bytes):
    """Decode a whole FlexBuffer into Python values; raises FlexBufferError when malformed."""
    r = _Reader(buf)
    if r.n < 3:
        raise r.fail("too short to hold a root")
    root_width = r.buf[-1]
    if root_width not in (1, 2, 4, 8):
        raise r.fail(f"root byte width {root_width}")
    pos = r.n - 2 - root_width
    if pos < 0:
        raise r.fail("too short for its root")
    return r.value(pos, root_width, r.buf[-2], 0)


def read_map(buf: bytes) -> dict:
    """Decode a FlexBuffer whose root must be a map (custom options); raises FlexBufferError otherwise."""
    value = loads(buf)
    if not isinstance(value, dict):
        raise FlexBufferError(f"FlexBuffer root is a {type(value).__name__}, expected a map")
    return value
