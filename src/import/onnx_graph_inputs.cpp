// What a runtime feeds to an ONNX model: the graph inputs by position
// (OnnxGraphInputNames; OnnxGraphInputs with their dynamic axes), and input
// shapes as tools take them on the command line (ParseInputShapes).
#include <climits>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "dlcaffe/error.hpp"
#include "dlcaffe/onnx_import.hpp"
#include "onnx/onnx_pb.h"

namespace dlcaffe {

std::vector<OnnxGraphInput> OnnxGraphInputs(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  DLC_REQUIRE(in, path << ": cannot open the ONNX model");
  std::ostringstream bytes;
  bytes << in.rdbuf();
  onnx::ModelProto model;
  DLC_REQUIRE(model.ParseFromString(bytes.str()) && model.has_graph(),
              path << ": not a valid ONNX model (it does not parse as an ONNX ModelProto)");
  std::set<std::string> initializers;
  for (const auto& init : model.graph().initializer()) initializers.insert(init.name());
  std::vector<OnnxGraphInput> inputs;
  for (const auto& input : model.graph().input()) {
    if (initializers.count(input.name())) continue;
    OnnxGraphInput entry;
    entry.name = input.name();
    const auto& dims = input.type().tensor_type().shape().dim();
    for (int d = 0; d < dims.size(); ++d)
      if (!(dims[d].has_dim_value() && dims[d].dim_value() > 0)) entry.dynamic_axes.push_back(d);
    inputs.push_back(std::move(entry));
  }
  return inputs;
}

std::vector<std::string> OnnxGraphInputNames(const std::string& path) {
  std::vector<std::string> names;
  for (const OnnxGraphInput& input : OnnxGraphInputs(path)) names.push_back(input.name);
  return names;
}

std::map<std::string, std::vector<int>> ParseInputShapes(const std::string& text) {
  std::map<std::string, std::vector<int>> shapes;
  std::stringstream entries(text);
  std::string entry;
  while (std::getline(entries, entry, ';')) {
    if (entry.empty()) continue;
    const size_t colon = entry.rfind(':');
    DLC_REQUIRE(colon != std::string::npos && colon > 0,
                "--input_shape: expected name:d0,d1,..., got '" << entry << "'");
    std::vector<int> dims;
    std::stringstream ds(entry.substr(colon + 1));
    std::string d;
    while (std::getline(ds, d, ',')) {
      char* end = nullptr;
      const long v = std::strtol(d.c_str(), &end, 10);
      DLC_REQUIRE(!d.empty() && *end == '\0' && v > 0 && v <= INT_MAX,
                  "--input_shape: '" << d << "' is not a positive dimension in '" << entry << "'");
      dims.push_back(static_cast<int>(v));
    }
    DLC_REQUIRE(!dims.empty(), "--input_shape: no dimensions in '" << entry << "'");
    shapes[entry.substr(0, colon)] = dims;
  }
  return shapes;
}

}  // namespace dlcaffe
