// OnnxGraphInputNames: what a runtime feeds, by position, to an ONNX model.
#include <fstream>
#include <set>
#include <sstream>

#include "dlcaffe/error.hpp"
#include "dlcaffe/onnx_import.hpp"
#include "onnx/onnx_pb.h"

namespace dlcaffe {

std::vector<std::string> OnnxGraphInputNames(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  DLC_REQUIRE(in, path << ": cannot open the ONNX model");
  std::ostringstream bytes;
  bytes << in.rdbuf();
  onnx::ModelProto model;
  DLC_REQUIRE(model.ParseFromString(bytes.str()) && model.has_graph(),
              path << ": not a valid ONNX model (it does not parse as an ONNX ModelProto)");
  std::set<std::string> initializers;
  for (const auto& init : model.graph().initializer()) initializers.insert(init.name());
  std::vector<std::string> names;
  for (const auto& input : model.graph().input())
    if (!initializers.count(input.name())) names.push_back(input.name());
  return names;
}

}  // namespace dlcaffe
