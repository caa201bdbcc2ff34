// The message of the dlcaffe::Error a call throws, for tests that check what
// a user would read.
#pragma once
#include <string>

#include "dlcaffe/error.hpp"

namespace dlcaffe {
namespace test {

// "(no error)" when `f` throws none.
template <typename F>
std::string ErrorOf(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace test
}  // namespace dlcaffe
