"""Fleet rollouts through Ansible: `edge deploy MODEL --inventory hosts.ini [--wave 1 --wave 10% --wave 100%]
[--max-fail 5%]` and `edge fleet status --inventory hosts.ini`.

Ansible drives the rollout: ansible-runner runs the playbook shipped in ``edge_sdk/device/fleet/rollout.yml`` (read
it, copy it, extend it) over the standard INI inventory (groups, ``ansible_host`` / ``ansible_port`` /
``ansible_user``). The waves are the play's ``serial``, the failure threshold its ``max_fail_percentage``. Each
host's steps are this module's ``step`` commands, run on the controller by the playbook (``delegate_to:
localhost``), so the transfer is `edge deploy`'s own (edge_sdk.tools.deploy: staging, sha256 check, atomic switch
of model, manifest and runtime venv):

1. ``snapshot``: what the host runs now (manifest, model file, venv link, last health check) is copied to
   ``REMOTE_DIR/rollback/`` on the host, tagged with the model being rolled out. A host that already runs this
   model and passed its health check on it is skipped, and a rollback point already taken for this model is kept
   (so a rollout run again after an interruption, even a controller killed mid-wave, resumes where it stopped and
   still rolls back to the model the host ran before it).
2. ``deploy``: ``edge_sdk.tools.deploy.deploy`` to that host.
3. ``health``: on the host, its runtime loads the model and runs one inference on a fixed input; the outputs must
   equal the ones this machine's interpreter gives (``HEALTH_ATOL``). The result is kept on the host in
   ``REMOTE_DIR/health.json`` (read by `edge fleet status`).
4. A failure (deploy or health) is recorded and the wave judged once all its hosts ran: when its failures pass
   ``max_fail_percentage``, ``rollback`` restores the snapshot on every host of the wave that changed (the wave
   is undone as one), they all fail and Ansible stops the rollout: later waves keep what they run. Below the
   threshold only the failed hosts roll back, and the rollout goes on.

Each step writes the host's report to a results folder (JSON per host), which ``rollout`` returns as a list.
Ansible is an optional extra (``pip install 'edge-sdk[fleet]'``): without it a UsageError names the line (exit 2).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from edge_sdk import resources
from edge_sdk.errors import DeviceError, EdgeError, UsageError
from edge_sdk.tools import deploy as deploy_mod

INSTALL = "pip install 'edge-sdk[fleet]'"
PLAYBOOK_DIR = Path(__file__).resolve().parent.parent / "device" / "fleet"
PLAYBOOK = PLAYBOOK_DIR / "rollout.yml"
HEALTH_ATOL = 1e-5  # float outputs: the host's and the device's runtimes are the same code; int outputs: exact
HEALTH_SEED = 0  # the health check's input: uniform [-1, 1) (float) or the integer range, seeded
ROLLOUT_TIMEOUT_PER_HOST = 600  # seconds: a deploy installs a venv (~25 s on a quiet Pi, minutes on a slow one)


def require_ansible():
    try:
        import ansible_runner
    except ImportError:
        raise UsageError(f"--inventory needs Ansible, which is not installed: {INSTALL}") from None
    return ansible_runner


def parse_waves(waves) -> list:
    """``--wave`` values as Ansible's ``serial`` list: counts (``1``) and percentages (``10%``)."""
    out = []
    for w in waves or ():
        text = str(w).strip()
        number = text[:-1] if text.endswith("%") else text
        if not number.isdigit() or int(number) < 1 or (text.endswith("%") and int(number) > 100):
            raise UsageError(f"--wave {w}: give a host count (1, 5) or a percentage (10%, 100%)")
        out.append(text if text.endswith("%") else int(text))
    return out or ["100%"]


def parse_percent(text: str, flag: str = "--max-fail") -> int:
    number = str(text).strip().rstrip("%")
    if not number.isdigit() or int(number) > 100:
        raise UsageError(f"{flag} {text}: give a percentage from 0% to 100%")
    return int(number)


