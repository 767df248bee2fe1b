"""CPU kernels: one ``prepare_<op>(node) -> eval`` function per op (see ``node.py``), listed in ``op_table``.

May import: the standard library, numpy, edge_sdk.errors, edge_sdk.model, and each other.
"""
