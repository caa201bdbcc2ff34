// caffe.Solver and caffe.get_solver: the C++ solvers driven from Python, step
// by step, with pycaffe's callbacks; Ctrl-C (KeyboardInterrupt) stops
// training after the current iteration, as SIGINT does for `dlcaffe train`.
#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include "bindings.hpp"
#include "dlcaffe/io.hpp"
#include "dlcaffe/solver.hpp"
#include "host_mirror.hpp"
#include "runtime.hpp"

namespace dlcaffe_python {

using dlcaffe::Solver;

namespace {

// A solver from a solver prototxt path or a caffe_pb2.SolverParameter;
// `type` (e.g. "SGD" for caffe.SGDSolver) overrides the one it names.
std::shared_ptr<Solver> MakeSolver(const py::object& source, const std::string& type) {
  caffe::SolverParameter param;
  if (py::hasattr(source, "SerializeToString")) {
    if (!param.ParseFromString(source.attr("SerializeToString")().cast<std::string>()))
      throw py::value_error("caffe solver: not a SolverParameter");
  } else {
    param = dlcaffe::ReadSolverParams(PathArgument(source, "caffe solver: solver_file"));
  }
  if (!type.empty()) param.set_type(type);
  dlcaffe::Context& context = CurrentContext();
  std::shared_ptr<Solver> solver;
  {
    DeviceWork work;
    solver = dlcaffe::SolverRegistry::Create(param, context);
  }
  // Between iterations: show the log so far, and stop on Ctrl-C (the
  // KeyboardInterrupt stays pending and is raised when the step returns).
  solver->set_action_request([] {
    if (PyErr_Occurred()) return dlcaffe::SolverAction::kStop;
    FlushLog();
    return PyErr_CheckSignals() != 0 ? dlcaffe::SolverAction::kStop : dlcaffe::SolverAction::kNone;
  });
  FlushLog();
  return solver;
}

// Python code called from inside device work sees current arrays, and what
// it writes reaches the device before the work goes on.
std::function<void()> CallFromDeviceWork(py::object function) {
  if (function.is_none()) return {};
  return [function] {
    HostMirrors::Instance().Invalidate();
    FlushLog();
    function();
    HostMirrors::Instance().Flush();
  };
}

// Runs solver work; raises a KeyboardInterrupt that stopped it.
template <typename Work>
void RunTraining(Work work) {
  {
    DeviceWork device_work;
    work();
  }
  if (PyErr_Occurred()) {
    py::error_already_set interrupted;  // takes the pending error first
    FlushLog();
    throw interrupted;
  }
  FlushLog();
}

std::shared_ptr<dlcaffe::Net> NetOf(const std::shared_ptr<Solver>& solver, dlcaffe::Net* net) {
  return std::shared_ptr<dlcaffe::Net>(solver, net);  // keeps the solver alive
}

}  // namespace

void BindSolver(py::module_& m) {
  m.def("_solver_type", [](const py::object& path) {
    return dlcaffe::ReadSolverParams(PathArgument(path, "get_solver: solver_file")).type();
  });
  py::class_<Solver, std::shared_ptr<Solver>>(m, "Solver", R"doc(
A solver from a solver prototxt (or a caffe_pb2.SolverParameter) on the
current device. caffe.SGDSolver(path) and the others force their type;
caffe.get_solver(path) takes the type the file names.)doc")
      .def(py::init(&MakeSolver), py::arg("solver_file"), py::arg("type") = "")
      .def_property_readonly("type", [](const Solver& s) { return std::string(s.type()); })
      .def_property_readonly("net", [](const std::shared_ptr<Solver>& s) { return NetOf(s, &s->net()); },
                             "The training net.")
      .def_property_readonly("test_nets", [](const std::shared_ptr<Solver>& s) {
        std::vector<std::shared_ptr<dlcaffe::Net>> nets;
        for (const auto& net : s->test_nets()) nets.push_back(NetOf(s, net.get()));
        return nets;
      }, "The test nets (sharing the training net's weights).")
      .def_property_readonly("iter", &Solver::iter, "Iterations done.")
      .def_property_readonly("smoothed_loss", &Solver::smoothed_loss)
      .def_property_readonly("_param_bytes", [](const Solver& s) {
        return py::bytes(s.param().SerializeAsString());
      })
      .def_property_readonly("lr", [](Solver& s) { return s.GetLearningRate(); },
                             "The learning rate of the current iteration.")
      .def("step", [](Solver& s, int iters) { RunTraining([&] { s.Step(iters); }); },
           py::arg("iters"), "Runs `iters` training iterations (tests and snapshots as the solver says).")
      .def("solve", [](Solver& s, py::object resume_file) {
        const std::string resume =
            resume_file.is_none() ? "" : PathArgument(resume_file, "solve: resume_file");
        RunTraining([&] { s.Solve(resume); });
      }, py::arg("resume_file") = py::none(), "Trains to max_iter (resuming from a .solverstate if given).")
      .def("restore", [](Solver& s, const py::object& state) {
        RunTraining([&] { s.Restore(PathArgument(state, "restore: state_file")); });
      }, py::arg("state_file"), "Restores iteration, weights and history from a .solverstate.")
      .def("snapshot", [](Solver& s) { RunTraining([&] { s.Snapshot(); }); },
           "Writes <prefix>_iter_N.caffemodel and .solverstate now.")
      .def("test_all", [](Solver& s) { RunTraining([&] { s.TestAll(); }); },
           "Runs every test net over its test_iter batches, logging the scores.")
      .def("apply_update", [](Solver& s) { RunTraining([&] { s.ApplyUpdate(); }); },
           "Updates the weights from the gradients in their diffs (no forward/backward).")
      .def("share_weights", [](Solver& s, dlcaffe::Net& net) {
        DeviceWork work;
        net.ShareTrainedLayersWith(s.net());
      }, py::arg("net"), "Makes `net` use the training net's weights.")
      .def("add_callback", [](Solver& s, py::object on_start, py::object on_gradients_ready) {
        if (on_gradients_ready.is_none() && !on_start.is_none() &&
            py::hasattr(on_start, "on_gradients_ready")) {
          py::object callback = on_start;
          on_start = py::getattr(callback, "on_start", py::none());
          on_gradients_ready = callback.attr("on_gradients_ready");
        }
        s.add_callback({CallFromDeviceWork(on_start), CallFromDeviceWork(on_gradients_ready)});
      }, py::arg("on_start"), py::arg("on_gradients_ready") = py::none(),
         "add_callback(on_start, on_gradients_ready): functions run in every iteration before "
         "the forward passes and before the update (or one object with those two methods).");
}

}  // namespace dlcaffe_python
