// Binary .solverstate bytes -> Solver::Restore for a small net under each
// solver type that keeps history (SGD momentum, Adam's two moments, AdaDelta,
// RMSProp, ...), then one training step with the restored state.
#include <memory>
#include <string>
#include <vector>

#include "dlcaffe/io.hpp"
#include "dlcaffe/solver.hpp"
#include "fuzz_support.hpp"
#include "fuzz_nets.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dlcaffe;
  Context& ctx = fuzz::FuzzContext();
  if (size == 0) return 0;
  // The first byte picks the solver, the rest is the state.
  const auto& types = fuzz::HistorySolverTypes();
  const std::string type = types[data[0] % types.size()];
  const std::string path = fuzz::WriteScratchFile("state.solverstate", data + 1, size - 1);
  fuzz::ExpectCleanRejection([&] {
    auto solver = SolverRegistry::Create(fuzz::SmallSolver(type), ctx);
    solver->Restore(path);
    solver->Step(1);
  });
  return 0;
}
