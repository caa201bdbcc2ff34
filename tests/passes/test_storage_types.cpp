// Storage types from NVIDIA Caffe's prototxt fields (default_forward_type,
// forward_type, ...; passes/assign_storage_types.cpp): which layers store
// 16-bit values, where Convert layers go, and that a net in 16-bit storage
// computes what the float32 net computes, to within the roundings of its
// stored values.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "dlcaffe/error.hpp"
#include "dlcaffe/half_conversion.hpp"
#include "dlcaffe/net.hpp"
#include "../../src/passes/net_pass.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {
namespace {

// x -> InnerProduct -> LogSoftmax (float32 kernels only) -> Sigmoid -> TanH ->
// ReLU in place -> EuclideanLoss (16-bit inputs, a float32 loss) against t;
// a second loss reads the Sigmoid output. Two BinaryOps (float32 kernels
// only) read the ReLU's result, the Sigmoid output and t.
const char kNet[] = R"(
  name: 'mixed'
  layer { name: 'x' type: 'Input' top: 'x' top: 't'
          input_param { shape { dim: 5 dim: 13 } shape { dim: 5 dim: 7 } } }
  layer { name: 'ip' type: 'InnerProduct' bottom: 'x' top: 'ip'
          inner_product_param { num_output: 7 weight_filler { type: 'gaussian' std: 0.3 }
                                bias_filler { type: 'constant' value: 0.2 } } }
  layer { name: 'soft' type: 'LogSoftmax' bottom: 'ip' top: 'soft' }
  layer { name: 'sig' type: 'Sigmoid' bottom: 'soft' top: 'sig' }
  layer { name: 'tanh' type: 'TanH' bottom: 'sig' top: 'th' }
  layer { name: 'relu' type: 'ReLU' bottom: 'th' top: 'th' }
  layer { name: 'loss' type: 'EuclideanLoss' bottom: 'th' bottom: 't' top: 'loss' }
  layer { name: 'loss2' type: 'EuclideanLoss' bottom: 'sig' bottom: 't' top: 'loss2'
          loss_weight: 0.5 }
  layer { name: 'gap' type: 'BinaryOp' bottom: 'th' bottom: 't' top: 'gap'
          binary_op_param { operation: SUB } }
  layer { name: 'gap2' type: 'BinaryOp' bottom: 'sig' bottom: 't' top: 'gap2'
          binary_op_param { operation: SUB } }
)";

std::map<std::string, caffe::LayerParameter> ByName(const caffe::NetParameter& net) {
  std::map<std::string, caffe::LayerParameter> layers;
  for (const auto& layer : net.layer()) layers[layer.name()] = layer;
  return layers;
}

TEST(StorageTypes, ANetThatAsksForNothingIsUnchanged) {
  const caffe::NetParameter net = NetFromText(kNet);
  caffe::NetParameter typed;
  AssignStorageTypes(net, TestContext(), &typed);
  EXPECT_EQ(typed.SerializeAsString(), net.SerializeAsString());
  caffe::NetParameter explicit_float = net;
  explicit_float.set_default_forward_type(caffe::FLOAT);
  AssignStorageTypes(explicit_float, TestContext(), &typed);
  EXPECT_EQ(typed.SerializeAsString(), explicit_float.SerializeAsString());
}

