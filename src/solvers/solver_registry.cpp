#include <glog/logging.h>

#include <map>
#include <sstream>

#include "dlcaffe/error.hpp"
#include "dlcaffe/solver.hpp"

namespace dlcaffe {

static std::map<std::string, SolverRegistry::Creator>& Registry() {
  static std::map<std::string, SolverRegistry::Creator> registry;
  return registry;
}

void SolverRegistry::Add(const std::string& type, Creator creator) {
  CHECK(Registry().count(type) == 0) << "solver type " << type << " registered twice";
  Registry()[type] = std::move(creator);
}

std::unique_ptr<Solver> SolverRegistry::Create(const caffe::SolverParameter& param,
                                               Context& ctx) {
  auto it = Registry().find(param.type());
  if (it == Registry().end()) {
    std::ostringstream known;
    for (const auto& t : Types()) known << " " << t;
    DLC_FAIL("unknown solver type '" << param.type() << "'. Known types:" << known.str());
  }
  return it->second(param, ctx);
}

std::vector<std::string> SolverRegistry::Types() {
  std::vector<std::string> types;
  for (const auto& entry : Registry()) types.push_back(entry.first);
  return types;
}

}  // namespace dlcaffe
