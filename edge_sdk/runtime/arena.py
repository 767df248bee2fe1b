"""The arena plan: where every run-time tensor lives inside one block of memory.

Input: buffers, each with a size in bytes and a lifetime ``[first_use, last_use]`` (inclusive) on one time
axis of "steps" (the interpreter uses step 0 for "before the first op", step ``i + 1`` for op ``i``; see
``edge_sdk.runtime.interpreter``). Two buffers whose lifetimes share a step must not share bytes; all others may.

Algorithm (the one TFLM's GreedyMemoryPlanner uses, so our plans are never larger than TFLM's):

1. Round every size up to ``ALIGNMENT`` (16 bytes, TFLM's MicroArenaBufferAlignment), so every offset is
   aligned too.
2. Take the buffers in some order — TFLM's is size descending, ties in the order given.
3. Place each at the lowest offset where it fits: walk the already-placed buffers whose lifetimes overlap
   its own, in offset order, and take the first gap (between the end of everything below and the start of
   the next overlapping buffer) that is big enough; if none, go above the highest one.

We run step 2-3 for a few orderings (TFLM's first, then: by first use, by lifetime length, by
size x lifetime "area") and keep the smallest total; ties keep the earlier ordering, so with one ordering
the result is exactly TFLM's offsets. Everything is deterministic: no randomness, stable sorts.

``lower_bound`` is the largest sum of (aligned) live sizes at any one step: no plan can be smaller.
"""

from __future__ import annotations

import bisect
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

ALIGNMENT = 16


def align_up(n: int, alignment: int = ALIGNMENT) -> int:
    return (n + alignment - 1) // alignment * alignment


@dataclass(frozen=True)
class BufferRequest:
    """One buffer to place: ``key`` identifies it to the caller, ``name`` is for people."""

    key: Hashable
    size: int
    first_use: int
    last_use: int
    name: str = ""


@dataclass(frozen=True)
class PlannedBuffer:
    key: Hashable
    name: str
    offset: int
    size: int  # bytes the caller asked for (the slot is align_up(size))
    first_use: int
    last_use: int

    alignment: int = ALIGNMENT

    @property
    def end(self) -> int:
        """End of the slot (the size rounded up to the alignment)."""
        return self.offset + align_up(self.size, self.alignment)


