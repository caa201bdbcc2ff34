#include "gradient_buckets.hpp"

#include <algorithm>
#include <numeric>

#include "core/execution_plan.hpp"

namespace dlcaffe {

std::vector<int> GradientFinalLayers(const Net& net) {
  const int layers = static_cast<int>(net.layers().size());
  // A layer absorbed by an earlier one has its backward done by that one.
  std::vector<int> runs_backward_in(layers);
  std::iota(runs_backward_in.begin(), runs_backward_in.end(), 0);
  for (int i = 0; i < layers; ++i)
    for (int j = i + 1; j <= i + net.plan().absorbs_after(i) && j < layers; ++j)
      runs_backward_in[j] = std::min(runs_backward_in[j], runs_backward_in[i]);
  const auto& learnable = net.learnable_params();
  std::vector<int> final_layer(learnable.size(), layers);
  for (int l = 0; l < layers; ++l)
    for (const auto& blob : net.layers()[l]->blobs())
      for (size_t p = 0; p < learnable.size(); ++p)
        // Shared parameters share the owner's storage.
        if (blob->data() == learnable[p]->data())
          final_layer[p] = std::min(final_layer[p], runs_backward_in[l]);
  for (int& layer : final_layer) layer = std::min(layer, std::max(0, layers - 1));
  return final_layer;
}

std::vector<size_t> BucketCapacities(size_t total, size_t capacity, bool taper) {
  capacity = std::max<size_t>(1, capacity);
  std::vector<size_t> sizes;
  if (!taper) {  // full buckets, the rest last
    for (size_t left = total; left > 0; left -= sizes.back())
      sizes.push_back(std::min(left, capacity));
    return sizes;
  }
  // From the last bucket up, then turned into send order.
  size_t next = std::max<size_t>(1, capacity / 16);
  for (size_t left = total; left > 0; left -= sizes.back()) {
    sizes.push_back(std::min(left, next));
    next = std::min(capacity, next * 2);
  }
  std::reverse(sizes.begin(), sizes.end());
  return sizes;
}

std::vector<GradientBucket> PlanGradientBuckets(const Net& net, size_t bucket_bytes,
                                                bool taper) {
  const auto& learnable = net.learnable_params();
  const std::vector<int> final_layer = GradientFinalLayers(net);
  std::vector<int> order(learnable.size());
  std::iota(order.begin(), order.end(), 0);
  // Top layers first: their gradients are final first.
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return final_layer[a] > final_layer[b]; });
  size_t total = 0;
  for (const Blob* param : learnable) total += param->count();
  const std::vector<size_t> capacities =
      BucketCapacities(total, bucket_bytes / sizeof(float), taper);
  std::vector<GradientBucket> buckets;
  size_t start = 0;
  for (int p : order) {
    const size_t count = learnable[p]->count();
    for (size_t offset = 0; offset < count;) {
      if (buckets.empty() || buckets.back().count == capacities[buckets.size() - 1]) {
        buckets.emplace_back();
        buckets.back().start = start;
      }
      GradientBucket& bucket = buckets.back();
      const size_t piece =
          std::min(count - offset, capacities[buckets.size() - 1] - bucket.count);
      bucket.pieces.push_back({p, offset, piece, start});
      bucket.count += piece;
      bucket.final_after_layer = final_layer[p];
      offset += piece;
      start += piece;
    }
  }
  return buckets;
}

}  // namespace dlcaffe
