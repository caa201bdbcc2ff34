#include "core/training_memory_plan.hpp"

#include <glog/logging.h>

#include <map>
#include <set>

#include "core/execution_plan.hpp"
#include "dlcaffe/context.hpp"

namespace dlcaffe {

namespace {

// Whether a backward pass writes blob b's diff (a layer that reads b
// propagates down to it) and whether one reads it (a layer that wrote b
// runs backward).
struct DiffUse {
  std::vector<bool> written, read;
};
DiffUse DiffUses(const Net& net) {
  const int num_blobs = static_cast<int>(net.blobs().size());
  DiffUse use{std::vector<bool>(num_blobs, false), std::vector<bool>(num_blobs, false)};
  for (size_t i = 0; i < net.layers().size(); ++i) {
    if (!net.layer_need_backward()[i]) continue;
    for (size_t b = 0; b < net.bottom_ids()[i].size(); ++b)
      if (net.bottom_need_backward()[i][b]) use.written[net.bottom_ids()[i][b]] = true;
    for (int t : net.top_ids()[i]) use.read[t] = true;
  }
  return use;
}

}  // namespace

ActivationMemory TrainingMemoryPlan::Apply(const Net& net) {
  const auto& blobs = net.blobs();
  const int num_blobs = static_cast<int>(blobs.size());
  const std::vector<Lifetime> blob_life =
      BlobLifetimes(num_blobs, net.bottom_ids(), net.top_ids(), net.plan().StepOfLayers(net));
  const DiffUse use = DiffUses(net);
  const auto loss_weight = [&](int b) {
    return b < static_cast<int>(net.blob_loss_weights().size()) ? net.blob_loss_weights()[b]
                                                                 : 0.f;
  };

  // Released: no backward uses the diff (nothing else holds it).
  ActivationMemory memory;
  int released = 0;
  for (int b = 0; b < num_blobs; ++b) {
    const BufferPtr& diff = blobs[b]->diff_storage();
    const bool unused = !use.read[b] && !use.written[b] && loss_weight(b) == 0.f;
    if (unused && (!diff || diff.use_count() == 1)) {
      // Counted as the diff it would hold without the plan.
      memory.bytes_without_plan += BlobBytes(*blobs[b]);
      blobs[b]->ReleaseDiff();
      ++released;
    }
  }

  const Storages storages = GroupStorages(blobs, blob_life, true);
  const int num_storages = static_cast<int>(storages.members.size());
  std::vector<bool> own(num_storages, false);  // keeps its own buffer
  std::vector<bool> keep(num_blobs, false);
  for (const Blob* input : net.input_blobs())
    for (int b = 0; b < num_blobs; ++b) keep[b] = keep[b] || blobs[b].get() == input;
  for (int b : net.output_blob_indices()) keep[b] = true;
  for (const std::string& name : keep_)
    for (int b = 0; b < num_blobs; ++b) keep[b] = keep[b] || net.blob_names()[b] == name;
  for (int b = 0; b < num_blobs; ++b) {
    const int s = storages.of_blob[b];
    if (s < 0) continue;
    const bool unwritten = use.read[b] && !use.written[b];
    if (keep[b] || unwritten || loss_weight(b) != 0.f || storages.held_elsewhere[s])
      own[s] = true;
  }

  std::vector<int> shared;
  std::vector<size_t> shared_bytes;
  std::vector<Lifetime> shared_life;
  std::set<const Buffer*> taken;
  for (int s = 0; s < num_storages; ++s) {
    memory.bytes_without_plan += storages.bytes[s];
    const BufferPtr& buffer = blobs[storages.members[s][0]]->diff_storage();
    if (own[s]) {
      taken.insert(buffer.get());
      continue;
    }
    shared.push_back(s);
    shared_bytes.push_back(storages.bytes[s]);
    shared_life.push_back(storages.life[s]);
  }
  // A buffer kept by its own storage that an earlier plan also gave a slot
  // stays with that storage: the slot takes another (SlotBuffers skips it).
  const SlotPlacement placement = PlaceInSlots(shared_bytes, shared_life);
  const int num_slots = static_cast<int>(placement.slot_bytes.size());
  std::vector<std::vector<int>> slot_storages(num_slots);
  for (size_t i = 0; i < shared.size(); ++i) slot_storages[placement.slot_of[i]].push_back(shared[i]);
  Context& ctx = net.context();
  const std::vector<BufferPtr> slot_buffers = SlotBuffers(
      ctx, placement, slot_storages,
      [&](int s) { return blobs[storages.members[s][0]]->diff_storage(); }, &taken);
  for (int slot = 0; slot < num_slots; ++slot)
    for (int s : slot_storages[slot])
      for (int b : storages.members[s])
        if (blobs[b]->diff_storage() != slot_buffers[slot]) blobs[b]->UseDiffStorage(slot_buffers[slot]);

  blocks_.Clear();
  for (int s : shared)
    for (int b : storages.members[s])
      blocks_.Add(blobs[b].get(),
                  "the diff of blob '" + net.blob_names()[b] + "' of net '" + net.name() +
                      "' holds no gradient outside the backward pass: the training memory "
                      "plan lets other blobs' gradients reuse its storage (to read it, turn "
                      "the plan off: DLCAFFE_SHARE_DIFFS=off, or dlcaffe --options="
                      "share_diffs=off)");
  blocks_.BlockOutsidePasses();
  // Only a blob in a shared slot must keep its size: one with a buffer of
  // its own (AnnotatedData's boxes, whose number changes every batch) may
  // grow without a new plan.
  counts_.assign(blobs.size(), -1);
  for (int s : shared)
    for (int b : storages.members[s]) counts_[b] = blobs[b]->count();
  ctx.pool().Trim();

  memory.bytes_with_plan = DistinctBytes(blobs, true);
  int own_count = 0;
  for (int s = 0; s < num_storages; ++s) own_count += own[s];
  LOG(INFO) << "Training memory plan for net '" << net.name() << "': activation diffs take "
            << Megabytes(memory.bytes_with_plan) << " instead of "
            << Megabytes(memory.bytes_without_plan) << " (" << memory.bytes_with_plan << " / "
            << memory.bytes_without_plan << " bytes): " << shared.size() << " share "
            << num_slots << " buffers, " << own_count
            << " keep their own (inputs, outputs, loss tops, unwritten, kept or held by "
               "layers), "
            << released << " released (no backward uses them)";
  return memory;
}

bool TrainingMemoryPlan::BlobsResized(const Net& net) const {
  if (counts_.size() != net.blobs().size()) return true;
  for (size_t b = 0; b < counts_.size(); ++b)
    if (counts_[b] >= 0 && net.blobs()[b]->count() != counts_[b]) return true;
  return false;
}

}  // namespace dlcaffe
