"""A bounds-checked flatbuffer reader driven by the schema tables in ``edge_sdk.model.schema``.

Written for untrusted bytes: every offset, vtable, vector, string and union is checked against the buffer
before it is followed, and every failure is a ``ModelError`` naming the table, the field and the byte
offset. Nothing here allocates from a size it has not checked against the buffer length.

Layout facts (the flatbuffers binary format):

* a table starts with an int32 ``soffset``; its vtable is at ``table - soffset``;
* a vtable is uint16s: its own byte size, the table's inline byte size, then one field offset per slot
  (0 = field absent, use the default), each relative to the table start;
* reference fields (tables, vectors, strings, union values) hold a uint32 ``uoffset`` relative to the
  field's own position, so references only ever point forward;
* vectors and strings are a uint32 element count followed by the elements; strings end in a NUL byte.

Because references only point forward and the schema has no recursive tables, a walk driven by the
schema always terminates; the depth limit and the decode budget (overlapping offsets can make many
references share the same bytes, multiplying the decoded size) bound the work on a hostile file.
"""

from __future__ import annotations

import struct

from edge_sdk.errors import ModelError
from edge_sdk.model import schema

# scalar type -> (struct code, byte size)
SCALARS: dict[str, tuple[str, int]] = {
    "bool": ("B", 1),
    "byte": ("b", 1),
    "ubyte": ("B", 1),
    "short": ("h", 2),
    "ushort": ("H", 2),
    "int": ("i", 4),
    "int32": ("i", 4),
    "uint": ("I", 4),
    "long": ("q", 8),
    "ulong": ("Q", 8),
    "float": ("f", 4),
    "double": ("d", 8),
}
_STRUCTS = {t: struct.Struct("<" + code) for t, (code, _) in SCALARS.items()}
_U32 = struct.Struct("<I")
_I32 = struct.Struct("<i")
_U16 = struct.Struct("<H")

MAX_DEPTH = 16
ROOT = "Model"


def _child(where: str, name: str) -> str:
    return name if where == ROOT else f"{name} of {where}"


# ---------------------------------------------------------------------------------------------------------------
# Field plans: the schema's field list compiled once per table.
# kind: "scalar" | "enum" | "string" | "vec_scalar" | "vec_enum" | "vec_table" | "vec_string" | "table"
#       | "union_type" | "union"


class Field:
    __slots__ = ("default", "kind", "name", "ref", "scalar", "size", "slot")

    def __init__(self, name, kind, slot, default, scalar=None, ref=None):
        self.name = name
        self.kind = kind
        self.slot = slot
        self.default = default
        self.scalar = scalar  # scalar type name (element type for vectors, underlying type for enums)
        self.ref = ref  # enum / table / union name
        self.size = SCALARS[scalar][1] if kind in ("scalar", "enum", "union_type") else 4


def _scalar_default(scalar: str, text: str | None):
    if scalar == "bool":
        return text == "true"
    if text is None:
        return 0.0 if scalar in ("float", "double") else 0
    if scalar in ("float", "double"):
        return float(text)
    return int(text)


def _enum_default(enum: str, text: str | None) -> str:
    if text is None:
        return schema.enum_name(enum, 0)
    if text.lstrip("-").isdigit():
        return schema.enum_name(enum, int(text))
    return text


def _compile(table: str) -> tuple[Field, ...]:
    plan = []
    for name, typ, default, slot in schema.TABLES[table]:
        if typ.startswith("@"):
            plan.append(Field(name, "union_type", slot, 0, scalar="ubyte", ref=typ[1:]))
        elif typ in SCALARS:
            plan.append(Field(name, "scalar", slot, _scalar_default(typ, default), scalar=typ))
        elif typ == "string":
            plan.append(Field(name, "string", slot, None))
        elif typ in schema.ENUMS:
            plan.append(Field(name, "enum", slot, _enum_default(typ, default), scalar=schema.ENUMS[typ][0], ref=typ))
        elif typ in schema.UNIONS:
            plan.append(Field(name, "union", slot, None, ref=typ))
        elif typ in schema.TABLES:
            plan.append(Field(name, "table", slot, None, ref=typ))
        elif typ.startswith("[") and typ.endswith("]"):
            elem = typ[1:-1]
            if elem in SCALARS:
                plan.append(Field(name, "vec_scalar", slot, None, scalar=elem))
            elif elem in schema.ENUMS:
                plan.append(Field(name, "vec_enum", slot, None, scalar=schema.ENUMS[elem][0], ref=elem))
            elif elem == "string":
                plan.append(Field(name, "vec_string", slot, None))
            elif elem in schema.TABLES:
                plan.append(Field(name, "vec_table", slot, None, ref=elem))
            else:
                raise AssertionError(f"schema table {table}: unknown vector element type {elem}")
        else:
            raise AssertionError(f"schema table {table}: unknown field type {typ}")
    return tuple(plan)


_PLANS: dict[str, tuple[Field, ...]] = {}


def plan(table: str) -> tuple[Field, ...]:
    p = _PLANS.get(table)
    if p is None:
        p = _PLANS[table] = _compile(table)
    return p


