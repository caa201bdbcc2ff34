// Small ONNX models written by tests: graph inputs, initializers and nodes
// added one call each, then saved under a temp dir.
#pragma once
#include <string>
#include <vector>

#include "onnx/onnx_pb.h"

namespace dlcaffe {
namespace test {

class OnnxModelBuilder {
 public:
  explicit OnnxModelBuilder(int opset = 13);
  // A float graph input; a negative dimension is written as the symbolic "N".
  void Input(const std::string& name, const std::vector<int64_t>& shape);
  void Output(const std::string& name);
  void Initializer(const std::string& name, const std::vector<int64_t>& shape,
                   const std::vector<float>& values);
  void Int64Initializer(const std::string& name, const std::vector<int64_t>& values);
  onnx::NodeProto* Node(const std::string& op, const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs, const std::string& name = "");
  static void SetInt(onnx::NodeProto* node, const std::string& name, int64_t value);
  static void SetInts(onnx::NodeProto* node, const std::string& name, const std::vector<int64_t>& values);
  static void SetFloat(onnx::NodeProto* node, const std::string& name, float value);

  onnx::ModelProto& model() { return model_; }
  // Writes the model to dir/name and returns the path.
  std::string Save(const std::string& dir, const std::string& name = "model.onnx") const;

 private:
  onnx::ModelProto model_;
};

// A float tensor file (TensorProto) as ONNX's backend tests store them.
void WriteTensorFile(const std::string& path, const std::string& name,
                     const std::vector<int64_t>& shape, const std::vector<float>& values);

}  // namespace test
}  // namespace dlcaffe
