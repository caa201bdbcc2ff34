// What a Solver asks of the other replicas when it trains as one of several
// (data-parallel training, data_parallel.hpp). Every call is collective: each
// replica makes the same calls in the same order. A replica that fails makes
// the others' calls throw instead of waiting for it.
#pragma once
#include <string>
#include <vector>

namespace dlcaffe {

class ReplicaLink {
 public:
  // Bits of the decision every replica takes together after an iteration.
  enum Decision { kSnapshotNow = 1, kStopNow = 2 };

  virtual ~ReplicaLink() = default;
  // This replica's index over all processes, and the number of replicas;
  // replica 0 (the root) logs, tests and writes snapshots.
  virtual int index() const = 0;
  virtual int count() const = 0;
  bool is_root() const { return index() == 0; }

  // Before the backward pass whose gradients are final (the last of
  // iter_size): from here on, a gradient is sent to the others as soon as
  // the pass has enqueued every layer that writes it.
  virtual void StartGradientExchange() = 0;
  // After layer `layer_id`'s turn in the backward pass (Net::set_after_backward).
  virtual void OnLayerBackward(int layer_id) = 0;
  // After the backward pass: from here on, every command enqueued on this
  // replica's queue runs once every gradient on its device is the mean of
  // all replicas' gradients (the queue waits, the host does not: a blocking
  // read of a gradient returns the mean).
  virtual void FinishGradientExchange() = 0;
  // Returns once every exchange this replica began has ended (before its
  // weights are read for a snapshot, or training ends); throws if another
  // replica or the exchange failed.
  virtual void Settle() = 0;
  // A line for the training log on the time the exchange did not hide
  // behind backward since the last report (and starts the next report).
  virtual std::string TakeExchangeReport() = 0;

  // The bitwise or of every replica's `wanted` (Decision bits).
  virtual int Decide(int wanted) = 0;
  // The root's `value` on every replica.
  virtual std::string BroadcastFromRoot(const std::string& value) = 0;
  // At the root: every replica's value by index; elsewhere: empty.
  virtual std::vector<std::string> GatherAtRoot(const std::string& value) = 0;
};

}  // namespace dlcaffe
