// Tile (Caffe "Tile"): repeats the bottom `tiles` times along `axis`
// (default 1), each copy holding all of the axes from `axis` on, so
// N x C x H x W tiled 2 times on axis 1 is N x 2C x H x W with both copies of
// the C x H x W block in sequence.
#include <cstdint>

#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

class TileLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Tile"; }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }

  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const caffe::TileParameter& p = param_.tile_param();
    DLC_REQUIRE(p.has_tiles(), Where() << "the number of tiles must be given (tile_param.tiles)");
    DLC_REQUIRE(p.tiles() > 0, Where() << "the number of tiles must be positive, got "
                                       << p.tiles());
    tiles_ = p.tiles();
  }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const Blob& in = *bottom[0];
    const int axis = param_.tile_param().axis();
    DLC_REQUIRE(axis >= -in.num_axes() && axis < in.num_axes(),
                Where() << "axis " << axis << " is out of range for a bottom of shape "
                        << in.shape_string());
    const int canonical = axis < 0 ? axis + in.num_axes() : axis;
    std::vector<int> shape = in.shape();
    const int64_t tiled = int64_t(shape[canonical]) * tiles_;
    DLC_REQUIRE(tiled <= INT32_MAX, Where() << "tiling axis " << canonical << " of "
                                            << in.shape_string() << " " << tiles_
                                            << " times is too large");
    shape[canonical] = static_cast<int>(tiled);
    top[0]->Reshape(shape);
    inner_ = in.count(canonical);
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const int n = top[0]->count();
    ctx_->Launch1D(ctx_->Kernel("tile.cl", "", "tile_forward"), n, n, inner_, tiles_,
                   bottom[0]->data(), top[0]->data());
  }

  void Backward(const std::vector<Blob*>& top, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    if (!propagate_down[0]) return;
    const int n = bottom[0]->count();
    ctx_->Launch1D(ctx_->Kernel("tile.cl", "", "tile_backward"), n, n, inner_, tiles_,
                   top[0]->diff(), bottom[0]->diff());
  }

 private:
  int tiles_ = 1;
  int inner_ = 1;  // elements of the bottom from the tiled axis on
};

REGISTER_LAYER_CLASS(Tile);

}  // namespace dlcaffe
