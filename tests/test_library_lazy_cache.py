"""Library mode: a lazily computed attribute is computed on the first call, whatever the caller chose.

``if not (refresh or any(v is None for v in [self._a, self._b])): return`` followed by the computation, or
``if self._x is None: self._x = compute()``: the branch that fills the cache runs on the first call, so a
CUDA-only op inside it makes the function ``unsupported`` (INVALID: ``conditional`` on ``refresh``), while a
real option (``use_kernel``, an attribute the function never assigns) keeps ``conditional`` (VALID).
"""

from __future__ import annotations

from helpers import library_report

LIB = {
    "__init__.py": "",
    "mesh.py": """
        import torch
        import triton


        @triton.jit
        def _areas_kernel(x_ptr):
            pass


        def face_areas(verts):
            _areas_kernel[(1,)](verts)
            return verts, verts


        class Mesh:
            def __init__(self, verts):
                self.verts = verts
                self._areas = None
                self._normals = None
                self._edges = None

            def areas(self):
                self._compute(refresh=False)
                return self._areas

            def _compute(self, refresh: bool = False):
                if not (refresh or any(v is None for v in [self._areas, self._normals])):
                    return
                self._areas, self._normals = face_areas(self.verts)

            def edges(self):
                if self._edges is None:
                    self._edges = face_areas(self.verts)[0]
                return self._edges

            def fast(self, use_kernel: bool = False):
                if not (use_kernel or self.verts is None):
                    return self.verts * 2
                return face_areas(self.verts)
    """,
}


def test_cache_fill_runs_on_the_first_call(tmp_path, kb):
    rep = library_report(tmp_path, kb, LIB, "lazylib")
    by = {f["qualname"]: f for f in rep["thirdparty"]["functions"]}
    assert by["lazylib.mesh.face_areas"]["status"] == "unsupported"
    for q in ("lazylib.mesh.Mesh._compute", "lazylib.mesh.Mesh.areas", "lazylib.mesh.Mesh.edges"):
        assert by[q]["status"] == "unsupported", (q, by[q])


def test_a_real_option_beside_an_attribute_test_stays_conditional(tmp_path, kb):
    rep = library_report(tmp_path, kb, LIB, "lazylib")
    by = {f["qualname"]: f for f in rep["thirdparty"]["functions"]}
    assert by["lazylib.mesh.Mesh.fast"]["status"] == "conditional"
    assert any("use_kernel" in c for c in by["lazylib.mesh.Mesh.fast"]["conditions"])
