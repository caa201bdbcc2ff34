// Flatten and Reshape in 16-bit storage (core/view_layer.hpp): the top is a
// view of the bottom, so values pass through bit for bit, through the
// shared buffers or, if the top was given storage of its own, through a
// copy of the blob's bytes; and a 16-bit net keeps them 16-bit (no Convert
// around them).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../../src/passes/net_pass.hpp"
#include "util/layer_test_util.hpp"
#include "util/storage_values.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {
namespace {

const char* const kViews[] = {
    "name: 'v' type: 'Flatten'",
    "name: 'v' type: 'Reshape' reshape_param { shape { dim: 0 dim: -1 dim: 5 } }",
};

TEST(ViewStorage, ValuesPassThroughBitForBit) {
  const std::vector<int> shape = {2, 3, 4, 5};
  for (StorageType type : {StorageType::kFloat16, StorageType::kBFloat16}) {
    for (const char* view : kViews) {
      for (bool apart : {false, true}) {
        SCOPED_TRACE(std::string(StorageTypeName(type)) + " " + view +
                     (apart ? ", top apart" : ""));
        Context& ctx = TestContext();
        auto layer = MakeLayer(view);
        Blob bottom(ctx), top(ctx);
        bottom.set_storage_type(type);
        top.set_storage_type(type);
        bottom.Reshape(shape);
        layer->SetUp({&bottom}, {&top});
        ASSERT_EQ(top.count(), bottom.count());
        if (apart) {  // storage of the top's own: the layer must copy
          top.set_storage_type(StorageType::kFloat32);
          top.set_storage_type(type);
          ASSERT_NE(top.data(), bottom.data());
        }
        Blob source(ctx, {2 * bottom.count()});
        FillUniform(&source, -3.f, 3.f, 41);
        const std::vector<float> all = RoundedTo(source.ReadData(), type);
        const std::vector<float> x(all.begin(), all.begin() + bottom.count()),
            dy(all.begin() + bottom.count(), all.end());
        bottom.WriteData(x);
        layer->Forward({&bottom}, {&top});
        EXPECT_EQ(top.ReadData(), x);
        top.WriteDiff(dy);
        layer->Backward({&top}, {true}, {&bottom});
        EXPECT_EQ(bottom.ReadDiff(), dy);
      }
    }
  }
}

TEST(ViewStorage, ASixteenBitNetKeepsViewsSixteenBit) {
  caffe::NetParameter net = NetFromText(R"(
    default_forward_type: BFLOAT16
    layer { name: 'x' type: 'Input' top: 'x' input_param { shape { dim: 2 dim: 3 dim: 4 } } }
    layer { name: 'sig' type: 'Sigmoid' bottom: 'x' top: 's' }
    layer { name: 'flat' type: 'Flatten' bottom: 's' top: 'f' }
    layer { name: 'shape' type: 'Reshape' bottom: 'f' top: 'r'
            reshape_param { shape { dim: 0 dim: 4 dim: 3 } } }
    layer { name: 'tanh' type: 'TanH' bottom: 'r' top: 't' }
  )");
  caffe::NetParameter typed;
  AssignStorageTypes(net, TestContext(), &typed);
  EXPECT_EQ(typed.layer_size(), net.layer_size()) << "no Convert layers";
  for (const auto& layer : typed.layer())
    EXPECT_EQ(layer.forward_type(), caffe::BFLOAT16) << layer.name();
}

}  // namespace
}  // namespace test
}  // namespace dlcaffe
