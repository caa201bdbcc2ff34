// Storage types of mixed precision, in NVIDIA Caffe's prototxt words: each
// layer's forward_type (else the net's default_forward_type) is the type of
// its tops; backward_type must agree (a blob's gradient is stored as its
// data). A layer stays in float32 where its kernels have no 16-bit form, so
// that any net runs in any type, and layers gain 16-bit kernels one by one;
// where a layer reads a blob of another type, a Convert layer is put before
// it (one per blob and type, shared by its readers). The net's
// default_forward_math / default_backward_math are copied into every layer
// that sets no math of its own (core/layer_math.hpp resolves a layer's
// math from its LayerParameter alone).
#include <glog/logging.h>

#include <cctype>
#include <map>
#include <memory>
#include <sstream>
#include <utility>

#include "core/layer_math.hpp"
#include "dlcaffe/error.hpp"
#include "dlcaffe/layer_registry.hpp"
#include "passes/net_pass.hpp"

namespace dlcaffe {

namespace {

bool IsStorageType(caffe::Type type) {
  StorageType storage;
  return StorageTypeOf(type, &storage);
}

// The storage type of a type that is one (IsStorageType), float32 else.
StorageType ToStorage(caffe::Type type) {
  StorageType storage = StorageType::kFloat32;
  StorageTypeOf(type, &storage);
  return storage;
}

// Whether the description asks for anything but float anywhere.
bool AsksForTypes(const caffe::NetParameter& net) {
  bool asks = net.default_forward_type() != caffe::FLOAT ||
              net.default_backward_type() != caffe::FLOAT ||
              (net.has_default_forward_math() && net.default_forward_math() != caffe::FLOAT) ||
              (net.has_default_backward_math() && net.default_backward_math() != caffe::FLOAT);
  for (const auto& layer : net.layer())
    asks = asks || (layer.has_forward_type() && layer.forward_type() != caffe::FLOAT) ||
           (layer.has_backward_type() && layer.backward_type() != caffe::FLOAT) ||
           (layer.has_forward_math() && layer.forward_math() != caffe::FLOAT) ||
           (layer.has_backward_math() && layer.backward_math() != caffe::FLOAT);
  return asks;
}

// A storage field (forward_type, backward_type and the net's defaults).
void CheckStorage(const std::string& where, const char* field, caffe::Type type) {
  DLC_REQUIRE(IsStorageType(type),
              where << ": " << field << " " << caffe::Type_Name(type)
                    << " is not supported (FLOAT, FLOAT16 or BFLOAT16)"
                    << (type == caffe::TF32
                            ? ": TF32 is a math type only (float32 storage multiplied with "
                              "10-bit mantissas): set forward_math / backward_math instead"
                            : ""));
}

// The math fields: FLOAT16, BFLOAT16 and TF32 let the matrix products
// (Convolution, InnerProduct, MatMul) multiply on the device's matrix
// engine; other kernels compute in float, at least as accurate as asked.
void CheckMath(const std::string& where, const char* field, caffe::Type math, bool* told) {
  DLC_REQUIRE(IsMathType(math), where << ": " << field << " " << caffe::Type_Name(math)
                                      << " is not supported (" << kMathTypes << ")");
  if (math != caffe::FLOAT && !*told) {
    LOG(INFO) << where << ": " << field << " " << caffe::Type_Name(math)
              << ": convolutions, inner products and matmuls multiply in it on the device's "
                 "matrix engine where it has one; elsewhere, and in other layers, in FLOAT";
    *told = true;
  }
}

}  // namespace

void AssignStorageTypes(const caffe::NetParameter& param, Context& ctx,
                        caffe::NetParameter* typed) {
  *typed = param;
  if (!AsksForTypes(param)) return;
  const std::string net_name = "net '" + param.name() + "'";
  bool told = false;
  CheckStorage(net_name, "default_forward_type", param.default_forward_type());
  CheckStorage(net_name, "default_backward_type", param.default_backward_type());
  if (param.has_default_forward_math())
    CheckMath(net_name, "default_forward_math", param.default_forward_math(), &told);
  if (param.has_default_backward_math())
    CheckMath(net_name, "default_backward_math", param.default_backward_math(), &told);

  typed->clear_layer();
  std::map<std::string, caffe::Type> blob_type;  // unknown: FLOAT
  std::map<std::string, std::string> current;    // a blob renamed by a conversion in place
  std::map<std::pair<std::string, caffe::Type>, std::string> converted;
  const auto type_of = [&](const std::string& blob) {
    auto found = blob_type.find(blob);
    return found == blob_type.end() ? caffe::FLOAT : found->second;
  };
  // A blob in `type`: a Convert layer's top, made once per blob and type.
  const auto convert = [&](const std::string& blob, caffe::Type type) {
    auto made = converted.find({blob, type});
    if (made != converted.end()) return made->second;
    std::string name = blob + "_as_" + caffe::Type_Name(type);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    caffe::LayerParameter* layer = typed->add_layer();
    layer->set_name(name);
    layer->set_type("Convert");
    layer->add_bottom(blob);
    layer->add_top(name);
    layer->set_forward_type(type);
    layer->set_backward_type(type);
    blob_type[name] = type;
    converted[{blob, type}] = name;
    return name;
  };

  // Whether every layer after layer `producer` that reads `blob` reads it
  // in float32 (a float32-only layer, or one that keeps that bottom in
  // float: labels, token ids). A layer that works on it in place does not
  // count as such a reader.
  const auto read_in_float = [&](const std::string& blob, int producer) {
    for (int l = producer + 1; l < param.layer_size(); ++l) {
      const caffe::LayerParameter& reader = param.layer(l);
      for (int b = 0; b < reader.bottom_size(); ++b) {
        if (reader.bottom(b) != blob) continue;
        if (b < reader.top_size() && reader.top(b) == blob) return false;
        if (reader.type() == "Python") continue;  // float32 on the host
        const caffe::Type asked =
            reader.has_forward_type() ? reader.forward_type() : param.default_forward_type();
        const std::unique_ptr<Layer> probe = LayerRegistry::Create(reader, ctx);
        const bool narrow = asked != caffe::FLOAT && IsStorageType(asked) &&
                            probe->SupportsStorage(ToStorage(asked));
        if (narrow && !probe->KeepsBottomInFloat(b)) return false;
      }
    }
    return true;
  };

  std::vector<std::string> kept_in_float;
  int in_16_bit = 0;
  caffe::Type asked_most = caffe::FLOAT;
  for (int index = 0; index < param.layer_size(); ++index) {
    caffe::LayerParameter layer = param.layer(index);
    const std::string where = "layer '" + layer.name() + "' (" + layer.type() + ")";
    const caffe::Type asked =
        layer.has_forward_type() ? layer.forward_type() : param.default_forward_type();
    CheckStorage(where, "forward_type", asked);
    if (layer.has_backward_type()) CheckStorage(where, "backward_type", layer.backward_type());
    const caffe::Type backward =
        layer.has_backward_type()        ? layer.backward_type()
        : param.has_default_backward_type() ? param.default_backward_type()
                                            : asked;
    DLC_REQUIRE(backward == asked,
                where << ": backward_type " << caffe::Type_Name(backward) << " differs from "
                      << "forward_type " << caffe::Type_Name(asked)
                      << ": a blob's gradient is stored in the type of its data (set both alike)");
    if (layer.has_forward_math()) CheckMath(where, "forward_math", layer.forward_math(), &told);
    if (layer.has_backward_math())
      CheckMath(where, "backward_math", layer.backward_math(), &told);
    if (!layer.has_forward_math() && param.has_default_forward_math())
      layer.set_forward_math(param.default_forward_math());
    if (!layer.has_backward_math() && param.has_default_backward_math())
      layer.set_backward_math(param.default_backward_math());
    if (asked != caffe::FLOAT) asked_most = asked;
    // A layer made only to ask; not a Python layer, whose construction runs
    // the user's code (it reads and writes float32 on the host anyway).
    const std::unique_ptr<Layer> probe =
        layer.type() == "Python" ? nullptr : LayerRegistry::Create(layer, ctx);
    const auto supports = [&](caffe::Type type) {
      return type == caffe::FLOAT || (probe && probe->SupportsStorage(ToStorage(type)));
    };

    // In place (top t named as bottom t): the top follows the bottom's
    // current name.
    const caffe::LayerParameter original = layer;
    const auto in_place = [&](int t) {
      return t < original.bottom_size() && t < original.top_size() &&
             original.top(t) == original.bottom(t);
    };
    for (int b = 0; b < layer.bottom_size(); ++b) {
      auto renamed = current.find(layer.bottom(b));
      if (renamed == current.end()) continue;
      layer.set_bottom(b, renamed->second);
      if (in_place(b)) layer.set_top(b, renamed->second);
    }
    // In place, a layer keeps its blob's type if it can (a ReLU after a
    // float32 convolution stays float32: no conversion for nothing).
    caffe::Type type = supports(asked) ? asked : caffe::FLOAT;
    for (int t = 0; t < layer.top_size(); ++t)
      if (in_place(t)) {
        const caffe::Type blob = type_of(layer.bottom(t));
        type = supports(blob) ? blob : caffe::FLOAT;
        break;
      }
    // An Input whose every top is read only in float32 stays float32: labels
    // and token ids keep their integers (float16 holds them exactly up to
    // 2048, bfloat16 up to 256), with no Convert layer. (An Input of data
    // and labels together narrows both: give it forward_type FLOAT.)
    bool host_values_in_float = type != caffe::FLOAT && layer.type() == "Input";
    for (int t = 0; host_values_in_float && t < layer.top_size(); ++t)
      host_values_in_float = read_in_float(original.top(t), index);
    if (host_values_in_float) type = caffe::FLOAT;
    else if (type != asked) kept_in_float.push_back(where);
    if (type != caffe::FLOAT) ++in_16_bit;

    // What the layer reads and writes in float32 whatever its type.
    const auto float_bottom = [&](int b) {
      return type != caffe::FLOAT && probe && probe->KeepsBottomInFloat(b);
    };
    const auto float_top = [&](int t) {
      return type != caffe::FLOAT && probe && probe->KeepsTopInFloat(t);
    };
    for (int b = 0; b < layer.bottom_size(); ++b) {
      const std::string bottom = layer.bottom(b);
      const caffe::Type wanted = float_bottom(b) ? caffe::FLOAT : type;
      if (type_of(bottom) == wanted) continue;
      const std::string as_type = convert(bottom, wanted);
      layer.set_bottom(b, as_type);
      // In place on a converted blob: the result carries the new name, which
      // later readers of the old name follow.
      if (in_place(b)) {
        layer.set_top(b, as_type);
        current[original.bottom(b)] = as_type;
      }
    }
    layer.set_forward_type(type);
    layer.set_backward_type(type);
    for (int t = 0; t < layer.top_size(); ++t)
      blob_type[layer.top(t)] = float_top(t) ? caffe::FLOAT : type;
    *typed->add_layer() = layer;
  }
  std::ostringstream kept;
  for (size_t i = 0; i < kept_in_float.size(); ++i) kept << (i ? ", " : "") << kept_in_float[i];
  LOG(INFO) << net_name << ": " << in_16_bit << " of " << param.layer_size() << " layers store "
            << caffe::Type_Name(asked_most) << ", " << converted.size() << " Convert layers added"
            << (kept_in_float.empty() ? std::string()
                                      : "; kept in FLOAT (no 16-bit kernels yet): " + kept.str());
}

}  // namespace dlcaffe
