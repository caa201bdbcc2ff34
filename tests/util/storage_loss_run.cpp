#include "util/storage_loss_run.hpp"

#include <memory>

#include "dlcaffe/blob.hpp"
#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

LossRun RunLossInStorage(const std::string& param, const std::vector<LossBottom>& bottoms,
                         float weight) {
  Context& ctx = TestContext();
  auto layer = MakeLayer(param);
  std::vector<std::unique_ptr<Blob>> blobs;
  std::vector<Blob*> bottom;
  std::vector<bool> propagate;
  for (const LossBottom& b : bottoms) {
    blobs.push_back(std::make_unique<Blob>(ctx));
    blobs.back()->set_storage_type(b.type);
    blobs.back()->Reshape(b.shape);
    bottom.push_back(blobs.back().get());
    propagate.push_back(b.propagate);
  }
  Blob loss(ctx);
  layer->SetUp(bottom, {&loss});
  for (size_t i = 0; i < bottoms.size(); ++i) bottom[i]->WriteData(bottoms[i].values);
  layer->Forward(bottom, {&loss});
  LossRun r;
  r.loss = loss.ReadData()[0];
  loss.WriteDiff({weight});
  layer->Backward({&loss}, propagate, bottom);
  for (size_t i = 0; i < bottoms.size(); ++i)
    r.diffs.push_back(propagate[i] ? bottom[i]->ReadDiff() : std::vector<float>());
  return r;
}

}  // namespace test
}  // namespace dlcaffe
