// The inference memory plan (Net::PlanInferenceMemory): activation storages
// whose lifetimes in the forward order do not overlap share one device buffer.
//
// - A storage is what the layers made one: blobs that share a data buffer
//   because a layer shares its top with its bottom (Split, Flatten, Reshape,
//   one-input Concat, ... call Blob::ShareData in Reshape). It is read off the
//   buffers after the layers' Reshape, never off layer types. Blobs on one
//   buffer are one storage where their lifetimes overlap (a layer that shares
//   its top with its bottom uses both), so the sharing of an earlier plan
//   (disjoint lifetimes) is not taken for a layer's.
// - A storage lives from the first layer that touches one of its blobs to the
//   last; an in-place layer touches the same blob, so extends it. Layers that
//   Net fusion skips stand in the order where they are and only touch blobs
//   that the layer which absorbs them touches too, so lifetimes hold with
//   fusion on and off.
// - A storage whose buffer has owners besides the net's activation blobs (a
//   parameter, a layer's internal blob) is left alone; net inputs, outputs,
//   loss tops and kept blobs keep storage of their own; the rest are placed
//   greedily, largest first, each into the smallest slot none of whose
//   storages it overlaps (else a new slot).
#pragma once
#include <algorithm>
#include <climits>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "dlcaffe/net.hpp"

namespace dlcaffe {

// Layers [first, last] (forward order) that use a blob or storage.
struct Lifetime {
  int first = INT_MAX;
  int last = -1;
  void Extend(int layer) {
    first = std::min(first, layer);
    last = std::max(last, layer);
  }
  void Extend(const Lifetime& other) {
    first = std::min(first, other.first);
    last = std::max(last, other.last);
  }
  bool Overlaps(const Lifetime& other) const {
    return first <= other.last && other.first <= last;
  }
};

// Each blob's lifetime from the wiring: the layers that read (bottom_ids) or
// write (top_ids) it, counted in the steps of the execution plan that do
// those layers' work (step_of_layer; empty: a step per layer). Blobs used
// within one fused step live together.
std::vector<Lifetime> BlobLifetimes(int num_blobs,
                                    const std::vector<std::vector<int>>& bottom_ids,
                                    const std::vector<std::vector<int>>& top_ids,
                                    const std::vector<int>& step_of_layer = {});

// Greedy placement of storages (bytes, lifetime) into slots: slot_of[i] is
// storage i's slot; a slot is as large as its largest storage.
struct SlotPlacement {
  std::vector<int> slot_of;
  std::vector<size_t> slot_bytes;
};
SlotPlacement PlaceInSlots(const std::vector<size_t>& bytes,
                           const std::vector<Lifetime>& lifetimes);

// Storages: the blobs on one buffer (their data, or their diffs where
// `diffs`) whose lifetimes overlap, transitively; a blob without that buffer
// is in none (-1). Numbered in blob order, so a plan is stable.
struct Storages {
  std::vector<int> of_blob;
  std::vector<std::vector<int>> members;
  // The buffer has owners besides the net's blobs (a parameter, a layer's
  // own blob): a plan leaves it alone.
  std::vector<bool> held_elsewhere;
  std::vector<size_t> bytes;  // its largest blob's
  std::vector<Lifetime> life;
};
Storages GroupStorages(const std::vector<std::shared_ptr<Blob>>& blobs,
                       const std::vector<Lifetime>& blob_life, bool diffs);

// One buffer per slot of `placement` (slot_storages[slot]: its storages):
// a slot reuses the smallest buffer of its storages (`buffer_of`) that fits
// and is not in `taken`, else a new one; each chosen buffer joins `taken`.
std::vector<BufferPtr> SlotBuffers(Context& ctx, const SlotPlacement& placement,
                                   const std::vector<std::vector<int>>& slot_storages,
                                   const std::function<BufferPtr(int)>& buffer_of,
                                   std::set<const Buffer*>* taken);

// Host reads that a plan blocks between the net's passes (the blobs' storage
// holds another blob's values then), each with its message. During a pass a
// layer may read (Filter reads its selector in Reshape; debug_info logs the
// diffs a backward wrote): a Pass lifts the blocks for its scope.
class ReadBlocks {
 public:
  explicit ReadBlocks(bool diffs) : diffs_(diffs) {}
  // Lifts every block and forgets the blobs.
  void Clear();
  void Add(Blob* blob, std::string reason) { blocked_.emplace_back(blob, std::move(reason)); }
  // Blocks the blobs added, unless a pass is under way (it blocks them as it ends).
  void BlockOutsidePasses() {
    if (!in_pass_) Set(true);
  }

  class Pass {
   public:
    explicit Pass(ReadBlocks* blocks);  // null: nothing to lift
    ~Pass();
    Pass(const Pass&) = delete;
    Pass& operator=(const Pass&) = delete;

   private:
    ReadBlocks* blocks_;
  };

 private:
  void Set(bool blocked);

  bool diffs_;
  std::vector<std::pair<Blob*, std::string>> blocked_;
  bool in_pass_ = false;
};

// A blob's bytes in its storage type.
size_t BlobBytes(const Blob& blob);
// Bytes of the blobs' distinct data buffers (or diff buffers, where `diffs`),
// each counted once at the size of its largest holder.
size_t DistinctBytes(const std::vector<std::shared_ptr<Blob>>& blobs, bool diffs);

// Megabytes with one decimal ("12.5 MiB"), for the plans' logs.
std::string Megabytes(size_t bytes);

// The plan of one net: where its activation blobs keep their data.
class InferenceMemoryPlan {
 public:
  // The blobs that keep storage of their own besides inputs, outputs and loss
  // tops (applies from the next Apply).
  void set_keep(std::vector<std::string> keep) { keep_ = std::move(keep); }

  // Places the net's activation storage for the blobs' current shapes (the
  // layers must have been reshaped), releases their diffs, frees the buffers
  // no longer used, and logs and returns the bytes without and with the plan.
  ActivationMemory Apply(const Net& net);
  // Whether an input has another shape than at the last Apply.
  bool InputsReshaped(const Net& net) const;
  // `net` is about to be replaced by a rebuild with other blobs (it follows
  // its input shapes): lifts the read blocks while its blobs still exist,
  // and keeps what the first Apply found by blob name for the next Apply.
  void ForgetBlobsOf(const Net& net);

  // The blobs that share storage hold no value between the net's passes, so
  // host reads of them are blocked (a ReadBlocks::Pass lifts them).
  ReadBlocks* read_blocks() { return &blocks_; }

 private:

  std::vector<std::string> keep_;
  std::vector<std::vector<int>> input_shapes_;
  // Blob -> its diff buffer without the plan (-1: none), as found at the
  // first Apply (Split tops share data, not diffs): the "without" bytes.
  std::vector<int> unplanned_diff_of_blob_;
  // The same by blob name, across a rebuild (ForgetBlobsOf).
  std::map<std::string, int> unplanned_diff_by_name_;
  // The blobs whose storage later layers reuse.
  ReadBlocks blocks_{false};
};

}  // namespace dlcaffe
