// A net's weights in Caffe's HDF5 layout (Net::ToHDF5 and
// CopyTrainedLayersFromHDF5 in Caffe): a group "data" holding one group per
// layer (named as the layer) with a dataset per parameter blob, "0", "1",
// ..., in the blob's shape, as float; with write_diff a group "diff" of the
// same layout holds the gradients. As Caffe, a parameter shared by name is
// written once, by its owner (its diff by every layer).
#pragma once
#include <string>

#include "dlcaffe/net.hpp"

namespace dlcaffe {

// Writes `path` atomically (a temporary file, then rename); errors name it.
void SaveNetHdf5(const Net& net, const std::string& path, bool write_diff = false);

// Copies the parameters of the layers found in `path` by name into the net,
// as Caffe: the net's layers missing from the file keep their values; the
// file's layers missing from the net are ignored. A layer whose parameter
// count or shapes differ is an error naming the layer, the blob, both shapes
// and the file (a missing blob is allowed where the net shares it by name,
// the file then holds it with its owner).
void LoadNetHdf5(Net& net, const std::string& path);

// Whether `path` is an HDF5 file (by its signature, not its name):
// Net::CopyTrainedLayersFrom reads those with LoadNetHdf5.
bool IsHdf5File(const std::string& path);

}  // namespace dlcaffe
