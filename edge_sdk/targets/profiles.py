"""Device profiles: what a target can run, as data (``device_profiles/*.toml``), loaded and validated here.

    profile = load_profile("stm32f746-disco")        # a name from device_profiles/, or a path to a .toml
    profile.ram_arena_bytes, profile.flash_model_bytes
    ok, reason = profile.supports(node)               # a prepared edge_sdk.runtime.kernels.node.Node, on the CPU
    ok, reason = profile.supports(node, "edgetpu")    # ... or on one of the profile's delegates
    list_profiles()                                   # every concrete (non-abstract) profile, sorted

A profile file is data only. ``extends = "cortex-m4"`` names a parent (another file in the same folder, or
a path ending in .toml relative to the file); the child is the parent deep-merged with the child's own keys
(tables merge key by key, every other value — lists included — replaces). Parents marked ``abstract = true``
(cortex-m, cortex-m4, linux-arm64, ...) only exist to be extended; ``list_profiles`` skips them.

Ops are listed per dtype: ``[ops.int8]`` maps an op name to a table of constraints (``{}`` = no
constraint), or to ``false`` (not supported); ``uint8 = "int8"`` gives a dtype another's table. The name
``"*"`` means "any op" and its table holds the defaults for every op of that dtype; a listed op's
constraints are merged over them. A dtype that is not listed is not supported at all (an int8-only backend lists only ``ops.int8``). ``[constraints]`` (or
``delegates.NAME.constraints``) applies to every op of that backend. The dtype of a node is the type of its
first present input (its first output when it has no input). For the CPU, ``check_model`` additionally
requires that our kernel prepares the node.

Every file is validated against ``SCHEMA``: unknown keys, wrong types, missing required keys, unknown op
names (``edge_sdk.runtime.op_table.OPS`` and the schema's builtin operators), unknown constraint names and bad
values raise ``ProfileError`` naming the file, the key path and the problem, e.g.
``device_profiles/stm32h743.toml: ops.int8.CONV_2D.max_kernel: expected an int, got 'x'``.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

try:  # Python 3.11+
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    import tomli as tomllib

from edge_sdk import resources
from edge_sdk.errors import ProfileError
from edge_sdk.runtime import op_table
from edge_sdk.runtime.op_table import NO_DTYPE, node_data_type
from edge_sdk.targets.registry import FLASH_METHODS

PROFILE_DIR = resources.profiles_dir()  # $EDGE_PROFILE_DIR, the installed copy, or the checkout's device_profiles/

CPU = "cpu"
ANY_OP = "*"

# ----------------------------------------------------------------------------------------------- schema
# A spec is a type tag ("int", "str", "bool", "number", "list[str]", "list[int]") or a dict of key -> spec
# for a table. Keys in REQUIRED must be present in every concrete profile after inheritance.

KINDS = ("mcu", "linux", "android", "host", "accelerator")
TIMER_SOURCES = ("DWT", "SysTick", "clock_gettime", "CCOUNT", "esp_timer", "timer_hw", "SystemClock")
RUNTIMES = ("c", "python")


# constraint name -> (spec, what it checks)
CONSTRAINTS: dict[str, tuple[str, str]] = {
    "max_version": ("int", "highest op version"),
    "max_kernel": ("int", "largest kernel height/width (conv filters, pool windows)"),
    "max_stride": ("int", "largest stride (conv/pool stride_h/stride_w, STRIDED_SLICE strides)"),
    "max_dilation": ("int", "largest dilation factor"),
    "same_dilation": ("bool", "dilation must be equal in x and y"),
    "min_rank": ("int", "smallest rank of any input/output"),
    "max_rank": ("int", "largest rank of any input/output"),
    "max_nontrivial_rank": ("int", "only the innermost N dims of a non-constant tensor may be > 1"),
    "per_channel": ("bool", "per-channel (per-axis) quantized inputs allowed"),
    "max_tensor_bytes": ("int", "largest non-constant input/output tensor in bytes"),
    "max_elements": ("int", "largest element count of input 0"),
    "max_batch": ("int", "largest batch (dim 0 of input 0)"),
    "batch_axis": ("bool", "may operate along the batch dimension (reduce axis, pad, pack, concat)"),
    "fused_activations": ("list[str]", "allowed fused_activation_function values"),
    "padding": ("list[str]", "allowed padding values"),
    "weight_types": ("list[str]", "allowed weight (filter) types, e.g. INT8 for int16x8"),
    "const_weights": ("bool", "weights must be constants"),
    "note": ("str", "a caveat shown to the user, not checked"),
}

DELEGATE_SCHEMA = {
    "description": "str",
    "kind": "str",  # "edgetpu", "nnapi", "litert", "external": which edge_sdk delegate runs it
    "library": "str",  # shared library a TFLite external delegate loads (libedgetpu.so.1, ...)
    "max_partitions": "int",  # the delegate takes at most this many runs of nodes (Edge TPU: 1)
    "feature_level": "int",
    "options": "table",  # free-form options passed to the delegate (str/int/bool values)
    "constraints": "constraints",
    "ops": "ops",
}

SCHEMA: dict[str, Any] = {
    "extends": "str",
    "abstract": "bool",
    "description": "str",
    "kind": "str",
    "arch": "str",
    "cpu": "str",
    "fpu": "str",
    "clock_hz": "int",
    "ram_arena_bytes": "int",
    "flash_model_bytes": "int",
    "runtime": "str",
    "preferred_backend": "str",
    "widen_to": "str",  # the cheaper wider type when int8 does not keep an op: "int16x8" (default) or "float32"
    "constraints": "constraints",
    "ops": "ops",
    "delegates": "delegates",
    "toolchain": {"compiler": "str", "cflags": "list[str]", "ldflags": "list[str]", "linker_script": "str",
                  "sysroot": "str", "triple": "str", "packages": "list[str]"},
    "flash": "flash",
    "serial": {"transport": "str", "baud": "int", "usb_vid": "int", "usb_pid": "int", "port": "str"},
    "timer": {"source": "str", "hz": "int"},
}

REQUIRED = ("kind", "arch", "cpu", "clock_hz", "ram_arena_bytes", "flash_model_bytes", "ops", "flash", "timer")
REQUIRED_TABLE_KEYS = {"flash": ("method",), "timer": ("source",)}
WIDEN_TYPES = ("int16x8", "float32")
ENUM_KEYS = {"kind": KINDS, "runtime": RUNTIMES, "timer.source": TIMER_SOURCES, "widen_to": WIDEN_TYPES}


def _enum_names(enum: str) -> tuple[str, ...]:
    from edge_sdk.model.schema import ENUMS

    return tuple(ENUMS[enum][1].values())


def _known_ops() -> set[str]:
    from edge_sdk.model.schema import BUILTIN_OPERATOR_CODES
    from edge_sdk.runtime.op_table import OPS

    return set(OPS) | set(BUILTIN_OPERATOR_CODES)


def _dtype_keys() -> set[str]:
    return {t.lower() for t in _enum_names("TensorType")}


# ----------------------------------------------------------------------------------------------- types
@dataclass(frozen=True)
class Violation:
    """One reason a backend does not take a node: the constraint, the node's value and the profile's limit."""

    constraint: str  # "op", "dtype", "version" or a CONSTRAINTS name
    value: Any
    limit: Any
    message: str

    def to_dict(self) -> dict:
        return {"constraint": self.constraint, "value": _jsonable(self.value), "limit": _jsonable(self.limit),
                "message": self.message}


@dataclass(frozen=True)
class Backend:
    """The CPU or one delegate: which ops it takes per dtype, with constraints (read-only dicts)."""

    name: str
    ops: dict[str, dict[str, dict | bool]]  # dtype ("int8") -> op name or "*" -> constraints | False
    constraints: dict[str, Any] = field(default_factory=dict)
    description: str = ""
    kind: str = ""
    library: str | None = None
    max_partitions: int | None = None
    feature_level: int | None = None
    options: dict[str, Any] = field(default_factory=dict)

    def dtypes(self) -> list[str]:
        return sorted(self.ops)

    def op_constraints(self, op: str, dtype: str) -> dict | None:
        """The constraints for ``op`` on ``dtype`` ("int8"), or None when this backend does not take it."""
        table = self.ops.get(dtype.lower())
        if not table:
            return None
        entry = table.get(op)
        star = table.get(ANY_OP)
        if entry is False or (entry is None and not isinstance(star, dict)):
            return None
        merged = dict(self.constraints)
        if isinstance(star, dict):
            merged.update(star)
        if isinstance(entry, dict):
            merged.update(entry)
        return merged

    def op_names(self, dtype: str) -> list[str]:
        """Ops listed for a dtype ("*" included when any op is allowed)."""
        return sorted(k for k, v in self.ops.get(dtype.lower(), {}).items() if v is not False)

    def violations(self, node) -> list[Violation]:
        dtype = node_dtype(node)
        if dtype == NO_DTYPE:  # no data to compute on: the op has to be allowed under some dtype
            for d in self.dtypes():
                limits = self.op_constraints(node.op, d)
                if limits is not None:
                    return [v for v in _check_constraints(node, limits) if v is not None]
            return [Violation("op", node.op, None, f"{self.name} does not take {node.op}")]
        table = self.ops.get(dtype.lower())
        if not table:
            have = ", ".join(self.dtypes()) or "none"
            return [Violation("dtype", dtype, self.dtypes(),
                              f"{self.name} does not take {dtype} ops (it takes: {have})")]
        limits = self.op_constraints(node.op, dtype)
        if limits is None:
            return [Violation("op", node.op, None, f"{self.name} does not take {node.op} on {dtype}")]
        return [v for v in _check_constraints(node, limits) if v is not None]

    def supports(self, node) -> tuple[bool, str]:
        found = self.violations(node)
        return (not found, "; ".join(v.message for v in found) if found else "ok")


@dataclass(frozen=True)
class Profile:
    """A resolved (inherited, merged, validated) device profile. Sections are plain dicts: treat as read-only."""

    name: str
    path: Path
    kind: str
    arch: str
    cpu: str
    clock_hz: int
    ram_arena_bytes: int
    flash_model_bytes: int
    cpu_backend: Backend
    delegates: dict[str, Backend]
    preferred_backend: str = CPU
    widen_to: str = "int16x8"  # what quantize's precision="auto" widens an op to first (widen.widening_rule)
    description: str = ""
    fpu: str | None = None
    runtime: str | None = None
    extends: tuple[str, ...] = ()  # the parent chain, nearest first
    toolchain: dict[str, Any] = field(default_factory=dict)
    flash: dict[str, Any] = field(default_factory=dict)
    serial: dict[str, Any] = field(default_factory=dict)
    timer: dict[str, Any] = field(default_factory=dict)
    data: dict[str, Any] = field(default_factory=dict)  # the merged TOML as loaded

    @property
    def ops(self) -> dict:
        return self.cpu_backend.ops

    @property
    def backends(self) -> list[str]:
        return [CPU, *self.delegates]

    def backend(self, name: str = CPU) -> Backend:
        if name == CPU:
            return self.cpu_backend
        try:
            return self.delegates[name]
        except KeyError:
            raise ProfileError(
                f"profile {self.name}: no backend '{name}' (it has: {', '.join(self.backends)})"
            ) from None

    def violations(self, node, backend: str = CPU) -> list[Violation]:
        """Every constraint of ``backend`` that ``node`` (a prepared Node) breaks; [] when it takes the node."""
        return self.backend(backend).violations(node)

    def supports(self, node, backend: str = CPU) -> tuple[bool, str]:
        """(True, "ok") when ``backend`` takes ``node``, else (False, every reason joined by "; ")."""
        return self.backend(backend).supports(node)

    def summary(self) -> dict:
        return {
            "name": self.name,
            "kind": self.kind,
            "arch": self.arch,
            "cpu": self.cpu,
            "clock_hz": self.clock_hz,
            "ram_arena_bytes": self.ram_arena_bytes,
            "flash_model_bytes": self.flash_model_bytes,
            "preferred_backend": self.preferred_backend,
            "delegates": list(self.delegates),
            "description": self.description,
        }


# ----------------------------------------------------------------------------------------------- loading
def _rel(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(PROFILE_DIR.resolve().parent))
    except ValueError:
        return str(path)


def _find(name_or_path, relative_to: Path | None = None) -> Path:
    s = str(name_or_path)
    if s.endswith(".toml") or os.sep in s or "/" in s:
        p = Path(s)
        if not p.is_absolute() and relative_to is not None:
            p = relative_to.parent / p
        if not p.is_file():
            raise ProfileError(f"no profile file {p}")
        return p
    folder = relative_to.parent if relative_to is not None else PROFILE_DIR
    p = folder / f"{s}.toml"
    if not p.is_file() and folder != PROFILE_DIR:
        p = PROFILE_DIR / f"{s}.toml"
    if not p.is_file():
        names = ", ".join(_names(include_abstract=False)) or "none"
        raise ProfileError(f"unknown profile '{s}' (no {p.name} in {_rel(folder)}; profiles: {names})")
    return p


def _read_toml(path: Path) -> dict:
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except tomllib.TOMLDecodeError as exc:
        raise ProfileError(f"{_rel(path)}: not valid TOML: {exc}") from None
    except OSError as exc:
        raise ProfileError(f"{_rel(path)}: cannot read: {exc.strerror}") from None


def _merge(base: dict, over: dict) -> dict:
    out = dict(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = _merge(out[k], v)
        else:
            out[k] = v
    return out


def _resolve(path: Path, stack: tuple[Path, ...] = ()) -> tuple[dict, tuple[str, ...]]:
    """The merged data of ``path`` and its ancestors, and the parent chain (nearest first)."""
    key = path.resolve()
    if key in stack:
        chain = " -> ".join(_rel(p) for p in (*stack, key))
        raise ProfileError(f"{_rel(stack[0])}: extends: inheritance cycle {chain}")
    raw = _read_toml(path)
    _validate(raw, path, partial=True)
    parent = raw.get("extends")
    if parent is None:
        return raw, ()
    try:
        parent_path = _find(parent, relative_to=path)
    except ProfileError as exc:
        raise ProfileError(f"{_rel(path)}: extends: {exc}") from None
    base, chain = _resolve(parent_path, (*stack, key))
    base = {k: v for k, v in base.items() if k not in ("abstract", "description")}
    return _merge(base, raw), (parent_path.stem, *chain)


def load_profile(name_or_path) -> Profile:
    """A profile by name (``device_profiles/<name>.toml``) or path, with its parents merged in and validated."""
    if isinstance(name_or_path, Profile):
        return name_or_path
    path = _find(name_or_path)
    data, chain = _resolve(path)
    if data.get("abstract"):
        raise ProfileError(f"{_rel(path)}: an abstract profile (a parent for others), not a device")
    _validate(data, path, partial=False)
    delegates = {
        name: _backend(name, d.get("ops", {}), d.get("constraints", {}), d)
        for name, d in data.get("delegates", {}).items()
    }
    return Profile(
        name=path.stem,
        path=path,
        kind=data["kind"],
        arch=data["arch"],
        cpu=data["cpu"],
        clock_hz=data["clock_hz"],
        ram_arena_bytes=data["ram_arena_bytes"],
        flash_model_bytes=data["flash_model_bytes"],
        cpu_backend=_backend(CPU, data["ops"], data.get("constraints", {}), {"description": "the CPU"}),
        delegates=delegates,
        preferred_backend=data.get("preferred_backend", CPU),
        widen_to=data.get("widen_to", "int16x8"),
        description=data.get("description", ""),
        fpu=data.get("fpu"),
        runtime=data.get("runtime"),
        extends=chain,
        toolchain=data.get("toolchain", {}),
        flash=data["flash"],
        serial=data.get("serial", {}),
        timer=data["timer"],
        data=data,
    )


def _backend(name: str, ops: dict, constraints: dict, d: dict) -> Backend:
    return Backend(
        name=name,
        ops={k.lower(): dict(ops[v] if isinstance(v, str) else v) for k, v in ops.items()},
        constraints=dict(constraints),
        description=d.get("description", ""),
        kind=d.get("kind", name),
        library=d.get("library"),
        max_partitions=d.get("max_partitions"),
        feature_level=d.get("feature_level"),
        options=dict(d.get("options", {})),
    )


def _names(include_abstract: bool) -> list[str]:
    if not PROFILE_DIR.is_dir():
        return []
    out = []
    for p in sorted(PROFILE_DIR.glob("*.toml")):
        if not include_abstract:
            try:
                if _read_toml(p).get("abstract"):
                    continue
            except ProfileError:
                pass
        out.append(p.stem)
    return out


def list_profiles(include_abstract: bool = False) -> list[str]:
    """Names of the profiles in device_profiles/ (concrete ones unless ``include_abstract``), sorted."""
    return _names(include_abstract)


# ----------------------------------------------------------------------------------------------- validation
def _type_ok(spec: str, value) -> bool:
    if spec == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if spec == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if spec == "str":
        return isinstance(value, str)
    if spec == "bool":
        return isinstance(value, bool)
    if spec == "list[str]":
        return isinstance(value, list) and all(isinstance(x, str) for x in value)
    if spec == "list[int]":
        return isinstance(value, list) and all(isinstance(x, int) and not isinstance(x, bool) for x in value)
    if spec == "table":
        return isinstance(value, dict)
    raise AssertionError(spec)


_ARTICLE = {"int": "an int", "str": "a string", "bool": "a boolean (true/false)", "number": "a number",
            "list[str]": "a list of strings", "list[int]": "a list of ints", "table": "a table"}


def _show(value) -> str:
    if isinstance(value, dict):
        return "a table"
    return repr(value)


class _Errors:
    def __init__(self, path: Path):
        self.where = _rel(path)
        self.items: list[str] = []

    def add(self, key: str, problem: str) -> None:
        self.items.append(f"{self.where}: {key}: {problem}" if key else f"{self.where}: {problem}")

    def raise_if_any(self) -> None:
        if self.items:
            first = self.items[0]
            more = "" if len(self.items) == 1 else "\n" + "\n".join(f"  - {e}" for e in self.items[1:])
            exc = ProfileError(first + more)
            exc.problems = list(self.items)
            raise exc


def _check_value(err: _Errors, key: str, spec, value) -> bool:
    if isinstance(spec, dict):
        if not isinstance(value, dict):
            err.add(key, f"expected a table, got {_show(value)}")
            return False
        for k, v in value.items():
            if k not in spec:
                err.add(f"{key}.{k}", f"unknown key (allowed: {', '.join(spec)})")
            else:
                _check_value(err, f"{key}.{k}", spec[k], v)
        return True
    if spec == "constraints":
        _check_constraints_table(err, key, value)
        return True
    if spec == "ops":
        _check_ops(err, key, value)
        return True
    if spec == "delegates":
        if not isinstance(value, dict):
            err.add(key, f"expected a table of delegates, got {_show(value)}")
            return False
        for name, d in value.items():
            if _check_value(err, f"{key}.{name}", DELEGATE_SCHEMA, d) and isinstance(d, dict):
                for k, v in d.get("options", {}).items() if isinstance(d.get("options"), dict) else ():
                    if not isinstance(v, (str, int, bool, float)):
                        err.add(f"{key}.{name}.options.{k}", f"expected a string, number or boolean, got {_show(v)}")
        return True
    if spec == "flash":
        _check_flash(err, key, value)
        return True
    if not _type_ok(spec, value):
        err.add(key, f"expected {_ARTICLE[spec]}, got {_show(value)}")
        return False
    return True


def _check_constraints_table(err: _Errors, key: str, value) -> None:
    if not isinstance(value, dict):
        err.add(key, f"expected a table of constraints, got {_show(value)}")
        return
    enums = {"fused_activations": _enum_names("ActivationFunctionType"), "padding": _enum_names("Padding"),
             "weight_types": _enum_names("TensorType")}
    for name, v in value.items():
        if name not in CONSTRAINTS:
            err.add(f"{key}.{name}", f"unknown constraint (known: {', '.join(CONSTRAINTS)})")
            continue
        spec = CONSTRAINTS[name][0]
        if not _type_ok(spec, v):
            err.add(f"{key}.{name}", f"expected {_ARTICLE[spec]}, got {_show(v)}")
        elif spec == "int" and v < 0:
            err.add(f"{key}.{name}", f"expected a non-negative int, got {v}")
        elif name in enums:
            bad = [x for x in v if x not in enums[name]]
            if bad:
                err.add(f"{key}.{name}",
                        f"unknown value(s) {', '.join(map(repr, bad))} (known: {', '.join(enums[name])})")


def _check_ops(err: _Errors, key: str, value) -> None:
    if not isinstance(value, dict):
        err.add(key, f"expected a table of dtypes (int8, float32, ...), got {_show(value)}")
        return
    known_ops = _known_ops()
    dtypes = _dtype_keys()
    for dtype, table in value.items():
        if dtype not in dtypes:
            err.add(f"{key}.{dtype}", f"unknown dtype (known: {', '.join(sorted(dtypes))})")
            continue
        if isinstance(table, str):
            if table.lower() not in value or not isinstance(value[table.lower()], dict):
                err.add(f"{key}.{dtype}", f"names {table!r}, which is not a table of ops in {key}")
            continue
        if not isinstance(table, dict):
            err.add(f"{key}.{dtype}", f"expected a table of ops (or another dtype's name), got {_show(table)}")
            continue
        for op, entry in table.items():
            where = f"{key}.{dtype}.{op}"
            if op != ANY_OP and op not in known_ops:
                err.add(where, "unknown op (not in edge_sdk.runtime.op_table.OPS nor the schema's builtin operators)")
            elif entry is False:
                continue
            elif isinstance(entry, dict):
                _check_constraints_table(err, where, entry)
            else:
                err.add(where, f"expected a table of constraints or false, got {_show(entry)}")


def _check_flash(err: _Errors, key: str, value) -> None:
    if not isinstance(value, dict):
        err.add(key, f"expected a table, got {_show(value)}")
        return
    method = value.get("method")
    if method is not None and method not in FLASH_METHODS:
        err.add(f"{key}.method", f"unknown flash method {method!r} (known: {', '.join(FLASH_METHODS)})")
        return
    allowed = FLASH_METHODS.get(method, {})
    for k, v in value.items():
        if k == "method":
            if not isinstance(v, str):
                err.add(f"{key}.method", f"expected a string, got {_show(v)}")
        elif method is None:
            continue  # a parent may set settings; the concrete profile names the method
        elif k not in allowed:
            err.add(f"{key}.{k}",
                    f"unknown setting for flash method {method!r} (allowed: {', '.join(allowed) or 'none'})")
        else:
            _check_value(err, f"{key}.{k}", allowed[k], v)


def _validate(data: dict, path: Path, partial: bool) -> None:
    """Check one file's own keys (partial: before inheritance) or a merged concrete profile (required keys)."""
    err = _Errors(path)
    for k, v in data.items():
        if k not in SCHEMA:
            err.add(k, f"unknown key (allowed: {', '.join(SCHEMA)})")
        else:
            _check_value(err, k, SCHEMA[k], v)
    for k, allowed in ENUM_KEYS.items():
        head, _, tail = k.partition(".")
        v = data.get(head)
        if tail and isinstance(v, dict):
            v = v.get(tail)
        elif tail:
            v = None
        if isinstance(v, str) and v not in allowed:
            err.add(k, f"unknown value {v!r} (known: {', '.join(allowed)})")
    if not partial:
        for k in REQUIRED:
            if k not in data:
                err.add(k, "missing required key")
        for table, keys in REQUIRED_TABLE_KEYS.items():
            if isinstance(data.get(table), dict):
                for k in keys:
                    if k not in data[table]:
                        err.add(f"{table}.{k}", "missing required key")
        pb = data.get("preferred_backend", CPU)
        if isinstance(pb, str) and pb != CPU and pb not in data.get("delegates", {}):
            err.add("preferred_backend", f"names no delegate of this profile: {pb!r} "
                                         f"(backends: {', '.join([CPU, *data.get('delegates', {})])})")
    err.raise_if_any()


