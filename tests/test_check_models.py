"""`edge check` agrees with the runtime the profile names, on every model in ../shared/models and every profile:
an op problem from the runtime on a C target exactly when the C runtime refuses the model, on a Python target
exactly when the interpreter refuses it. Without a C compiler (the op-table fallback, ``c_runtime=False``) the C
kernels' registered versions and dtypes give the same verdict on every C profile."""

import functools

import pytest

from edge_sdk.errors import EdgeError
from edge_sdk.targets.check import check_model
from edge_sdk.targets.profiles import list_profiles, load_profile
from tests.conftest import SHARED_MODELS, shared_models

MODELS = shared_models()
PROFILES = list_profiles()


@functools.cache  # module-wide: both tests ask the C runtime about every model (~4 s for the 144 here)
def _refuses(path, backend: str) -> str | None:
    """The runtime's own answer: its allocate_tensors' error, or None when it loads, prepares and plans."""
    from edge_sdk import Interpreter

    try:
        Interpreter(model_path=str(path), backend=backend).allocate_tensors()
    except EdgeError as exc:
        if type(exc).__name__ == "ArenaTooSmallError":
            return None
        return str(exc)
    return None


def _runtime_problems(result) -> list[dict]:
    return [p for p in result.errors if "runtime_error" in p]


@pytest.mark.slow
@pytest.mark.skipif(not MODELS, reason=f"{SHARED_MODELS} is absent in this checkout")
@pytest.mark.parametrize("path", MODELS, ids=lambda p: str(p.relative_to(SHARED_MODELS)))
def test_check_agrees_with_the_runtime_on_every_profile(path):
    refusal = {"python": _refuses(path, "python"), "c": _refuses(path, "c")}
    for name in PROFILES:
        profile = load_profile(name)
        runtime = "c" if profile.runtime == "c" else "python"
        r = check_model(path, profile)
        found = _runtime_problems(r)
        assert bool(found) == (refusal[runtime] is not None), (name, refusal[runtime], found)
        if runtime == "c":
            assert r.checked_by == "c-runtime"
    # the embedded default and the host: every op problem is the runtime's own (no profile policy there)
    for name, runtime in (("qemu-mps2-an386", "c"), ("host-linux", "python")):
        r = check_model(path, name)
        ops = [p for p in r.errors if p["kind"] in ("op", "model")]
        assert bool(ops) == (refusal[runtime] is not None), (name, refusal[runtime], ops)


@pytest.mark.skipif(not MODELS, reason=f"{SHARED_MODELS} is absent in this checkout")
@pytest.mark.parametrize("path", MODELS, ids=lambda p: str(p.relative_to(SHARED_MODELS)))
def test_op_table_fallback_agrees_with_the_c_runtime_on_every_c_profile(path):
    refusal = _refuses(path, "c")
    for name in PROFILES:
        profile = load_profile(name)
        if profile.runtime != "c":
            continue
        r = check_model(path, profile, c_runtime=False, stack=False)
        assert r.checked_by == "c-table" and r.ram_source.startswith("estimate")
        found = _runtime_problems(r)
        assert bool(found) == (refusal is not None), (name, refusal, found)
        if refusal is not None:  # the same nodes the C runtime names
            real = check_model(path, profile, stack=False)
            assert {(p["subgraph"], p["node"]) for p in found} == \
                {(p["subgraph"], p["node"]) for p in _runtime_problems(real)}, name
    # the embedded default: no op problem but the C kernels' own (no profile dtype policy guessed there)
    r = check_model(path, "qemu-mps2-an386", c_runtime=False, stack=False)
    ops = [p for p in r.errors if p["kind"] in ("op", "model")]
    assert bool(ops) == (refusal is not None), (refusal, ops)
