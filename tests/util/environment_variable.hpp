// Sets (or, with a null value, unsets) an environment variable of the test
// program for a scope, and restores what was there after it.
#pragma once
#include <cstdlib>
#include <string>

namespace dlcaffe {
namespace test {

struct EnvironmentVariable {
  EnvironmentVariable(const char* name, const char* value) : name(name) {
    if (const char* old = std::getenv(name)) saved = old, had = true;
    if (value)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ~EnvironmentVariable() {
    if (had)
      setenv(name, saved.c_str(), 1);
    else
      unsetenv(name);
  }
  EnvironmentVariable(const EnvironmentVariable&) = delete;
  EnvironmentVariable& operator=(const EnvironmentVariable&) = delete;
  const char* name;
  std::string saved;
  bool had = false;
};

}  // namespace test
}  // namespace dlcaffe
