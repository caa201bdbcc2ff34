// main() of every test program: glog to stderr, then GoogleTest.
#include <glog/logging.h>
#include <gtest/gtest.h>

#include "util/test_context.hpp"

int main(int argc, char** argv) {
  FLAGS_logtostderr = true;
  FLAGS_minloglevel = 1;  // warnings and up
  google::InitGoogleLogging(argv[0]);
  testing::InitGoogleTest(&argc, argv);
  const int result = RUN_ALL_TESTS();
  dlcaffe::test::ReleaseTestContext();
  return result;
}
