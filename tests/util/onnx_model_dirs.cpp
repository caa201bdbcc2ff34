#include "util/onnx_model_dirs.hpp"

#include <dirent.h>

#include <algorithm>

#include "dlcaffe/io.hpp"

namespace dlcaffe {
namespace test {

std::vector<std::string> OnnxModelDirs(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      const std::string name = e->d_name;
      if (name[0] != '.' && FileExists(dir + "/" + name + "/model.onnx")) names.push_back(name);
    }
    closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace test
}  // namespace dlcaffe
