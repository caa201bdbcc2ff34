// A copy a layer derives from one of its parameters -- the weights rounded to
// 16 bits for the tensor cores, filters reordered channels-last -- kept from
// pass to pass while the parameter's data keeps its version
// (Blob::data_version), so a net that runs forward many times, or forward
// and backward between two updates, makes it once.
//
// A layer may keep several (one per kind of copy: rounded to FLOAT16 or to
// BFLOAT16, flipped or not); `variant` tells a kind's copies apart so that a
// pass asking for another one makes it afresh.
#pragma once
#include <cstdint>
#include <utility>

#include "dlcaffe/blob.hpp"

namespace dlcaffe {

class DerivedCopy {
 public:
  // The copy of `source`'s data that `make` returns (it may return null:
  // "no copy needed"), made again when the data or `variant` changed since.
  template <class Make>
  BufferPtr Get(const Blob& source, int variant, Make&& make) {
    const uint64_t version = source.data_version();
    if (!made_ || version != version_ || variant != variant_) {
      copy_.reset();  // back to the pool before its successor is allocated
      copy_ = std::forward<Make>(make)();
      version_ = version;
      variant_ = variant;
      made_ = true;
    }
    return copy_;
  }
  // Drops the copy (its memory goes back to the pool).
  void Forget() {
    copy_.reset();
    made_ = false;
  }

 private:
  BufferPtr copy_;
  uint64_t version_ = 0;
  int variant_ = 0;
  bool made_ = false;
};

}  // namespace dlcaffe
