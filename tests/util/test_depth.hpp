// How deep a test goes. CI (scripts/test.sh) runs every test's short form:
// a sample of each configuration sweep that still meets every value of every
// axis, and training runs long enough that a broken gradient fails their
// bound. scripts/nightly.sh sets DLCAFFE_NIGHTLY=1 for the long forms: every
// configuration, and the training runs to their full accuracy. Both forms
// assert; only their length differs.
#pragma once

#include <vector>

namespace dlcaffe {
namespace test {

// True under DLCAFFE_NIGHTLY=1.
bool NightlyDepth();

// The short or the long form of a count (iterations, images, cases) or of
// the bound that goes with it.
int ByDepth(int ci, int nightly);
float ByDepth(float ci, float nightly);

// Which of `count` sweep entries to run: all of them at nightly depth, else
// entries i with i % stride == phase (a fixed sample, the same in every run).
bool InSample(int index, int stride, int phase = 0);

}  // namespace test
}  // namespace dlcaffe
