"""`edge deploy --inventory` through Ansible on a loopback fleet (one real sshd per host, tests/sshd.py): waves,
a host that fails its health check stops the rollout there and is rolled back, the hosts after it keep their
old model, a rollout run again resumes (the hosts already done are skipped), `edge fleet status` reads each host;
without Ansible the flags exit 2 naming the install line."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from edge_sdk.cli import main
from tests.sshd import lab, ssh_cache  # noqa: F401  (fixtures)
from tests.test_deploy import device_base, edge, sha, tiny_model

pytest.importorskip("ansible_runner", reason="Ansible is not installed (pip install 'edge-sdk[fleet]')")

# A device whose runtime computes wrong results: its PYTHONPATH's sitecustomize adds 1 to every tensor read
# from the interpreter (a broken kernel, as far as the health check can tell: the model loads and runs).
BROKEN_RUNTIME = '''
import importlib.abc, importlib.util, sys
class _Hook(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != "edge_sdk.runtime.interpreter":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        run = spec.loader.exec_module
        def exec_module(module):
            run(module)
            get = module.Interpreter.get_tensor
            module.Interpreter.get_tensor = lambda self, i, *a, **k: get(self, i, *a, **k) + 1
        spec.loader.exec_module = exec_module
        return spec
sys.meta_path.insert(0, _Hook())
'''


def seed(d, model: Path) -> None:
    """The host runs ``model`` already (as a deploy leaves it: models/NAME and the manifest naming it)."""
    base = device_base(d)
    (base / "models").mkdir(parents=True)
    final = base / "models" / "model.tflite"
    final.write_bytes(model.read_bytes())
    (base / "manifest.json").write_text(json.dumps({"model": {"name": "model.tflite", "path": str(final),
                                                              "sha256": sha(model), "size": model.stat().st_size}}))


@pytest.mark.slow
def test_rollout_stops_at_an_unhealthy_host_rolls_it_back_and_resumes(lab, tmp_path):
    (tmp_path / "old").mkdir()
    (tmp_path / "new").mkdir()
    old = tiny_model(tmp_path / "old" / "model.tflite")
    new = tiny_model(tmp_path / "new" / "model.tflite", scale=2.0)
    first = lab.start("kitchen")
    broken = tmp_path / "broken-runtime"
    broken.mkdir()
    (broken / "sitecustomize.py").write_text(BROKEN_RUNTIME)
    good_path = lab.device_pythonpath
    bad = lab.add("garage")
    lab.device_pythonpath = f"{broken}:{good_path}"
    lab.launch(bad)
    lab.device_pythonpath = good_path
    rest = [lab.start("attic"), lab.start("shed")]
    fleet = [first, bad, *rest]
    for d in fleet:
        seed(d, old)
    inventory = tmp_path / "hosts.ini"
    inventory.write_text("[pis]\n" + "".join(
        f"{d.alias} ansible_host=127.0.0.1 ansible_port={d.port} ansible_user=root\n" for d in fleet)
        + "\n[pis:vars]\nedge_site=lab\n")
    args = ["deploy", new, "--inventory", inventory, "--wave", "1", "--wave", "1", "--wave", "100%",
            "--max-fail", "0%", "--no-c-backend", "--json"]
    r = edge(*args, lab=lab, timeout=600)
    assert r.returncode == 4, r.stderr
    assert isinstance(json.loads(r.stdout), list), r.stdout  # one report per host, not an error object
    reports = {x["host"]: x for x in json.loads(r.stdout)}
    assert reports["kitchen"]["status"] == "ok" and reports["kitchen"]["health"]["ok"]
    assert reports["garage"]["status"] == "rolled back"
    assert reports["garage"]["health"]["ok"] is False and "differ" in reports["garage"]["health"]["error"]
    assert reports["garage"]["rolled_back_to"] == sha(old)
    assert reports["attic"]["status"] == reports["shed"]["status"] == "not reached"
    assert sha(device_base(first) / "models" / "model.tflite") == sha(new)
    for d in (bad, *rest):  # the failed host rolled back, the later waves never touched
        assert sha(device_base(d) / "models" / "model.tflite") == sha(old)
        assert json.loads((device_base(d) / "manifest.json").read_text())["model"]["sha256"] == sha(old)

    # the broken host repaired (its runtime fixed): the rollout run again resumes; kitchen is already current
    bad.stop()
    lab.launch(bad)
    r = edge(*args, lab=lab, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    reports = {x["host"]: x for x in json.loads(r.stdout)}
    assert reports["kitchen"]["status"] == "current"
    assert all(reports[d.alias]["status"] == "ok" for d in (bad, *rest))
    for d in fleet:
        assert sha(device_base(d) / "models" / "model.tflite") == sha(new)

    r = edge("fleet", "status", "--inventory", inventory, "--json", lab=lab)
    assert r.returncode == 0, r.stderr
    status = {x["host"]: x for x in json.loads(r.stdout)}
    assert set(status) == {d.alias for d in fleet}
    for x in status.values():
        assert x["model_sha256"] == sha(new) and x["model_ok"] and x["runtime_ok"] and x["runtime"]
        assert x["health"]["ok"] and x["health"]["sha256"] == sha(new)


def test_waves_and_threshold_are_checked():
    from edge_sdk.errors import UsageError
    from edge_sdk.tools.fleet import parse_percent, parse_waves

    assert parse_waves(["1", "10%", "100%"]) == [1, "10%", "100%"]
    assert parse_waves([]) == ["100%"]
    for bad in ("0", "x", "150%", "-1"):
        with pytest.raises(UsageError):
            parse_waves([bad])
    assert parse_percent("5%") == 5
    with pytest.raises(UsageError):
        parse_percent("101%")


def test_without_ansible_the_flags_exit_2_with_the_install_line(tmp_path, capsys, monkeypatch):
    model = tiny_model(tmp_path / "model.tflite")
    inventory = tmp_path / "hosts.ini"
    inventory.write_text("[pis]\npi1 ansible_host=127.0.0.1\n")
    monkeypatch.setitem(sys.modules, "ansible_runner", None)  # `import ansible_runner` raises ImportError
    assert main(["deploy", str(model), "--inventory", str(inventory)]) == 2
    err = capsys.readouterr().err
    assert "pip install 'edge-sdk[fleet]'" in err and "Traceback" not in err
    assert main(["fleet", "status", "--inventory", str(inventory)]) == 2
    assert "pip install 'edge-sdk[fleet]'" in capsys.readouterr().err
