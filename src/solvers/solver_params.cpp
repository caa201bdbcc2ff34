// Reading a solver prototxt with Caffe's upgrades applied.
#include <glog/logging.h>
#include <sys/stat.h>

#include "dlcaffe/caffe_legacy_upgrade.hpp"
#include "dlcaffe/error.hpp"
#include "dlcaffe/io.hpp"
#include "dlcaffe/solver.hpp"

namespace dlcaffe {

namespace {

bool IsDirectory(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// "a/b/solver.prototxt" -> "a/b/solver" (dir = false) or "solver" (dir = true).
std::string WithoutExtension(const std::string& path, bool stem_only) {
  const size_t slash = path.find_last_of('/');
  std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  const size_t dot = name.find_last_of('.');
  if (dot != std::string::npos && dot > 0) name = name.substr(0, dot);
  if (stem_only || slash == std::string::npos) return name;
  return path.substr(0, slash + 1) + name;
}

}  // namespace

caffe::SolverParameter ReadSolverParams(const std::string& path) {
  caffe::SolverParameter param;
  ReadProtoFromTextFile(path, &param);
  UpgradeSolverAsNeeded(path, &param);
  if (!param.has_snapshot_prefix()) {
    param.set_snapshot_prefix(WithoutExtension(path, false));
    LOG(INFO) << "snapshot_prefix was not specified and is set to "
              << param.snapshot_prefix();
  } else if (IsDirectory(param.snapshot_prefix())) {
    std::string dir = param.snapshot_prefix();
    if (dir.back() != '/') dir += '/';
    param.set_snapshot_prefix(dir + WithoutExtension(path, true));
    LOG(INFO) << "snapshot_prefix is a directory and is set to " << param.snapshot_prefix();
  }
  return param;
}

}  // namespace dlcaffe
