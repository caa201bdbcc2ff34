#include "core/memory_plan.hpp"

#include <glog/logging.h>

#include <algorithm>
#include <iomanip>
#include <map>
#include <numeric>
#include <set>
#include <sstream>

#include "core/execution_plan.hpp"
#include "dlcaffe/context.hpp"

namespace dlcaffe {

std::vector<Lifetime> BlobLifetimes(int num_blobs,
                                    const std::vector<std::vector<int>>& bottom_ids,
                                    const std::vector<std::vector<int>>& top_ids,
                                    const std::vector<int>& step_of_layer) {
  std::vector<Lifetime> lifetimes(num_blobs);
  for (size_t layer = 0; layer < top_ids.size(); ++layer) {
    const int step = step_of_layer.empty() ? static_cast<int>(layer) : step_of_layer[layer];
    for (int blob : bottom_ids[layer]) lifetimes[blob].Extend(step);
    for (int blob : top_ids[layer]) lifetimes[blob].Extend(step);
  }
  return lifetimes;
}

SlotPlacement PlaceInSlots(const std::vector<size_t>& bytes,
                           const std::vector<Lifetime>& lifetimes) {
  CHECK_EQ(bytes.size(), lifetimes.size());
  std::vector<int> order(bytes.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return bytes[a] != bytes[b] ? bytes[a] > bytes[b] : lifetimes[a].first < lifetimes[b].first;
  });
  SlotPlacement placement;
  placement.slot_of.assign(bytes.size(), -1);
  std::vector<std::vector<int>> slot_members;
  for (int item : order) {
    // Largest first: every slot already holds one at least as large, so the
    // best fit is the smallest slot free for this lifetime.
    int best = -1;
    for (size_t s = 0; s < slot_members.size(); ++s) {
      bool free = true;
      for (int other : slot_members[s]) free = free && !lifetimes[item].Overlaps(lifetimes[other]);
      if (free && (best < 0 || placement.slot_bytes[s] < placement.slot_bytes[best]))
        best = static_cast<int>(s);
    }
    if (best < 0) {
      best = static_cast<int>(slot_members.size());
      slot_members.emplace_back();
      placement.slot_bytes.push_back(0);
    }
    slot_members[best].push_back(item);
    placement.slot_bytes[best] = std::max(placement.slot_bytes[best], bytes[item]);
    placement.slot_of[item] = best;
  }
  return placement;
}

namespace {

int FindRoot(std::vector<int>& parent, int i) {
  while (parent[i] != i) i = parent[i] = parent[parent[i]];
  return i;
}

}  // namespace

size_t BlobBytes(const Blob& blob) { return static_cast<size_t>(blob.count()) * blob.element_bytes(); }

size_t DistinctBytes(const std::vector<std::shared_ptr<Blob>>& blobs, bool diffs) {
  std::map<const Buffer*, size_t> largest;
  for (const auto& blob : blobs) {
    const Buffer* buffer = (diffs ? blob->diff_storage() : blob->data_storage()).get();
    if (buffer) largest[buffer] = std::max(largest[buffer], BlobBytes(*blob));
  }
  size_t total = 0;
  for (const auto& entry : largest) total += entry.second;
  return total;
}

std::string Megabytes(size_t bytes) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(1) << bytes / 1048576.0 << " MiB";
  return s.str();
}

Storages GroupStorages(const std::vector<std::shared_ptr<Blob>>& blobs,
                       const std::vector<Lifetime>& blob_life, bool diffs) {
  const int num_blobs = static_cast<int>(blobs.size());
  const auto buffer_of = [&](int b) -> const BufferPtr& {
    return diffs ? blobs[b]->diff_storage() : blobs[b]->data_storage();
  };
  std::map<const Buffer*, std::vector<int>> holders;
  for (int b = 0; b < num_blobs; ++b)
    if (buffer_of(b)) holders[buffer_of(b).get()].push_back(b);
  std::vector<int> parent(num_blobs);
  std::iota(parent.begin(), parent.end(), 0);
  for (const auto& entry : holders)
    for (size_t i = 0; i < entry.second.size(); ++i)
      for (size_t j = i + 1; j < entry.second.size(); ++j)
        if (blob_life[entry.second[i]].Overlaps(blob_life[entry.second[j]]))
          parent[FindRoot(parent, entry.second[j])] = FindRoot(parent, entry.second[i]);
  Storages storages;
  storages.of_blob.assign(num_blobs, -1);
  std::map<int, int> storage_of_root;
  for (int b = 0; b < num_blobs; ++b) {
    if (!buffer_of(b)) continue;
    const int next = static_cast<int>(storages.members.size());
    const auto it = storage_of_root.emplace(FindRoot(parent, b), next).first;
    if (it->second == next) {
      storages.members.emplace_back();
      storages.held_elsewhere.push_back(false);
      storages.bytes.push_back(0);
      storages.life.emplace_back();
    }
    const int s = it->second;
    storages.of_blob[b] = s;
    storages.members[s].push_back(b);
    storages.bytes[s] = std::max(storages.bytes[s], BlobBytes(*blobs[b]));
    storages.life[s].Extend(blob_life[b]);
  }
  for (const auto& entry : holders) {
    const long owners = buffer_of(entry.second[0]).use_count();
    if (owners > static_cast<long>(entry.second.size()))
      for (int b : entry.second) storages.held_elsewhere[storages.of_blob[b]] = true;
  }
  return storages;
}

