#include "util/clang_ptx.hpp"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

std::string FindClang() {
  for (const char* name : {"clang", "clang-14", "clang-15", "clang-16"})
    if (std::system((std::string("command -v ") + name + " > /dev/null 2>&1").c_str()) == 0)
      return name;
  return "";
}

namespace {
std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}
}  // namespace

std::string CompileToPtx(const std::string& source, const std::string& defines,
                         std::string* log) {
  const std::string dir = TempDir();
  const std::string source_path = dir + "/kernel.cl", ptx = dir + "/kernel.ptx",
                    log_path = dir + "/clang.log";
  std::ofstream(source_path) << source;
  const std::string command = FindClang() +
                              " -x cl -cl-std=CL1.2 -fgnu-keywords -target nvptx64-nvidia-nvcl "
                              "-Xclang -finclude-default-header -O2 -S " +
                              defines + " -o " + ptx + " " + source_path + " > " + log_path +
                              " 2>&1";
  const int status = std::system(command.c_str());
  *log = command + "\n" + ReadText(log_path);
  return status == 0 ? ReadText(ptx) : "";
}

size_t Occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace test
}  // namespace dlcaffe
