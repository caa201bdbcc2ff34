// _dlcaffe: the compiled half of the dlcaffe Python package (dlcaffe/__init__.py
// and pycaffe.py add pycaffe's Python-side API on top).
#include "bindings.hpp"
#include "runtime.hpp"

PYBIND11_MODULE(_dlcaffe, m) {
  m.doc() = "dlcaffe's C++ core: devices, Blob, Net, Solver and Python layers.";
  dlcaffe_python::BindRuntime(m);
  dlcaffe_python::BindBlob(m);
  dlcaffe_python::BindNet(m);
  dlcaffe_python::BindSolver(m);
  dlcaffe_python::BindGeneration(m);
  dlcaffe_python::RegisterPythonLayer();
}