# --------------------------------------------------------------------------------------- the host's steps
# argv: base, target sha256 -- the rollback point: manifest.json, the model it names, the venv link and the last
# health check copied to base/rollback/ (temp + rename), tagged with the model being rolled out. A rollback point
# already taken for this same target is kept while the host runs its model or the target's (a rollout interrupted
# after the switch and run again): re-taking it then would record the half-done rollout as "previous".
_SNAPSHOT = r"""
import json, os, shutil, sys
base, target = os.path.abspath(os.path.expanduser(sys.argv[1])), sys.argv[2]
snap, tmp = os.path.join(base, "rollback"), os.path.join(base, ".rollback.part")
def load(path):
    try:
        with open(path) as f: return json.load(f)
    except (OSError, ValueError): return None
manifest, health = load(os.path.join(base, "manifest.json")), load(os.path.join(base, "health.json"))
running = ((manifest or {}).get("model") or {}).get("sha256")
kept = load(os.path.join(snap, "state.json"))
if kept and kept.get("target") == target and running in (kept.get("sha256"), target):
    print(json.dumps({"running": running, "previous": kept.get("sha256"), "health": health, "kept": True}))
    sys.exit(0)
shutil.rmtree(tmp, ignore_errors=True); os.makedirs(tmp)
state = {"manifest": None, "model": None, "venv": None, "health": health is not None, "target": target,
         "sha256": running}
if manifest is not None:
    shutil.copy2(os.path.join(base, "manifest.json"), os.path.join(tmp, "manifest.json")); state["manifest"] = manifest
    try:
        model = manifest["model"]["path"]
        shutil.copy2(model, os.path.join(tmp, "model")); state["model"] = model
    except (OSError, KeyError, TypeError): pass
if health is not None:
    shutil.copy2(os.path.join(base, "health.json"), os.path.join(tmp, "health.json"))
link = os.path.join(base, "venv")
if os.path.islink(link): state["venv"] = os.readlink(link)
with open(os.path.join(tmp, "state.json"), "w") as f: json.dump(state, f)
shutil.rmtree(snap, ignore_errors=True); os.replace(tmp, snap)
print(json.dumps({"running": running, "previous": running, "health": health, "kept": False}))
"""

# argv: base -- put back what the snapshot holds (each file via a temporary name and a rename: atomic); the
# manifest last, so a host killed mid-rollback names a model whose bytes are already back.
_ROLLBACK = r"""
import json, os, shutil, sys
base = os.path.abspath(os.path.expanduser(sys.argv[1]))
snap = os.path.join(base, "rollback")
with open(os.path.join(snap, "state.json")) as f: state = json.load(f)
def put(src, dst):
    tmp = os.path.join(os.path.dirname(dst), "." + os.path.basename(dst) + ".part")
    shutil.copy2(src, tmp); os.replace(tmp, dst)
if state["model"]:
    put(os.path.join(snap, "model"), state["model"])
if state["venv"]:
    tmp = os.path.join(base, ".venv.link.part")
    if os.path.lexists(tmp): os.unlink(tmp)
    os.symlink(state["venv"], tmp); os.replace(tmp, os.path.join(base, "venv"))
for name, there in (("health.json", state.get("health")), ("manifest.json", state["manifest"] is not None)):
    if there:
        put(os.path.join(snap, name), os.path.join(base, name))
    elif os.path.exists(os.path.join(base, name)):
        os.unlink(os.path.join(base, name))
print(json.dumps(state["manifest"]))
"""

# argv: base, model path, input json -- run the model once in the host's runtime; record health.json.
_HEALTH = r"""
import json, os, sys, time
import numpy as np
base, model, spec = os.path.abspath(os.path.expanduser(sys.argv[1])), sys.argv[2], json.loads(sys.argv[3])
from edge_sdk import Interpreter
it = Interpreter(model_path=model); it.allocate_tensors()
for d, x in zip(it.get_input_details(), spec["inputs"]):
    it.set_tensor(d["index"], np.asarray(x, dtype=d["dtype"]).reshape(d["shape"]))
it.invoke()
print(json.dumps([it.get_tensor(d["index"]).astype(np.float64).reshape(-1).tolist() for d in it.get_output_details()]))
"""

_RECORD = r"""
import json, os, sys
base = os.path.abspath(os.path.expanduser(sys.argv[1]))
tmp = os.path.join(base, ".health.json.part")
with open(tmp, "w") as f: f.write(sys.argv[2]); f.flush(); os.fsync(f.fileno())
os.replace(tmp, os.path.join(base, "health.json"))
"""


