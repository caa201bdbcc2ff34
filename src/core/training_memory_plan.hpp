// The training memory plan (Net::PlanTrainingMemory; a solver's train net
// has it unless RunOptions::share_diffs is off): activation diffs whose
// lifetimes do not overlap share one device buffer, as PyTorch frees each
// activation's gradient once the backward has used it.
//
// - A backward pass writes a blob's diff in the backward of the layers that
//   read the blob and reads it in the backward of the layers that wrote it
//   (an in-place layer does both). So a diff is used within the same layers
//   [first, last] as the blob's data (BlobLifetimes, in the steps of the
//   execution plan: a training BatchNorm's backward reads the diff of the
//   Scale it absorbed), only in the reverse order; between passes no diff
//   holds a value the next pass reads, except those kept below.
// - Storages as the inference plan finds them (GroupStorages), from the diff
//   buffers: a Flatten's top shares its bottom's diff, a Split's tops have
//   their own.
// - Keep their own diffs: net inputs (a caller reads their gradient), net
//   outputs (a caller may set their diffs: pycaffe's net.backward(diffs)),
//   loss tops (they hold the loss weight), tops whose diff a backward reads
//   but none writes (ClearUnwrittenTopDiffs keeps them zero), the blobs
//   named in `keep`, and buffers something besides the net's blobs holds.
// - Diffs that no backward reads or writes (a data layer's tops, labels)
//   are released; Blob::diff makes one again if something asks.
// - The rest are placed greedily (PlaceInSlots); their host reads (ReadDiff,
//   pycaffe's .diff) are blocked outside backward passes.
#pragma once
#include <string>
#include <vector>

#include "core/memory_plan.hpp"
#include "dlcaffe/net.hpp"

namespace dlcaffe {

class TrainingMemoryPlan {
 public:
  explicit TrainingMemoryPlan(std::vector<std::string> keep) : keep_(std::move(keep)) {}

  // Places the diffs for the blobs' current shapes and the net's current
  // execution plan; logs and returns the diff bytes without and with it.
  ActivationMemory Apply(const Net& net);
  // Whether a blob in a shared slot changed its count since the last Apply
  // (one that grew took fresh buffers of its own: right, but no longer
  // shared).
  bool BlobsResized(const Net& net) const;
  // The net's blobs are about to be replaced (a rebuild for new input
  // shapes): lifts the read blocks while they still exist.
  void ForgetBlobs() {
    blocks_.Clear();
    counts_.clear();
  }
  ReadBlocks* read_blocks() { return &blocks_; }

 private:
  std::vector<std::string> keep_;
  std::vector<int> counts_;  // per blob: its count at the last Apply if shared, else -1
  ReadBlocks blocks_{true};
};

}  // namespace dlcaffe
