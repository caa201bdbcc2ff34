// What GatherElements and ScatterElements share: `picks` (the indices, or
// the updates a scatter writes) address `data` along one axis, element by
// element. Checks the shapes, and keeps on the device the extents their
// kernels walk: the picks', then the data's.
#pragma once
#include <string>
#include <vector>

#include "core/grow_buffer.hpp"
#include "dlcaffe/blob.hpp"
#include "dlcaffe/context.hpp"
#include "dlcaffe/error.hpp"

namespace dlcaffe {

class ElementsGeometry {
 public:
  // `where` starts the errors; `picks_name` and `picks_bottom` name the
  // picks in them. Returns the axis, counted from the start.
  int Set(Context& ctx, const Blob& data, const Blob& picks, int axis, const std::string& where,
          const char* picks_name, int picks_bottom) {
    const int rank = data.num_axes();
    DLC_REQUIRE(rank >= 1 && picks.num_axes() == rank,
                where << "the " << picks_name << " (bottom " << picks_bottom << ", shape "
                      << picks.shape_string() << ") must have as many axes as the data (bottom 0, shape "
                      << data.shape_string() << ")");
    DLC_REQUIRE(axis >= -rank && axis < rank,
                where << "axis " << axis << " is out of range for data of shape " << data.shape_string());
    if (axis < 0) axis += rank;
    for (int d = 0; d < rank; ++d)
      DLC_REQUIRE(d == axis || picks.shape(d) <= data.shape(d),
                  where << "the " << picks_name << "' axis " << d << " (" << picks.shape(d)
                        << ") exceeds the data's (" << data.shape(d) << "; shapes "
                        << picks.shape_string() << " and " << data.shape_string() << ")");
    std::vector<int> extents = picks.shape();
    extents.insert(extents.end(), data.shape().begin(), data.shape().end());
    if (extents != extents_) {
      extents_ = extents;
      GrowBuffer(ctx, &buffer_, extents.size() * sizeof(int));
      ctx.Write(buffer_->mem(), 0, extents.size() * sizeof(int), extents.data());
    }
    return axis;
  }

  cl_mem buffer() const { return buffer_->mem(); }

 private:
  std::vector<int> extents_;
  BufferPtr buffer_;
};

}  // namespace dlcaffe
