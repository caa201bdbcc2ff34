// Data-parallel training across two hosts: scripts/two_hosts_mpi.sh makes
// two network namespaces joined by a veth pair (each a "host" with an
// address and a hostname of its own), trains LeNet with one rank on each
// over TCP and with both on one host, and kills one host mid-run. Here the
// test holds the script to its three promises: the same weights as one host,
// one rank on each host, and a job that ends, named, when a host dies.
// Where this machine cannot make namespaces (no CAP_NET_ADMIN) the script
// exits 77 and the test is skipped with its reason.
#include <gtest/gtest.h>

#include <iostream>
#include <regex>

#include "parallel/mpi_launch.hpp"
#include "util/run_dlcaffe.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {
namespace {

TEST(TwoHostsMpi, SameWeightsAsOneHostAndADeadHostEndsTheJob) {
  DLC_REQUIRE_MPI_AND_MNIST();
  const ToolResult r = RunCommand("cd '" + SourceDir() + "' && DLCAFFE_BUILD_DIR='" + BuildDir() +
                                  "' timeout 600 bash scripts/two_hosts_mpi.sh 2>&1");
  if (r.exit_code == 77) GTEST_SKIP() << r.output;
  std::smatch m;
  for (const char* line : {"two_hosts_mpi: 1\\.", "two_hosts_mpi: 2\\.", "two_hosts_mpi: PASS"})
    EXPECT_TRUE(std::regex_search(r.output, std::regex(line))) << line << "\n" << r.output;
  EXPECT_TRUE(std::regex_search(
      r.output, m, std::regex("the same weights, byte for byte; test accuracy ([0-9.]+) \\(one host\\), "
                              "([0-9.]+) \\(two hosts\\)")))
      << r.output;
  if (!m.empty()) {
    EXPECT_EQ(m[1], m[2]);
    EXPECT_GE(std::stod(m[1]), 0.9) << "LeNet after 200 iterations of 2 x 64 images";
  }
  EXPECT_TRUE(std::regex_search(r.output, std::regex("the job ended [0-9]+ s after the kill")))
      << r.output;
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const size_t summary = r.output.find("two_hosts_mpi: 1.");
  if (summary != std::string::npos) std::cout << r.output.substr(summary) << std::endl;
}

}  // namespace
}  // namespace test
}  // namespace dlcaffe
