"""The README's supported-ops, devices and exit-status tables, generated from the code so they cannot drift.

    python -m edge_sdk.tools.docs                     # print both tables (Markdown)
    python -m edge_sdk.tools.docs --write README.md   # replace the generated sections in place
    python -m edge_sdk.tools.docs --check README.md   # exit 1 when the README's sections are not current

Sources: the op table (``edge_sdk.runtime.op_table.OPS``: the Python interpreter's kernels, highest op versions and
dtypes), the op table's C side (``op_table.C_KERNELS`` / ``C_TYPES``, generated from the
``EDGE_KERNEL(OP, name, max_version, "TYPES", "constraints")`` / ``EDGE_CUSTOM_KERNEL`` registrations of
``firmware_c/src/kernels/*.c`` by gen_ops.py) and the device profiles
(``edge_sdk.targets.profiles.list_profiles`` / ``load_profile``).

The measured figures (sections ``size`` and ``benchmarks``) come from the JSON files the commands that measure
them write, under benchmarks/results/: ``size.json`` from `make -C firmware_c size` (firmware_c/tools/size_report.py),
``c_runtime.json`` / ``interpreter.json`` / ``convert.json`` from ``python benchmarks/NAME.py`` (benchmarks/aims.py:
each aim met, NOT met or not measured, with its figures). A figure no run has recorded reads "not measured".

A generated section sits between ``<!-- BEGIN GENERATED: NAME -->`` and ``<!-- END GENERATED: NAME -->``
(NAME = ops, devices, exit-status: the `edge` exit statuses, from ``edge_sdk.errors``; size, benchmarks); everything
outside the markers is left as it is. A README without the markers gets them appended under a heading "## Supported
ops and devices".
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from edge_sdk.errors import ModelError

SECTIONS = ("ops", "devices", "exit-status", "size", "benchmarks")
RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results"  # the measuring commands' JSON files
# benchmarks/NAME.py, in the order the README lists them
BENCHMARKS = ("c_runtime", "interpreter", "convert", "vad_goal", "convert_goals")
HEADING = "## Supported ops and devices"


def c_kernels(folder: Path | None = None) -> dict[str, int]:
    """{op name (custom code for custom ops): highest version}: the op table's C side
    (``edge_sdk.runtime.op_table.C_KERNELS``), or with ``folder`` the registrations of the C sources there,
    parsed by gen_ops.py's parser (the one every reader uses)."""
    from edge_sdk.runtime import op_table

    if folder is None:
        return {name: v for name, (v, _) in op_table.C_KERNELS.items()}
    return op_table.c_registrations(folder)


def _size(n: int | None) -> str:
    if not n:
        return "-"
    if n >= 2**20:
        return f"{n / 2**20:g} MiB"
    return f"{n / 1024:g} KiB"


def _types(types: tuple[str, ...], data_input: int = -1) -> str:
    if not types:
        return "-"
    text = " ".join(t.lower() if t != "NONE" else "none (no data tensor)" for t in types)
    return f"input {data_input}: {text}" if data_input >= 0 else text


def _table(head: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "| " + " | ".join("---" for _ in head) + " |"]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows]
    return "\n".join(lines)


