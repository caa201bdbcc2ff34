#include "import/onnx_tensor.hpp"

#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>

#include "dlcaffe/error.hpp"
#include "dlcaffe/io.hpp"
#include "dlcaffe/onnx_import.hpp"

namespace dlcaffe {
namespace onnx_import {

int64_t ShapeCount(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    DLC_REQUIRE(!__builtin_mul_overflow(n, d, &n),
                "shape " << ShapeString(shape) << " has more elements than an int64 counts");
  return n;
}

int64_t HostValueCount(const std::vector<int64_t>& shape) {
  for (int64_t d : shape)
    DLC_REQUIRE(d >= 0, "shape " << ShapeString(shape) << " has a negative dimension");
  const int64_t n = ShapeCount(shape);
  DLC_REQUIRE(n <= kMaxHostValues, "a tensor of shape " << ShapeString(shape) << " (" << n
                                                        << " values) is larger than the importer "
                                                           "computes on the host ("
                                                        << kMaxHostValues << " values)");
  return n;
}

int64_t HostTensor::count() const { return ShapeCount(shape); }

std::string ElementTypeName(int64_t type) {
  static const char* const newer[] = {"FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2",
                                      "FLOAT8E5M2FNUZ", "UINT4", "INT4", "FLOAT4E2M1"};
  if (type >= 17 && type < 17 + 7) return newer[type - 17];
  if (!onnx::TensorProto_DataType_IsValid(static_cast<int>(type))) return "unknown";
  return onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(type));
}

bool IsIntegerType(int type) {
  return type != onnx::TensorProto::FLOAT && type != onnx::TensorProto::DOUBLE &&
         type != onnx::TensorProto::FLOAT16 && type != onnx::TensorProto::BFLOAT16 &&
         type != onnx::TensorProto::UNDEFINED;
}

bool HostTensor::is_integer() const { return IsIntegerType(type); }

std::vector<int64_t> HostTensor::ints() const {
  std::vector<int64_t> out(values.size());
  // INT64_MAX and INT64_MIN ("to the end" in Slice, exporters write them
  // everywhere) round to +-2^63 as doubles: an integer tensor's values at
  // the ends saturate back to them. Anything else outside int64 (or NaN)
  // has no integer.
  constexpr double kTwoTo63 = 9223372036854775808.0;
  for (size_t i = 0; i < values.size(); ++i) {
    const double v = values[i];
    if (is_integer() && v >= kTwoTo63) {
      out[i] = INT64_MAX;
    } else if (is_integer() && v <= -kTwoTo63) {
      out[i] = INT64_MIN;
    } else {
      DLC_REQUIRE(v > -kTwoTo63 && v < kTwoTo63,
                  "integer value " << v << " is outside the int64 range");
      out[i] = static_cast<int64_t>(v);
    }
  }
  return out;
}

std::string ShapeString(const std::vector<int64_t>& shape) {
  std::ostringstream s;
  s << "[";
  for (size_t i = 0; i < shape.size(); ++i) s << (i ? " " : "") << shape[i];
  s << "]";
  return s.str();
}

namespace {

// IEEE half / bfloat16 to float.
float HalfToFloat(uint16_t h) {
  const uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: renormalize
      int e = -1;
      uint32_t m = mant;
      do {
        ++e;
        m <<= 1;
      } while (!(m & 0x400));
      bits = sign | ((127 - 15 - e) << 23) | ((m & 0x3ff) << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

size_t ElementBytes(int type) {
  switch (type) {
    case onnx::TensorProto::FLOAT: case onnx::TensorProto::INT32:
    case onnx::TensorProto::UINT32: return 4;
    case onnx::TensorProto::DOUBLE: case onnx::TensorProto::INT64:
    case onnx::TensorProto::UINT64: return 8;
    case onnx::TensorProto::FLOAT16: case onnx::TensorProto::BFLOAT16:
    case onnx::TensorProto::INT16: case onnx::TensorProto::UINT16: return 2;
    case onnx::TensorProto::INT8: case onnx::TensorProto::UINT8:
    case onnx::TensorProto::BOOL: return 1;
    default: return 0;
  }
}

double DecodeRaw(const char* p, int type) {
  switch (type) {
    case onnx::TensorProto::FLOAT: { float v; std::memcpy(&v, p, 4); return v; }
    case onnx::TensorProto::DOUBLE: { double v; std::memcpy(&v, p, 8); return v; }
    case onnx::TensorProto::INT64: { int64_t v; std::memcpy(&v, p, 8); return double(v); }
    case onnx::TensorProto::UINT64: { uint64_t v; std::memcpy(&v, p, 8); return double(v); }
    case onnx::TensorProto::INT32: { int32_t v; std::memcpy(&v, p, 4); return v; }
    case onnx::TensorProto::UINT32: { uint32_t v; std::memcpy(&v, p, 4); return v; }
    case onnx::TensorProto::INT16: { int16_t v; std::memcpy(&v, p, 2); return v; }
    case onnx::TensorProto::UINT16: { uint16_t v; std::memcpy(&v, p, 2); return v; }
    case onnx::TensorProto::INT8: return static_cast<int8_t>(*p);
    case onnx::TensorProto::UINT8: case onnx::TensorProto::BOOL:
      return static_cast<uint8_t>(*p);
    case onnx::TensorProto::FLOAT16: { uint16_t v; std::memcpy(&v, p, 2); return HalfToFloat(v); }
    case onnx::TensorProto::BFLOAT16: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      uint32_t bits = uint32_t(v) << 16;
      float f;
      std::memcpy(&f, &bits, 4);
      return f;
    }
  }
  return 0;
}

// The bytes of a tensor stored outside the model (data_location EXTERNAL).
std::string ReadExternalData(const onnx::TensorProto& proto, const std::string& model_dir,
                             const std::string& where) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& entry : proto.external_data()) {
    if (entry.key() == "location") location = entry.value();
    if (entry.key() == "offset") offset = std::stoll(entry.value());
    if (entry.key() == "length") length = std::stoll(entry.value());
  }
  DLC_REQUIRE(!location.empty(), where << " is stored as external data without a location");
  const std::string path = model_dir.empty() ? location : model_dir + "/" + location;
  std::ifstream in(path, std::ios::binary);
  DLC_REQUIRE(in, where << " is stored as external data in '" << path
                        << "', which cannot be opened");
  in.seekg(0, std::ios::end);
  const int64_t size = in.tellg();
  if (length < 0) length = size - offset;
  DLC_REQUIRE(offset >= 0 && offset + length <= size,
              where << ": external data file '" << path << "' holds " << size
                    << " bytes, the tensor needs bytes " << offset << " to " << offset + length);
  std::string bytes(length, '\0');
  in.seekg(offset);
  in.read(&bytes[0], length);
  return bytes;
}

}  // namespace

