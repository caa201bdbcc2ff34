// DummyData (Caffe "DummyData"): tops of given shapes (dummy_data_param.shape,
// or the legacy num/channels/height/width, each once or once per top) filled
// by data_filler (none: constant 0; one for every top; or one per top). As in
// Caffe, a constant top is filled once at setup and left alone by Forward;
// the others are filled anew by every Forward. For tests and benchmarks: the
// fillers draw on the host from the context's generator (include/dlcaffe/filler.hpp).
#include <cstring>

#include "dlcaffe/filler.hpp"
#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

class DummyDataLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "DummyData"; }
  int ExactNumBottomBlobs() const override { return 0; }
  int MinTopBlobs() const override { return 1; }

  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const caffe::DummyDataParameter& p = param_.dummy_data_param();
    const int num_top = static_cast<int>(top.size());
    const int num_fillers = p.data_filler_size();
    DLC_REQUIRE(num_fillers == 0 || num_fillers == 1 || num_fillers == num_top,
                Where() << "give data_filler 0 times, once or once per top (" << num_top
                        << "); got " << num_fillers);
    fillers_.clear();
    if (num_fillers == 0) {
      fillers_.emplace_back();
      fillers_[0].set_type("constant");
      fillers_[0].set_value(0.f);
    } else {
      fillers_.assign(p.data_filler().begin(), p.data_filler().end());
    }
    refill_.clear();
    for (const caffe::FillerParameter& filler : fillers_)
      refill_.push_back(filler.type() != "constant");

    const bool legacy = p.num_size() || p.channels_size() || p.height_size() || p.width_size();
    if (legacy) {
      DLC_REQUIRE(p.shape_size() == 0,
                  Where() << "give either shape or the legacy num/channels/height/width, "
                             "not both");
      CheckLegacyCount("num", p.num_size(), num_top);
      CheckLegacyCount("channels", p.channels_size(), num_top);
      CheckLegacyCount("height", p.height_size(), num_top);
      CheckLegacyCount("width", p.width_size(), num_top);
    } else {
      DLC_REQUIRE(
          p.shape_size() == 1 || p.shape_size() == num_top,
          Where() << "give shape once or once per top (" << num_top << "); got " << p.shape_size());
    }
    for (int i = 0; i < num_top; ++i) {
      try {
        if (legacy) {
          auto pick = [i](const google::protobuf::RepeatedField<uint32_t>& f) {
            return static_cast<int>(f.size() == 1 ? f.Get(0) : f.Get(i));
          };
          top[i]->Reshape({pick(p.num()), pick(p.channels()), pick(p.height()), pick(p.width())});
        } else {
          top[i]->Reshape(p.shape(p.shape_size() == 1 ? 0 : i));
        }
      } catch (const Error& e) {
        DLC_FAIL(Where() << "top " << i << ": " << e.what());
      }
    }
    // Every top once, which also reports a bad filler at setup; from here on
    // Forward refills only the non-constant ones.
    for (int i = 0; i < num_top; ++i) Fill(i, top[i]);
  }

  // The shapes are fixed at setup, as in Caffe.
  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {}

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    for (size_t i = 0; i < top.size(); ++i)
      if (refill_[FillerIndex(i)]) Fill(static_cast<int>(i), top[i]);
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {}

 private:
  void CheckLegacyCount(const char* field, int count, int num_top) const {
    DLC_REQUIRE(count == 1 || count == num_top,
                Where() << "give " << field << " once or once per top (" << num_top
                        << ") with the legacy fields; got " << count);
  }

  size_t FillerIndex(size_t top_index) const { return fillers_.size() > 1 ? top_index : 0; }

  void Fill(int top_index, Blob* top) {
    const size_t f = FillerIndex(top_index);
    try {
      FillBlob(fillers_[f], top);
    } catch (const Error& e) {
      DLC_FAIL(Where() << "data_filler " << f << " on top " << top_index << " ("
                       << top->shape_string() << "): " << e.what());
    }
  }

  std::vector<caffe::FillerParameter> fillers_;
  std::vector<bool> refill_;  // per filler: refilled by every Forward
};

REGISTER_LAYER_CLASS(DummyData);

}  // namespace dlcaffe
