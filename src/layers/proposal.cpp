// Proposal (Faster R-CNN's region proposal layer; caffe.proto's
// ProposalParameter says what, with OpenCV's parameter names): the regions
// a region proposal network proposes, on the device (src/cl/proposal.cl)
// with py-faster-rcnn's arithmetic. The one host read is the number of
// regions, which the tops' shapes need.
//
// It also stands in for py-faster-rcnn's Python layer (python_param {
// module: 'rpn.proposal_layer' layer: 'ProposalLayer' param_str: "'feat_stride':
// 16" }) where Python layers are not registered (the dlcaffe tools), so that
// its test.prototxt runs unchanged; under pycaffe the Python layer runs.
#include <algorithm>
#include <cmath>
#include <regex>
#include <sstream>
#include <vector>

#include "core/grow_buffer.hpp"
#include "core/zero_gradients.hpp"
#include "dlcaffe/layer_registry.hpp"

namespace dlcaffe {

namespace {

// py-faster-rcnn's generate_anchors, in double as numpy computes it: the
// base box [0, 0, base - 1, base - 1] reshaped to each ratio (its area kept,
// sides rounded half to even), then scaled; ratio-major order.
std::vector<float> GenerateAnchors(double base, const std::vector<double>& ratios,
                                   const std::vector<double>& scales) {
  const auto anchor = [](double w, double h, double cx, double cy) {
    return std::vector<double>{cx - 0.5 * (w - 1), cy - 0.5 * (h - 1), cx + 0.5 * (w - 1),
                               cy + 0.5 * (h - 1)};
  };
  const double center = 0.5 * (base - 1);
  std::vector<float> anchors;
  for (double ratio : ratios) {
    const double w = std::nearbyint(std::sqrt(base * base / ratio));  // half to even
    const double h = std::nearbyint(w * ratio);
    for (double scale : scales)
      for (double v : anchor(w * scale, h * scale, center, center)) anchors.push_back(static_cast<float>(v));
  }
  return anchors;
}

}  // namespace

class ProposalLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Proposal"; }
  int ExactNumBottomBlobs() const override { return 3; }
  int MinTopBlobs() const override { return 1; }
  int MaxTopBlobs() const override { return 2; }
  bool AllowForceBackward(int) const override { return false; }

  void LayerSetUp(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const caffe::ProposalParameter& p = param_.proposal_param();
    DLC_REQUIRE(p.feat_stride() > 0, Where() << "proposal_param.feat_stride must be positive");
    DLC_REQUIRE(p.base_size() > 0, Where() << "proposal_param.base_size must be positive");
    DLC_REQUIRE(p.nms_thresh() >= 0.f && p.nms_thresh() <= 1.f,
                Where() << "proposal_param.nms_thresh must be in [0, 1], got " << p.nms_thresh());
    std::vector<double> ratios(p.ratio().begin(), p.ratio().end());
    std::vector<double> scales(p.scale().begin(), p.scale().end());
    if (ratios.empty()) ratios = {0.5, 1, 2};
    if (scales.empty()) scales = {8, 16, 32};
    for (double r : ratios)
      DLC_REQUIRE(std::isfinite(r) && r > 0, Where() << "proposal_param.ratio must be positive, got " << r);
    for (double s : scales)
      DLC_REQUIRE(std::isfinite(s) && s > 0, Where() << "proposal_param.scale must be positive, got " << s);
    const std::vector<float> anchors = GenerateAnchors(p.base_size(), ratios, scales);
    anchors_per_cell_ = static_cast<int>(anchors.size() / 4);
    anchors_ = ctx_->Allocate(anchors.size() * sizeof(float));
    ctx_->Write(anchors_->mem(), 0, anchors.size() * sizeof(float), anchors.data());
    group_ = static_cast<int>(std::min<size_t>(128, ctx_->info().max_work_group_size));
    top[0]->Reshape({1, 5});
    if (top.size() > 1) top[1]->Reshape({1, 1});
  }