TEST(StorageTypes, LayersWithoutSixteenBitKernelsStayFloatBehindConverts) {
  caffe::NetParameter net = NetFromText(std::string("default_forward_type: FLOAT16 ") + kNet);
  caffe::NetParameter typed;
  AssignStorageTypes(net, TestContext(), &typed);
  const auto layers = ByName(typed);
  EXPECT_EQ(layers.at("x").forward_type(), caffe::FLOAT16);
  EXPECT_EQ(layers.at("ip").forward_type(), caffe::FLOAT16);
  EXPECT_EQ(layers.at("ip").bottom(0), "x");
  EXPECT_EQ(layers.at("soft").forward_type(), caffe::FLOAT);
  EXPECT_EQ(layers.at("soft").bottom(0), "ip_as_float");
  EXPECT_EQ(layers.at("sig").forward_type(), caffe::FLOAT16);
  EXPECT_EQ(layers.at("sig").bottom(0), "soft_as_float16");
  EXPECT_EQ(layers.at("tanh").forward_type(), caffe::FLOAT16);
  EXPECT_EQ(layers.at("tanh").bottom(0), "sig");
  EXPECT_EQ(layers.at("relu").forward_type(), caffe::FLOAT16);
  EXPECT_EQ(layers.at("relu").top(0), "th");
  EXPECT_EQ(layers.at("loss").forward_type(), caffe::FLOAT16);
  EXPECT_EQ(layers.at("loss").bottom(0), "th");
  EXPECT_EQ(layers.at("loss").bottom(1), "t");
  EXPECT_EQ(layers.at("loss2").bottom(0), "sig");
  EXPECT_EQ(layers.at("gap").forward_type(), caffe::FLOAT);
  EXPECT_EQ(layers.at("gap").bottom(0), "th_as_float");
  EXPECT_EQ(layers.at("gap").bottom(1), "t_as_float");
  EXPECT_EQ(layers.at("gap2").bottom(0), "sig_as_float");
  EXPECT_EQ(layers.at("gap2").bottom(1), "t_as_float") << "one Convert per blob and type";
  for (const char* convert : {"ip_as_float", "soft_as_float16", "th_as_float", "t_as_float",
                              "sig_as_float"}) {
    ASSERT_TRUE(layers.count(convert)) << convert;
    EXPECT_EQ(layers.at(convert).type(), "Convert");
  }
  EXPECT_EQ(typed.layer_size(), net.layer_size() + 5);
  // Each Convert comes before its reader.
  std::map<std::string, int> position;
  for (int i = 0; i < typed.layer_size(); ++i) position[typed.layer(i).name()] = i;
  EXPECT_LT(position["soft_as_float16"], position["sig"]);
  EXPECT_LT(position["sig_as_float"], position["gap2"]);
}

TEST(StorageTypes, InPlaceOnABlobOfAnotherTypeConvertsAndRenames) {
  // A float32-only layer (LogSoftmax) in place on a float16 blob.
  caffe::NetParameter net = NetFromText(R"(
    default_forward_type: FLOAT16
    layer { name: 'x' type: 'Input' top: 'x' input_param { shape { dim: 4 dim: 3 } } }
    layer { name: 'sig' type: 'Sigmoid' bottom: 'x' top: 'y' }
    layer { name: 'lsm' type: 'LogSoftmax' bottom: 'y' top: 'y' }
    layer { name: 'th' type: 'TanH' bottom: 'y' top: 'z' })");
  caffe::NetParameter typed;
  AssignStorageTypes(net, TestContext(), &typed);
  const auto layers = ByName(typed);
  EXPECT_EQ(layers.at("lsm").bottom(0), "y_as_float");
  EXPECT_EQ(layers.at("lsm").top(0), "y_as_float");
  EXPECT_EQ(layers.at("th").bottom(0), "y_as_float_as_float16")
      << "a later reader of 'y' reads the in-place result";
}

TEST(StorageTypes, AnInputReadOnlyInFloatStaysFloat) {
  // Labels (read in float by the loss and the accuracy) and token ids (read
  // by the Embed, which keeps its indices in float32) keep their integers;
  // the Input of the scores narrows.
  caffe::NetParameter net = NetFromText(R"(
    default_forward_type: BFLOAT16
    layer { name: 'ids' type: 'Input' top: 'ids' input_param { shape { dim: 4 } } }
    layer { name: 'labels' type: 'Input' top: 'labels' input_param { shape { dim: 4 } } }
    layer { name: 'x' type: 'Input' top: 'x' input_param { shape { dim: 4 dim: 3 } } }
    layer { name: 'emb' type: 'Embed' bottom: 'ids' top: 'e'
            embed_param { num_output: 3 input_dim: 300 } }
    layer { name: 'sum' type: 'Eltwise' bottom: 'e' bottom: 'x' top: 's' }
    layer { name: 'acc' type: 'Accuracy' bottom: 's' bottom: 'labels' top: 'acc' }
    layer { name: 'loss' type: 'SoftmaxWithLoss' bottom: 's' bottom: 'labels' top: 'loss' })");
  caffe::NetParameter typed;
  AssignStorageTypes(net, TestContext(), &typed);
  const auto layers = ByName(typed);
  EXPECT_EQ(layers.at("ids").forward_type(), caffe::FLOAT);
  EXPECT_EQ(layers.at("labels").forward_type(), caffe::FLOAT);
  EXPECT_EQ(layers.at("x").forward_type(), caffe::BFLOAT16);
  EXPECT_EQ(layers.at("emb").bottom(0), "ids") << "no Convert of the ids";
  EXPECT_EQ(layers.at("acc").bottom(1), "labels");
  EXPECT_EQ(layers.at("loss").bottom(1), "labels");
  EXPECT_EQ(layers.at("emb").forward_type(), caffe::BFLOAT16);
  EXPECT_EQ(layers.at("sum").bottom(0), "e") << "the Embed's top is 16-bit already";
}

