// The loss `dlcaffe bench --mode=train` gives an imported classifier
// (net_pass.hpp): a description rewrite like the others, so that it lives
// with them and is testable alone.
#include <set>

#include "dlcaffe/error.hpp"
#include "passes/net_pass.hpp"

namespace dlcaffe {

void AddClassifierLoss(caffe::NetParameter* net, const std::vector<int>& output_shape,
                       const std::string& where) {
  std::set<std::string> read;
  for (const auto& layer : net->layer())
    for (const auto& b : layer.bottom()) read.insert(b);
  std::string output;
  for (const auto& layer : net->layer())
    for (const auto& t : layer.top())
      if (output.empty() && !read.count(t) && layer.type() != "Input") output = t;
  DLC_REQUIRE(!output.empty() && net->layer_size() > 0 && net->layer(0).type() == "Input",
              where << ": training needs a model with an input and an output");
  DLC_REQUIRE(output_shape.size() >= 2, where << ": training needs an output of at least "
                                                  "2 axes (batch x classes), got "
                                               << output_shape.size());
  caffe::LayerParameter* label = net->add_layer();
  label->set_name("label");
  label->set_type("Input");
  label->add_top("label");
  caffe::BlobShape* label_shape = label->mutable_input_param()->add_shape();
  for (size_t d = 0; d + 1 < output_shape.size(); ++d) label_shape->add_dim(output_shape[d]);
  caffe::LayerParameter* loss = net->add_layer();
  loss->set_name("loss");
  loss->set_type("SoftmaxWithLoss");
  loss->mutable_softmax_param()->set_axis(-1);
  loss->add_bottom(output);
  loss->add_bottom("label");
  loss->add_top("loss");
}

}  // namespace dlcaffe
