// Reading a solver file: Caffe's upgrades of the solver_type enum and its
// snapshot_prefix rules.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "dlcaffe/io.hpp"
#include "dlcaffe/solver.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

namespace {
std::string Write(const std::string& path, const std::string& text) {
  WriteFileAtomically(path, text);
  return path;
}
}  // namespace

TEST(SolverParams, UnsetPrefixIsTheSolverFileWithoutExtension) {
  const std::string dir = TempDir();
  auto p = ReadSolverParams(Write(dir + "/my_solver.prototxt", "base_lr: 0.1"));
  EXPECT_EQ(p.snapshot_prefix(), dir + "/my_solver");
}

TEST(SolverParams, DirectoryPrefixGetsTheSolverFileStem) {
  const std::string dir = TempDir();
  ASSERT_EQ(mkdir((dir + "/snaps").c_str(), 0755), 0);
  auto p = ReadSolverParams(Write(dir + "/lenet_solver.prototxt",
                                  "snapshot_prefix: '" + dir + "/snaps'"));
  EXPECT_EQ(p.snapshot_prefix(), dir + "/snaps/lenet_solver");
}

TEST(SolverParams, PlainPrefixIsKept) {
  const std::string dir = TempDir();
  auto p = ReadSolverParams(Write(dir + "/s.prototxt", "snapshot_prefix: '" + dir + "/run1'"));
  EXPECT_EQ(p.snapshot_prefix(), dir + "/run1");
}

TEST(SolverParams, DeprecatedSolverTypeBecomesType) {
  const std::string dir = TempDir();
  for (const auto& [old_name, type] :
       std::vector<std::pair<std::string, std::string>>{{"SGD", "SGD"},
                                                        {"NESTEROV", "Nesterov"},
                                                        {"ADAGRAD", "AdaGrad"},
                                                        {"RMSPROP", "RMSProp"},
                                                        {"ADADELTA", "AdaDelta"},
                                                        {"ADAM", "Adam"}}) {
    auto p = ReadSolverParams(Write(dir + "/s.prototxt", "solver_type: " + old_name));
    EXPECT_EQ(p.type(), type) << old_name;
    EXPECT_FALSE(p.has_solver_type());
  }
}

TEST(SolverParams, ConflictingTypesAreAClearError) {
  const std::string path = Write(TempDir() + "/s.prototxt", "solver_type: ADAM type: 'SGD'");
  try {
    ReadSolverParams(path);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

}  // namespace test
}  // namespace dlcaffe
