// Net::Explain: what a whole forward pass runs, step by step, as the plan
// and the layers' choices say (dlcaffe time|bench --explain).
#include <sstream>

#include "core/execution_plan.hpp"
#include "dlcaffe/net.hpp"

namespace dlcaffe {

namespace {

// "float32 x2, float16" for the blobs `ids` of the net.
std::string EdgeList(const ExecutionPlan& plan, const std::vector<int>& ids) {
  std::string text;
  for (size_t k = 0; k < ids.size();) {
    const std::string type = plan.edge(ids[k]).Describe();
    size_t run = 1;
    while (k + run < ids.size() && plan.edge(ids[k + run]).Describe() == type) ++run;
    text += (text.empty() ? "" : ", ") + type + (run > 1 ? " x" + std::to_string(run) : "");
    k += run;
  }
  return text.empty() ? "-" : text;
}

}  // namespace

std::string Net::Explain() const { return ExplainSteps(nullptr); }

std::string Net::ExplainWithProducts() {
  std::vector<std::vector<std::string>> products(layers_.size());
  step_products_ = &products;
  try {
    Forward();
  } catch (...) {
    step_products_ = nullptr;
    throw;
  }
  step_products_ = nullptr;
  return ExplainSteps(&products);
}

std::string Net::ExplainSteps(const std::vector<std::vector<std::string>>* products) const {
  std::ostringstream out;
  const int n = static_cast<int>(layers_.size());
  out << "net '" << name_ << "': " << n << " layers"
      << (options_.fusion ? "" : " (fusion off)") << "\n";
  if (n == 0) return out.str();
  const std::vector<ForwardStep> steps = plan_->ForwardSteps(*this, 0, n - 1, false);
  for (size_t s = 0; s < steps.size(); ++s) {
    const ForwardStep& step = steps[s];
    const Layer& layer = *layers_[step.layer];
    out << "step " << s << ": '" << layer_names_[step.layer] << "' (" << layer.type() << ")";
    if (step.absorbed) {
      out << " folds";
      for (int j = step.layer + 1; j <= step.layer + step.absorbed; ++j)
        out << " '" << layer_names_[j] << "'";
      out << (step.channel_affine ? " as a channel affine" : " as its scale");
    }
    if (step.relu)
      out << (step.absorbed ? "," : "") << " clamps for '"
          << layer_names_[step.layer + step.absorbed + 1] << "'"
          << (step.relu_diff_mask ? " (and masks its diff)" : "");
    out << "\n    in " << EdgeList(*plan_, bottom_id_vecs_[step.layer]) << " -> out "
        << EdgeList(*plan_, top_id_vecs_[step.layer]) << "; " << layer.choices().Describe();
    const std::string algorithm = layer.DescribeAlgorithm();
    if (!algorithm.empty()) out << "; " << algorithm;
    out << "\n";
    if (products && step.layer < static_cast<int>(products->size()))
      for (const std::string& product : (*products)[step.layer])
        out << "    product " << product << "\n";
  }
  return out.str();
}

}  // namespace dlcaffe
