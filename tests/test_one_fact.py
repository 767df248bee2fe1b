"""One fact, one place: each test fails when a copy of a shared fact comes back.

* C status names and texts: read from firmware_c/include/edge_status.def (edge_sdk.runtime.c_status);
* element sizes / dtypes of TFLite types: edge_sdk.model.types.TENSOR_TYPES (codes from model.schema);
* the cache folder: edge_sdk.resources.cache_dir() for every cache;
* option enums of the C kernels: only in firmware_c/include/edge_kernel.h;
* timeouts: named constants in edge_sdk/timeouts.py;
* whether the C runtime can be built here, and the skip when it cannot: only tests/conftest.py (needs_c_runtime,
  require_c_runtime, the ``runtime`` grid).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from edge_sdk.runtime import c_status
from tests.conftest import needs_c_runtime

ROOT = Path(__file__).resolve().parent.parent
FW = ROOT / "firmware_c"
SDK = ROOT / "edge_sdk"


def _py_files(*folders: Path):
    for folder in folders:
        for p in sorted(folder.rglob("*.py")):
            if "_bundled" not in p.parts and "build" not in p.parts:
                yield p


# ----------------------------------------------------------------------------------------------- C status
def test_status_table_is_the_def_file():
    text = (FW / "include" / "edge_status.def").read_text()
    names = re.findall(r"^EDGE_STATUS\((\w+),", text, re.M)
    assert list(c_status.status_names()) == names and len(names) >= 13
    assert c_status.STATUS == {n: i for i, n in enumerate(names)}
    assert c_status.status_name(len(names)) == f"status {len(names)}"
    assert c_status.status_text(-1) == "unknown status"
    # read through resources.firmware_dir(): the wheel bundles the file (an installed copy reads the same list)
    from edge_sdk import resources

    assert any(arc == "firmware_c/include/edge_status.def" for _, arc in resources.bundle_files())


@needs_c_runtime
def test_status_texts_match_edge_status_str():
    from edge_sdk.runtime import c_build, c_interpreter

    c_build.build()
    lib = c_interpreter.library()
    assert c_interpreter.STATUS is c_status.STATUS
    for value, (_, text) in enumerate(c_status.table()):
        assert lib.edge_status_str(value).decode() == text
    assert lib.edge_status_str(len(c_status.table())).decode() == c_status.status_text(len(c_status.table()))


def test_status_parser_names_the_bad_line():
    good = 'EDGE_STATUS(EDGE_OK, "ok")\nEDGE_STATUS(EDGE_X, "say \\"x\\"")\n'
    assert c_status.parse(good) == (("EDGE_OK", "ok"), ("EDGE_X", 'say "x"'))
    with pytest.raises(ValueError, match=r"f.def:2: cannot read"):
        c_status.parse('EDGE_STATUS(EDGE_OK, "ok")\nEDGE_STATUS(EDGE_X, unquoted)\n', "f.def")
    with pytest.raises(ValueError, match=r"f.def:2: status EDGE_OK is listed twice"):
        c_status.parse('EDGE_STATUS(EDGE_OK, "ok")\nEDGE_STATUS(EDGE_OK, "again")\n', "f.def")
    with pytest.raises(ValueError, match="first status must be EDGE_OK"):
        c_status.parse('EDGE_STATUS(EDGE_X, "x")\n', "f.def")


def test_no_copy_of_the_status_values_in_python():
    """Nowhere in edge_sdk/ (but c_status.py) a list of status names, or a status name bound to a number."""
    names = set(c_status.status_names())
    bad = []
    for path in _py_files(SDK):
        if path.name == "c_status.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.List, ast.Tuple, ast.Set, ast.Dict)):
                elts = node.keys if isinstance(node, ast.Dict) else node.elts
                found = [e.value for e in elts if isinstance(e, ast.Constant) and e.value in names]
                if len(found) >= 2:
                    bad.append(f"{path.relative_to(ROOT)}:{node.lineno}: {found}")
            if isinstance(node, ast.Assign):
                targets = [t for tgt in node.targets for t in (tgt.elts if isinstance(tgt, ast.Tuple) else [tgt])]
                for t in targets:
                    if isinstance(t, ast.Name) and t.id.lstrip("_") in names:
                        bad.append(f"{path.relative_to(ROOT)}:{node.lineno}: {t.id} =")
    assert not bad, "copies of edge_status.def (use edge_sdk.runtime.c_status):\n" + "\n".join(bad)


# ----------------------------------------------------------------------------------------------- element sizes
def _type_names():
    from edge_sdk.model.schema import ENUMS

    return set(ENUMS["TensorType"][1].values())


def test_tensor_types_are_the_schema_codes_and_the_c_sizes():
    from edge_sdk.model.schema import ENUMS
    from edge_sdk.model.types import TENSOR_TYPES, element_bytes

    schema_codes = {n: c for c, n in ENUMS["TensorType"][1].items()}
    assert {name: code for name, (code, _) in TENSOR_TYPES.items()} == schema_codes
    c_def = (FW / "include" / "edge_types.def").read_text()
    c_types = re.findall(r"^EDGE_TYPE\((\w+),\s*(\d+),\s*(\d+)\)", c_def, re.M)
    assert len(c_types) == len(TENSOR_TYPES)
    for name, code, nbytes in c_types:
        assert TENSOR_TYPES[name][0] == int(code), name
        if int(nbytes):  # a type the C runtime holds: the same bytes per element as the Python interpreter
            assert element_bytes(name) == int(nbytes), name
        else:
            assert TENSOR_TYPES[name][1] is None, f"{name}: Python holds it, edge_types.def says C cannot"


def test_serial_wire_types_come_from_the_one_table():
    import numpy as np

    from edge_sdk.device import serial_link as sl
    from edge_sdk.model.types import TENSOR_TYPES

    assert sl.TENSOR_TYPE_CODES and set(sl.TENSOR_TYPE_BY_NAME) == set(sl.WIRE_TYPES)
    for code, (name, wire) in sl.TENSOR_TYPE_CODES.items():
        assert TENSOR_TYPES[name][0] == code
        assert np.dtype(wire) == TENSOR_TYPES[name][1].newbyteorder("<") and np.dtype(wire).str[0] in "<|"


def _is_dtype_value(v: ast.AST) -> bool:
    if isinstance(v, ast.Attribute) and isinstance(v.value, ast.Name) and v.value.id in ("np", "numpy"):
        return True
    if isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) and v.func.attr == "dtype":
        return True
    if isinstance(v, ast.Constant) and isinstance(v.value, str) and re.fullmatch(r"[<>=|]?[biufc?]\d*", v.value):
        return True
    return isinstance(v, ast.Constant) and type(v.value) is int


def test_no_other_table_of_tensor_types():
    """No dict in edge_sdk/ or firmware_c/tools/ maps TensorType names to dtypes / codes / sizes (or codes to
    names), besides model/types.py (and the schema transcription)."""
    names = _type_names()
    bad = []
    own = {SDK / "model" / "types.py", SDK / "model" / "schema.py"}
    for path in _py_files(SDK, FW / "tools"):
        if path in own:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.Dict):
                continue
            by_name = [k.value for k, v in zip(node.keys, node.values)
                       if isinstance(k, ast.Constant) and k.value in names and _is_dtype_value(v)]
            by_code = [v for k, v in zip(node.keys, node.values)
                       if isinstance(k, ast.Constant) and type(k.value) is int and (
                           (isinstance(v, ast.Constant) and v.value in names)
                           or (isinstance(v, ast.Tuple) and v.elts and isinstance(v.elts[0], ast.Constant)
                               and v.elts[0].value in names))]
            if len(by_name) >= 3 or len(by_code) >= 3:
                bad.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not bad, "tables of TensorTypes (use edge_sdk.model.types.TENSOR_TYPES / numpy_dtype):\n" + "\n".join(bad)


# ----------------------------------------------------------------------------------------------- the cache folder
def test_every_cache_lands_under_edge_cache_dir(monkeypatch, tmp_path):
    from edge_sdk import resources
    from edge_sdk.device import qemu_board
    from edge_sdk.tools import deploy, flash

    cache = tmp_path / "cache"
    monkeypatch.setenv("EDGE_CACHE_DIR", str(cache))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))  # EDGE_CACHE_DIR wins over it, everywhere
    monkeypatch.delenv("EDGE_STATE_DIR", raising=False)
    found = {
        "wheels": deploy.wheel_cache_dir(),
        "wheelhouse": deploy.wheelhouse_dir(),
        "firmware builds": flash.firmware_cache_dir(),
        "firmware default build dir": flash.default_build_dir("qemu-mps2-an386", "ab" * 32),
        "boards.json": qemu_board.state_path(),
    }
    monkeypatch.setattr(resources, "builds_in_place", lambda tree=None: False)  # as an installed copy would
    found["c-runtime"] = resources.host_tree()
    for what, path in found.items():
        assert Path(path).is_relative_to(cache), f"{what}: {path} is not under $EDGE_CACHE_DIR {cache}"
    assert qemu_board.state_path() == cache / "boards.json"
    monkeypatch.setenv("EDGE_STATE_DIR", str(tmp_path / "state"))  # the state file's own override stays
    assert qemu_board.state_path() == tmp_path / "state" / "boards.json"
    monkeypatch.delenv("EDGE_CACHE_DIR")
    assert deploy.wheel_cache_dir().is_relative_to(tmp_path / "xdg" / "edge-sdk")
    assert flash.firmware_cache_dir().is_relative_to(tmp_path / "xdg" / "edge-sdk")


def test_only_resources_works_out_the_cache_folder():
    """The cache rule ($EDGE_CACHE_DIR / $XDG_CACHE_HOME / ~/.cache) is written once, in edge_sdk/resources.py."""
    bad = []
    for path in _py_files(SDK):
        if path == SDK / "resources.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Constant) and node.value in (".cache", "XDG_CACHE_HOME", "EDGE_CACHE_DIR"):
                bad.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.value!r}")
    assert not bad, "cache folders worked out outside resources.cache_dir():\n" + "\n".join(bad)


# ----------------------------------------------------------------------------------------------- C option enums
KERNEL_H = FW / "include" / "edge_kernel.h"
# an enumerator or macro naming a schema option: a BuiltinOptions code, an activation or a padding
_OPTION_ENUM = re.compile(r"\b(\w*Options|(?:EDGE_)?ACT_\w+|(?:EDGE_)?PAD(?:DING)?_(?:SAME|VALID))\s*=\s*\d+"
                          r"|#\s*define\s+(\w*Options|(?:EDGE_)?ACT_\w+|(?:EDGE_)?PAD(?:DING)?_(?:SAME|VALID))\s+\d+")


def _c_sources():
    for p in sorted(FW.rglob("*")):
        if p.suffix in (".c", ".h") and "build" not in p.relative_to(FW).parts and p != KERNEL_H:
            yield p


def test_option_enums_of_edge_kernel_h_are_the_schemas():
    from edge_sdk.model.schema import ENUMS, UNIONS

    text = KERNEL_H.read_text()
    opts = dict(re.findall(r"\bEDGE_OPTS_(\w+)\s*=\s*(\d+)", text))
    acts = dict(re.findall(r"\bEDGE_ACT_(\w+)\s*=\s*(\d+)", text))
    pads = dict(re.findall(r"\bEDGE_PAD_(\w+)\s*=\s*(\d+)", text))
    assert {"AddOptions", "SubOptions", "MulOptions", "LeakyReluOptions"} <= set(opts)
    union = UNIONS["BuiltinOptions"]
    for name, code in opts.items():
        assert name == "NONE" and code == "0" or union.get(int(code)) == name, f"EDGE_OPTS_{name} = {code}"
    assert {n: int(c) for n, c in acts.items()} == {n: c for c, n in ENUMS["ActivationFunctionType"][1].items()}
    assert {n: int(c) for n, c in pads.items()} == {n: c for c, n in ENUMS["Padding"][1].items()}


def test_no_kernel_redefines_an_option_enum():
    bad = []
    for path in _c_sources():
        text = re.sub(r"/\*.*?\*/|//[^\n]*", lambda m: "\n" * m.group(0).count("\n"),
                      path.read_text(errors="replace"), flags=re.S)  # comments out, lines kept
        for m in _OPTION_ENUM.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            bad.append(f"{path.relative_to(ROOT)}:{line}: {m.group(0)}")
    assert not bad, "option enums belong in firmware_c/include/edge_kernel.h only:\n" + "\n".join(bad)


# ----------------------------------------------------------------------------------------------- timeouts
def _subparser(name: str):
    import argparse

    from edge_sdk.cli import build_parser

    for action in build_parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices[name]
    raise AssertionError("the CLI has no subcommands")


def _default(parser, flag: str):
    for action in parser._actions:
        if flag in action.option_strings:
            return action.default
    raise AssertionError(f"no {flag}")


def test_cli_defaults_are_the_named_timeouts():
    from edge_sdk import timeouts as T

    assert _default(_subparser("profile"), "--timeout") == T.SERIAL_ANSWER_TIMEOUT
    assert _default(_subparser("profile"), "--retries") == T.SERIAL_RETRIES
    assert _default(_subparser("deploy"), "--connect-timeout") == T.SSH_CONNECT_TIMEOUT


def test_library_defaults_are_the_named_timeouts():
    import inspect

    from edge_sdk import timeouts as T
    from edge_sdk.device import qemu_board, ssh
    from edge_sdk.device.serial_link import SerialLink
    from edge_sdk.tools import bench, deploy, generate, profile

    def defaults(fn):
        return {k: p.default for k, p in inspect.signature(fn).parameters.items() if p.default is not p.empty}

    assert {k: defaults(SerialLink.__init__)[k] for k in ("timeout", "retries", "invoke_timeout")} == {
        "timeout": T.SERIAL_ANSWER_TIMEOUT, "retries": T.SERIAL_RETRIES, "invoke_timeout": T.INVOKE_TIMEOUT}
    prof = defaults(profile.profile_model)
    assert (prof["timeout"], prof["retries"], prof["invoke_timeout"]) == (
        T.SERIAL_ANSWER_TIMEOUT, T.SERIAL_RETRIES, T.DEVICE_RUN_TIMEOUT)
    assert defaults(generate.generate_on_device)["invoke_timeout"] == T.DEVICE_RUN_TIMEOUT
    assert defaults(qemu_board.start_qemu)["timeout"] == T.QEMU_START_TIMEOUT
    assert defaults(qemu_board.verify_board)["timeout"] == T.BOARD_VERIFY_TIMEOUT
    assert defaults(ssh.SSHConnection.__init__)["connect_timeout"] == T.SSH_CONNECT_TIMEOUT
    assert defaults(ssh.SSHConnection.run)["timeout"] == T.SSH_COMMAND_TIMEOUT
    for fn in (deploy.deploy, deploy.status, deploy.connection_for, bench.bench):
        assert defaults(fn)["connect_timeout"] == T.SSH_CONNECT_TIMEOUT, fn.__name__
    assert defaults(deploy.deploy)["install_timeout"] == T.DEPLOY_INSTALL_TIMEOUT


_TIMEOUT_MODULES = ("device/serial_link.py", "device/qemu_board.py", "device/ssh.py", "device/emulator.py",
                    "tools/profile.py", "tools/flash.py", "tools/deploy.py", "tools/bench.py", "tools/generate.py",
                    "tools/serve.py", "cli.py")


def test_no_literal_timeouts_in_the_callers():
    """A parameter or keyword named *timeout / retries gets a named constant (edge_sdk/timeouts.py), not a number."""
    bad = []
    for rel in _TIMEOUT_MODULES:
        path = SDK / rel
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            pairs = []
            if isinstance(node, ast.Call):
                pairs = [(k.arg, k.value) for k in node.keywords if k.arg]
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                a = node.args
                pos = a.posonlyargs + a.args
                pairs = list(zip([x.arg for x in pos[len(pos) - len(a.defaults):]], a.defaults))
                pairs += [(x.arg, d) for x, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None]
            for name, value in pairs:
                if (name.endswith("timeout") or name == "retries" or name == "default") and \
                        isinstance(value, ast.Constant) and type(value.value) in (int, float) and value.value:
                    if name == "default" and not _is_timeout_flag(node):
                        continue
                    bad.append(f"edge_sdk/{rel}:{node.lineno}: {name}={value.value}")
    assert not bad, "literal timeouts (name them in edge_sdk/timeouts.py):\n" + "\n".join(bad)


def _is_timeout_flag(call: ast.AST) -> bool:
    return isinstance(call, ast.Call) and any(
        isinstance(a, ast.Constant) and isinstance(a.value, str) and a.value.startswith("--")
        and (a.value.endswith("timeout") or a.value == "--retries") for a in call.args)


# ------------------------------------------------------------------------------------------ the C-missing skip
# Test modules that look for make or a C compiler for something else than the C runtime's binding, and why.
_OWN_TOOL_CHECKS = {
    "test_cli_exit_codes.py": "takes the compiler away on purpose ($CC): needs make alone",
    "test_first_hour.py": "runs the Makefile's install target: needs make alone",
    "test_deploy.py": "the loopback device's own compiler: the deploy's build result is asserted either way",
    "test_cli_first_hour_small.py": "runs the Makefile's system-deps recipe with a fake apt / dpkg: needs make alone",
    "test_packaging.py": "the installed wheel builds its C runtime with $CC (the build honours it), not gcc",
}
_C_RUNTIME_TOOLS = ("gcc", "cc", "make")
_C_RUNTIME_NAMES = ("HAVE_C_RUNTIME", "C_RUNTIME_REASON")


def c_runtime_checks(source: str, name: str = "<test>") -> list[str]:
    """Where a test module decides by itself whether the C runtime can be built: shutil.which("gcc" / "cc" /
    "make"), or conftest's HAVE_C_RUNTIME / C_RUNTIME_REASON read outside conftest."""
    found = []
    for node in ast.walk(ast.parse(source, name)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "which" \
                and node.args and isinstance(node.args[0], ast.Constant) and node.args[0].value in _C_RUNTIME_TOOLS:
            found.append(f"{name}:{node.lineno}: shutil.which({node.args[0].value!r})")
        elif isinstance(node, ast.Name) and node.id in _C_RUNTIME_NAMES:
            found.append(f"{name}:{node.lineno}: {node.id}")
        elif isinstance(node, ast.alias) and node.name in _C_RUNTIME_NAMES:
            found.append(f"{name}:{node.lineno}: imports {node.name}")
    return found


def test_the_c_runtime_skip_lives_in_conftest():
    """One skip for a missing C runtime: tests take conftest's needs_c_runtime / require_c_runtime / the runtime
    grid instead of their own gcc and make checks (which drift: a reason per file, a silent ``return``)."""
    tests = ROOT / "tests"
    bad = []
    for path in sorted(tests.glob("*.py")):
        if path.name in ("conftest.py", *_OWN_TOOL_CHECKS):
            continue
        text = path.read_text()
        if "which(" in text or "C_RUNTIME_" in text:  # parse only the candidates
            bad += c_runtime_checks(text, f"tests/{path.name}")
    assert not bad, "own C-runtime checks (use tests.conftest.needs_c_runtime / require_c_runtime):\n" + "\n".join(bad)


def test_the_c_runtime_skip_check_sees_a_copy():
    own = 'needs = pytest.mark.skipif(shutil.which("gcc") is None, reason="no gcc")\n' \
          "from tests.conftest import HAVE_C_RUNTIME\nif not HAVE_C_RUNTIME:\n    pass\n"
    assert len(c_runtime_checks(own)) == 3
    assert c_runtime_checks('shutil.which("arm-none-eabi-gcc")\nneeds_c_runtime\n') == []


def c_runtime_fixtures(source: str, name: str = "<test>") -> list[str]:
    """A fixture or helper of a test module that builds the C runtime and hands out its binding (``c_build.build()``
    then ``return c_interpreter``): conftest's ``backend`` fixture and ``c_backend()`` do that once."""
    found = []
    for node in ast.walk(ast.parse(source, name)):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        calls = [c for c in ast.walk(node) if isinstance(c, ast.Call) and ast.unparse(c.func) == "c_build.build"]
        returns = any(isinstance(r, ast.Return) and r.value is not None and "c_interpreter" in ast.unparse(r.value)
                      for r in ast.walk(node))
        if calls and returns:
            found.append(f"{name}:{node.lineno}: {node.name}")
    return found


def test_the_c_runtime_fixture_lives_in_conftest():
    """One fixture hands the C-only tests the built binding (tests/conftest.py: backend, c_backend): no module
    keeps its own copy (there were four: simd_common, test_c_arena, test_ops_conv, test_firmware_c)."""
    bad = []
    for path in sorted((ROOT / "tests").glob("*.py")):
        if path.name != "conftest.py" and "c_build" in (text := path.read_text()):
            bad += c_runtime_fixtures(text, f"tests/{path.name}")
    assert not bad, "own C-runtime fixtures (use tests.conftest's backend fixture / c_backend()):\n" + "\n".join(bad)
    own = ("@pytest.fixture(scope='module')\ndef backend():\n    c_build.build()\n    return c_interpreter\n"
           "def build_backend():\n    c_build.build()\n    return c_interpreter\n"
           "def test_x():\n    c_build.build()\n    assert 1\n")
    assert c_runtime_fixtures(own) == ["<test>:2: backend", "<test>:5: build_backend"]
