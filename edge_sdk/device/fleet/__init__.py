"""The Ansible playbook of fleet rollouts (``rollout.yml``: data, run by edge_sdk.tools.fleet through ansible-runner;
shipped so users can read, copy and extend it)."""
