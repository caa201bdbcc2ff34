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
#include <map>
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
  // host reads of them are blocked; during a pass a layer may read a bottom
  // (Filter reads its selector in Reshape). Lifts the block for its scope.
  class OwnPass {
   public:
    explicit OwnPass(InferenceMemoryPlan* plan);
    ~OwnPass();
    OwnPass(const OwnPass&) = delete;
    OwnPass& operator=(const OwnPass&) = delete;

   private:
    InferenceMemoryPlan* plan_;
  };

 private:
  void BlockReads(bool blocked);

  std::vector<std::string> keep_;
  std::vector<std::vector<int>> input_shapes_;
  // Blob -> its diff buffer without the plan (-1: none), as found at the
  // first Apply (Split tops share data, not diffs): the "without" bytes.
  std::vector<int> unplanned_diff_of_blob_;
  // The same by blob name, across a rebuild (ForgetBlobsOf).
  std::map<std::string, int> unplanned_diff_by_name_;
  // The blobs whose storage later layers reuse, with their read error.
  std::vector<std::pair<Blob*, std::string>> blocked_;
  bool in_own_pass_ = false;
};

}  // namespace dlcaffe