HostTensor FromTensorProto(const onnx::TensorProto& proto, const std::string& model_dir,
                           const std::string& where) {
  HostTensor t;
  t.type = proto.data_type();
  for (int64_t d : proto.dims()) {
    DLC_REQUIRE(d >= 0, where << " has a negative dimension " << d);
    t.shape.push_back(d);
  }
  const int64_t n = t.count();
  const size_t bytes = ElementBytes(t.type);
  DLC_REQUIRE(bytes > 0, where << " has element type "
                               << onnx::TensorProto_DataType_Name(
                                      static_cast<onnx::TensorProto_DataType>(t.type))
                               << ", which the importer does not read");
  const bool external = proto.data_location() == onnx::TensorProto::EXTERNAL;
  if (external || proto.has_raw_data()) {
    const std::string raw =
        external ? ReadExternalData(proto, model_dir, where) : proto.raw_data();
    // Divided, not multiplied: n * bytes wraps for a shape of 2^61 elements.
    DLC_REQUIRE(raw.size() % bytes == 0 && raw.size() / bytes == static_cast<size_t>(n), where << " holds " << raw.size() << " bytes of data, its shape "
                                               << ShapeString(t.shape) << " needs " << n << " values of " << bytes << " bytes");
    t.values.reserve(n);
    for (int64_t i = 0; i < n; ++i) t.values.push_back(DecodeRaw(raw.data() + i * bytes, t.type));
    return t;
  }
  auto take = [&](const auto& field) {
    for (const auto& v : field) t.values.push_back(static_cast<double>(v));
  };
  switch (t.type) {
    case onnx::TensorProto::FLOAT: take(proto.float_data()); break;
    case onnx::TensorProto::DOUBLE: take(proto.double_data()); break;
    case onnx::TensorProto::INT64: take(proto.int64_data()); break;
    case onnx::TensorProto::UINT32: case onnx::TensorProto::UINT64: take(proto.uint64_data()); break;
    case onnx::TensorProto::FLOAT16:
      for (int32_t v : proto.int32_data()) t.values.push_back(HalfToFloat(static_cast<uint16_t>(v)));
      break;
    case onnx::TensorProto::BFLOAT16:
      for (int32_t v : proto.int32_data()) {
        uint32_t bits = uint32_t(v & 0xffff) << 16;
        float f;
        std::memcpy(&f, &bits, 4);
        t.values.push_back(f);
      }
      break;
    default: take(proto.int32_data()); break;  // the int32_data types
  }
  DLC_REQUIRE(static_cast<int64_t>(t.values.size()) == n,
              where << " holds " << t.values.size() << " values, its shape "
                    << ShapeString(t.shape) << " needs " << n);
  return t;
}

