#include "data/ssd_augmentation.hpp"

#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cmath>
#include <random>

namespace dlcaffe {
namespace ssd {

namespace {

float Uniform(Rng& rng, float lo, float hi) {
  return hi > lo ? std::uniform_real_distribution<float>(lo, hi)(rng) : lo;
}

Box Intersection(const Box& a, const Box& b) {
  if (b.xmin > a.xmax || b.xmax < a.xmin || b.ymin > a.ymax || b.ymax < a.ymin) return Box();
  return {std::max(a.xmin, b.xmin), std::max(a.ymin, b.ymin), std::min(a.xmax, b.xmax),
          std::min(a.ymax, b.ymax)};
}

Box Clip(const Box& b) {
  auto unit = [](float v) { return std::max(std::min(v, 1.f), 0.f); };
  return {unit(b.xmin), unit(b.ymin), unit(b.xmax), unit(b.ymax)};
}

// SatisfySampleConstraint: true without bounds; else when one object meets
// every bound given.
bool Satisfies(const Box& window, const std::vector<Box>& objects,
               const caffe::SampleConstraint& c) {
  const bool jaccard = c.has_min_jaccard_overlap() || c.has_max_jaccard_overlap();
  const bool sample = c.has_min_sample_coverage() || c.has_max_sample_coverage();
  const bool object = c.has_min_object_coverage() || c.has_max_object_coverage();
  if (!jaccard && !sample && !object) return true;
  for (const Box& o : objects) {
    bool found = false;
    if (jaccard) {
      const float v = Jaccard(window, o);
      if (c.has_min_jaccard_overlap() && v < c.min_jaccard_overlap()) continue;
      if (c.has_max_jaccard_overlap() && v > c.max_jaccard_overlap()) continue;
      found = true;
    }
    if (sample) {
      const float v = Coverage(window, o);
      if (c.has_min_sample_coverage() && v < c.min_sample_coverage()) continue;
      if (c.has_max_sample_coverage() && v > c.max_sample_coverage()) continue;
      found = true;
    }
    if (object) {
      const float v = Coverage(o, window);
      if (c.has_min_object_coverage() && v < c.min_object_coverage()) continue;
      if (c.has_max_object_coverage() && v > c.max_object_coverage()) continue;
      found = true;
    }
    if (found) return true;
  }
  return false;
}

// SampleBBox: a window of random scale and aspect ratio (kept within the
// image), at a random place.
Box SampleWindow(const caffe::Sampler& s, Rng& rng) {
  const float scale = Uniform(rng, s.min_scale(), s.max_scale());
  const float min_ratio = std::max(s.min_aspect_ratio(), scale * scale);
  const float max_ratio = std::min(s.max_aspect_ratio(), 1.f / (scale * scale));
  const float ratio = Uniform(rng, min_ratio, max_ratio);
  const float width = scale * std::sqrt(ratio), height = scale / std::sqrt(ratio);
  const float x = Uniform(rng, 0.f, 1.f - width), y = Uniform(rng, 0.f, 1.f - height);
  return {x, y, x + width, y + height};
}

cv::Mat Brightness(const cv::Mat& in, float delta) {
  if (std::fabs(delta) == 0.f) return in;
  cv::Mat out;
  in.convertTo(out, -1, 1, delta);
  return out;
}

cv::Mat Contrast(const cv::Mat& in, float factor) {
  if (std::fabs(factor - 1.f) <= 1e-3f) return in;
  cv::Mat out;
  in.convertTo(out, -1, factor, 0);
  return out;
}

// Scales (channel 1, saturation) or shifts (channel 0, hue) an HSV channel.
cv::Mat AdjustHsv(const cv::Mat& in, int channel, float alpha, float beta) {
  cv::Mat hsv;
  cv::cvtColor(in, hsv, cv::COLOR_BGR2HSV);
  std::vector<cv::Mat> planes;
  cv::split(hsv, planes);
  planes[channel].convertTo(planes[channel], -1, alpha, beta);
  cv::merge(planes, hsv);
  cv::Mat out;
  cv::cvtColor(hsv, out, cv::COLOR_HSV2BGR);
  return out;
}

bool Happens(Rng& rng, float probability) { return Uniform(rng, 0.f, 1.f) < probability; }

}  // namespace

float Size(const Box& b) {
  if (b.xmax < b.xmin || b.ymax < b.ymin) return 0.f;
  return (b.xmax - b.xmin) * (b.ymax - b.ymin);
}

float Jaccard(const Box& a, const Box& b) {
  const float inter = Size(Intersection(a, b));
  return inter > 0 ? inter / (Size(a) + Size(b) - inter) : 0.f;
}

float Coverage(const Box& a, const Box& b) {
  const float inter = Size(Intersection(a, b)), size = Size(a);
  return inter > 0 && size > 0 ? inter / size : 0.f;
}

std::vector<LabeledBox> SeenThrough(const std::vector<LabeledBox>& boxes, const Box& window,
                                    const caffe::EmitConstraint& emit, bool mirror) {
  std::vector<LabeledBox> seen;
  const float width = window.xmax - window.xmin, height = window.ymax - window.ymin;
  for (const LabeledBox& l : boxes) {
    const Box& b = l.box;
    if (emit.emit_type() == caffe::EmitConstraint::CENTER) {
      const float cx = (b.xmin + b.xmax) / 2, cy = (b.ymin + b.ymax) / 2;
      if (cx < window.xmin || cx > window.xmax || cy < window.ymin || cy > window.ymax) continue;
    } else if (Coverage(b, window) <= emit.emit_overlap()) {
      continue;
    }
    // ProjectBBox: nothing of a box outside the window.
    if (b.xmin >= window.xmax || b.xmax <= window.xmin || b.ymin >= window.ymax ||
        b.ymax <= window.ymin)
      continue;
    Box p = Clip({(b.xmin - window.xmin) / width, (b.ymin - window.ymin) / height,
                  (b.xmax - window.xmin) / width, (b.ymax - window.ymin) / height});
    if (Size(p) <= 0) continue;
    if (mirror) p = {1 - p.xmax, p.ymin, 1 - p.xmin, p.ymax};
    LabeledBox kept = l;
    kept.box = p;
    seen.push_back(kept);
  }
  return seen;
}

std::vector<Box> SampleWindows(const std::vector<Box>& objects,
                               const google::protobuf::RepeatedPtrField<caffe::BatchSampler>& samplers,
                               Rng& rng) {
  std::vector<Box> windows;
  for (const caffe::BatchSampler& s : samplers) {
    if (!s.use_original_image()) continue;
    unsigned found = 0;
    for (unsigned trial = 0; trial < s.max_trials(); ++trial) {
      if (s.has_max_sample() && found >= s.max_sample()) break;
      const Box w = SampleWindow(s.sampler(), rng);
      if (Satisfies(w, objects, s.sample_constraint())) {
        ++found;
        windows.push_back(w);
      }
    }
  }
  return windows;
}

cv::Mat Crop(const cv::Mat& image, const Box& window, Box* cropped) {
  const Box c = Clip(window);
  const float w = static_cast<float>(image.cols), h = static_cast<float>(image.rows);
  const int x = std::min(static_cast<int>(c.xmin * w), image.cols - 1);
  const int y = std::min(static_cast<int>(c.ymin * h), image.rows - 1);
  const int width = std::max(1, std::min(static_cast<int>(c.xmax * w - c.xmin * w), image.cols - x));
  const int height = std::max(1, std::min(static_cast<int>(c.ymax * h - c.ymin * h), image.rows - y));
  *cropped = Box{x / w, y / h, (x + width) / w, (y + height) / h};
  return image(cv::Rect(x, y, width, height)).clone();
}

cv::Mat Expand(const cv::Mat& image, const caffe::ExpansionParameter& expand,
               const std::vector<float>& fill, Rng& rng, Box* window) {
  *window = Box{0, 0, 1, 1};
  if (Uniform(rng, 0.f, 1.f) > expand.prob()) return image;
  if (std::fabs(expand.max_expand_ratio() - 1.f) < 1e-2f) return image;
  const float ratio = Uniform(rng, 1.f, expand.max_expand_ratio());
  const int height = static_cast<int>(image.rows * ratio), width = static_cast<int>(image.cols * ratio);
  const float y = std::floor(Uniform(rng, 0.f, static_cast<float>(height - image.rows)));
  const float x = std::floor(Uniform(rng, 0.f, static_cast<float>(width - image.cols)));
  *window = Box{-x / image.cols, -y / image.rows, (width - x) / image.cols,
                (height - y) / image.rows};
  cv::Scalar value(0, 0, 0, 0);
  for (int c = 0; c < image.channels() && c < 4; ++c)
    value[c] = fill.empty() ? 0.0 : fill[fill.size() == 1 ? 0 : c];
  cv::Mat canvas(height, width, image.type(), value);
  image.copyTo(canvas(cv::Rect(static_cast<int>(x), static_cast<int>(y), image.cols, image.rows)));
  return canvas;
}

cv::Mat Distort(const cv::Mat& image, const caffe::DistortionParameter& d, Rng& rng) {
  auto brightness = [&](const cv::Mat& in) {
    return Happens(rng, d.brightness_prob())
               ? Brightness(in, Uniform(rng, -d.brightness_delta(), d.brightness_delta()))
               : in;
  };
  auto contrast = [&](const cv::Mat& in) {
    return Happens(rng, d.contrast_prob())
               ? Contrast(in, Uniform(rng, d.contrast_lower(), d.contrast_upper()))
               : in;
  };
  auto saturation = [&](const cv::Mat& in) {
    if (!Happens(rng, d.saturation_prob())) return in;
    const float factor = Uniform(rng, d.saturation_lower(), d.saturation_upper());
    return std::fabs(factor - 1.f) > 1e-3f ? AdjustHsv(in, 1, factor, 0) : in;
  };
  auto hue = [&](const cv::Mat& in) {
    if (!Happens(rng, d.hue_prob())) return in;
    const float delta = Uniform(rng, -d.hue_delta(), d.hue_delta());
    return std::fabs(delta) > 0 ? AdjustHsv(in, 0, 1, delta) : in;
  };
  cv::Mat out = image;
  if (Uniform(rng, 0.f, 1.f) > 0.5f) {
    out = hue(saturation(contrast(brightness(out))));
  } else {
    out = contrast(hue(saturation(brightness(out))));
  }
  if (Happens(rng, d.random_order_prob())) {
    std::vector<cv::Mat> planes;
    cv::split(out, planes);
    std::shuffle(planes.begin(), planes.end(), rng);
    cv::merge(planes, out);
  }
  return out;
}

}  // namespace ssd
}  // namespace dlcaffe