TEST(StorageTypes, BadTypesAreNamed) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"default_forward_type: DOUBLE", "net 'mixed': default_forward_type DOUBLE is not supported"},
      {"default_forward_type: FLOAT16 default_backward_type: FLOAT",
       "layer 'x' (Input): backward_type FLOAT differs from forward_type FLOAT16"},
      {"default_forward_math: INT", "net 'mixed': default_forward_math INT is not supported"},
  };
  for (const auto& [fields, message] : cases) {
    SCOPED_TRACE(fields);
    caffe::NetParameter typed;
    try {
      AssignStorageTypes(NetFromText(fields + " " + kNet), TestContext(), &typed);
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  }
  caffe::NetParameter layer_type = NetFromText(kNet);
  layer_type.mutable_layer(3)->set_forward_type(caffe::UINT);
  caffe::NetParameter typed;
  try {
    AssignStorageTypes(layer_type, TestContext(), &typed);
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("layer 'sig' (Sigmoid): forward_type UINT is not "
                                         "supported"),
              std::string::npos)
        << e.what();
  }
}

// The whole net in 16-bit storage against the float32 net, same weights
// and inputs: forward and the weight gradients agree to within a few
// roundings of the 16-bit type (each stored value carries a relative error
// of at most 2^-11 in float16 and 2^-8 in bfloat16; the longest path here
// stores five times).
TEST(StorageTypes, SixteenBitNetComputesWhatTheFloatNetComputes) {
  for (caffe::Type type : {caffe::FLOAT16, caffe::BFLOAT16}) {
    SCOPED_TRACE(caffe::Type_Name(type));
    const double unit = type == caffe::FLOAT16 ? std::ldexp(1.0, -11) : std::ldexp(1.0, -8);
    caffe::NetParameter half_param = NetFromText(kNet);
    half_param.set_default_forward_type(type);
    half_param.set_default_backward_type(type);
    // Float products, so that the bound counts only stored roundings (the
    // storage type's math would round the float weights too on a device
    // with a matrix engine).
    half_param.set_default_forward_math(caffe::FLOAT);
    half_param.set_default_backward_math(caffe::FLOAT);
    Net full(NetFromText(kNet), TestContext());
    Net half(half_param, TestContext());
    EXPECT_EQ(half.blob_by_name("x")->storage_type(),
              type == caffe::FLOAT16 ? StorageType::kFloat16 : StorageType::kBFloat16);
    EXPECT_EQ(half.blob_by_name("ip")->storage_type(), half.blob_by_name("x")->storage_type());
    EXPECT_EQ(half.blob_by_name("soft")->storage_type(), StorageType::kFloat32);
    // The same weights; inputs the 16-bit type holds exactly.
    half.layer_by_name("ip")->blobs()[0]->WriteData(full.layer_by_name("ip")->blobs()[0]->ReadData());
    Blob source(TestContext(), {5, 13});
    FillUniform(&source, -1, 1, 5);
    std::vector<float> x = source.ReadData();
    for (float& v : x) v = std::round(v * 64) / 64;
    std::vector<float> t(35);
    for (size_t i = 0; i < t.size(); ++i) t[i] = static_cast<float>(i % 5) / 8;
    for (Net* net : {&full, &half}) {
      net->blob_by_name("x")->WriteData(x);
      net->blob_by_name("t")->WriteData(t);
    }
    const float loss_full = full.ForwardBackward(), loss_half = half.ForwardBackward();
    EXPECT_NEAR(loss_half, loss_full, 10 * unit * std::fabs(loss_full));
    const std::vector<float> th_full = full.blob_by_name("th")->ReadData();
    const std::vector<float> th_half = half.blob_by_name("th")->ReadData();
    for (size_t i = 0; i < th_full.size(); ++i)
      EXPECT_NEAR(th_half[i], th_full[i], 5 * unit * std::fabs(th_full[i]) + 1e-7) << i;
    const std::vector<float> g_full = full.layer_by_name("ip")->blobs()[0]->ReadDiff();
    const std::vector<float> g_half = half.layer_by_name("ip")->blobs()[0]->ReadDiff();
    double norm = 0, diff = 0;
    for (size_t i = 0; i < g_full.size(); ++i) {
      norm += double(g_full[i]) * g_full[i];
      diff += double(g_half[i] - g_full[i]) * (g_half[i] - g_full[i]);
    }
    EXPECT_GT(norm, 0);
    EXPECT_LT(std::sqrt(diff), 20 * unit * std::sqrt(norm)) << "weight gradient";
  }
}

}  // namespace
}  // namespace test
}  // namespace dlcaffe
