"""The README's generated tables (edge_sdk.tools.docs): current, complete, and only their sections rewritten."""

from __future__ import annotations

import pytest

from edge_sdk.tools import docs
from edge_sdk.errors import ModelError
from edge_sdk.runtime.op_table import OPS
from edge_sdk.targets.profiles import list_profiles, load_profile
from tests.conftest import ROOT

README = ROOT / "README.md"


def test_readme_tables_are_current():
    text = README.read_text(encoding="utf-8")
    for name in docs.SECTIONS:
        assert f"<!-- BEGIN GENERATED: {name} -->" in text, f"README.md lacks the {name} markers"
    assert docs.update_text(text) == text, (
        "README.md's generated tables are stale: run .venv/bin/python -m edge_sdk.tools.docs --write README.md")


def test_ops_table_lists_every_op_with_both_runtimes():
    table = docs.ops_table()
    c = docs.c_kernels()
    for name, row in OPS.items():
        line = next(line for line in table.splitlines() if line.startswith(f"| `{name}` |"))
        cells = [x.strip() for x in line.strip("|").split("|")]
        assert cells[2] == (f"v1–v{row.max_version}" if row.max_version > 1 else "v1")
        assert (cells[4] == "-") == (name not in c), name
        # a dtype column per runtime, from the row's dtypes and the C kernel's registration
        def types(cell):
            return cell.split(": ")[-1].replace(" (no data tensor)", "").split()

        assert types(cells[3]) == [t.lower() for t in row.dtypes], name
        if row.c_dtypes:
            assert types(cells[5]) == [t.lower() for t in row.c_dtypes], name
            assert cells[6] == (row.c_constraints or "-"), name
    assert "| `CONV_2D` | builtin | v1–v8 | float32/float32 int8/int8 int16/int8 float32/int8 float32/uint8 int8/int4 int16/int4 float32/int4 | v1–v8 | " in table
    assert "| `DEPTH_TO_SPACE` | builtin | v1–v2 | " in table  # in C since issue 16
    assert "| `Convolution2DTransposeBias` | custom | v1 | float32 | v1 | float32 | - | yes |" in table
    assert "| `SignalRfft` | custom | v1 | int16 int32 float32 | v1 | int16 | " in table  # the FFT: int16 in C
    assert "| `TRANSPOSE_CONV` | builtin | v1–v5 | input 2: " in table
    assert f"runs {len(OPS)}" in table


def test_c_kernels_parsed_from_sources_by_the_one_parser(tmp_path):
    """docs, gen_ops (the C op table) and flash's kernel selection read registrations with one parser: an
    unquoted custom code is an error naming file and line (gen_ops used to drop it while docs listed it)."""
    from edge_sdk.errors import ModelError
    from edge_sdk.runtime.op_table import gen_ops_module

    (tmp_path / "a.c").write_text('#include "edge_kernel.h"\n\nEDGE_KERNEL(ADD, add, 5, "INT8", "")\n'
                                  'EDGE_KERNEL(SUB, sub, 2, "INT8", "")\n'
                                  '/* EDGE_KERNEL(MUL, mul, 7) in a comment line is not a registration */\n'
                                  'EDGE_CUSTOM_KERNEL("SignalRfft", rfft, 1, "INT16", "")\n')
    (tmp_path / "b.c").write_text('EDGE_KERNEL(ADD, add_v2, 3, "INT8", "")\n')
    assert docs.c_kernels(tmp_path) == {"ADD": 5, "SUB": 2, "SignalRfft": 1}
    gen = gen_ops_module()
    assert gen.kernel_versions(gen.scan(tmp_path)) == docs.c_kernels(tmp_path)
    (tmp_path / "c.c").write_text('EDGE_KERNEL(MUL, mul, 7, "INT8", "")\nEDGE_CUSTOM_KERNEL(SignalWindow, window, 1, "INT16", "")\n')
    with pytest.raises(ModelError, match=r"c\.c:2: malformed kernel registration"):
        docs.c_kernels(tmp_path)
    with pytest.raises(gen.RegistrationError, match=r"c\.c:2:"):
        gen.scan(tmp_path)
    assert gen.main([str(tmp_path / "out.c"), "--kernels", str(tmp_path)]) == 1
    assert not (tmp_path / "out.c").exists()
    found = docs.c_kernels()
    assert found["FULLY_CONNECTED"] == 14 and found["SignalRfft"] == 1 and found["DEPTH_TO_SPACE"] == 2
    assert len(found) >= 30


def test_c_kernels_equal_the_built_library():
    from edge_sdk.runtime import c_build, c_interpreter

    c_build.build()
    assert docs.c_kernels() == c_interpreter.c_supported_ops()


def test_devices_table_lists_every_profile():
    table = docs.devices_table()
    names = list_profiles()
    assert "qemu-mps2-an386" in names and "raspberry-pi-4" in names
    for name in names:
        p = load_profile(name)
        line = next(line for line in table.splitlines() if line.startswith(f"| `{name}` |"))
        assert f"| {p.kind} | {p.cpu} |" in line and str(p.flash["method"]) in line
    assert "| `qemu-mps2-an386` | mcu | cortex-m4 | 25 MHz | 7 MiB | 8 MiB |" in table
    assert "`cortex-m4`" not in table  # abstract parents are not devices


def test_update_appends_markers_then_only_rewrites_between_them():
    sections = {"ops": "OPS TABLE\n", "devices": "DEVICES TABLE\n"}
    text = docs.update_text("# Title\n\nintro\n", sections)
    assert text.startswith("# Title\n\nintro\n\n## Supported ops and devices\n\n<!-- BEGIN GENERATED: ops -->\n"
                           "OPS TABLE\n<!-- END GENERATED: ops -->")
    assert docs.update_text(text, sections) == text  # idempotent
    edited = text.replace("intro", "intro, edited by hand") + "\n## Later\n\nmore\n"
    edited = edited.replace("DEVICES TABLE", "stale rows")
    again = docs.update_text(edited, sections)
    assert "intro, edited by hand" in again and again.endswith("## Later\n\nmore\n")
    assert "stale rows" not in again and "DEVICES TABLE" in again
    assert again.count("## Supported ops and devices") == 1


def test_broken_markers_are_refused():
    doubled = "<!-- BEGIN GENERATED: ops -->\nx\n<!-- END GENERATED: ops -->\n" * 2
    doubled += "<!-- BEGIN GENERATED: devices -->\n<!-- END GENERATED: devices -->\n"
    with pytest.raises(ModelError, match="'ops'"):
        docs.update_text(doubled, {"ops": "a", "devices": "b"})
    reversed_ = ("<!-- END GENERATED: ops -->\n<!-- BEGIN GENERATED: ops -->\n"
                 "<!-- BEGIN GENERATED: devices -->\n<!-- END GENERATED: devices -->\n")
    with pytest.raises(ModelError, match="BEGIN before END"):
        docs.update_text(reversed_, {"ops": "a", "devices": "b"})


def test_cli_write_and_check(tmp_path, capsys):
    readme = tmp_path / "README.md"
    readme.write_text("# x\n")
    assert docs.main(["--check", str(readme)]) == 1
    assert docs.main(["--write", str(readme)]) == 0
    assert docs.main(["--check", str(readme)]) == 0
    assert "| `qemu-mps2-an386` |" in readme.read_text()
    assert not list(tmp_path.glob("*.tmp"))
