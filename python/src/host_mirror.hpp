// The host copies behind Blob.data and Blob.diff in Python.
//
// The device buffer is the truth. Each buffer a Python user has looked at
// gets one host mirror (a numpy array over host memory that the mirror
// owns), shared by every blob that shares the buffer. The rules:
//  - reading .data/.diff downloads the buffer only if device work ran since
//    the last download (no copy per access), and marks the mirror as
//    possibly written by the user;
//  - before device work (forward, backward, a solver step, ...) every mirror
//    possibly written is uploaded;
//  - after device work every mirror is stale; a mirror whose array the user
//    still holds (a reference or a view of it) is downloaded at once, so an
//    array kept across a forward never shows old values.
// An array outlives its net and its blob: it owns its memory through the
// mirror; once the buffer is gone (reshaped to a larger size, net deleted)
// it is simply a detached numpy array.
#pragma once
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <map>
#include <memory>
#include <vector>

#include "dlcaffe/blob.hpp"

namespace dlcaffe_python {

namespace py = pybind11;

class HostMirrors {
 public:
  // The one registry of the process (Python code runs under the GIL).
  static HostMirrors& Instance();

  // The array for the blob's data (diff = false) or diff, current as of now
  // and marked as possibly written.
  py::array Array(dlcaffe::Blob& blob, bool diff);
  // Uploads every mirror possibly written; after it, device work may run.
  void Flush();
  // Device work ran: every mirror is stale; those whose arrays are still
  // held are downloaded now (and count as possibly written again).
  void Invalidate();

 private:
  struct Mirror;
  // Drops mirrors whose buffers are gone.
  void Prune();
  std::map<const void*, std::shared_ptr<Mirror>> mirrors_;
};

// Device work from Python: mirrors flushed before, invalidated after (also
// when the work throws).
class DeviceWork {
 public:
  DeviceWork() { HostMirrors::Instance().Flush(); }
  ~DeviceWork();
  DeviceWork(const DeviceWork&) = delete;
  DeviceWork& operator=(const DeviceWork&) = delete;
};

}  // namespace dlcaffe_python