HostTensor ReinterpretBits(HostTensor tensor, int type) {
  if (tensor.type != onnx::TensorProto::UINT16 ||
      (type != onnx::TensorProto::BFLOAT16 && type != onnx::TensorProto::FLOAT16))
    return tensor;
  for (double& v : tensor.values) {
    const uint16_t bits = static_cast<uint16_t>(v);
    char raw[8] = {};
    std::memcpy(raw, &bits, 2);
    v = DecodeRaw(raw, type);
  }
  tensor.type = type;
  return tensor;
}

onnx::TensorProto ReadTensorProtoFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  DLC_REQUIRE(in, path << ": cannot open the tensor file");
  std::ostringstream bytes;
  bytes << in.rdbuf();
  onnx::TensorProto proto;
  DLC_REQUIRE(proto.ParseFromString(bytes.str()), path << ": not a valid ONNX TensorProto "
                                                          "(truncated or corrupt)");
  return proto;
}

}  // namespace onnx_import

std::vector<float> ReadOnnxTensorFile(const std::string& path, std::vector<int>* shape,
                                      std::string* name) {
  const onnx::TensorProto proto = onnx_import::ReadTensorProtoFile(path);
  const std::string dir = path.substr(0, path.find_last_of('/') == std::string::npos
                                             ? 0 : path.find_last_of('/'));
  const onnx_import::HostTensor t = onnx_import::FromTensorProto(proto, dir, path);
  if (shape) shape->assign(t.shape.begin(), t.shape.end());
  if (name) *name = proto.name();
  return std::vector<float>(t.values.begin(), t.values.end());
}

void WriteOnnxTensorFile(const std::string& path, const std::string& name,
                         const std::vector<int>& shape, const std::vector<float>& values) {
  onnx::TensorProto proto;
  proto.set_name(name);
  proto.set_data_type(onnx::TensorProto::FLOAT);
  for (int d : shape) proto.add_dims(d);
  proto.set_raw_data(std::string(reinterpret_cast<const char*>(values.data()),
                                 values.size() * sizeof(float)));
  std::string bytes;
  proto.SerializeToString(&bytes);
  WriteFileAtomically(path, bytes);
}

}  // namespace dlcaffe
