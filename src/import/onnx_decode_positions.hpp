// A language model imported for decoding (OnnxImportOptions::
// incremental_decoding): what it computes from absolute positions runs on
// the device from a Positions layer, so that it follows the decode position
// while the key/value caches hold the earlier tokens.
//
// An exported causal LM computes its positions as an arange over the token
// axis (Range(0, sequence length, 1)); the importer folds everything built
// from it on the host: the position ids, the rotary tables' angles, the
// causal mask. Decoding runs one new token at position p, but that host
// arithmetic would say position 0. So the import tracks which folded values
// follow the positions:
// - the arange over the token axis's length is a source;
// - a value computed on the host from a following one follows them too,
//   except a comparison or difference of two following values (their shift
//   cancels: the causal mask, which the attention fusion turns into the
//   Attention layer's causal flag, and which its cache extends);
// - where a following value meets run-time data (a node that makes layers),
//   it is computed on the device instead: the nodes that built it from the
//   arange are imported once more on a Positions layer's output.
// Shapes never follow positions. A comparison of positions with a fixed
// number would (position < 5), and follows them.
#pragma once
#include <deque>
#include <map>
#include <set>
#include <string>

#include "import/onnx_graph.hpp"

namespace dlcaffe {
namespace onnx_import {

class DecodePositions {
 public:
  // `token_input`: the graph input whose last dynamic axis is the token axis.
  DecodePositions(Graph& graph, const onnx::ValueInfoProto& token_input,
                  const std::vector<int64_t>& token_shape);

  // The node to import in place of `node`: itself, or, where values that
  // follow positions meet run-time data, a copy reading their run-time
  // versions.
  const onnx::NodeProto& Prepare(const onnx::NodeProto& node, int index);
  // After `node` (the original) was imported: which of its outputs follow
  // positions.
  void Record(const onnx::NodeProto& node, int index);

  // How many values were computed on the device from positions, for the log.
  int run_time_values() const { return static_cast<int>(run_time_.size()); }
  bool found_positions() const { return !sources_.empty(); }

 private:
  // The blob of the run-time version of value `name` (which follows positions).
  std::string RunTime(const std::string& name);

  Graph& graph_;
  std::string token_input_;
  int token_axis_ = -1;
  int64_t length_ = 0;                               // the token axis's length in this import
  std::set<std::string> from_shapes_;                // values computed from shapes
  std::set<std::string> sources_;                    // the aranges over the token axis
  std::map<std::string, std::pair<const onnx::NodeProto*, int>> following_;  // value -> its node
  std::map<std::string, std::string> run_time_;      // value -> its run-time blob
  std::deque<onnx::NodeProto> rewritten_;            // the copies imported (NodeContext keeps a reference)
};

}  // namespace onnx_import
}  // namespace dlcaffe
