#include "dlcaffe/net_hdf5.hpp"

#include <glog/logging.h>

#include <algorithm>
#include <cctype>

#include "core/hdf5_file.hpp"

namespace dlcaffe {

namespace {

std::vector<uint64_t> DimsOf(const Blob& blob) {
  return std::vector<uint64_t>(blob.shape().begin(), blob.shape().end());
}

std::string ShapeText(const std::vector<uint64_t>& dims) {
  std::string text = "(";
  for (size_t i = 0; i < dims.size(); ++i) text += (i ? " " : "") + std::to_string(dims[i]);
  return text + ")";
}

// Caffe names a layer's parameter datasets "0", "1", ...; other members of
// its group (the groups of nested layer names such as "inception/1x1") are
// not parameters.
bool IsParamName(const std::string& name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c));
  });
}

}  // namespace

bool IsHdf5File(const std::string& path) { return IsHdf5Path(path); }

void SaveNetHdf5(const Net& net, const std::string& path, bool write_diff) {
  Hdf5MemoryFile file;
  try {
    Hdf5Handle data = file.CreateGroup(file.root(), "data");
    Hdf5Handle diff;
    if (write_diff) diff = file.CreateGroup(file.root(), "diff");
    size_t net_param_id = 0;
    for (size_t l = 0; l < net.layers().size(); ++l) {
      const std::string& name = net.layer_names()[l];
      // As Caffe, every layer gets its group, with parameters or not.
      Hdf5Handle layer_data = file.CreateGroup(data.get(), name);
      Hdf5Handle layer_diff;
      if (write_diff) layer_diff = file.CreateGroup(diff.get(), name);
      const auto& blobs = net.layers()[l]->blobs();
      for (size_t j = 0; j < blobs.size(); ++j, ++net_param_id) {
        const Blob& blob = *blobs[j];
        const std::string key = std::to_string(j);
        try {
          if (net.param_owners().at(net_param_id) == -1)
            file.WriteFloats(layer_data.get(), key, DimsOf(blob), blob.ReadData().data());
          if (write_diff)
            file.WriteFloats(layer_diff.get(), key, DimsOf(blob), blob.ReadDiff().data());
        } catch (const Error& e) {
          DLC_FAIL("layer '" << name << "' param " << j << ": " << e.what());
        }
      }
    }
  } catch (const Error& e) {
    DLC_FAIL("cannot write HDF5 weights " << path << ": " << e.what());
  }
  file.Save(path);
}

void LoadNetHdf5(Net& net, const std::string& path) {
  Hdf5Handle file = OpenHdf5File(path);
  // Everything is read and checked before any parameter changes, so that an
  // error leaves the net as it was.
  std::vector<std::pair<Blob*, std::vector<float>>> copies;
  std::string mine;
  try {
    DLC_REQUIRE(Hdf5HasLink(file.get(), "data"),
                "it has no group 'data', so it holds no weights in Caffe's HDF5 layout");
    Hdf5Handle data = OpenHdf5Group(file.get(), "data");
    size_t net_param_id = 0;
    for (size_t l = 0; l < net.layers().size(); ++l) {
      const std::string& name = net.layer_names()[l];
      const auto& blobs = net.layers()[l]->blobs();
      const size_t first_param = net_param_id;
      net_param_id += blobs.size();
      if (!blobs.empty()) mine += (mine.empty() ? "'" : ", '") + name + "'";
      if (!Hdf5HasLink(data.get(), name)) continue;  // kept as it is, as in Caffe
      Hdf5Handle group = OpenHdf5Group(data.get(), name);
      const std::vector<std::string> members = Hdf5LinkNames(group.get());
      const size_t in_file = std::count_if(members.begin(), members.end(), IsParamName);
      const auto incompatible = [&] {
        DLC_FAIL("incompatible number of blobs for layer '"
                 << name << "': " << in_file << " in the file, " << blobs.size() << " in the net");
      };
      if (in_file > blobs.size()) incompatible();
      for (size_t j = 0; j < blobs.size(); ++j) {
        const std::string key = std::to_string(j);
        if (!Hdf5HasLink(group.get(), key)) {
          // Written by the parameter's owner only (SaveNetHdf5, Caffe).
          if (net.param_owners().at(first_param + j) != -1) continue;
          incompatible();
        }
        Hdf5Floats values;
        try {
          values = ReadHdf5Floats(group.get(), key);
        } catch (const Error& e) {
          DLC_FAIL("layer '" << name << "' param " << j << ": " << e.what());
        }
        DLC_REQUIRE(values.dims == DimsOf(*blobs[j]),
                    "cannot copy param "
                        << j << " of layer '" << name << "': shape mismatch; the file has shape "
                        << ShapeText(values.dims) << ", the net " << ShapeText(DimsOf(*blobs[j])));
        copies.emplace_back(blobs[j].get(), std::move(values.values));
      }
    }
    if (copies.empty() && !mine.empty()) {
      std::string theirs;
      const std::vector<std::string> names = Hdf5LinkNames(data.get());
      for (size_t i = 0; i < names.size() && i < 10; ++i)
        theirs += (i ? ", '" : "'") + names[i] + "'";
      if (names.size() > 10) theirs += ", ...";
      DLC_FAIL("none of its layers (" << (theirs.empty() ? "none" : theirs)
                                      << ") is a layer of net '" << net.name()
                                      << "' with parameters (" << mine
                                      << "): the weights belong to another net, or its "
                                         "layers were renamed");
    }
  } catch (const Error& e) {
    DLC_FAIL(path << ": " << e.what());
  }
  for (auto& copy : copies) copy.first->WriteData(copy.second);
  LOG(INFO) << "Copied " << copies.size() << " parameter blobs from " << path;
}

}  // namespace dlcaffe