def ops_table() -> str:
    """Every op the interpreter runs (sorted by name), with the C runtime's coverage."""
    from edge_sdk.runtime.op_table import ACCELERATOR_CUSTOM_OPS, OPS

    from edge_sdk.runtime.op_table import C_TYPES, c_refusal

    c = c_kernels()
    rows = []
    for name in sorted(set(OPS) | set(c)):
        row = OPS.get(name)
        py = f"v1–v{row.max_version}" if row and row.max_version > 1 else ("v1" if row else "-")
        cv = c.get(name)
        in_c = "-" if cv is None else (f"v1–v{cv}" if cv > 1 else "v1")
        kind = "custom" if row is not None and row.custom else "builtin"
        macs = "yes" if row is not None and row.macs else "-"
        c_types, c_input, c_constraints = C_TYPES.get(name, ((), -1, ""))
        if cv is None and row is not None:  # why the C runtime has none (WHERE, UNIQUE: a data-sized output)
            c_constraints = c_refusal(name, 1).split(": ", 1)[-1]
        py_types = _types(row.dtypes if row else (), c_input)
        legacy = "yes" if row is not None and row.uint8 else "-"  # the row's uint8 fact (runtime.uint8)
        rows.append((f"`{name}`", kind, py, py_types, in_c, _types(c_types, c_input), c_constraints or "-", macs,
                     legacy))
    n_c = sum(1 for r in rows if r[4] != "-")
    text = [(f"{len(rows)} ops: the Python interpreter (`edge_sdk.Interpreter`, Linux/Raspberry Pi) runs "
             f"{len(OPS)}, the C runtime (`firmware_c`, microcontrollers) {n_c}. Versions are TFLite op versions; "
             "dtypes are those of the tensor the op computes on (its first data input unless named), "
             "`INT16/INT8` a data type with its weights' type; that runtime refuses any other (`edge check` names op, dtype and node). "
             "Legacy UINT8: the op runs asymmetric uint8 (TFLite v1 quantized_uint8) models in both runtimes, "
             "as int8 with zero points shifted by -128 (`edge_sdk/runtime/uint8.py`)."),
            "",
            _table(("op", "kind", "interpreter", "interpreter dtypes", "C runtime", "C dtypes", "C constraints",
                    "MACs counted", "legacy UINT8"), rows),
            ""]
    if ACCELERATOR_CUSTOM_OPS:
        text.append("Refused with a message naming the hardware they need: "
                    + "; ".join(f"`{k}` ({v})" for k, v in sorted(ACCELERATOR_CUSTOM_OPS.items())) + ".")
    return "\n".join(text).rstrip() + "\n"


def devices_table() -> str:
    """Every concrete device profile in device_profiles/."""
    from edge_sdk.targets.profiles import list_profiles, load_profile

    rows = []
    for name in list_profiles():
        p = load_profile(name)
        delegates = ", ".join(f"{d}*" if d == p.preferred_backend else d for d in p.delegates) or "-"
        rows.append((f"`{p.name}`", p.kind, p.cpu, f"{p.clock_hz / 1e6:g} MHz" if p.clock_hz else "-",
                     _size(p.ram_arena_bytes), _size(p.flash_model_bytes), p.runtime or "-",
                     str(p.flash.get("method", "-")), delegates, p.description or ""))
    text = [(f"{len(rows)} device profiles (`device_profiles/*.toml`; `edge targets` lists them, "
             "`edge check MODEL --target NAME` checks a model against one). Arena RAM and model flash are the "
             "budgets `edge check` holds a model to; * marks the preferred backend."),
            "",
            _table(("profile", "kind", "CPU", "clock", "arena RAM", "model flash", "runtime", "installed with",
                    "delegates", "description"), rows)]
    return "\n".join(text).rstrip() + "\n"


def _results(name: str, folder: Path | None = None) -> dict | None:
    try:
        return json.loads(((folder or RESULTS) / f"{name}.json").read_text())
    except (OSError, ValueError):
        return None


def _verdict(met) -> str:
    return "not measured" if met is None else "**met**" if met else "**NOT met**"


def size_section(folder: Path | None = None) -> str:
    """The runtime's flash cost as `make -C firmware_c size` last recorded it (benchmarks/results/size.json)."""
    r = _results("size", folder)
    if not r:
        return ("Runtime size: not measured (`make -C firmware_c size` measures it and writes "
                "benchmarks/results/size.json, from which this section is made).\n")
    g = r.get("goal")
    text = [f"`{r['command']}` ({r['date']}, {r['toolchain']}; {len(r['models'])} models in "
            f"{len(next(iter(r['cpus'].values()), []))} op sets): the runtime built per model (its ops and tensor "
            "types), toolchain libraries included, bytes of .text (.rodata counted) at -Os."]
    if g:
        text.append("")
        text.append(f"- aim: {g['model']}'s op set on {g['cpu']}, {g['aim']}: {_verdict(g['met'])} — "
                    f"{g['total_text']} bytes ({g['runtime_text']} runtime + {g['libs_text']} libraries)"
                    + (f"; ops the C runtime lacks: {' '.join(g['missing'])}" if g["missing"] else ""))
        if g.get("nostr_total_text") is not None:
            text.append(f"- the same without status strings (`EDGE_DEFS=-DEDGE_NO_STATUS_STRINGS`): "
                        f"{g['nostr_total_text']} bytes: {_verdict(g['nostr_met'])}")
    rows = []
    for cpu, sets in r["cpus"].items():
        sets = [x for x in sets if not x.get("missing")]  # an op set the C runtime lacks ops for says nothing
        if not sets:
            continue
        small, large = min(sets, key=lambda x: x["total_text"]), max(sets, key=lambda x: x["total_text"])
        rows.append((cpu, str(len(sets)), f"{small['total_text']} ({small['models'][0]})",
                     f"{large['total_text']} ({large['models'][0]})"))
    if rows:
        text += ["", _table(("CPU", "op sets it runs", "smallest .text, bytes (model)", "largest .text, bytes (model)"),
                            rows)]
    return "\n".join(text).rstrip() + "\n"


