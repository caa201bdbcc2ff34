// Permute (dlcaffe; ONNX Transpose): top axis i is bottom axis order[i]; an
// empty order reverses the axes. Forward gathers the bottom through a
// strided view (core/strided_copy.hpp); backward scatters the top's diff
// back the same way (a permutation writes every bottom element once).
#include <algorithm>
#include <numeric>
#include <vector>

#include "core/strided_copy.hpp"
#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

class PermuteLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Permute"; }
  // Moves values as they are stored.
  bool SupportsStorage(StorageType) const override { return true; }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    DLC_REQUIRE(top[0] != bottom[0], Where() << "cannot work in place");
    const Blob& x = *bottom[0];
    const int rank = x.num_axes();
    const caffe::PermuteParameter& p = param_.permute_param();
    std::vector<int> order(rank);
    if (p.order_size() == 0) {
      for (int i = 0; i < rank; ++i) order[i] = rank - 1 - i;
    } else {
      DLC_REQUIRE(p.order_size() == rank,
                  Where() << "order has " << p.order_size() << " axes, the bottom "
                          << x.shape_string() << " has " << rank);
      std::vector<bool> seen(rank, false);
      for (int i = 0; i < rank; ++i) {
        const int a = static_cast<int>(p.order(i));
        DLC_REQUIRE(p.order(i) < static_cast<unsigned>(rank) && !seen[a],
                    Where() << "order must be a permutation of 0 .. " << rank - 1 << ", got "
                            << OrderString(p));
        seen[a] = true;
        order[i] = a;
      }
    }
    std::vector<int> x_strides(rank);
    for (int d = 0; d < rank; ++d) x_strides[d] = x.count(d + 1);
    std::vector<int> shape(rank);
    view_ = StridedView();
    for (int i = 0; i < rank; ++i) {
      shape[i] = x.shape(order[i]);
      view_.size.push_back(shape[i]);
      view_.stride.push_back(x_strides[order[i]]);
    }
    CheckStridedView(view_, Where());
    top[0]->Reshape(shape);
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    StridedGather(*ctx_, view_, bottom[0]->data(), top[0]->data(),
                  bottom[0]->storage_type());
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    if (!propagate_down[0]) return;
    StridedScatter(*ctx_, view_, top[0]->diff(), bottom[0]->diff(),
                   bottom[0]->storage_type());
  }

 private:
  static std::string OrderString(const caffe::PermuteParameter& p) {
    std::string s;
    for (int i = 0; i < p.order_size(); ++i) s += (i ? " " : "") + std::to_string(p.order(i));
    return s;
  }

  StridedView view_;  // top element -> bottom element
};

REGISTER_LAYER_CLASS(Permute);

}  // namespace dlcaffe
