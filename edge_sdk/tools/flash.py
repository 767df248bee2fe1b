"""`edge flash`: build the serial-protocol firmware for one model and one device profile, then flash it.

    result = flash("model.tflite", "qemu-mps2-an386")        # build, check the fit, start QEMU
    result.port                                               # "socket://127.0.0.1:PORT" (SerialLink takes it)
    qemu_board.stop_board(result.port)                        # or stop_board(all=True); list_boards()

The steps, in order (nothing is flashed or started before the ELF is complete and known to fit):

1. generate (in the build folder): ``model_data.c`` (the model as an aligned const array, read in place from
   flash), ``edge_ops_generated.c`` (firmware_c/tools/gen_ops.py: the op table for exactly the model's ops)
   and ``app_config.h`` (arena bytes sized from the C runtime's plan of this model, input bytes, trace size);
2. build ``fw.elf`` with ``make -C firmware_c/app`` for the profile's board and CPU with its toolchain flags
   (only the kernel files the model's ops need are compiled, and without the float32 / int16 code paths
   when no tensor of the model has that type: gen_ops.py's type switches);
3. read the sections of the link (``arm-none-eabi-size -A``) and refuse when the model exceeds the profile's
   ``flash_model_bytes`` or the arena its ``ram_arena_bytes`` (the linker itself refuses what does not fit
   the board's memory map);
4. flash with the profile's ``[flash] method``: ``qemu`` starts ``qemu-system-arm`` detached (its own
   process group) with the UART on a TCP port and records it in the state file of running boards;
   ``openocd``, ``pyocd``, ``picotool``, ``esptool`` and ``st-flash`` run the command ``flash_command``
   builds from the profile's settings (a DeviceError names what to install when the tool is missing).

Builds go under ``edge_sdk.resources.cache_dir()/firmware/`` ($EDGE_CACHE_DIR, else $XDG_CACHE_HOME/edge-sdk,
else ~/.cache/edge-sdk): one folder per (profile, model, firmware tree) unless ``build_dir`` is given, and the
runtime's objects shared by every model of a board and flag set; one build at a time per cache (a lock).
The state file of running boards is device.qemu_board.state_path() (``$EDGE_STATE_DIR/boards.json``, else
``cache_dir()/boards.json``).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import struct
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

from edge_sdk import log, resources
from edge_sdk.device.qemu_board import discard_board, find_board, qemu_command, qemu_tcp_port, start_qemu, verify_board
from edge_sdk.model.types import tensor_nbytes
from edge_sdk.runtime import op_table
from edge_sdk.runtime import c_build
from edge_sdk.runtime.c_build import shared_kernel_files
from edge_sdk.resources import require_tool
from edge_sdk.targets.registry import ARM_PACKAGES, BOARD_LIST, FIRMWARE_FLASH_METHODS, INSTALL_HINTS
from edge_sdk.errors import ArenaTooSmallError, BuildError, DeviceError, ModelError, UnsupportedOpError

FIRMWARE = resources.firmware_dir()  # the checkout's firmware_c/, or the installed copy (read only: builds go elsewhere)
APP = FIRMWARE / "app"
BOARD_COMPILER = "arm-none-eabi-gcc"  # firmware_c/boards/board.mk's BOARD_CC (BOARD_CROSS arm-none-eabi-)
GEN_OPS = FIRMWARE / "tools" / "gen_ops.py"
UF2_FAMILY_RP2040 = 0xE48BFF56
# The arena: the host build's measure of the C runtime's need, plus a margin: kernels may ask for more scratch
# on the target (the Cortex-M4/M7 DSP paths use im2col buffers the host build does not) -- person_detect needs
# about 7% more on cortex-m4. Capped at the profile's budget when the margin alone would exceed it.
ARENA_MARGIN = 0.25
ARENA_SLACK = 4096


# ------------------------------------------------------------------------------------------------ results
@dataclass
class FlashResult:
    port: str | None
    elf: str
    profile: str
    board: str
    method: str
    model: str
    model_sha256: str
    model_bytes: int
    text_bytes: int
    data_bytes: int
    bss_bytes: int
    arena_bytes: int
    flash_bytes: int
    ram_bytes: int
    build_dir: str
    memory: str = "layer"  # the arena plan the firmware runs (planner.REALISED_PLANS): "layer", "inplace"
    # (EDGE_INIT_MEMORY_MIN) or "patch" (edge_init_patch: in place plus a patch stage, edge_sdk.runtime.patching)
    patch: dict | None = None  # memory "patch": the stage (patching.PatchPlan.to_dict: nodes, grid, RAM, extra MACs)
    command: list[str] = field(default_factory=list)
    pid: int | None = None
    reused: bool = False
    # the runtime's arena on this target for the plan flashed (edge check's figure: targets.check.target_arena,
    # planner.runtime_arena's meaning); arena_bytes above is the arena buffer the firmware reserves (that figure
    # plus ARENA_MARGIN / ARENA_SLACK, or what the linker placed)
    arena_size: int | None = None
    arena_where: str = ""  # planner.arena_words' WHERE for arena_size
    # a legacy UINT8 model: the firmware runs it as INT8 (edge_sdk.runtime.uint8.c_io_note: which inputs / outputs
    # a host talking to the board flips, int8 = uint8 ^ 0x80); "" otherwise
    uint8_io: str = ""
    # the model file whose bytes the firmware embeds: ``model`` itself, or a cached copy when --input-shape shaped
    # it or a legacy UINT8 model is presented as INT8 (``model`` names the user's file)
    embedded_model: str = ""

    def to_dict(self) -> dict:
        return asdict(self)

    def arena_line(self) -> str:
        from edge_sdk.runtime.planner import arena_words

        return arena_words(self.arena_size, self.arena_where)


def _target_arena(model_path: Path, profile, plan: str) -> tuple[int | None, str]:
    """(bytes, words) of the runtime's arena for the realised ``plan`` on ``profile``: edge check's figure."""
    from edge_sdk.runtime.planner import BUILT_BY
    from edge_sdk.targets.check import target_arena

    try:
        r = target_arena(model_path, profile, BUILT_BY.get(plan, "layer"))
    except (BuildError, ModelError) as exc:  # the firmware is built: the figure is a report, not a gate
        log.debug(f"the arena figure could not be measured: {exc}")
        return None, f"the C runtime on {profile.name}: {str(exc).splitlines()[0]}"
    return r.arena_size, r.arena_where()


def _c_model_path(model_path: Path) -> tuple[Path, str]:
    """The file the firmware embeds (edge_sdk.runtime.c_loaded.c_path: a legacy UINT8 model presented as INT8, else
    the model itself) and, for a presented model, what a host talking to the board must know (c_io_note)."""
    from edge_sdk.model import read_model
    from edge_sdk.runtime.c_loaded import c_path
    from edge_sdk.runtime.uint8 import c_io_note

    path, pairs = c_path(model_path)
    return path, c_io_note(read_model(path.read_bytes()), pairs) if pairs else ""


# ------------------------------------------------------------------------------------------------ profile
def board_for(profile) -> str:
    """The firmware_c/boards/ board of a profile: its own name, else the nearest ancestor that is a board."""
    for name in (profile.name, *profile.extends):
        if name in BOARD_LIST:
            return name
    raise DeviceError(f"profile {profile.name} has no board support in firmware_c/boards "
                      f"(boards: {', '.join(BOARD_LIST)}; esp32-s3 needs the ESP-IDF toolchain, see "
                      f"firmware_c/boards/esp32-s3/README.md)")


# ------------------------------------------------------------------------------------------------ generate
# "\x00" .. "\xff": a model byte as a C string escape (model_c_source)
_C_ESCAPES = [f"\\x{b:02x}" for b in range(256)]


def model_c_source(data: bytes, name: str = "app_model", section: str | None = ".edge_model") -> str:
    """A C file defining ``const uint8_t <name>[]`` (16-byte aligned, in ``section`` unless None) and
    ``const uint32_t <name>_len``."""
    # .edge_model: the board's MODEL region (flash; the QEMU board's 16 MB PSRAM)
    attr = f"section(\"{section}\"), aligned(16)" if section else "aligned(16)"
    # The bytes as one string literal ("\x18\x00..." lines, concatenated by the compiler; C lets a character array of
    # N elements take a literal of N characters, without its NUL), not a list of 0x.. integers: gcc parses a
    # literal's escapes far faster than an initializer's elements. A 3.98 MB model (mobilenet_v2): arm-none-eabi-gcc
    # -Os -flto -ffat-lto-objects 0.85 s CPU for the literal, 14.2 s for the list (its fat object 7 MB, not 22 MB),
    # in every `edge flash` / `edge export` build of it. Each escape is exactly two hex digits, followed by "\" or
    # the closing quote: none runs into the next byte.
    escaped = "".join(map(_C_ESCAPES.__getitem__, data))
    lines = ["/* generated by edge_sdk/tools/flash.py: the model, read in place from flash */", "#include <stdint.h>", "",
             f"const uint8_t {name}[{max(len(data), 1)}] __attribute__(({attr})) ="]
    step = 4 * 32  # 32 bytes a line
    lines += [f'    "{escaped[i:i + step]}"' for i in range(0, len(escaped), step)] or ['    ""']
    lines[-1] += ";"
    lines += [f"const uint32_t {name}_len = {len(data)}u;", ""]
    return "\n".join(lines)


def kernel_files(model) -> list[str]:
    """The src/kernels/ files the model's ops need, from the op table's C side (``op_table.C_KERNELS`` and
    ``C_TYPES``, generated from those files' registrations), with the shared ones they call (``shared_kernel_files``);
    UnsupportedOpError names ops the C runtime lacks and every node whose tensor type (data/weights pair) its C
    kernel does not register."""
    from types import SimpleNamespace

    from edge_sdk.runtime.op_table import C_KERNELS, c_data_type, c_dtype_refusal

    files, missing = set(), []
    for code in model.operator_codes:
        label = code.name  # a custom op's name is its custom_code
        entry = C_KERNELS.get(code.custom_code if code.is_custom else code.name)
        if entry is None or code.version > entry[0]:
            missing.append(f"{label} v{code.version}" + (f" (C kernel up to v{entry[0]})" if entry else ""))
        else:
            files.add(entry[1])
    if missing:
        raise UnsupportedOpError(f"the C runtime (firmware_c/src/kernels) has no kernel for: {', '.join(missing)}")
    refused: dict[str, list[str]] = {}
    for s, sg in enumerate(model.subgraphs):
        def tensor(t, tensors=sg.tensors):
            return SimpleNamespace(type=tensors[t].type) if 0 <= t < len(tensors) else None

        for i, op in enumerate(sg.operators):
            code = model.operator_codes[op.opcode_index]
            name = code.custom_code if code.is_custom else code.name
            node = SimpleNamespace(op=name, inputs=[tensor(t) for t in op.inputs],
                                   outputs=[tensor(t) for t in op.outputs])
            reason = c_dtype_refusal(name, c_data_type(node))
            if reason:
                refused.setdefault(reason, []).append(f"{s}:{i}" if s else str(i))
    if refused:
        raise UnsupportedOpError("the C runtime's kernels do not take these types: " + "; ".join(
            f"{reason} (node {', '.join(nodes[:8])}{' ...' if len(nodes) > 8 else ''})"
            for reason, nodes in refused.items()))
    return sorted(files | set(shared_kernel_files(files)))


def measure_arena(data: bytes, budget: int | None = None, memory: str = "layer", dsp: bool = False) -> int:
    """Arena bytes to give the C runtime on the target: its high-water mark plus ARENA_MARGIN and ARENA_SLACK (at
    most ``budget`` unless the need itself exceeds it). The need is the board's own figure when the C runtime
    can be built with the board's 32-bit layout here (``c_check.target_plan``, what `edge check` reports),
    else the host build's (64-bit structs: more than the board needs), else the Python plan. ``memory``: the
    plan (planner.MEMORY_PLANS: "layer", "inplace" = EDGE_INIT_MEMORY_MIN, "min" = that plus the stage
    planner.c_stage_for gives). ``dsp``: a Cortex-M core with the DSP extension, whose kernel paths take other
    scratch and persistent bytes (the 32-bit runner emulates them, -DEDGE_EMULATE_DSP, as edge check and export)."""
    from edge_sdk.runtime import c_interpreter
    from edge_sdk.runtime.planner import c_stage_for, runtime_arena
    from edge_sdk.targets import c_check

    if c_check.ILP32 in c_check.target_layouts():
        try:
            from edge_sdk.model import read_model
            from edge_sdk.runtime.op_table import c_type_switches

            model = read_model(data)
            used = {t.type for sg in model.subgraphs for t in sg.tensors}
            defs = tuple(f"-D{m}=0" for t, m in c_type_switches().items() if t not in used)
            defs += ("-DEDGE_EMULATE_DSP",) if dsp else ()
            plan = c_check.target_plan(data, c_check.ILP32, defs, memory=memory,
                                       patch=c_stage_for(data, memory))
        except BuildError as exc:
            log.debug(f"the C runtime's 32-bit check runner did not build ({exc}); sizing from the host build")
            plan = None
        if plan is not None and plan.ok:
            need = runtime_arena(plan.figures["high_water"], plan.figures["arena_used"])  # packed: none on a board
            size = int(need * (1 + ARENA_MARGIN)) + ARENA_SLACK
            if budget is not None and need <= budget < size:
                size = budget
            return (size + 15) // 16 * 16
    try:
        interp = c_interpreter.CInterpreter(model_content=data, memory=memory,
                                            patch_plan=c_stage_for(data, memory))
        interp.allocate_tensors()
        info = interp.plan_info()
        need = runtime_arena(info["high_water"], info["arena_used"])  # the buffer holds the packed copies too
    except ModelError:
        raise
    except Exception as exc:  # noqa: BLE001 - no host compiler, or the host library did not build
        log.debug(f"host C runtime unavailable ({exc}); sizing the arena from the Python plan")
        from edge_sdk.runtime.interpreter import Interpreter

        interp = Interpreter(model_content=data, memory=memory)
        interp.allocate_tensors()
        need = int(interp.arena_size * 1.25) + 16384
    size = int(need * (1 + ARENA_MARGIN)) + ARENA_SLACK
    if budget is not None and need <= budget < size:
        size = budget
    return (size + 15) // 16 * 16


def generate(model_path: Path, data: bytes, gen_dir: Path, arena_budget: int | None = None,
             memory: str | None = "layer", dsp: bool = False) -> dict:
    """Write model_data.c, edge_ops_generated.c and app_config.h into gen_dir; returns the sizes used.
    ``memory``: the arena plan asked for (planner.MEMORY_PLANS: "layer", "inplace", "min"; None: auto, the planner's
    rule over ``arena_budget`` with measure_arena's figures: planner.choose_plan). The returned "memory" is the plan
    built ("layer", "inplace", "patch")."""
    from edge_sdk.model import read_model

    model = read_model(data)
    files = kernel_files(model)
    sg0 = model.subgraphs[0]
    input_bytes = sum(tensor_nbytes(sg0.tensors[i]) for i in sg0.inputs)
    total_ops = sum(len(sg.operators) for sg in model.subgraphs)
    trace_cap = min(4096, max(64, 2 * total_ops + 16))
    from edge_sdk.runtime.planner import c_memory_min, choose_plan

    choice = choose_plan(data, memory, arena_budget, "c",
                         need=lambda asked: measure_arena(data, arena_budget, asked, dsp))
    for note in choice.notes:  # why this plan and not the one asked for (or the layer plan)
        log.stage(note)
    # the memory= the firmware initialises with: the one asked for (the C runtime realises the plan itself), else
    # the one the auto rule chose; arena: its measured figure
    asked, arena, plan, patch = memory or choice.memory, choice.need, choice.plan, choice.stage
    from edge_sdk.device.generation import state_bytes

    gen_state = state_bytes(model)  # the KV-cache store of the GENERATE command (0: not a generation model)
    patch_line = ""
    if patch is not None:  # edge_init_patch's stage and grid (main.c)
        patch_line = (f"#define APP_PATCH_PLAN {{{patch.nodes[0]}, {patch.nodes[-1]}, {patch.grid[0]}, "
                      f"{patch.grid[1]}}} /* {patch.describe()} */\n")
    gen_dir.mkdir(parents=True, exist_ok=True)
    _write_if_changed(gen_dir / "model_data.c", model_c_source(data))
    config = (
        "/* generated by edge_sdk/tools/flash.py for one model */\n"
        "#ifndef EDGE_APP_CONFIG_H\n#define EDGE_APP_CONFIG_H\n"
        f"#define APP_ARENA_BYTES {arena}u\n#define APP_INPUT_BYTES {input_bytes}u\n"
        f"#define APP_TRACE_CAP {trace_cap}u\n#define APP_SG0_OPS {len(sg0.operators)}u\n"
        f"#define APP_GEN_STATE_BYTES {gen_state}u\n"
        f"#define APP_INIT_FLAGS {'EDGE_INIT_MEMORY_MIN' if c_memory_min(asked) else '0u'} /* the arena plan: {plan} */\n"
        f"{patch_line}"
        "#endif\n"
    )
    _write_if_changed(gen_dir / "app_config.h", config)
    proc = subprocess.run([sys.executable, str(GEN_OPS), str(gen_dir / "edge_ops_generated.c"), "--model",
                           str(model_path)], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise ModelError(f"gen_ops.py failed for {model_path}: {(proc.stderr or proc.stdout).strip()[-1000:]}")
    # the tensor types no tensor of the model has are compiled out (-DEDGE_WITH_FLOAT32=0, ...), the kernel fast
    # paths no layer of it takes (gen_ops.path_defines), and what other plans than this firmware's need (plan-only,
    # the least-RAM request without it, the patch stage without one: gen_ops.plan_defines): smaller firmware
    gen_ops = op_table.gen_ops_module()
    type_defs = gen_ops.build_defines([str(model_path)]) + gen_ops.plan_defines(asked != "layer", patch is not None)
    return {"kernels": files, "arena_bytes": arena, "memory": plan, "memory_request": memory,
            "patch": None if patch is None else patch.to_dict(),
            "input_bytes": input_bytes,
            "trace_cap": trace_cap, "ops": len(sg0.operators), "gen_state_bytes": gen_state, "type_defs": type_defs}


def _write_if_changed(path: Path, text: str) -> None:
    try:
        if path.read_text() == text:
            return
    except OSError:
        pass
    path.write_text(text)


# ------------------------------------------------------------------------------------------------ build
def _toolchain_flags(profile) -> list[str]:
    """The profile's compile flags the firmware can take (the CPU flags; optimisation comes from them too)."""
    return [f for f in profile.toolchain.get("cflags", []) if f.startswith(("-m", "-O", "-f"))]


def build(model_path, profile, build_dir: Path | None = None, memory: str | None = None) -> tuple[Path, dict]:
    """Generate and build fw.elf for ``profile``; returns (elf path, generation info)."""
    model_path = Path(model_path)
    data = model_path.read_bytes()
    sha = hashlib.sha256(data).hexdigest()
    board = board_for(profile)
    compiler = profile.toolchain.get("compiler", "arm-none-eabi-gcc")
    if "arm-none-eabi" not in compiler:
        raise DeviceError(f"profile {profile.name} builds with {compiler}; firmware_c/app builds with "
                          f"arm-none-eabi-gcc only")
    require_tool(BOARD_COMPILER, ARM_PACKAGES)
    require_tool("make", "apt-get install make")
    build_dir = Path(build_dir if build_dir is not None else default_build_dir(profile.name, sha)).resolve()
    firmware_cache = firmware_cache_dir()
    firmware_cache.mkdir(parents=True, exist_ok=True)
    with resources.build_lock(firmware_cache / "obj"):  # one build at a time: objects are shared between models
        return _build_locked(model_path, data, sha, profile, board, build_dir, firmware_cache, memory)


def firmware_cache_dir() -> Path:
    """The folder of firmware builds: ``edge_sdk.resources.cache_dir()/firmware``."""
    return resources.cache_dir() / "firmware"


def _tree_tag() -> str:
    # a hash of this installation's firmware_c path: two checkouts never share a build or objects
    return hashlib.sha256(str(FIRMWARE.resolve()).encode()).hexdigest()[:8]


def default_build_dir(profile_name: str, model_sha256: str) -> Path:
    """Where ``build`` puts a model's firmware by default: ``firmware_cache_dir()/<profile>-<sha>-<tree>``
    (``tree``: a hash of this installation's firmware_c path)."""
    return firmware_cache_dir() / f"{profile_name}-{model_sha256[:12]}-{_tree_tag()}"


def _build_locked(model_path: Path, data: bytes, sha: str, profile, board: str, build_dir: Path,
                  firmware_cache: Path, memory: str | None = None) -> tuple[Path, dict]:
    from edge_sdk.targets.check import DSP_CPUS  # the arena measure emulates their DSP paths

    gen_dir = build_dir / "gen"
    log.stage(f"generating firmware sources for {model_path.name} ({len(data)} bytes) on {board}")
    info = generate(model_path, data, gen_dir, profile.ram_arena_bytes, memory, profile.cpu in DSP_CPUS)
    info["sha256"], info["board"], info["model_bytes"] = sha, board, len(data)
    cpu = profile.cpu if profile.cpu in ("cortex-m0plus", "cortex-m4", "cortex-m7") else None
    flags = _toolchain_flags(profile) + info["type_defs"]
    # runtime + board objects, shared by every model built with the same compiler, board, flags and firmware tree
    # (c_build.build_tag: the compiler's identity, as every cached object's key; the tree's path too: make
    # compares mtimes, so another checkout's objects must never look up to date)
    key = c_build.build_tag(BOARD_COMPILER, board, cpu or "", *flags, _tree_tag(), tree=FIRMWARE)
    obj_dir = firmware_cache / f"obj-{board}-{key}"
    cmd = ["make", "-C", str(APP), f"-j{os.cpu_count() or 2}", f"BOARD={board}", f"BUILD={build_dir}",
           f"OBJ={obj_dir}",
           f"GEN={gen_dir}", f"KERNELS={' '.join(info['kernels'])}",
           f"PROFILE_CFLAGS={' '.join(flags)}", f"PYTHON={sys.executable}"]
    if cpu:
        cmd.append(f"CPU={cpu}")
    n_objects = 1 + len(info["kernels"]) + 4 + 4 + 1  # edge.c, kernels, board files, app + gen, link
    elf = build_dir / "fw.elf"
    log.stage(f"building {elf}")
    lines = []
    with log.progress(n_objects, "build") as bar:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for line in proc.stdout:
            lines.append(line)
            if line.startswith(("CC ", "LD ")):
                bar.advance()
        proc.wait()
        bar.advance(n_objects)
    if proc.returncode != 0:
        text = "".join(lines)
        overflow = re.findall(r"region [`'](\w+)' overflowed by (\d+) bytes", text)
        if overflow:
            what = "; ".join(f"{r} overflowed by {n} bytes" for r, n in overflow)
            raise ModelError(f"the firmware for {model_path.name} does not fit {board}: {what} "
                             f"(model {len(data)} bytes, arena {info['arena_bytes']} bytes)")
        raise DeviceError(f"firmware build failed ({' '.join(cmd[:3])} ...):\n{text[-3000:]}")
    return elf, info


def section_sizes(elf: Path) -> dict[str, int]:
    """Sizes of the allocated sections of an ELF (arm-none-eabi-size -A)."""
    tool = require_tool("arm-none-eabi-size", ARM_PACKAGES)
    out = subprocess.run([tool, "-A", str(elf)], capture_output=True, text=True, check=True).stdout
    sizes = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[0].startswith(".") and parts[1].isdigit():
            sizes[parts[0]] = int(parts[1])
    return sizes


def link_usage(elf: Path) -> dict[str, int]:
    """text/data/bss/arena bytes of the firmware from its sections."""
    s = section_sizes(elf)
    text = s.get(".text", 0) + s.get(".ARM.exidx", 0) + s.get(".vectors", 0) + s.get(".boot2", 0)
    data = s.get(".data", 0)
    bss = s.get(".bss", 0)
    large = s.get(".board_large", 0)
    stack = s.get(".stack", 0)
    return {"text_bytes": text, "data_bytes": data, "bss_bytes": bss, "large_bytes": large, "stack_bytes": stack,
            "flash_bytes": text + data, "ram_bytes": data + bss + large + stack}


def check_fit(profile, model_bytes: int, arena_bytes: int, usage: dict) -> None:
    """Refuse (with the numbers) a firmware whose model or arena exceeds the profile's budgets."""
    problems = []
    if model_bytes > profile.flash_model_bytes:
        problems.append(f"the model is {model_bytes} bytes, {profile.name} allows flash_model_bytes="
                        f"{profile.flash_model_bytes}")
    if arena_bytes > profile.ram_arena_bytes:
        problems.append(f"the arena is {arena_bytes} bytes, {profile.name} allows ram_arena_bytes="
                        f"{profile.ram_arena_bytes}")
    if problems:
        numbers = (f"(firmware: text {usage['text_bytes']} + data {usage['data_bytes']} bytes of flash, "
                   f"data {usage['data_bytes']} + bss {usage['bss_bytes']} + arena {arena_bytes} bytes of RAM)")
        message = f"does not fit {profile.name}: " + "; ".join(problems) + " " + numbers
        if model_bytes > profile.flash_model_bytes:
            raise ModelError(message)
        exc = ArenaTooSmallError(arena_bytes, profile.ram_arena_bytes)
        exc.args = (message,)
        raise exc


def firmware_size(model_path, profile) -> dict:
    """Build (really link, with the board's linker script) the firmware for ``model_path`` on ``profile`` without
    flashing it: ``{"linked": True, "flash_bytes", "text_bytes", "data_bytes", "bss_bytes", "arena_buffer_bytes"
    (the firmware's arena array: the runtime's arena plus headroom, not the arena itself), "runtime_flash_bytes"
    (the firmware's flash minus the model's bytes), "elf"}``; or, when the linker
    refuses it, ``{"linked": False, "error": the linker's overflow in words}``. DeviceError when the toolchain
    is missing or the board has no support here. (`edge check --link`.)"""
    try:
        elf, info = build(_c_model_path(Path(model_path))[0], profile)  # legacy UINT8: the model as flash embeds it
    except ModelError as exc:
        if "does not fit" not in str(exc):
            raise
        return {"linked": False, "error": str(exc)}
    usage = link_usage(elf)
    return {"linked": True, **usage, "arena_buffer_bytes": usage["large_bytes"] or info["arena_bytes"],
            "runtime_flash_bytes": usage["flash_bytes"] - info["model_bytes"], "elf": str(elf)}


# ------------------------------------------------------------------------------------------------ flashing
def objcopy(elf: Path, fmt: str = "binary") -> Path:
    tool = require_tool("arm-none-eabi-objcopy", ARM_PACKAGES)
    out = elf.with_suffix({"binary": ".bin", "ihex": ".hex"}[fmt])
    subprocess.run([tool, "-O", fmt, str(elf), str(out)], check=True, capture_output=True)
    return out


def uf2_from_binary(data: bytes, base: int, family: int = UF2_FAMILY_RP2040) -> bytes:
    """UF2 (Microsoft's USB flashing format): 256 payload bytes per 512-byte block, with the family ID."""
    blocks = [data[i:i + 256] for i in range(0, len(data), 256)] or [b""]
    out = bytearray()
    for k, chunk in enumerate(blocks):
        head = struct.pack("<IIIIIIII", 0x0A324655, 0x9E5D5157, 0x00002000, base + 256 * k, 256, k, len(blocks),
                           family)
        out += head + chunk.ljust(476, b"\x00") + struct.pack("<I", 0x0AB16F30)
    return bytes(out)


def flash_command(profile, elf, port: str | None = None) -> list[str]:
    """The command line that flashes ``elf`` (or its .bin/.uf2 next to it) with the profile's method."""
    f = profile.flash
    method = f.get("method")
    elf = str(elf)
    stem = elf.removesuffix(".elf")
    if method == "openocd":
        cmd = ["openocd"]
        for cfg in (f.get("interface"), f.get("target"), *f.get("config", [])):
            if cfg:
                cmd += ["-f", cfg]
        if "adapter_speed_khz" in f:
            cmd += ["-c", f"adapter speed {f['adapter_speed_khz']}"]
        cmd += ["-c", f"program {elf} verify reset exit"]
        return cmd
    if method == "pyocd":
        cmd = ["pyocd", "flash"]
        if "target" in f:
            cmd += ["--target", f["target"]]
        if "frequency_hz" in f:
            cmd += ["--frequency", str(f["frequency_hz"])]
        return cmd + [elf]
    if method == "picotool":
        path = f"{stem}.uf2" if f.get("format", "uf2") == "uf2" else elf
        cmd = ["picotool", "load", "--verify", path]
        if f.get("reboot", True):
            cmd.append("--execute")
        return cmd
    if method == "esptool":
        tool = "esptool" if shutil.which("esptool") else "esptool.py"
        cmd = [tool, "--chip", f.get("chip", "auto")]
        if port:
            cmd += ["--port", port]
        cmd += ["--baud", str(f.get("baud", 460800)), "--before", f.get("before", "default_reset"),
                "--after", f.get("after", "hard_reset"), "write_flash"]
        for key, opt in (("flash_mode", "--flash_mode"), ("flash_freq", "--flash_freq"), ("flash_size", "--flash_size")):
            if key in f:
                cmd += [opt, str(f[key])]
        return cmd + [hex(f.get("address", 0x10000)), f"{stem}.bin"]
    if method == "st-flash":
        cmd = ["st-flash"]
        if f.get("reset", True):
            cmd.append("--reset")
        fmt = f.get("format", "binary")
        if fmt == "ihex":
            return cmd + ["--format", "ihex", "write", f"{stem}.hex"]
        return cmd + ["write", f"{stem}.bin", hex(f.get("address", 0x08000000))]
    if method == "qemu":
        return qemu_command(profile, elf, 0)
    raise DeviceError(f"profile {profile.name}: flash method {method!r} cannot flash firmware (use --port with "
                      f"a board flashed another way)")


def flash(model_path, target, port: str | None = None, build_dir=None, reuse: bool = False,
          memory: str | None = None, input_shapes=None) -> FlashResult:
    """Build the firmware for ``model_path`` and the profile ``target`` (name, path or Profile), check the fit,
    then flash it (see the module docstring). With ``reuse`` a running QEMU board with the same model and
    profile is returned instead of starting another. ``input_shapes`` (`--input-shape`): the firmware embeds
    the model with its inputs at these shapes (edge_sdk.model.input_shapes.shaped_model_path; a -1 beyond the
    batch axis without one is a UsageError)."""
    from edge_sdk.model.input_shapes import shaped_model_path
    from edge_sdk.targets.profiles import Profile, load_profile

    from edge_sdk.runtime.planner import check_memory

    check_memory(memory, auto=True)
    profile = target if isinstance(target, Profile) else load_profile(target)
    model_path = Path(model_path)
    method = profile.flash.get("method")
    if method not in FIRMWARE_FLASH_METHODS:
        raise DeviceError(f"profile {profile.name} flashes with {method!r}: `edge flash` builds firmware for "
                          f"microcontrollers (use `edge deploy` for Linux boards)")
    if method == "qemu":
        qemu_tcp_port(port)  # a bad --port is refused before the firmware is built
    shown = str(model_path)  # the user's file, as results and `edge board list` name it (not a cached copy)
    model_path = shaped_model_path(model_path, input_shapes)  # after the refusals that need no model
    model_path, uint8_io = _c_model_path(model_path)  # legacy UINT8: the firmware embeds the model run as INT8
    if reuse and method == "qemu" and port is None:
        sha = hashlib.sha256(model_path.read_bytes()).hexdigest()
        b = find_board(sha, profile.name)
        if b is not None and memory is not None and b.get("memory_request") != memory:
            b = None  # built for another --memory: flash the plan asked for
        if b is not None:
            log.stage(f"reusing the running board {b['url']} (same model)")
            usage = link_usage(Path(b["elf"])) if Path(b["elf"]).exists() else {}
            plan = b.get("memory") or "unknown (a board started before plans were recorded)"
            arena_size, arena_where = _target_arena(model_path, profile, b.get("memory") or "layer")
            return FlashResult(port=b["url"], elf=b["elf"], profile=profile.name, board=board_for(profile),
                               method=method, model=shown, embedded_model=str(model_path), model_sha256=sha,
                               model_bytes=model_path.stat().st_size, text_bytes=usage.get("text_bytes", 0),
                               data_bytes=usage.get("data_bytes", 0), bss_bytes=usage.get("bss_bytes", 0),
                               arena_bytes=usage.get("large_bytes", 0), flash_bytes=usage.get("flash_bytes", 0),
                               ram_bytes=usage.get("ram_bytes", 0), build_dir=str(Path(b["elf"]).parent),
                               command=b.get("command", []), pid=b["pid"], reused=True,
                               memory=plan, patch=b.get("patch"), arena_size=arena_size, arena_where=arena_where,
                               uint8_io=uint8_io)
    elf, info = build(model_path, profile, build_dir, memory)
    usage = link_usage(elf)
    arena = usage["large_bytes"] or info["arena_bytes"]
    check_fit(profile, info["model_bytes"], arena, usage)
    result = FlashResult(port=port, elf=str(elf), profile=profile.name, board=info["board"], method=method,
                         model=shown, embedded_model=str(model_path), model_sha256=info["sha256"],
                         model_bytes=info["model_bytes"],
                         text_bytes=usage["text_bytes"], data_bytes=usage["data_bytes"], bss_bytes=usage["bss_bytes"],
                         arena_bytes=arena, flash_bytes=usage["flash_bytes"], ram_bytes=usage["ram_bytes"],
                         build_dir=str(elf.parent), memory=info["memory"], patch=info["patch"], uint8_io=uint8_io)
    result.arena_size, result.arena_where = _target_arena(model_path, profile, info["memory"])
    if method == "qemu":
        b = None
        try:  # a failed check or a Ctrl-C before flash returns stops the board (nothing half-started stays)
            with log.progress(1, "flash (start QEMU)") as bar:
                b = start_qemu(profile, elf, port, info, model=shown)
                verify_board(b["url"], info["sha256"])
                bar.advance()
            result.port, result.pid, result.command = b["url"], b["pid"], b["command"]
            return result
        except BaseException:
            if b is not None:
                discard_board(b)
            raise
    # silicon: the image the tool wants, then the tool
    if method in ("st-flash", "esptool") or (method == "picotool" and profile.flash.get("format", "uf2") == "uf2"):
        fmt = "ihex" if profile.flash.get("format") == "ihex" else "binary"
        image = objcopy(elf, fmt)
        if method == "picotool" and profile.flash.get("format", "uf2") == "uf2":
            base = 0x10000000
            elf.with_suffix(".uf2").write_bytes(uf2_from_binary(image.read_bytes(), base))
    cmd = flash_command(profile, elf, port)
    result.command = cmd
    tool = cmd[0]
    try:
        require_tool(tool, INSTALL_HINTS.get("esptool" if tool.startswith("esptool") else tool, tool))
    except DeviceError as exc:  # the build is done: say where it is, for flashing it by hand meanwhile
        raise DeviceError(f"{exc}; the firmware is built: {elf}") from None
    with log.progress(1, f"flash ({tool})") as bar:
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        bar.advance()
    if proc.returncode != 0:
        raise DeviceError(f"{' '.join(cmd)} failed (exit {proc.returncode}): "
                          f"{(proc.stderr or proc.stdout).strip()[-1500:]}")
    result.port = port or profile.serial.get("port")
    return result


def plan_words(memory: str, patch: dict | None) -> str:
    """The realised plan in words, as flash and profile report it: its name and, for a patch stage, the stage,
    grid, the stage's RAM and the extra MACs (patching.PatchPlan.to_dict)."""
    from edge_sdk.runtime.planner import PLAN_WORDS

    text = f"{PLAN_WORDS.get(memory, memory)} plan"
    if patch:
        text += (f": stage nodes {patch['nodes'][0]}..{patch['nodes'][1]}, grid {patch['grid'][0]}x"
                 f"{patch['grid'][1]}, tensor plan {patch['ram']} B (layer plan {patch['layer_ram']} B), "
                 f"+{patch['extra_macs']} MACs")
    elif memory == "inplace":
        text += ", +0 MACs"
    return text


def format_flash(r: FlashResult) -> str:
    lines = [(f"built {r.elf}: text {r.text_bytes} B, data {r.data_bytes} B, bss {r.bss_bytes} B, "
              f"arena buffer {r.arena_bytes} B (the arena + flash's margin; {plan_words(r.memory, r.patch)}; "
              f"model {r.model_bytes} B)"), r.arena_line()] + ([r.uint8_io] if r.uint8_io else [])
    if r.method == "qemu":
        lines.append(f"{'reusing' if r.reused else 'started'} QEMU ({r.board}, pid {r.pid}); serial port:")
        lines.append(r.port)
        lines.append(f"stop it with: edge board stop {r.port}")
    else:
        lines.append(f"flashed with: {' '.join(r.command)}")
        if r.port:
            lines.append(f"serial port: {r.port}")
    return "\n".join(lines) + "\n"

