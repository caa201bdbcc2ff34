#include "util/run_script.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

std::string TestPython() {
  const char* python = std::getenv("DLCAFFE_PYTHON");
  return python && *python ? python : "/usr/bin/python3";
}

ToolResult RunScript(const std::string& script, const std::string& args, const std::string& env) {
  return RunCommand("cd '" + SourceDir() + "' && " + env + " '" + TestPython() +
                    "' tools/extra/" + script + " " + args);
}

void ExpectCleanScriptError(const ToolResult& r, const std::string& script,
                            const std::string& must_mention) {
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(Contains(r.output, script + ": error: ")) << r.output;
  EXPECT_TRUE(Contains(r.output, must_mention)) << "missing '" << must_mention << "' in:\n"
                                                << r.output;
  EXPECT_FALSE(Contains(r.output, "Traceback")) << r.output;
}

}  // namespace test
}  // namespace dlcaffe