# ----------------------------------------------------------------------------------------------- constraints
# Op facts (which ops are convolutions, pools, reducers, pads, where the weights are) are the op table's rows;
# check.py reads node_dtype under this name.
node_dtype = node_data_type


def _jsonable(v):
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if hasattr(v, "item") and not isinstance(v, (str, bytes)):
        try:
            return v.item()
        except (ValueError, AttributeError):
            return str(v)
    return v


def _tensors(node):
    return [t for t in (*node.inputs, *node.outputs) if t is not None]


def _kernel_hw(node) -> tuple[int, int] | None:
    family = op_table.row(node.op).family
    if family == "conv":
        w = node.inputs[1] if len(node.inputs) > 1 else None
        if w is not None and len(w.shape) == 4:
            return int(w.shape[1]), int(w.shape[2])
        if w is not None and len(w.shape) == 5:  # CONV_3D: [d, h, w, in, out]
            return int(w.shape[1]), int(w.shape[2])
    if family == "pool":
        o = node.options
        if "filter_height" in o:
            return int(o.get("filter_height", 1)), int(o.get("filter_width", 1))
    return None


def _strides(node) -> list[int] | None:
    o = node.options
    if "stride_h" in o or "stride_w" in o:
        return [int(o.get("stride_h", 1)), int(o.get("stride_w", 1))]
    if node.op == "STRIDED_SLICE" and len(node.inputs) > 3 and node.inputs[3] is not None:
        data = node.inputs[3].data
        if data is not None:
            return [abs(int(x)) for x in data.reshape(-1)]
    return None


