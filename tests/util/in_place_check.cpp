#include "util/in_place_check.hpp"

#include <gtest/gtest.h>

#include "util/layer_test_util.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

void ExpectInPlaceMatchesOutOfPlace(const std::string& layer_text, const std::vector<int>& shape,
                                    const std::function<void(Blob*)>& fill_input,
                                    const std::function<void()>& before_forward) {
  Blob x(TestContext(), shape), y(TestContext());
  fill_input(&x);
  std::vector<float> dy(x.count());
  for (size_t i = 0; i < dy.size(); ++i) dy[i] = 0.25f * static_cast<float>(i % 7) - 0.5f;
  auto layer = MakeLayer(layer_text);
  layer->SetUp({&x}, {&y});
  if (before_forward) before_forward();
  layer->Forward({&x}, {&y});
  y.WriteDiff(dy);
  layer->Backward({&y}, {true}, {&x});

  Blob blob(TestContext(), shape);
  blob.WriteData(x.ReadData());
  auto in_place = MakeLayer(layer_text);
  in_place->SetUp({&blob}, {&blob});
  ASSERT_EQ(in_place->blobs().size(), layer->blobs().size()) << layer_text;
  for (size_t p = 0; p < layer->blobs().size(); ++p)
    in_place->blobs()[p]->WriteData(layer->blobs()[p]->ReadData());
  if (before_forward) before_forward();
  in_place->Forward({&blob}, {&blob});
  EXPECT_EQ(blob.ReadData(), y.ReadData()) << layer_text << ": top";
  blob.WriteDiff(dy);
  in_place->Backward({&blob}, {true}, {&blob});
  EXPECT_EQ(blob.ReadDiff(), x.ReadDiff()) << layer_text << ": bottom diff";
  for (size_t p = 0; p < layer->blobs().size(); ++p)
    EXPECT_EQ(in_place->blobs()[p]->ReadDiff(), layer->blobs()[p]->ReadDiff())
        << layer_text << ": param " << p << " diff";
}

}  // namespace test
}  // namespace dlcaffe
