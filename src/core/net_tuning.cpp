#include "core/net_tuning.hpp"

#include <algorithm>
#include <chrono>
#include <numeric>

#include "dlcaffe/blob.hpp"
#include "dlcaffe/context.hpp"
#include "dlcaffe/net.hpp"

namespace dlcaffe {

namespace {

using Clock = std::chrono::steady_clock;

double MillisecondsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

void ForwardBackward(Context& ctx, Net& net) {
  net.Forward();
  net.Backward();
  ctx.Finish();
}

// One forward + backward pass with each set of choices, fastest of 3
// rounds, the two sets alternating so that drift of the device's clocks
// hits both alike.
std::pair<double, double> TimeNetBothWays(Context& ctx, Net& net,
                                          const std::map<GemmShapeKey, GemmConfig>& first,
                                          const std::map<GemmShapeKey, GemmConfig>& second,
                                          int iterations) {
  double best[2] = {1e30, 1e30};
  const std::map<GemmShapeKey, GemmConfig>* choices[2] = {&first, &second};
  for (int round = 0; round < 3; ++round)
    for (int which = 0; which < 2; ++which) {
      ScopedGemmChoices scope(ctx, *choices[which]);
      ForwardBackward(ctx, net);  // warm-up (and builds, the first time)
      const Clock::time_point start = Clock::now();
      for (int i = 0; i < iterations; ++i) {
        net.Forward();
        net.Backward();
      }
      ctx.Finish();
      best[which] = std::min(best[which], MillisecondsSince(start) / iterations);
    }
  return {best[0], best[1]};
}

}  // namespace

NetTuningReport TuneNet(Context& ctx, Net& net, const NetTuningOptions& options) {
  const Clock::time_point start = Clock::now();
  NetTuningReport report;
  // Only the shapes matter: zeros are valid data and labels for any net.
  for (Blob* input : net.input_blobs()) input->WriteData(std::vector<float>(input->count(), 0.f));
  std::vector<GemmArgs> products;
  {
    const std::map<GemmShapeKey, GemmConfig> rule_only;
    ScopedGemmChoices scope(ctx, rule_only);
    GemmRecording recording(ctx);
    ForwardBackward(ctx, net);  // also builds the rule's kernels
    products = recording.products();
  }
  report.products = static_cast<int>(products.size());
  // The budget covers the whole run: candidates stop early enough for the
  // last one to finish (allowed 1.5 s: a build and its timing) and for the
  // closing comparison of the whole net (3 rounds each way of a warm-up and
  // net_iterations passes).
  const Clock::time_point pass_start = Clock::now();
  ForwardBackward(ctx, net);
  const double pass_ms = MillisecondsSince(pass_start);
  const double reserve_ms = 6.0 * (1 + options.net_iterations) * pass_ms + 1500.0;
  const Clock::time_point deadline =
      start + std::chrono::microseconds(
                  static_cast<long long>(options.budget_seconds * 1e6 - reserve_ms * 1e3));

  // The costliest first, by arithmetic (timing each product's rule first
  // cost more than the budget on vgg16's large products).
  std::vector<double> flops(products.size());
  for (size_t i = 0; i < products.size(); ++i)
    flops[i] = 2.0 * products[i].M * products[i].N * products[i].K * products[i].batch;
  std::vector<size_t> order(products.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return flops[a] > flops[b]; });
  const double total_flops = std::accumulate(flops.begin(), flops.end(), 0.0);

  std::map<GemmShapeKey, GemmConfig> winners, rule_choices;
  double tuned_flops = 0;
  for (size_t i : order) {
    if (Clock::now() >= deadline) break;
    GemmTuning t = TuneGemm(ctx, products[i], options.iterations, deadline);
    ++report.tuned;
    tuned_flops += flops[i];
    rule_choices[t.key] = t.rule;
    if (t.best.Name() != t.rule.Name()) winners[t.key] = t.best;
    report.tunings.push_back(t);
  }
  report.tuned_share = total_flops > 0 ? tuned_flops / total_flops : 1.0;

  const std::map<GemmShapeKey, GemmConfig> rule_only;
  const auto times = TimeNetBothWays(ctx, net, rule_only, winners, options.net_iterations);
  report.net_rule_ms = times.first;
  report.net_tuned_ms = times.second;
  report.kept = !winners.empty() && report.net_tuned_ms < report.net_rule_ms;
  report.stored = report.kept ? winners : rule_choices;
  if (!report.stored.empty()) StoreTunedGemmConfigs(ctx, report.stored);
  report.seconds = MillisecondsSince(start) / 1e3;
  return report;
}

}  // namespace dlcaffe