def health_inputs(model: Path) -> tuple[list, list]:
    """The health check's fixed inputs (seeded) and the outputs this machine's interpreter gives for them."""
    from edge_sdk import Interpreter

    it = Interpreter(model_path=str(model))
    it.allocate_tensors()
    rng = np.random.default_rng(HEALTH_SEED)
    inputs = []
    for d, required in zip(it.get_input_details(), it.required_input_values()):
        shape, dtype = tuple(int(s) for s in d["shape"]), np.dtype(d["dtype"])
        if required is not None:  # an output shape an op reads: the one value it may hold
            x = required.astype(dtype).reshape(shape)
        elif np.issubdtype(dtype, np.integer):
            info = np.iinfo(dtype)
            x = rng.integers(max(info.min, -128), min(info.max, 127) + 1, shape).astype(dtype)
        else:
            x = rng.uniform(-1, 1, shape).astype(dtype)
        it.set_tensor(d["index"], x)
        inputs.append(x.reshape(-1).tolist())
    it.invoke()
    outputs = [it.get_tensor(d["index"]).astype(np.float64).reshape(-1).tolist() for d in it.get_output_details()]
    return inputs, outputs


def _ansible_env() -> dict:
    return {"PYTHONPATH": os.pathsep.join(filter(None, [str(resources.CHECKOUT_ROOT), os.environ.get("PYTHONPATH")])),
            "ANSIBLE_LOCALHOST_WARNING": "False", "ANSIBLE_INVENTORY_UNPARSED_WARNING": "False",
            "ANSIBLE_HOST_KEY_CHECKING": "True", "ANSIBLE_NOCOLOR": "1",
            # ansible-playbook sits beside this Python (a venv not activated is not on PATH)
            "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])}


def inventory_hosts(inventory) -> list:
    """The inventory's hosts as Ansible reads it (groups, ``[group:vars]``, ranges), in the file's order, each an
    SSHTarget named by its inventory name (``ansible_host`` / ``ansible_port`` / ``ansible_user`` applied)."""
    from edge_sdk.device.ssh import SSHTarget

    runner = require_ansible()
    # ansible-runner looks ansible-inventory up on this process's PATH: the venv's bin/ put first for the call
    saved = os.environ.get("PATH")
    os.environ["PATH"] = _ansible_env()["PATH"]
    try:
        out, err = runner.get_inventory(action="list", inventories=[str(inventory)], response_format="json",
                                        quiet=True)
    finally:
        if saved is None:
            os.environ.pop("PATH", None)
        else:
            os.environ["PATH"] = saved
    if not isinstance(out, dict):
        raise DeviceError(f"{inventory}: Ansible cannot read it: {str(err or out).strip().splitlines()[-1:]}")
    targets = [target_from_hostvars(name, hv) for name, hv in (out.get("_meta", {}).get("hostvars") or {}).items()]
    if not targets:
        raise DeviceError(f"{inventory}: no hosts in the inventory")
    return targets


def target_from_hostvars(name: str, hostvars: dict):
    """The SSHTarget of inventory host ``name`` from its Ansible hostvars (``ansible_host`` / ``ansible_port`` /
    ``ansible_user``; empty or missing ones: the inventory name, ssh's defaults)."""
    from edge_sdk.device.ssh import SSHTarget

    host = str(hostvars.get("ansible_host") or name)
    user, port = hostvars.get("ansible_user") or None, hostvars.get("ansible_port") or None
    spec = f"{user + '@' if user else ''}{'[' + host + ']' if ':' in host and port else host}"
    return SSHTarget.parse(spec + (f":{port}" if port else ""), name=name)


def _target(inventory: Path, name: str):
    """Host ``name`` looked up in the inventory (ansible-inventory: about a second of CPU): only for a playbook that
    does not pass the host's address (a user's copy of an older rollout.yml)."""
    for t in inventory_hosts(inventory):
        if t.name == name:
            return t
    raise DeviceError(f"{inventory}: no host {name!r}")


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _write_report(results: Path, name: str, report: dict) -> None:
    path = results / f"{name}.json"
    old = json.loads(path.read_text()) if path.exists() else {}
    tmp = path.with_suffix(".part")
    tmp.write_text(json.dumps({**old, **report, "host": name}))
    os.replace(tmp, path)


def step(argv: list[str]) -> int:
    """One host's step, run by the playbook on the controller (see the module docstring)."""
    p = argparse.ArgumentParser(prog="python -m edge_sdk.tools.fleet")
    p.add_argument("step", choices=["snapshot", "deploy", "health", "rollback"])
    p.add_argument("--inventory", required=True)
    p.add_argument("--host", required=True, help="the host's inventory name")
    # the host's address from the playbook's hostvars: no ansible-inventory run per step (issue 28)
    p.add_argument("--ssh-host", help="the host's ansible_host (default: looked up in --inventory)")
    p.add_argument("--ssh-port", default="", help="its ansible_port ('' : ssh's default)")
    p.add_argument("--ssh-user", default="", help="its ansible_user ('' : ssh's default)")
    p.add_argument("--model", required=True)
    p.add_argument("--results", required=True)
    p.add_argument("--remote-dir", default=deploy_mod.REMOTE_DIR)
    p.add_argument("--wheel")
    p.add_argument("--build-c", action="store_true")
    a = p.parse_args(argv)
    results, model = Path(a.results), Path(a.model)
    try:
        target = (target_from_hostvars(a.host, {"ansible_host": a.ssh_host, "ansible_port": a.ssh_port,
                                                "ansible_user": a.ssh_user})
                  if a.ssh_host else _target(Path(a.inventory), a.host))
        conn = deploy_mod.connection_for(target)
        if a.step == "deploy":
            r = deploy_mod.deploy(model, target, remote_dir=a.remote_dir, wheel=a.wheel, build_c=a.build_c)
            _write_report(results, a.host, {"deployed": r.ok, "runtime": (r.manifest or {}).get("edge_sdk_version"),
                                            "seconds": round(r.seconds, 3)})
            return 0
        with conn.session():
            if a.step == "snapshot":
                out = conn.run_python(_SNAPSHOT, a.remote_dir, _sha256(model),
                                      what="keeping what the host runs (rollback)").stdout
                before = json.loads(out)
                sha, health = before["running"], before["health"] or {}
                current = sha == _sha256(model) and health.get("ok") and health.get("sha256") == sha
                _write_report(results, a.host, {"before": before["previous"],
                                                "status": "current" if current else "pending",
                                                "model": _sha256(model), "resumed": bool(before.get("kept"))})
                print("current" if current else "pending")
                return 0
            if a.step == "rollback":
                out = conn.run_python(_ROLLBACK, a.remote_dir, what="rolling back").stdout
                restored = ((json.loads(out) or {}).get("model") or {}).get("sha256")
                _write_report(results, a.host, {"status": "rolled back", "rolled_back_to": restored})
                return 0
            # health
            inputs, expected = health_inputs(model)
            base, manifest = deploy_mod.parse_json(conn.run_python(
                "import json,os,sys; b = os.path.abspath(os.path.expanduser(sys.argv[1])); "
                "print(json.dumps([b, json.load(open(b + '/manifest.json'))]))",
                a.remote_dir, what="reading the manifest").stdout, "manifest", a.host)
            python = f"{base}/venv/bin/python"  # the runtime the deploy switched to
            out = conn.run_python(_HEALTH, a.remote_dir, manifest["model"]["path"], json.dumps({"inputs": inputs}),
                                  python=python, what="health check", check=False)
            got = None
            if out.returncode == 0:
                try:
                    got = json.loads(out.stdout)
                except ValueError:
                    got = None
            ok = got is not None and len(got) == len(expected) and all(
                len(g) == len(e) and np.allclose(g, e, rtol=0, atol=HEALTH_ATOL) for g, e in zip(got, expected))
            why = None if ok else (f"the model's outputs on the host differ from this machine's"
                                   if got is not None else f"the model did not run: {out.stderr.strip()[-200:]}")
            record = {"ok": ok, "sha256": manifest["model"]["sha256"], "time": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                                                             time.gmtime()),
                      "error": why}
            conn.run_python(_RECORD, a.remote_dir, json.dumps(record), what="recording the health check")
            _write_report(results, a.host, {"health": record, "status": "ok" if ok else "unhealthy"})
            if not ok:
                sys.stderr.write(f"{a.host}: health check failed: {why}\n")
                return 1
            return 0
    except (EdgeError, OSError) as exc:
        _write_report(results, a.host, {"status": "failed", "error": str(exc).splitlines()[0]})
        sys.stderr.write(f"{a.host}: {a.step}: {exc}\n")
        return 1


