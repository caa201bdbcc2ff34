#include "util/gradient_checker.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

namespace dlcaffe {
namespace test {

namespace {

double Objective(const std::vector<Blob*>& top,
                 const std::vector<std::vector<float>>& weights) {
  double e = 0;
  for (size_t t = 0; t < top.size(); ++t) {
    std::vector<float> v = top[t]->ReadData();
    for (size_t i = 0; i < v.size(); ++i) e += double(weights[t][i]) * v[i];
  }
  return e;
}

}  // namespace

void CheckGradient(Layer& layer, const std::vector<Blob*>& bottom,
                   const std::vector<Blob*>& top, const std::vector<int>& bottoms_to_check,
                   const GradientCheckOptions& options) {
  if (!options.check_bottoms && !bottoms_to_check.empty()) {
    ADD_FAILURE() << "bottoms_to_check given with options.check_bottoms false";
    return;
  }
  std::mt19937 rng(options.seed);
  std::uniform_real_distribution<float> uniform(-1.f, 1.f);

  std::vector<int> bottoms = bottoms_to_check;
  if (bottoms.empty() && options.check_bottoms)
    for (size_t i = 0; i < bottom.size(); ++i) bottoms.push_back(static_cast<int>(i));

  // The blobs to differentiate: chosen bottoms, then the parameters.
  struct Target {
    Blob* blob;
    std::string name;
    bool is_bottom;
  };
  std::vector<Target> targets;
  for (int b : bottoms) targets.push_back({bottom[b], "bottom " + std::to_string(b), true});
  if (options.check_params)
    for (size_t p = 0; p < layer.blobs().size(); ++p)
      targets.push_back({layer.blobs()[p].get(), "param " + std::to_string(p), false});

  // Analytic gradient.
  layer.Forward(bottom, top);
  // Zero the diffs first: a layer may share its top's diff with a bottom
  // (Flatten, Reshape), and the top diffs must survive.
  for (auto& p : layer.blobs()) p->SetDiff(0.f);
  std::vector<bool> propagate_down(bottom.size(), false);
  for (int b : bottoms) propagate_down[b] = true;
  for (int b : bottoms) bottom[b]->SetDiff(0.f);
  std::vector<std::vector<float>> weights(top.size());
  for (size_t t = 0; t < top.size(); ++t) {
    weights[t].resize(top[t]->count());
    for (float& w : weights[t]) w = uniform(rng);
    top[t]->WriteDiff(weights[t]);
  }
  layer.Backward(top, propagate_down, bottom);
  std::vector<std::vector<float>> analytic;
  for (const auto& target : targets) analytic.push_back(target.blob->ReadDiff());

  // Numeric gradient, element by element.
  for (size_t ti = 0; ti < targets.size(); ++ti) {
    Blob* blob = targets[ti].blob;
    std::vector<float> values = blob->ReadData();
    const int count = blob->count();
    const int stride = std::max(1, count / options.max_checks_per_blob);
    for (int i = 0; i < count; i += stride) {
      const float original = values[i];
      if (options.kink_range > 0 && targets[ti].is_bottom &&
          std::fabs(original - options.kink) < options.kink_range)
        continue;
      float plus = original + options.step;
      blob->WriteData(&plus, 1, i);
      layer.Forward(bottom, top);
      const double e_plus = Objective(top, weights);
      float minus = original - options.step;
      blob->WriteData(&minus, 1, i);
      layer.Forward(bottom, top);
      const double e_minus = Objective(top, weights);
      blob->WriteData(&original, 1, i);
      const float numeric = static_cast<float>((e_plus - e_minus) / (2 * options.step));
      const float computed = analytic[ti][i];
      const float scale =
          std::max({std::fabs(computed), std::fabs(numeric), 1.f});
      EXPECT_NEAR(computed, numeric, options.threshold * scale)
          << layer.type() << " '" << layer.name() << "', " << targets[ti].name
          << ", element " << i << " of " << count << " (value " << original << ")";
    }
  }
  // Leave the tops consistent with the unperturbed inputs.
  layer.Forward(bottom, top);
}

}  // namespace test
}  // namespace dlcaffe