def _dilations(node) -> list[int] | None:
    o = node.options
    if "dilation_h_factor" in o or "dilation_w_factor" in o:
        return [int(o.get("dilation_h_factor", 1)), int(o.get("dilation_w_factor", 1))]
    return None


def _weights(node):
    weights = op_table.row(node.op).weights
    if weights is None:
        return None
    i = weights[0]
    if node.op == "UNIDIRECTIONAL_SEQUENCE_LSTM":
        return next((t for t in node.inputs[1:5] if t is not None), None)
    return node.inputs[i] if i < len(node.inputs) else None


def _touches_batch(node) -> bool | None:
    """Whether the node works along dim 0 (None when that cannot be told from the node)."""
    r = op_table.row(node.op)
    if r.family == "reduce" and len(node.inputs) > 1 and node.inputs[1] is not None and node.inputs[1].data is not None:
        rank = len(node.inputs[0].shape)
        return any(int(a) % max(rank, 1) == 0 for a in node.inputs[1].data.reshape(-1))
    if r.family == "pad" and len(node.inputs) > 1 and node.inputs[1] is not None and node.inputs[1].data is not None:
        pads = node.inputs[1].data.reshape(-1, 2)
        return bool(len(pads) and (pads[0] != 0).any())
    if r.axis and "axis" in node.options:
        rank = len(node.outputs[0].shape) if r.axis == "output" else len(node.inputs[0].shape)
        return int(node.options["axis"]) % max(rank, 1) == 0
    return None