# --------------------------------------------------------------------------------------- the rollout
def rollout(model, inventory, *, waves=(), max_fail: str = "0%", remote_dir: str = deploy_mod.REMOTE_DIR,
            wheel=None, build_c: bool = False, playbook: str | Path | None = None, input_shapes=None) -> list[dict]:
    """Roll ``model`` out to the inventory's hosts in waves with ansible-runner; one report per host, in inventory
    order (``status``: "ok", "current" (already ran it), "rolled back", "unhealthy", "failed", "not reached").
    ``input_shapes`` (`--input-shape`): the model is shaped here once (edge_sdk.model.input_shapes, as `edge
    deploy --host` does) and that copy rolled out; a -1 beyond the batch axis without one is a UsageError before
    any host is read."""
    runner = require_ansible()
    model, inventory = Path(model).resolve(), Path(inventory).resolve()
    if not model.is_file():
        raise FileNotFoundError(2, "No such file or directory", str(model))
    from edge_sdk.model.input_shapes import shaped_model_path

    model = Path(shaped_model_path(model, input_shapes)).resolve()
    if not inventory.is_file():
        raise FileNotFoundError(2, "No such file or directory", str(inventory))
    hosts = inventory_hosts(inventory)
    serial, threshold = parse_waves(waves), parse_percent(max_fail)
    if wheel is None:  # built once here, not once per host
        wheel = deploy_mod.build_wheel()
    with tempfile.TemporaryDirectory(prefix="edge-fleet-") as work:
        results = Path(work) / "results"
        results.mkdir()
        (Path(work) / "runner").mkdir()
        extravars = {"edge_model": str(model), "edge_inventory": str(inventory), "edge_results": str(results),
                     "edge_remote_dir": remote_dir, "edge_wheel": str(wheel), "edge_build_c": bool(build_c),
                     "edge_python": sys.executable, "edge_waves": serial, "edge_max_fail": threshold}
        env = _ansible_env()
        r = runner.run(private_data_dir=str(Path(work) / "runner"), playbook=str(playbook or PLAYBOOK),
                       inventory=str(inventory), extravars=extravars, envvars=env, quiet=True,
                       timeout=ROLLOUT_TIMEOUT_PER_HOST * len(hosts))
        reports = []
        for t in hosts:
            path = results / f"{t.name or t.label}.json"
            rep = json.loads(path.read_text()) if path.exists() else {"host": t.name or t.label}
            rep.setdefault("status", "not reached")
            reports.append(rep)
        if r.status not in ("successful", "failed") or not any(results.iterdir()):
            # Ansible stopped before any host's step ran (a playbook / inventory error): its own words
            text = r.stdout.read() if r.stdout else ""
            cause = next((line for line in reversed(text.splitlines()) if "ERROR" in line or "fatal" in line),
                         text.strip().splitlines()[-1] if text.strip() else "")
            raise DeviceError(f"{inventory}: the rollout's Ansible run ended {r.status} (rc {r.rc}): {cause[:400]}")
        return reports


