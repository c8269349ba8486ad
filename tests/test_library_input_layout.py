"""Library mode: a branch on the layout of a caller's data is a condition, not the default path.

``if x.is_sparse:`` / ``isinstance(adj, SparseTensor)`` / ``is_sparse_tensor(edge_index)`` /
``x.layout == torch.sparse_csr`` select a path for one kind of input; the dense path after the early exit
(or the ``else``) runs for every other input. An unsupported sparse API inside such a branch makes the function
``conditional`` (INVALID: ``unsupported``), while the same API on the function's own path stays
``unsupported`` (VALID).
"""

from __future__ import annotations

from helpers import library_report

LIB = {
    "__init__.py": """
        import torch


        class SparseMatrix:
            pass


        def is_sparse_tensor(x):
            return x.layout != torch.strided


        def to_csr(index, value):
            return torch.sparse_csr_tensor(index[0], index[1], value)


        def norm(edge_index, weight=None):
            if isinstance(edge_index, SparseMatrix):
                return edge_index
            if is_sparse_tensor(edge_index):
                value = weight * 2
                return to_csr(edge_index, value)
            return edge_index, weight


        def normalize(x):
            if not x.is_sparse:
                return torch.nn.functional.normalize(x, dim=1)
            return torch.sparse_csr_tensor(x.indices(), x.indices(), x.values())


        def by_layout(x):
            if x.layout == torch.sparse_csr:
                return to_csr(x, x)
            return x * 2


        def layer(edge_index, weight):
            return norm(edge_index, weight)


        def always(x):
            return to_csr(x, x)
    """,
}


def _statuses(tmp_path, kb):
    rep = library_report(tmp_path, kb, LIB, "layoutlib")
    return {f["qualname"]: f for f in rep["thirdparty"]["functions"]}


def test_sparse_input_branch_makes_the_function_conditional(tmp_path, kb):
    by = _statuses(tmp_path, kb)
    for q, cond in (("layoutlib.norm", "is_sparse_tensor(edge_index)"), ("layoutlib.normalize", "x.is_sparse"),
                    ("layoutlib.by_layout", "x.layout == torch.sparse_csr")):
        assert by[q]["status"] == "conditional", (q, by[q])
        assert any(cond in c for c in by[q]["conditions"]), (q, by[q]["conditions"])
    assert by["layoutlib.layer"]["status"] == "conditional"   # the caller of a conditional function


def test_sparse_api_on_the_default_path_stays_unsupported(tmp_path, kb):
    by = _statuses(tmp_path, kb)
    assert by["layoutlib.to_csr"]["status"] == "unsupported"
    assert by["layoutlib.always"]["status"] == "unsupported"
    assert by["layoutlib.always"]["reasons"] == ["torch.sparse_csr_tensor"]
