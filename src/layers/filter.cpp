// Filter (Caffe "Filter"): the last bottom is a selector with one value per
// row (shape N or N x 1 x ...); each other bottom k yields top k holding, in
// order, its rows whose selector value is nonzero. Unselected rows get a zero
// gradient; the selector gets none.
//
// The top's row count depends on the selector's values, so the selector must
// be read to the host: Reshape reads it once per pass (the Net reshapes every
// layer before its Forward, as Caffe does). This is the one layer where a host
// read is inherent. As in Caffe, the first Reshape (at SetUp, before any data
// has flowed) does not read it and sizes the tops like the bottoms.
#include <sstream>

#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

class FilterLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Filter"; }
  int MinBottomBlobs() const override { return 2; }
  int MinTopBlobs() const override { return 1; }
  bool AllowForceBackward(int bottom_index) const override {
    return bottom_index != static_cast<int>(param_.bottom_size()) - 1;
  }

  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    DLC_REQUIRE(top.size() == bottom.size() - 1,
                Where() << "needs one top per filtered bottom (all bottoms but the selector): "
                        << bottom.size() << " bottoms, " << top.size() << " tops");
    first_reshape_ = true;
  }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const Blob& selector = *bottom.back();
    DLC_REQUIRE(selector.num_axes() >= 1,
                Where() << "the selector (last bottom) needs a batch axis, got shape "
                        << selector.shape_string());
    for (int i = 1; i < selector.num_axes(); ++i)
      DLC_REQUIRE(selector.shape(i) == 1,
                  Where() << "the selector (last bottom) must be N or N x 1 x ..., got shape "
                          << selector.shape_string());
    for (size_t k = 0; k + 1 < bottom.size(); ++k)
      DLC_REQUIRE(bottom[k]->num_axes() >= 1 && bottom[k]->shape(0) == selector.shape(0),
                  Where() << "bottom " << k << " of shape " << bottom[k]->shape_string()
                          << " must have as many rows as the selector of shape "
                          << selector.shape_string());
    if (first_reshape_) {
      first_reshape_ = false;
      selection_read_ = false;
      ShapeTops(bottom, top, selector.shape(0));
      return;
    }
    ReadSelection(bottom, top);
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    // Called straight after SetUp (no Net in between): read the selector now.
    if (!selection_read_) ReadSelection(bottom, top);
    if (selected_ == 0) return;
    cl_kernel kernel = ctx_->Kernel("filter.cl", "", "filter_forward");
    for (size_t k = 0; k < top.size(); ++k) {
      const int n = top[k]->count();
      ctx_->Launch1D(kernel, n, n, bottom[k]->count(1), selected_rows_->mem(),
                     bottom[k]->data(), top[k]->data());
    }
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    DLC_REQUIRE(!propagate_down.back(), Where() << "cannot backpropagate to the selector");
    cl_kernel kernel = ctx_->Kernel("filter.cl", "", "filter_backward");
    for (size_t k = 0; k < top.size(); ++k) {
      if (!propagate_down[k]) continue;
      const int n = bottom[k]->count();
      ctx_->Launch1D(kernel, n, n, bottom[k]->count(1), top_row_->mem(), top[k]->diff(),
                     bottom[k]->diff());
    }
  }

 private:
  void ShapeTops(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top, int rows) {
    for (size_t k = 0; k < top.size(); ++k) {
      std::vector<int> shape = bottom[k]->shape();
      shape[0] = rows;
      top[k]->Reshape(shape);
    }
  }

  // Reads the selector (the host read this layer cannot avoid), shapes the
  // tops and uploads the row maps used by the kernels.
  void ReadSelection(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) {
    const std::vector<float> selector = bottom.back()->ReadData();
    const int rows = static_cast<int>(selector.size());
    std::vector<cl_int> selected, top_row(rows, -1);
    for (int r = 0; r < rows; ++r) {
      if (selector[r] != 0.f) {
        top_row[r] = static_cast<cl_int>(selected.size());
        selected.push_back(r);
      }
    }
    selected_ = static_cast<int>(selected.size());
    selected_rows_ = Upload(selected, selected_rows_);
    top_row_ = Upload(top_row, top_row_);
    ShapeTops(bottom, top, selected_);
    selection_read_ = true;
  }

  BufferPtr Upload(const std::vector<cl_int>& values, BufferPtr buffer) {
    const size_t bytes = std::max<size_t>(values.size(), 1) * sizeof(cl_int);
    if (!buffer || buffer->bytes() < bytes) buffer = ctx_->Allocate(bytes);
    ctx_->Write(buffer->mem(), 0, values.size() * sizeof(cl_int), values.data());
    return buffer;
  }

  bool first_reshape_ = true;
  bool selection_read_ = false;
  int selected_ = 0;
  BufferPtr selected_rows_;  // top row r -> bottom row (int)
  BufferPtr top_row_;        // bottom row -> top row, or -1 (int)
};

REGISTER_LAYER_CLASS(Filter);

}  // namespace dlcaffe
