#include "import/torch_export_signature.hpp"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/unknown_field_set.h>

#include <regex>
#include <sstream>

namespace dlcaffe {
namespace onnx_import {
namespace {

constexpr int kGraphMetadataPropsField = 16;
constexpr int kNodeMetadataPropsField = 9;
const char kSignatureKey[] = "pkg.torch.export.ExportedProgram.graph_signature";

}  // namespace

namespace {

// metadata_props (StringStringEntryProto) of `message` at `field_number`,
// whether or not the onnx library we build against knows the field.
std::map<std::string, std::string> MetadataProps(const google::protobuf::Message& message,
                                                 int field_number) {
  std::map<std::string, std::string> metadata;
  const google::protobuf::Reflection* reflection = message.GetReflection();
  const google::protobuf::FieldDescriptor* field =
      message.GetDescriptor()->FindFieldByNumber(field_number);
  if (field) {  // an onnx that knows the field
    for (int i = 0; i < reflection->FieldSize(message, field); ++i) {
      onnx::StringStringEntryProto entry;
      entry.CopyFrom(reflection->GetRepeatedMessage(message, field, i));
      metadata[entry.key()] = entry.value();
    }
    return metadata;
  }
  const google::protobuf::UnknownFieldSet& unknown = reflection->GetUnknownFields(message);
  for (int i = 0; i < unknown.field_count(); ++i) {
    const google::protobuf::UnknownField& f = unknown.field(i);
    if (f.number() != field_number || f.type() != google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED)
      continue;
    onnx::StringStringEntryProto entry;
    if (entry.ParseFromString(f.length_delimited())) metadata[entry.key()] = entry.value();
  }
  return metadata;
}

}  // namespace

std::map<std::string, std::string> GraphMetadata(const onnx::GraphProto& graph) {
  return MetadataProps(graph, kGraphMetadataPropsField);
}

std::map<std::string, std::string> NodeMetadata(const onnx::NodeProto& node) {
  return MetadataProps(node, kNodeMetadataPropsField);
}

TorchExportSignature ReadTorchExportSignature(const onnx::GraphProto& graph) {
  TorchExportSignature signature;
  const std::map<std::string, std::string> metadata = GraphMetadata(graph);
  const auto it = metadata.find(kSignatureKey);
  if (it == metadata.end()) return signature;
  signature.present = true;
  static const std::regex line(R"(^\s*(\S+): (\w+) target='([^']*)')");
  std::istringstream lines(it->second);
  std::string text;
  std::smatch m;
  while (std::getline(lines, text)) {
    if (!std::regex_search(text, m, line)) continue;
    if (m[2] == "PARAMETER") {
      signature.parameters.insert(m[3]);
      signature.parameter_of_placeholder[m[1]] = m[3];
    } else if (m[2] == "BUFFER" || m[2] == "CONSTANT_TENSOR") {
      signature.non_trained.insert(m[3]);
    }
  }
  return signature;
}

}  // namespace onnx_import
}  // namespace dlcaffe
