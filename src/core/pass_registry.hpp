// The one way passes register, for both kinds dlcaffe has: rewrites of a
// net description (passes/net_pass.hpp: NetParameter in, NetParameter out)
// and the execution plan's folds over a set-up Net (passes/plan_pass.hpp).
// Each pass is a file of its own that registers a name, a rank and its
// function; runners take them in order of rank, then name. Both kinds match
// layers by what their types declare (LayerTraits, Layer::RoleInEpilogue)
// where a trait says it, and by op pattern where the pattern is the point
// (an exporter's GELU spelled out op by op). Internal to the library.
#pragma once
#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "dlcaffe/error.hpp"

namespace dlcaffe {

template <typename Pass>
class PassRegistry {
 public:
  struct Entry {
    std::string name;
    int rank;
    Pass pass;
  };
  static void Add(const std::string& name, int rank, Pass pass) {
    std::vector<Entry>& entries = Entries();
    entries.push_back({name, rank, std::move(pass)});
    std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
      return std::tie(a.rank, a.name) < std::tie(b.rank, b.name);
    });
  }
  // In order of rank, then name.
  static const std::vector<Entry>& Passes() { return Entries(); }
  // The pass of that name (throws if there is none).
  static const Pass& Find(const std::string& name) {
    for (const Entry& e : Entries())
      if (e.name == name) return e.pass;
    DLC_FAIL("no pass '" << name << "'");
  }

 private:
  static std::vector<Entry>& Entries() {
    static std::vector<Entry> entries;
    return entries;
  }
};

template <typename Pass>
struct PassRegisterer {
  PassRegisterer(const std::string& name, int rank, Pass pass) {
    PassRegistry<Pass>::Add(name, rank, std::move(pass));
  }
};

}  // namespace dlcaffe