@dataclass
class ArenaPlan:
    buffers: list[PlannedBuffer]  # in request order
    total: int  # bytes the plan spans (a multiple of ALIGNMENT)
    lower_bound: int  # max over steps of the aligned live bytes
    ordering: str = "size"  # which ordering won
    alignment: int = ALIGNMENT

    def __post_init__(self):
        self._by_key = {b.key: b for b in self.buffers}

    def __getitem__(self, key) -> PlannedBuffer:
        return self._by_key[key]

    def __contains__(self, key) -> bool:
        return key in self._by_key

    def offset(self, key) -> int:
        return self._by_key[key].offset

    @property
    def steps(self) -> int:
        return max((b.last_use for b in self.buffers), default=-1) + 1

    def render(self, width: int = 64) -> str:
        """A table of the buffers and a drawing: one row per step, memory from left (0) to right (total).

        Each buffer is drawn with its ordinal character (0-9, a-z, A-Z, then repeating) over the bytes it
        occupies while it is live; '.' is free memory.
        """
        lines = [
            f"arena plan: {self.total} bytes (lower bound {self.lower_bound}, {len(self.buffers)} buffers, "
            f"ordering '{self.ordering}', alignment {self.alignment})",
            f"{'#':>3} {'ch':>2} {'offset':>9} {'size':>9} {'first':>5} {'last':>5}  name",
        ]
        for i, b in enumerate(self.buffers):
            lines.append(
                f"{i:>3} {_ordinal(i):>2} {b.offset:>9} {b.size:>9} {b.first_use:>5} {b.last_use:>5}  {b.name}"
            )
        if self.total > 0 and self.buffers:
            scale = self.total / width
            for step in range(self.steps):
                row = ["."] * width
                live = 0
                for i, b in enumerate(self.buffers):
                    if b.first_use <= step <= b.last_use:
                        live += align_up(b.size, self.alignment)
                        lo = int(b.offset / scale)
                        hi = max(lo + 1, int(-(-b.end // scale)) if scale else lo + 1)
                        for c in range(lo, min(hi, width)):
                            row[c] = _ordinal(i)
                lines.append(f"{step:>4} |{''.join(row)}| {live}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.render()


def _ordinal(i: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
    return digits[i % len(digits)]


def lower_bound(requests: Sequence[BufferRequest], alignment: int = ALIGNMENT) -> int:
    """The most aligned bytes live at any one step (sweep over lifetime boundaries)."""
    events: dict[int, int] = {}
    for r in requests:
        s = align_up(r.size, alignment)
        events[r.first_use] = events.get(r.first_use, 0) + s
        events[r.last_use + 1] = events.get(r.last_use + 1, 0) - s
    best = live = 0
    for t in sorted(events):
        live += events[t]
        best = max(best, live)
    return best


def _first_fit(requests: Sequence[BufferRequest], order: Sequence[int], alignment: int) -> tuple[list[int], int]:
    """Place buffers in ``order`` at the lowest gap among time-overlapping placed buffers."""
    offsets = [0] * len(requests)
    placed: list[tuple[int, int]] = []  # (offset, request index), sorted by offset
    total = 0
    for i in order:
        r = requests[i]
        size = align_up(r.size, alignment)
        candidate = 0
        for off, j in placed:
            o = requests[j]
            if o.first_use > r.last_use or r.first_use > o.last_use:
                continue  # not live at the same time: may share bytes
            if off - candidate >= size:
                break  # the gap below this buffer holds ours
            candidate = max(candidate, off + align_up(o.size, alignment))
        offsets[i] = candidate
        bisect.insort(placed, (candidate, i))
        total = max(total, candidate + size)
    return offsets, total


_ORDERINGS = {
    # TFLM's: largest first (stable, so ties keep request order)
    "size": lambda r, a: -align_up(r.size, a),
    "first_use": lambda r, a: (r.first_use, -align_up(r.size, a)),
    "lifetime": lambda r, a: (-(r.last_use - r.first_use), -align_up(r.size, a)),
    "area": lambda r, a: -align_up(r.size, a) * (r.last_use - r.first_use + 1),
}
ORDERINGS = tuple(_ORDERINGS)


def plan(
    requests: Sequence[BufferRequest], orderings: Sequence[str] | None = None, alignment: int = ALIGNMENT
) -> ArenaPlan:
    """Plan ``requests``; tries ``orderings`` (default: all of ORDERINGS, TFLM's "size" first) and keeps the
    smallest total. ``orderings=["size"]`` gives exactly TFLM's GreedyMemoryPlanner offsets."""
    if alignment < 1:
        raise ValueError(f"alignment must be >= 1, not {alignment}")
    requests = list(requests)
    for r in requests:
        if r.size < 0 or r.first_use > r.last_use:
            raise ValueError(f"bad buffer request {r}")
    names = list(orderings) if orderings is not None else list(_ORDERINGS)
    best_offsets: list[int] = []
    best_total = -1
    best_name = names[0] if names else "size"
    bound = lower_bound(requests, alignment)
    for name in names:
        key = _ORDERINGS[name]
        order = sorted(range(len(requests)), key=lambda i: key(requests[i], alignment))
        offsets, total = _first_fit(requests, order, alignment)
        if best_total < 0 or total < best_total:
            best_offsets, best_total, best_name = offsets, total, name
        if best_total == bound:
            break  # optimal already
    if best_total < 0:
        best_total = 0
    buffers = [
        PlannedBuffer(r.key, r.name, off, r.size, r.first_use, r.last_use, alignment)
        for r, off in zip(requests, best_offsets)
    ]
    return ArenaPlan(buffers=buffers, total=best_total, lower_bound=bound, ordering=best_name, alignment=alignment)


def plan_aliased(
    requests: Sequence[BufferRequest], aliases: dict, orderings: Sequence[str] | None = None,
    alignment: int = ALIGNMENT
) -> ArenaPlan:
    """The in-place plan's placement: ``aliases`` maps a request's key to the key of its group's root (an
    in-place node's output to the input whose bytes it takes over, edge_sdk.runtime.planner.inplace_aliases).
    Each group is planned as one request, in its root's place in the order: the root's first use, the largest
    aligned size and the last use of its members. Every member is then reported at its root's offset with its
    own size and lifetime (members of one group overlap in time by design: the in-place node's step)."""
    requests = list(requests)
    if not aliases:
        return plan(requests, orderings, alignment)
    size: dict = {}
    last: dict = {}
    for r in requests:
        root = aliases.get(r.key, r.key)
        size[root] = max(size.get(root, 0), align_up(r.size, alignment))
        last[root] = max(last.get(root, r.last_use), r.last_use)
    merged = [BufferRequest(r.key, size[r.key], r.first_use, last[r.key], r.name)
              for r in requests if r.key not in aliases]
    p = plan(merged, orderings, alignment)
    buffers = [PlannedBuffer(r.key, r.name, p.offset(aliases.get(r.key, r.key)), r.size, r.first_use, r.last_use,
                             alignment) for r in requests]
    return ArenaPlan(buffers=buffers, total=p.total, lower_bound=p.lower_bound, ordering=p.ordering,
                     alignment=alignment)
