// Where a data layer stands in its data set, so that a solver can snapshot it
// and resume training exactly: the same records, crops and mirrors follow.
//
//   for (auto& layer : net.layers())
//     if (auto* data = dynamic_cast<ResumableDataLayer*>(layer.get()))
//       saved[layer->name()] = data->ReaderState().Serialize();
//   ... later, on a freshly built net:
//       data->RestoreReaderState(DataReaderState::Parse(saved[name]));
#pragma once
#include <cstdint>
#include <string>

#include "dlcaffe/context.hpp"

namespace dlcaffe {

struct DataReaderState {
  std::string next_key;       // key of the next record to deliver (ImageData:
                              // "position P of N [order S]", see image_data.cpp)
  uint64_t epoch = 0;         // completed passes over the database
  uint64_t records_read = 0;  // records delivered so far
  std::string rng_state;      // the layer's generator, in Rng's text form

  // A one-line-per-field text form ("key <hex>", "epoch N", ...), and back;
  // Parse throws a dlcaffe::Error for text it cannot read.
  std::string Serialize() const;
  static DataReaderState Parse(const std::string& text);

  // Rng state text <-> generator.
  static std::string SaveRng(const Rng& rng);
  static void LoadRng(const std::string& text, Rng* rng);

  bool operator==(const DataReaderState& o) const {
    return next_key == o.next_key && epoch == o.epoch && records_read == o.records_read &&
           rng_state == o.rng_state;
  }
};

// Implemented by layers that read a data set (Caffe "Data", "ImageData").
class ResumableDataLayer {
 public:
  virtual ~ResumableDataLayer() = default;
  // The state after the last batch Forward delivered (before the first
  // Forward: the state right after setup). Prefetched, undelivered batches do
  // not count.
  virtual DataReaderState ReaderState() const = 0;
  // Drops prefetched batches and makes the next Forward deliver the batch
  // that followed `state` when it was taken.
  virtual void RestoreReaderState(const DataReaderState& state) = 0;
};

}  // namespace dlcaffe