std::vector<BufferPtr> SlotBuffers(Context& ctx, const SlotPlacement& placement,
                                   const std::vector<std::vector<int>>& slot_storages,
                                   const std::function<BufferPtr(int)>& buffer_of,
                                   std::set<const Buffer*>* taken) {
  std::vector<BufferPtr> buffers;
  for (size_t slot = 0; slot < placement.slot_bytes.size(); ++slot) {
    const size_t need = std::max<size_t>(placement.slot_bytes[slot], sizeof(float));
    BufferPtr buffer;
    for (int s : slot_storages[slot]) {
      BufferPtr candidate = buffer_of(s);
      if (candidate && candidate->bytes() >= need && !taken->count(candidate.get()) &&
          (!buffer || candidate->bytes() < buffer->bytes()))
        buffer = candidate;
    }
    if (!buffer) buffer = ctx.Allocate(need);
    taken->insert(buffer.get());
    buffers.push_back(std::move(buffer));
  }
  return buffers;
}

void ReadBlocks::Clear() {
  Set(false);
  blocked_.clear();
}

void ReadBlocks::Set(bool blocked) {
  for (auto& entry : blocked_) {
    std::string reason = blocked ? entry.second : std::string();
    if (diffs_) entry.first->set_diff_read_error(std::move(reason));
    else entry.first->set_data_read_error(std::move(reason));
  }
}

ReadBlocks::Pass::Pass(ReadBlocks* blocks) : blocks_(blocks) {
  if (!blocks_) return;
  CHECK(!blocks_->in_pass_);
  blocks_->in_pass_ = true;
  blocks_->Set(false);
}

ReadBlocks::Pass::~Pass() {
  if (!blocks_) return;
  blocks_->in_pass_ = false;
  blocks_->Set(true);
}

