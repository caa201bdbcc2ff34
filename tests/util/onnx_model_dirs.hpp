// Test directories in ONNX's backend layout: the folders under a directory
// that hold a model.onnx.
#pragma once
#include <string>
#include <vector>

namespace dlcaffe {
namespace test {

// Their names (not paths), sorted.
std::vector<std::string> OnnxModelDirs(const std::string& dir);

}  // namespace test
}  // namespace dlcaffe
