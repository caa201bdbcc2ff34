#include "util/onnx_model_builder.hpp"

#include <fstream>

namespace dlcaffe {
namespace test {

OnnxModelBuilder::OnnxModelBuilder(int opset) {
  model_.set_ir_version(7);
  model_.set_producer_name("dlcaffe-test");
  model_.add_opset_import()->set_version(opset);
  model_.mutable_graph()->set_name("test_graph");
}

void OnnxModelBuilder::Input(const std::string& name, const std::vector<int64_t>& shape) {
  onnx::ValueInfoProto* in = model_.mutable_graph()->add_input();
  in->set_name(name);
  auto* tensor = in->mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t d : shape) {
    auto* dim = tensor->mutable_shape()->add_dim();
    if (d < 0) dim->set_dim_param("N"); else dim->set_dim_value(d);
  }
}

void OnnxModelBuilder::Output(const std::string& name) {
  model_.mutable_graph()->add_output()->set_name(name);
}

void OnnxModelBuilder::Initializer(const std::string& name, const std::vector<int64_t>& shape,
                                   const std::vector<float>& values) {
  onnx::TensorProto* t = model_.mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : shape) t->add_dims(d);
  for (float v : values) t->add_float_data(v);
}

void OnnxModelBuilder::Int64Initializer(const std::string& name, const std::vector<int64_t>& values) {
  onnx::TensorProto* t = model_.mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::INT64);
  t->add_dims(static_cast<int64_t>(values.size()));
  for (int64_t v : values) t->add_int64_data(v);
}

onnx::NodeProto* OnnxModelBuilder::Node(const std::string& op, const std::vector<std::string>& inputs,
                                        const std::vector<std::string>& outputs,
                                        const std::string& name) {
  onnx::NodeProto* n = model_.mutable_graph()->add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (const auto& i : inputs) n->add_input(i);
  for (const auto& o : outputs) n->add_output(o);
  return n;
}

void OnnxModelBuilder::SetInt(onnx::NodeProto* node, const std::string& name, int64_t value) {
  auto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(value);
}

void OnnxModelBuilder::SetInts(onnx::NodeProto* node, const std::string& name,
                               const std::vector<int64_t>& values) {
  auto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t v : values) a->add_ints(v);
}

void OnnxModelBuilder::SetFloat(onnx::NodeProto* node, const std::string& name, float value) {
  auto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(value);
}

std::string OnnxModelBuilder::Save(const std::string& dir, const std::string& name) const {
  const std::string path = dir + "/" + name;
  std::ofstream out(path, std::ios::binary);
  model_.SerializeToOstream(&out);
  return path;
}

void WriteTensorFile(const std::string& path, const std::string& name,
                     const std::vector<int64_t>& shape, const std::vector<float>& values) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : shape) t.add_dims(d);
  for (float v : values) t.add_float_data(v);
  std::ofstream out(path, std::ios::binary);
  t.SerializeToOstream(&out);
}

}  // namespace test
}  // namespace dlcaffe