ActivationMemory InferenceMemoryPlan::Apply(const Net& net) {
  const auto& blobs = net.blobs();
  const int num_blobs = static_cast<int>(blobs.size());
  const std::vector<Lifetime> blob_life =
      BlobLifetimes(num_blobs, net.bottom_ids(), net.top_ids(), net.plan().StepOfLayers(net));

  if (unplanned_diff_of_blob_.empty()) {
    // Blobs a rebuild kept have the ids found before it; new ones follow.
    int next_id = 0;
    for (const auto& entry : unplanned_diff_by_name_) next_id = std::max(next_id, entry.second + 1);
    std::map<const Buffer*, int> ids;
    for (int b = 0; b < num_blobs; ++b) {
      const auto known = unplanned_diff_by_name_.find(net.blob_names()[b]);
      if (known != unplanned_diff_by_name_.end()) {
        unplanned_diff_of_blob_.push_back(known->second);
        continue;
      }
      const Buffer* diff = blobs[b]->diff_storage().get();
      unplanned_diff_of_blob_.push_back(
          diff ? ids.emplace(diff, next_id + static_cast<int>(ids.size())).first->second : -1);
    }
  }

  const Storages storages = GroupStorages(blobs, blob_life, false);
  const std::vector<int>& storage_of = storages.of_blob;
  const std::vector<std::vector<int>>& members = storages.members;
  const int num_storages = static_cast<int>(members.size());

  // What each storage is: left alone (held outside the net's activations),
  // kept (its values are read after Forward) or shared.
  enum Kind { kShared, kKept, kAlone };
  std::vector<Kind> kind(num_storages, kShared);
  for (int s = 0; s < num_storages; ++s)
    if (storages.held_elsewhere[s]) kind[s] = kAlone;
  std::vector<bool> readable(num_blobs, false);
  for (const Blob* input : net.input_blobs())
    for (int b = 0; b < num_blobs; ++b) readable[b] = readable[b] || blobs[b].get() == input;
  for (int b : net.output_blob_indices()) readable[b] = true;
  const auto& loss_weights = net.blob_loss_weights();
  for (int b = 0; b < num_blobs && b < (int)loss_weights.size(); ++b)
    readable[b] = readable[b] || loss_weights[b] != 0.f;
  for (const std::string& name : keep_)
    for (int b = 0; b < num_blobs; ++b) readable[b] = readable[b] || net.blob_names()[b] == name;
  for (int b = 0; b < num_blobs; ++b)
    if (storage_of[b] >= 0 && readable[b] && kind[storage_of[b]] == kShared)
      kind[storage_of[b]] = kKept;

  const std::vector<size_t>& bytes = storages.bytes;
  const std::vector<Lifetime>& life = storages.life;
  ActivationMemory memory;
  for (int s = 0; s < num_storages; ++s) memory.bytes_without_plan += bytes[s];
  std::map<int, size_t> unplanned_diffs;
  for (int b = 0; b < num_blobs; ++b) {
    const int diff = unplanned_diff_of_blob_[b];
    if (diff >= 0) unplanned_diffs[diff] = std::max(unplanned_diffs[diff], BlobBytes(*blobs[b]));
  }
  for (const auto& entry : unplanned_diffs) memory.bytes_without_plan += entry.second;

  // Each buffer serves one storage or slot: those left alone keep theirs,
  // kept ones keep theirs unless another took it (an earlier plan shared
  // it), a slot reuses the smallest of its storages' buffers that fits (on
  // the first plan its largest storage's own buffer always does).
  Context& ctx = net.context();
  std::set<const Buffer*> taken;
  const auto buffer_of = [&](int s) { return blobs[members[s][0]]->data_storage(); };
  const auto place = [&](int s, const BufferPtr& buffer) {
    for (int b : members[s])
      if (blobs[b]->data_storage() != buffer) blobs[b]->UseDataStorage(buffer);
  };
  for (int s = 0; s < num_storages; ++s)
    if (kind[s] == kAlone) taken.insert(buffer_of(s).get());
  for (int s = 0; s < num_storages; ++s) {
    if (kind[s] != kKept) continue;
    BufferPtr buffer = buffer_of(s);
    if (!taken.insert(buffer.get()).second) {
      buffer = ctx.Allocate(std::max<size_t>(bytes[s], sizeof(float)));
      taken.insert(buffer.get());
    }
    place(s, buffer);
  }
  std::vector<int> shared;
  for (int s = 0; s < num_storages; ++s)
    if (kind[s] == kShared) shared.push_back(s);
  std::vector<size_t> shared_bytes;
  std::vector<Lifetime> shared_life;
  for (int s : shared) {
    shared_bytes.push_back(bytes[s]);
    shared_life.push_back(life[s]);
  }
  const SlotPlacement placement = PlaceInSlots(shared_bytes, shared_life);
  const int num_slots = static_cast<int>(placement.slot_bytes.size());
  std::vector<std::vector<int>> slot_storages(num_slots);
  for (size_t i = 0; i < shared.size(); ++i)
    slot_storages[placement.slot_of[i]].push_back(shared[i]);
  const std::vector<BufferPtr> slot_buffers =
      SlotBuffers(ctx, placement, slot_storages, buffer_of, &taken);
  for (int slot = 0; slot < num_slots; ++slot)
    for (int s : slot_storages[slot]) place(s, slot_buffers[slot]);

  // Diffs: an inference net never reads them (a loss top's holds its loss
  // weight, so those stay). Reads: blocked where later layers reuse storage.
  blocks_.Clear();
  for (const auto& blob : blobs) blob->set_data_read_error("");
  for (int b = 0; b < num_blobs; ++b) {
    const int s = storage_of[b];
    if (s < 0 || kind[s] == kAlone) continue;
    if (b >= (int)loss_weights.size() || loss_weights[b] == 0.f) blobs[b]->ReleaseDiff();
    if (kind[s] == kShared)
      blocks_.Add(
          blobs[b].get(),
          "blob '" + net.blob_names()[b] + "' of net '" + net.name() +
              "' holds no value outside the net's passes: the inference memory plan "
              "(Net::PlanInferenceMemory) lets later layers reuse its storage; name it in "
              "the plan's keep list to read it");
  }
  blocks_.BlockOutsidePasses();
  input_shapes_.clear();
  for (const Blob* input : net.input_blobs()) input_shapes_.push_back(input->shape());
  ctx.pool().Trim();  // give the buffers no blob holds any more back to the device

  memory.bytes_with_plan =
      DistinctBytes(blobs, false) + DistinctBytes(blobs, true);
  int kept = 0, alone = 0;
  for (int s = 0; s < num_storages; ++s) {
    kept += kind[s] == kKept;
    alone += kind[s] == kAlone;
  }
  LOG(INFO) << "Inference memory plan for net '" << net.name() << "': activations take "
            << Megabytes(memory.bytes_with_plan) << " instead of "
            << Megabytes(memory.bytes_without_plan) << " (" << memory.bytes_with_plan
            << " / " << memory.bytes_without_plan << " bytes, data and diffs): "
            << shared.size() << " storages share " << num_slots << " buffers, " << kept
            << " keep their own (inputs, outputs, kept blobs), " << alone
            << " are held by layers or parameters and left alone";
  return memory;
}

bool InferenceMemoryPlan::InputsReshaped(const Net& net) const {
  const auto& inputs = net.input_blobs();
  if (inputs.size() != input_shapes_.size()) return true;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i]->shape() != input_shapes_[i]) return true;
  return false;
}

void InferenceMemoryPlan::ForgetBlobsOf(const Net& net) {
  blocks_.Clear();
  for (size_t b = 0; b < unplanned_diff_of_blob_.size() && b < net.blob_names().size(); ++b)
    unplanned_diff_by_name_[net.blob_names()[b]] = unplanned_diff_of_blob_[b];
  unplanned_diff_of_blob_.clear();
}

}  // namespace dlcaffe