  void Reshape(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const Blob &scores = *bottom[0], &deltas = *bottom[1], &info = *bottom[2];
    const int A = anchors_per_cell_;
    DLC_REQUIRE(scores.num_axes() == 4 && scores.shape(1) == 2 * A,
                Where() << "bottom 0 (the scores) must be N x " << 2 * A << " x H x W (background, "
                        << "then foreground, for " << A << " anchors), got " << scores.shape_string());
    images_ = scores.shape(0), height_ = scores.shape(2), width_ = scores.shape(3);
    DLC_REQUIRE(deltas.num_axes() == 4 && deltas.shape(0) == images_ && deltas.shape(1) == 4 * A &&
                    deltas.shape(2) == height_ && deltas.shape(3) == width_,
                Where() << "bottom 1 (the box deltas) must be " << images_ << " x " << 4 * A << " x "
                        << height_ << " x " << width_ << ", got " << deltas.shape_string());
    DLC_REQUIRE(info.num_axes() >= 1 && info.count() % 3 == 0 &&
                    (info.count() == 3 || info.count() == 3 * images_),
                Where() << "bottom 2 (im_info: height, width, scale) must hold 3 values, or 3 per "
                        << "image, got " << info.shape_string());
    info_stride_ = info.count() == 3 ? 0 : 3;
    const caffe::ProposalParameter& p = param_.proposal_param();
    const int count = scores.count(2) * A;  // H * W * A, within the deltas' count
    DLC_REQUIRE(count <= (1 << 30), Where() << count << " proposals to sort are more than 2^30");
    sort_capacity_ = 1;
    while (sort_capacity_ < count) sort_capacity_ <<= 1;
    row_capacity_ = std::max(p.post_nms_topn() > 0 ? std::min<int>(p.post_nms_topn(), count) : count, 1);
    const size_t n = std::max(images_, 1);
    GrowBuffer(*ctx_, &boxes_, n * std::max(count, 1) * 4 * sizeof(float));
    GrowBuffer(*ctx_, &sort_score_, n * sort_capacity_ * sizeof(float));
    GrowBuffer(*ctx_, &sort_id_, n * sort_capacity_ * sizeof(int));
    GrowBuffer(*ctx_, &kept_, n * row_capacity_ * sizeof(int));
    GrowBuffer(*ctx_, &rows_, n * row_capacity_ * 5 * sizeof(float));
    GrowBuffer(*ctx_, &row_scores_, n * row_capacity_ * sizeof(float));
    GrowBuffer(*ctx_, &image_rows_, n * sizeof(int));
  }

  void Forward(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) override {
    const caffe::ProposalParameter& p = param_.proposal_param();
    std::vector<int> image_rows(images_, 0);
    if (images_ > 0 && height_ * width_ > 0) {
      ctx_->Launch(ctx_->Kernel("proposal.cl", "", "proposal_regions"),
                   NDRange(size_t(group_) * images_), NDRange(group_), anchors_per_cell_, height_,
                   width_, static_cast<float>(p.feat_stride()), static_cast<float>(p.min_size()),
                   static_cast<int>(p.pre_nms_topn()), static_cast<int>(p.post_nms_topn()),
                   p.nms_thresh(), sort_capacity_, row_capacity_, info_stride_, bottom[0]->data(),
                   bottom[1]->data(), anchors_->mem(), bottom[2]->data(), boxes_->mem(),
                   sort_score_->mem(), sort_id_->mem(), kept_->mem(), rows_->mem(),
                   row_scores_->mem(), image_rows_->mem());
      // The regions' number sets the tops' shapes: the one read to the host.
      ctx_->Read(image_rows_->mem(), 0, images_ * sizeof(int), image_rows.data());
    }
    int total = 0;
    for (int r : image_rows) total += r;
    top[0]->Reshape({total, 5});
    if (top.size() > 1) top[1]->Reshape({total, 1});
    size_t at = 0;
    for (int n = 0; n < images_; ++n) {
      const size_t rows = image_rows[n];
      if (rows > 0) {
        ctx_->Copy(rows_->mem(), size_t(n) * row_capacity_ * 5 * sizeof(float), top[0]->data(),
                   at * 5 * sizeof(float), rows * 5 * sizeof(float));
        if (top.size() > 1)
          ctx_->Copy(row_scores_->mem(), size_t(n) * row_capacity_ * sizeof(float), top[1]->data(),
                     at * sizeof(float), rows * sizeof(float));
      }
      at += rows;
    }
  }

