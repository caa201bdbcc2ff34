#include "util/storage_layer_run.hpp"

#include <gtest/gtest.h>

#include "dlcaffe/layer_registry.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

StorageRun RunLayerInStorage(const std::string& param, StorageType type,
                             const StorageRunInputs& in) {
  Context& ctx = TestContext();
  // Exact float32 products (the header says why).
  caffe::LayerParameter exact = LayerParam(param);
  if (!exact.has_forward_math()) exact.set_forward_math(caffe::FLOAT);
  if (!exact.has_backward_math()) exact.set_backward_math(caffe::FLOAT);
  auto layer = LayerRegistry::Create(exact, ctx);
  Blob bottom(ctx), top(ctx);
  bottom.set_storage_type(type);
  top.set_storage_type(type);
  bottom.Reshape(in.shape);
  Blob* out = in.in_place ? &bottom : &top;
  layer->SetUp({&bottom}, {out});
  EXPECT_EQ(bottom.count(), static_cast<int>(in.x.size()));
  bottom.WriteData(in.x);
  size_t next = 0;
  for (auto& blob : layer->blobs()) {
    if (!in.params.empty()) {
      EXPECT_LE(next + blob->count(), in.params.size()) << "too few parameter values";
      if (next + blob->count() > in.params.size()) break;
      blob->WriteData(std::vector<float>(in.params.begin() + next,
                                         in.params.begin() + next + blob->count()));
      next += blob->count();
    }
    blob->SetDiff(0.f);
  }
  if (in.before_forward) in.before_forward();
  layer->Forward({&bottom}, {out});
  StorageRun r;
  r.top = out->ReadData();
  if (in.after_forward) in.after_forward(*out);
  if (in.backward) {
    EXPECT_EQ(out->count(), static_cast<int>(in.dy.size()));
    out->WriteDiff(in.dy);
    layer->Backward({out}, {true}, {&bottom});
    r.bottom_diff = bottom.ReadDiff();
  }
  for (auto& blob : layer->blobs()) {
    r.param_data.push_back(blob->ReadData());
    r.param_diffs.push_back(blob->ReadDiff());
  }
  return r;
}

}  // namespace test
}  // namespace dlcaffe
