#include "import/torch_export_signature.hpp"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/unknown_field_set.h>

#include <regex>
#include <sstream>

namespace dlcaffe {
namespace onnx_import {
namespace {

constexpr int kGraphMetadataPropsField = 16;
const char kSignatureKey[] = "pkg.torch.export.ExportedProgram.graph_signature";

}  // namespace

std::map<std::string, std::string> GraphMetadata(const onnx::GraphProto& graph) {
  std::map<std::string, std::string> metadata;
  const google::protobuf::Reflection* reflection = graph.GetReflection();
  const google::protobuf::FieldDescriptor* field =
      graph.GetDescriptor()->FindFieldByNumber(kGraphMetadataPropsField);
  if (field) {  // an onnx that knows the field
    for (int i = 0; i < reflection->FieldSize(graph, field); ++i) {
      onnx::StringStringEntryProto entry;
      entry.CopyFrom(reflection->GetRepeatedMessage(graph, field, i));
      metadata[entry.key()] = entry.value();
    }
    return metadata;
  }
  const google::protobuf::UnknownFieldSet& unknown = reflection->GetUnknownFields(graph);
  for (int i = 0; i < unknown.field_count(); ++i) {
    const google::protobuf::UnknownField& f = unknown.field(i);
    if (f.number() != kGraphMetadataPropsField ||
        f.type() != google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED)
      continue;
    onnx::StringStringEntryProto entry;
    if (entry.ParseFromString(f.length_delimited())) metadata[entry.key()] = entry.value();
  }
  return metadata;
}

TorchExportSignature ReadTorchExportSignature(const onnx::GraphProto& graph) {
  TorchExportSignature signature;
  const std::map<std::string, std::string> metadata = GraphMetadata(graph);
  const auto it = metadata.find(kSignatureKey);
  if (it == metadata.end()) return signature;
  signature.present = true;
  static const std::regex line(R"(^\s*\S+: (\w+) target='([^']*)')");
  std::istringstream lines(it->second);
  std::string text;
  std::smatch m;
  while (std::getline(lines, text)) {
    if (!std::regex_search(text, m, line)) continue;
    if (m[1] == "PARAMETER")
      signature.parameters.insert(m[2]);
    else if (m[1] == "BUFFER" || m[1] == "CONSTANT_TENSOR")
      signature.non_trained.insert(m[2]);
  }
  return signature;
}

}  // namespace onnx_import
}  // namespace dlcaffe
