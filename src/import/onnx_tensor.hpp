// Host-side tensors of the ONNX importer: initializers, Constant nodes and
// the values that shape arithmetic folds at import time. Values are doubles,
// which hold every float32 and every int64 an exporter writes for a shape
// exactly.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "onnx/onnx_pb.h"

namespace dlcaffe {
namespace onnx_import {

struct HostTensor {
  std::vector<int64_t> shape;
  std::vector<double> values;
  // ONNX's element type (TensorProto::FLOAT, INT64, ...): folded integer
  // arithmetic truncates as integers do.
  int type = onnx::TensorProto::FLOAT;

  int64_t count() const;
  bool is_integer() const;
  // The values as ints (shapes, axes, indices).
  std::vector<int64_t> ints() const;
};

// An element type's name, the newer ones too (Debian's ONNX schema stops at
// BFLOAT16): "FLOAT8E4M3FN", "INT4", ...; "unknown" for none.
std::string ElementTypeName(int64_t type);

// Whether ONNX element type `type` holds integers (or booleans).
bool IsIntegerType(int type);

int64_t ShapeCount(const std::vector<int64_t>& shape);
// The count of a tensor the importer is about to fill on the host (a folded
// constant, an Expand's zeros), checked first: no negative dimension and at
// most kMaxHostValues values, so that a hostile shape is an error, not a
// huge allocation.
constexpr int64_t kMaxHostValues = int64_t(1) << 26;
int64_t HostValueCount(const std::vector<int64_t>& shape);

// Decodes a TensorProto (typed fields or raw_data; external data is read
// from `model_dir`). `where` names the tensor's place in messages.
HostTensor FromTensorProto(const onnx::TensorProto& proto, const std::string& model_dir,
                           const std::string& where);

// 16-bit values stored as UINT16 bit patterns (as ONNX's test data stores
// BFLOAT16 and FLOAT16 tensors) read as `type`; other tensors unchanged.
HostTensor ReinterpretBits(HostTensor tensor, int type);

// Reads a TensorProto file; throws naming the file when it is missing or
// does not parse.
onnx::TensorProto ReadTensorProtoFile(const std::string& path);

std::string ShapeString(const std::vector<int64_t>& shape);

}  // namespace onnx_import
}  // namespace dlcaffe
