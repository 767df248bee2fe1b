"""CPU kernels: one ``prepare_<op>(node) -> eval`` function per op (see ``node.py``), listed in ``op_table``."""