def fleet_status(inventory, *, remote_dir: str = deploy_mod.REMOTE_DIR) -> list[dict]:
    """What each host runs: model sha256, runtime version, whether they check out, the last health check."""
    reports = []
    for t in inventory_hosts(Path(inventory)):
        rep = {"host": t.name or t.label}
        try:
            m = deploy_mod.status(t, remote_dir=remote_dir)
            conn = deploy_mod.connection_for(t)
            with conn.session():
                out = conn.run_python("import json,os,sys\ntry: print(json.dumps(json.load(open(os.path.expanduser("
                                      "sys.argv[1])+'/health.json'))))\nexcept (OSError, ValueError): print('null')",
                                      remote_dir,
                                      what="reading the last health check").stdout
            rep.update({"model_sha256": ((m or {}).get("model") or {}).get("sha256"),
                        "model": ((m or {}).get("model") or {}).get("name"),
                        "runtime": (m or {}).get("edge_sdk_version"), "model_ok": (m or {}).get("model_ok"),
                        "runtime_ok": (m or {}).get("runtime_ok"), "health": json.loads(out)})
        except (EdgeError, OSError, ValueError) as exc:
            rep["error"] = str(exc).splitlines()[0]
        reports.append(rep)
    return reports


def format_reports(reports: list[dict]) -> str:
    lines = []
    for r in reports:
        sha = (r.get("model_sha256") or r.get("model") or "")[:12]
        health = r.get("health") or {}
        state = r.get("status") or ("error" if r.get("error") else "")
        lines.append(f"{r['host']:<16} {state:<12} model {sha or '-':<12} runtime {r.get('runtime') or '-':<10} "
                     f"health {'ok' if health.get('ok') else ('FAILED' if health else '-')}"
                     + (f"  {r['error']}" if r.get("error") else ""))
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(step(sys.argv[1:]))
