// The process-wide state pycaffe keeps: which device new nets and solvers
// run on (set_mode_gpu/cpu, set_device), the random seed, and the log lines
// on their way to Python's sys.stderr.
#pragma once
#include <pybind11/pybind11.h>

#include <string>

#include "dlcaffe/context.hpp"

namespace dlcaffe_python {

namespace py = pybind11;

// The context of the current device, made at first use. Contexts live until
// the process ends: blobs and arrays from a net on an earlier device stay
// usable after set_device.
dlcaffe::Context& CurrentContext();

// Sends the lines dlcaffe logged (from any thread) to sys.stderr; called
// after every call into the library and between solver iterations, so that
// progress shows in a notebook as it happens.
void FlushLog();

void BindRuntime(py::module_& m);

}  // namespace dlcaffe_python