def benchmarks_section(folder: Path | None = None) -> str:
    """Every aim the benchmark scripts last recorded (benchmarks/results/NAME.json), with its verdict."""
    text = ["Each line: the aim, its verdict (met / NOT met / not measured: a model without a peer's figure is "
            "not counted as passing) and the figures, as the command printed them in its last recorded run "
            "(machines are noisy: ratios are against peers measured in the same run).", ""]
    for name in BENCHMARKS:
        r = _results(name, folder)
        command = f"python benchmarks/{name}.py"
        if not r or not r.get("sections"):
            text.append(f"- `{command}`: not measured (no run recorded in benchmarks/results/{name}.json)")
            continue
        for section, rec in r["sections"].items():
            models = rec.get("models")
            scope = f", {len(models)} models" if models else ""
            label = f"section {section}" if section.isdigit() else section
            text.append(f"- `{r['command']}` ({label}; {rec['date']}{scope}):")
            for aim in rec["aims"]:
                text.append(f"  - {aim['aim']}: {_verdict(aim['met'])}" + (f" — {aim['detail']}" if aim["detail"] else ""))
    return "\n".join(text).rstrip() + "\n"


def generate() -> dict[str, str]:
    from edge_sdk.errors import exit_status_markdown  # the one map of error types to exit statuses

    return {"ops": ops_table(), "devices": devices_table(), "exit-status": exit_status_markdown(),
            "size": size_section(), "benchmarks": benchmarks_section()}


def _markers(name: str) -> tuple[str, str]:
    return f"<!-- BEGIN GENERATED: {name} -->", f"<!-- END GENERATED: {name} -->"


def update_text(text: str, sections: dict[str, str] | None = None) -> str:
    """``text`` (a README) with every generated section replaced (appended, with the heading, when absent)."""
    sections = sections if sections is not None else generate()
    names = [n for n in SECTIONS if n in sections]  # the sections given (a test's subset rewrites only its own)
    missing = [n for n in names if _markers(n)[0] not in text]
    if missing:
        tail = text.rstrip("\n") + "\n\n"
        if HEADING not in text:
            tail += HEADING + "\n\n"
        for name in missing:
            begin, end = _markers(name)
            tail += f"{begin}\n{end}\n\n"
        text = tail.rstrip("\n") + "\n"
    for name in names:
        begin, end = _markers(name)
        i = text.find(begin)
        j = text.find(end, i)
        if j < 0 or text.count(begin) != 1 or text.count(end) != 1:
            raise ModelError(f"README: the markers of the generated section '{name}' must appear once each, "
                             f"BEGIN before END ({begin} ... {end})")
        text = text[: i + len(begin)] + "\n" + sections[name].rstrip("\n") + "\n" + text[j:]
    return text


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m edge_sdk.tools.docs", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--write", metavar="README", help="replace the generated sections of this file")
    group.add_argument("--check", metavar="README", help="exit 1 when this file's generated sections are stale")
    args = parser.parse_args(argv)
    if args.write or args.check:
        path = Path(args.write or args.check)
        old = path.read_text(encoding="utf-8")
        new = update_text(old)
        if args.check:
            if new != old:
                sys.stderr.write(f"{path}: the generated tables are not current; run "
                                 f"python -m edge_sdk.tools.docs --write {path}\n")
                return 1
            sys.stdout.write(f"{path}: the generated tables are current\n")
            return 0
        if new != old:
            tmp = path.with_name(path.name + ".tmp")
            tmp.write_text(new, encoding="utf-8")
            tmp.replace(path)
            sys.stdout.write(f"{path}: generated tables updated\n")
        else:
            sys.stdout.write(f"{path}: already current\n")
        return 0
    tables = generate()
    sys.stdout.write(tables["ops"] + "\n" + tables["devices"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