  void Backward(const std::vector<Blob*>&, const std::vector<bool>& propagate_down,
                const std::vector<Blob*>& bottom) override {
    WriteZeroGradients(propagate_down, bottom);
  }

 private:

  int anchors_per_cell_ = 0, group_ = 128;
  int images_ = 0, height_ = 0, width_ = 0, info_stride_ = 0;
  int sort_capacity_ = 1, row_capacity_ = 1;
  BufferPtr anchors_;                 // A x 4, at position (0, 0)
  BufferPtr boxes_;                   // N x H*W*A x 4: every proposal, clipped
  BufferPtr sort_score_, sort_id_;    // per image: the candidates, sorted
  BufferPtr kept_;                    // per image: positions NMS kept
  BufferPtr rows_, row_scores_;       // per image: its regions and scores
  BufferPtr image_rows_;              // N
};

REGISTER_LAYER_CLASS(Proposal);

namespace {

// py-faster-rcnn's param_str, a YAML mapping such as "'feat_stride': 16" or
// "'feat_stride': 16\n'scales': !!python/tuple [4, 8, 16, 32]", as
// proposal_param.
caffe::LayerParameter NativeProposal(const caffe::LayerParameter& python) {
  caffe::LayerParameter native = python;
  native.clear_python_param();
  native.set_type("Proposal");
  caffe::ProposalParameter* p = native.mutable_proposal_param();
  const std::string& text = python.python_param().param_str();
  static const std::regex kEntry(
      R"('(\w+)'\s*:\s*(?:!!python/tuple\s*)?(\[[^\]]*\]|\([^)]*\)|[-+0-9.eE]+))");
  const auto numbers = [](std::string list) {
    std::replace_if(list.begin(), list.end(), [](char c) { return c == '[' || c == ']' || c == '(' || c == ')' || c == ','; }, ' ');
    std::istringstream in(list);
    std::vector<float> values;
    for (float v; in >> v;) values.push_back(v);
    return values;
  };
  std::string rest = text;
  for (std::sregex_iterator it(text.begin(), text.end(), kEntry), end; it != end; ++it) {
    const std::string key = (*it)[1], value = (*it)[2];
    const std::vector<float> values = numbers(value);
    if (key == "feat_stride" && values.size() == 1 && values[0] > 0) {
      p->set_feat_stride(static_cast<uint32_t>(values[0]));
    } else if (key == "scales" && !values.empty()) {
      for (float v : values) p->add_scale(v);
    } else if (key == "ratios" && !values.empty()) {
      for (float v : values) p->add_ratio(v);
    } else {
      DLC_FAIL("layer '" << python.name() << "': py-faster-rcnn's proposal layer runs natively "
                         << "(Proposal), which does not take param_str's '" << key << "': "
                         << value << " (it takes feat_stride, scales, ratios)");
    }
    rest.replace(rest.find((*it)[0].str()), (*it)[0].length(), "");
  }
  DLC_REQUIRE(rest.find_first_not_of(" \t\r\n{},") == std::string::npos,
              "layer '" << python.name() << "': cannot read py-faster-rcnn's param_str \"" << text
                        << "\" (expected entries such as 'feat_stride': 16)");
  return native;
}

const bool kStandsInForPyFasterRcnn = (LayerRegistry::AddPythonStandIn(
    "rpn.proposal_layer.ProposalLayer",
    [](const caffe::LayerParameter& param, Context& ctx) {
      return std::unique_ptr<Layer>(new ProposalLayer(NativeProposal(param), ctx));
    }), true);

}  // namespace

}  // namespace dlcaffe