def _nbytes(t) -> int:
    itemsize = t.dtype.itemsize if t.dtype is not None else 1
    return math.prod(t.shape) * itemsize


def _check_constraints(node, c: dict):
    """Yield a Violation (or None) per constraint in ``c`` that ``node`` breaks."""
    op = node.op
    if "max_version" in c and node.version > c["max_version"]:
        yield Violation("max_version", node.version, c["max_version"],
                        f"{op} version {node.version} > max_version {c['max_version']}")
    hw = _kernel_hw(node)
    if hw is not None and "max_kernel" in c and max(hw) > c["max_kernel"]:
        yield Violation("max_kernel", list(hw), c["max_kernel"],
                        f"{op} kernel {hw[0]}x{hw[1]} exceeds max_kernel {c['max_kernel']}")
    strides = _strides(node)
    if strides is not None and "max_stride" in c and max(strides, default=1) > c["max_stride"]:
        yield Violation("max_stride", strides, c["max_stride"],
                        f"{op} strides {strides} exceed max_stride {c['max_stride']}")
    dil = _dilations(node)
    if dil is not None:
        if "max_dilation" in c and max(dil) > c["max_dilation"]:
            yield Violation("max_dilation", dil, c["max_dilation"],
                            f"{op} dilation {dil} exceeds max_dilation {c['max_dilation']}")
        if c.get("same_dilation") and dil[0] != dil[1]:
            yield Violation("same_dilation", dil, True, f"{op} dilation differs in y and x ({dil[0]} vs {dil[1]})")
    ranks = [len(t.shape) for t in _tensors(node)]
    if ranks and "max_rank" in c and max(ranks) > c["max_rank"]:
        yield Violation("max_rank", max(ranks), c["max_rank"],
                        f"{op} has a rank-{max(ranks)} tensor, max_rank {c['max_rank']}")
    if ranks and "min_rank" in c and min(ranks) < c["min_rank"]:
        yield Violation("min_rank", min(ranks), c["min_rank"],
                        f"{op} has a rank-{min(ranks)} tensor, min_rank {c['min_rank']}")
    if "max_nontrivial_rank" in c:
        k = c["max_nontrivial_rank"]
        for t in _tensors(node):
            if t.data is not None:
                continue  # weights and other constants are laid out by the delegate's compiler
            outer = t.shape[: max(len(t.shape) - k, 0)]
            if any(d != 1 for d in outer):
                yield Violation("max_nontrivial_rank", list(t.shape), k,
                                f"{op} tensor '{t.name}' {list(t.shape)}: only the innermost {k} dims may "
                                "exceed 1")
                break
    if c.get("per_channel") is False:
        for t in node.inputs:
            if t is not None and t.scale is not None and t.scale.size > 1:
                yield Violation("per_channel", f"{t.scale.size} scales", False,
                                f"{op} input '{t.name}' is per-channel quantized ({t.scale.size} scales); "
                                "per-tensor only")
                break
    if "max_tensor_bytes" in c:
        for t in _tensors(node):
            if t.data is None and _nbytes(t) > c["max_tensor_bytes"]:
                yield Violation("max_tensor_bytes", _nbytes(t), c["max_tensor_bytes"],
                                f"{op} tensor '{t.name}' is {_nbytes(t)} bytes > max_tensor_bytes "
                                f"{c['max_tensor_bytes']}")
                break
    if "max_elements" in c and node.inputs and node.inputs[0] is not None:
        n = math.prod(node.inputs[0].shape)
        if n > c["max_elements"]:
            yield Violation("max_elements", n, c["max_elements"],
                            f"{op} input has {n} elements > max_elements {c['max_elements']}")
    if "max_batch" in c and node.inputs and node.inputs[0] is not None and node.inputs[0].shape:
        b = int(node.inputs[0].shape[0])
        if b > c["max_batch"]:
            yield Violation("max_batch", b, c["max_batch"], f"{op} batch {b} > max_batch {c['max_batch']}")
    if c.get("batch_axis") is False and _touches_batch(node):
        yield Violation("batch_axis", True, False, f"{op} operates along the batch dimension")
    act = node.options.get("fused_activation_function")
    if act is not None and "fused_activations" in c and act not in c["fused_activations"]:
        yield Violation("fused_activations", act, c["fused_activations"],
                        f"{op} fused activation {act} not in {c['fused_activations']}")
    pad = node.options.get("padding")
    if pad is not None and "padding" in c and pad not in c["padding"]:
        yield Violation("padding", pad, c["padding"], f"{op} padding {pad} not in {c['padding']}")
    w = _weights(node)
    if w is not None:
        if "weight_types" in c and w.type not in c["weight_types"]:
            yield Violation("weight_types", w.type, c["weight_types"],
                            f"{op} weights '{w.name}' are {w.type}, allowed: {', '.join(c['weight_types'])}")
        if c.get("const_weights") and w.data is None:
            yield Violation("const_weights", "run-time", True, f"{op} weights '{w.name}' are not constant")