def union_member_table(union: str, code: int) -> str | None:
    """The table behind a union member code, or None when this schema does not know it."""
    member = schema.UNIONS[union].get(code)
    if member is None:
        return None
    member = member.split(" (", 1)[0]  # "ReduceWindowOptions (deprecated)"
    return member if member in schema.TABLES else None


# ---------------------------------------------------------------------------------------------------------------


class Table:
    """A verified table: its position, inline size and per-slot field offsets (0 = absent)."""

    __slots__ = ("offsets", "pos", "size", "where")

    def __init__(self, pos: int, size: int, offsets: tuple[int, ...], where: str):
        self.pos = pos
        self.size = size
        self.offsets = offsets
        self.where = where

    def field_offset(self, slot: int) -> int:
        return self.offsets[slot] if slot < len(self.offsets) else 0


class Reader:
    """Bounds-checked access to one flatbuffer held in ``data`` (bytes)."""

    def __init__(self, data: bytes):
        self.data = data
        self.n = len(data)
        self.view = memoryview(data)
        # Overlapping references can make a small file decode to a huge model; a valid file decodes to
        # roughly its own size (flatbuffers share only vtables and, rarely, strings).
        self.budget = 4 * self.n + (1 << 16)
        self._vtables: dict[int, tuple[int, tuple[int, ...]]] = {}

    # -- errors ---------------------------------------------------------------------------------------------
    def fail(self, where: str, message: str):
        raise ModelError(f"{where}: {message}")

    def _charge(self, nbytes: int, where: str, what: str):
        self.budget -= nbytes
        if self.budget < 0:
            self.fail(
                where,
                f"{what} makes the model decode to far more data than the file's {self.n} bytes hold "
                "(overlapping or repeated offsets)",
            )

    # -- tables ---------------------------------------------------------------------------------------------
    def table(self, pos: int, where: str) -> Table:
        n = self.n
        if pos % 4:
            self.fail(where, f"table at byte {pos} is not 4-byte aligned")
        if pos < 0 or pos + 4 > n:
            self.fail(where, f"table at byte {pos} lies past the end of the file ({n} bytes)")
        vt = pos - _I32.unpack_from(self.data, pos)[0]
        cached = self._vtables.get(vt)
        if cached is None:
            if vt < 0 or vt + 4 > n:
                self.fail(where, f"table at byte {pos} has its vtable at byte {vt}, outside the file ({n} bytes)")
            if vt % 2:
                self.fail(where, f"table at byte {pos} has its vtable at byte {vt}, which is not 2-byte aligned")
            vt_size, inline = struct.unpack_from("<HH", self.data, vt)
            if vt_size < 4 or vt_size % 2:
                self.fail(where, f"vtable at byte {vt} declares an invalid size of {vt_size} bytes")
            if vt + vt_size > n:
                self.fail(where, f"vtable at byte {vt} ({vt_size} bytes) runs past the end of the file ({n} bytes)")
            if inline < 4:
                self.fail(where, f"vtable at byte {vt} declares a table inline size of {inline} bytes (minimum 4)")
            count = (vt_size - 4) // 2
            offsets = struct.unpack_from(f"<{count}H", self.data, vt + 4)
            cached = self._vtables[vt] = (inline, offsets)
        inline, offsets = cached
        if pos + inline > n:
            self.fail(where, f"table at byte {pos} ({inline} inline bytes) runs past the end of the file ({n} bytes)")
        self._charge(inline, where, f"table at byte {pos}")
        return Table(pos, inline, offsets, where)

    def _field_pos(self, t: Table, f: Field) -> int:
        """Absolute position of a field's inline bytes, 0 when absent; checked within the table."""
        off = t.offsets[f.slot] if f.slot < len(t.offsets) else 0
        if not off:
            return 0
        if off < 4 or off + f.size > t.size:
            self.fail(
                t.where,
                f"field '{f.name}' of the table at byte {t.pos} sits at inline offset {off} ({f.size} bytes), "
                f"outside the table's {t.size} inline bytes",
            )
        return t.pos + off

    def _deref(self, t: Table, f: Field, fpos: int, what: str, align: int = 4) -> int:
        target = fpos + _U32.unpack_from(self.data, fpos)[0]
        if target + 4 > self.n:
            self.fail(
                t.where,
                f"field '{f.name}' at byte {fpos} points to a {what} at byte {target}, "
                f"past the end of the file ({self.n} bytes)",
            )
        if target % align:
            self.fail(t.where, f"field '{f.name}' {what} at byte {target} is not {align}-byte aligned")
        return target

    def _vector(self, t: Table, f: Field, fpos: int, elem_size: int) -> tuple[int, int]:
        """(first element position, element count) of a vector field, fully within the file."""
        vpos = self._deref(t, f, fpos, "vector")
        count = _U32.unpack_from(self.data, vpos)[0]
        if count * elem_size > self.n - vpos - 4:
            self.fail(
                t.where,
                f"field '{f.name}' vector at byte {vpos} ({count} elements of {elem_size} bytes) "
                f"runs past the end of the file ({self.n} bytes)",
            )
        return vpos + 4, count

    def _string(self, t: Table, f: Field, spos_field: int, label: str | None = None) -> str:
        name = label or f"field '{f.name}'"
        spos = _U32.unpack_from(self.data, spos_field)[0] + spos_field
        if spos + 4 > self.n:
            self.fail(t.where, f"{name} string at byte {spos} lies past the end of the file ({self.n} bytes)")
        if spos % 4:
            self.fail(t.where, f"{name} string at byte {spos} is not 4-byte aligned")
        length = _U32.unpack_from(self.data, spos)[0]
        if length >= self.n - spos - 4:
            self.fail(
                t.where,
                f"{name} string at byte {spos} ({length} bytes and its NUL) runs past the end of the file "
                f"({self.n} bytes)",
            )
        start = spos + 4
        if self.data[start + length] != 0:
            self.fail(t.where, f"{name} string at byte {spos} is not NUL-terminated")
        self._charge(length, t.where, f"{name} string at byte {spos}")
        try:
            return self.data[start : start + length].decode("utf-8")
        except UnicodeDecodeError as e:
            self.fail(t.where, f"{name} string at byte {spos} is not valid UTF-8 ({e.reason} at byte {start + e.start})")

    # -- generic decoding -----------------------------------------------------------------------------------
    def read(self, table: str, pos: int, where: str, depth: int = 0, raw_bytes: bool = True) -> dict:
        """All fields of a table as a dict (absent fields: schema defaults; absent references: None).

        Scalars are Python numbers/bools, enums their schema names, strings str, vectors of scalars tuples
        (``[ubyte]`` vectors a zero-copy memoryview when ``raw_bytes``), vectors of tables lists of dicts,
        tables dicts, and a union value a ``(member name, dict or None)`` pair.
        """
        if depth > MAX_DEPTH:
            self.fail(where, f"tables nest deeper than {MAX_DEPTH} levels")
        t = self.table(pos, where)
        out: dict = {"__pos__": pos}
        data = self.data
        for f in plan(table):
            fpos = self._field_pos(t, f)
            kind = f.kind
            if kind == "scalar":
                out[f.name] = _STRUCTS[f.scalar].unpack_from(data, fpos)[0] if fpos else f.default
                if f.scalar == "bool":
                    out[f.name] = bool(out[f.name])
            elif kind == "enum":
                out[f.name] = (
                    schema.enum_name(f.ref, _STRUCTS[f.scalar].unpack_from(data, fpos)[0]) if fpos else f.default
                )
            elif kind == "union_type":
                out[f.name] = data[fpos] if fpos else 0
            elif kind == "union":
                code = out.get(f.name + "_type", 0)
                if not code:
                    out[f.name] = None
                    continue
                member = union_member_table(f.ref, code)
                if member is None:
                    out[f.name] = (schema.UNIONS[f.ref].get(code, f"{f.ref}_{code}"), None)
                elif not fpos:
                    out[f.name] = (member, None)
                else:
                    tpos = self._deref(t, f, fpos, f"{member} table")
                    out[f.name] = (member, self.read(member, tpos, _child(where, member), depth + 1, raw_bytes))
            elif not fpos:
                out[f.name] = None
            elif kind == "string":
                out[f.name] = self._string(t, f, fpos)
            elif kind == "vec_scalar" or kind == "vec_enum":
                code, size = SCALARS[f.scalar]
                start, count = self._vector(t, f, fpos, size)
                if f.scalar == "ubyte" and raw_bytes and kind == "vec_scalar":
                    out[f.name] = self.view[start : start + count]
                    continue
                self._charge(count * size, where, f"field '{f.name}'")
                values = struct.unpack_from(f"<{count}{code}", data, start)
                if kind == "vec_enum":
                    values = tuple(schema.enum_name(f.ref, v) for v in values)
                elif f.scalar == "bool":
                    values = tuple(bool(v) for v in values)
                out[f.name] = values
            elif kind == "vec_string":
                start, count = self._vector(t, f, fpos, 4)
                out[f.name] = tuple(
                    self._string(t, f, start + 4 * i, f"field '{f.name}'[{i}]") for i in range(count)
                )
            elif kind == "vec_table":
                start, count = self._vector(t, f, fpos, 4)
                self._charge(4 * count, where, f"field '{f.name}'")
                items = []
                for i in range(count):
                    epos = start + 4 * i
                    tpos = epos + _U32.unpack_from(data, epos)[0]
                    items.append(self.read(f.ref, tpos, _child(where, f"{f.ref}[{i}]"), depth + 1, raw_bytes))
                out[f.name] = items
            elif kind == "table":
                tpos = self._deref(t, f, fpos, "table")
                out[f.name] = self.read(f.ref, tpos, _child(where, f.ref), depth + 1, raw_bytes)
        return out

    def defaults(self, table: str) -> dict:
        """A table's fields as if it were present with every field absent."""
        out: dict = {"__pos__": None}
        for f in plan(table):
            if f.kind in ("scalar", "enum", "union_type"):
                out[f.name] = f.default
            else:
                out[f.name] = None
        return out
