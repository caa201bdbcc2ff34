#include "core/gemm_tuning.hpp"

#include <fcntl.h>
#include <glog/logging.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <tuple>

#include "core/cache_files.hpp"
#include "dlcaffe/error.hpp"
#include "dlcaffe/io.hpp"

namespace dlcaffe {

namespace {

const char* MathName(MatrixMath math) {
  switch (math) {
    case MatrixMath::kFloat32: return "float32";
    case MatrixMath::kTF32: return "tf32";
    case MatrixMath::kFloat16: return "float16";
    case MatrixMath::kBFloat16: return "bfloat16";
  }
  return "?";
}

bool MathNamed(const std::string& name, MatrixMath* math) {
  for (MatrixMath m : {MatrixMath::kFloat32, MatrixMath::kTF32, MatrixMath::kFloat16,
                       MatrixMath::kBFloat16})
    if (name == MathName(m)) {
      *math = m;
      return true;
    }
  return false;
}

}  // namespace

std::string GemmShapeKey::Text() const {
  std::ostringstream s;
  s << M << " " << N << " " << K << " " << trans_a << " " << trans_b << " " << grouped << " "
    << batch << " " << MathName(math) << " " << StorageTypeName(a_type) << " "
    << StorageTypeName(b_type) << " " << StorageTypeName(c_type);
  return s.str();
}

bool GemmShapeKey::operator<(const GemmShapeKey& o) const {
  return std::tie(M, N, K, trans_a, trans_b, grouped, batch, math, a_type, b_type, c_type) <
         std::tie(o.M, o.N, o.K, o.trans_a, o.trans_b, o.grouped, o.batch, o.math, o.a_type,
                  o.b_type, o.c_type);
}

GemmShapeKey ShapeKeyOf(const GemmArgs& args) {
  GemmShapeKey key;
  key.M = args.M;
  key.N = args.N;
  key.K = args.K;
  key.trans_a = args.trans_a == Transpose::kYes;
  key.trans_b = args.trans_b == Transpose::kYes;
  key.grouped = (args.a_group ? 1 : 0) | (args.b_group ? 2 : 0) | (args.c_group ? 4 : 0) |
                (args.b_window.active() ? 8 : 0) | (args.b_window.nhwc_channels > 0 ? 16 : 0);
  key.batch = args.batch;
  key.math = args.math;
  key.a_type = args.a_type;
  key.b_type = args.b_type;
  key.c_type = args.c_type;
  return key;
}

namespace {

using WinnerTable = std::map<GemmShapeKey, GemmConfig>;

// The family member named `name`, the only configurations a file may name.
bool FamilyMember(const std::string& name, GemmConfig* config) {
  for (const GemmConfig& c : GemmConfigFamily())
    if (c.Name() == name) {
      *config = c;
      return true;
    }
  return false;
}

// The checksum that ends an entry's line: FNV-1a of the line before it.
std::string LineChecksum(const std::string& entry) {
  char hex[20];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(Fnv1a(entry)));
  return hex;
}

const char kEndLine[] = "# end: ";

// The key of an entry (GemmShapeKey::Text), false if it is none. A key in
// the format before the math and storage types ("M N K ta tb grouped
// batch") is read as float32 math on float32 operands, so that its winner
// is never handed to a 16-bit or TF32 product. Most such entries were timed
// on that product; one that a 16-bit net stored on a device with a matrix
// engine goes to float32 products instead, a speed loss at worst (every
// family member computes the same result).
bool ParseKey(const std::string& text, GemmShapeKey* key, bool* old_format) {
  std::istringstream fields(text);
  if (!(fields >> key->M >> key->N >> key->K >> key->trans_a >> key->trans_b >> key->grouped >>
        key->batch))
    return false;
  std::string math, a, b, c, extra;
  *old_format = !(fields >> math);
  if (*old_format) return true;
  return fields >> a >> b >> c && !(fields >> extra) && MathNamed(math, &key->math) &&
         StorageTypeNamed(a, &key->a_type) && StorageTypeNamed(b, &key->b_type) &&
         StorageTypeNamed(c, &key->c_type);
}

// Lines "<key> | configuration name | checksum" (ParseKey), '#' starts a
// comment, and the last line is "# end: <entries> entries". Lines whose
// checksum does not match (bit-flipped, cut short, or from an older version,
// which had none) are dropped with a warning naming the file, as is a file
// without its end line (truncated); the shapes they held fall back to the
// rule until tuned again, and the next store rewrites the file whole. Lines
// that name no family member or whose key does not parse (a file from
// another version) are skipped.
WinnerTable ReadTable(const std::string& path) {
  WinnerTable table;
  std::ifstream in(path);
  if (!in) return table;
  std::string line;
  int line_number = 0, corrupt = 0, first_corrupt = 0, entries = 0, old_format_entries = 0;
  long declared = -1;
  while (std::getline(in, line)) {
    ++line_number;
    if (line.compare(0, sizeof(kEndLine) - 1, kEndLine) == 0) {
      declared = std::strtol(line.c_str() + sizeof(kEndLine) - 1, nullptr, 10);
      continue;
    }
    if (line.empty() || line[0] == '#') continue;
    const size_t last_bar = line.rfind(" | ");
    const size_t bar = line.find(" | ");
    if (bar == std::string::npos || last_bar == bar ||
        LineChecksum(line.substr(0, last_bar)) != line.substr(last_bar + 3)) {
      if (!corrupt++) first_corrupt = line_number;
      continue;
    }
    ++entries;
    GemmShapeKey key;
    bool old_format = false;
    if (!ParseKey(line.substr(0, bar), &key, &old_format)) continue;
    GemmConfig config;
    if (!FamilyMember(line.substr(bar + 3, last_bar - bar - 3), &config)) continue;
    // A key in the new format wins over the old format's for the same product.
    if (old_format && table.count(key)) continue;
    table[key] = config;
    old_format_entries += old_format;
  }
  if (old_format_entries)
    LOG(INFO) << "tuning cache: " << old_format_entries << " entr"
              << (old_format_entries > 1 ? "ies" : "y") << " of " << path
              << " predate the math and storage types in the key: taken for float32 math "
                 "on float32 operands only";
  if (corrupt)
    LOG(WARNING) << "tuning cache: ignoring " << corrupt << " corrupt or old-format line"
                 << (corrupt > 1 ? "s" : "") << " of " << path << " (first: line "
                 << first_corrupt << "); those shapes use the rule until tuned again";
  else if (line_number > 0 && declared != entries)
    LOG(WARNING) << "tuning cache: " << path << " is truncated or altered (" << entries
                 << " entries, its end line "
                 << (declared < 0 ? std::string("is missing") : "says " + std::to_string(declared))
                 << "); the entries it holds are used";
  return table;
}

// Serialises read-merge-write of a tuning file between processes (an flock
// on "<file>.lock"): without it two tuners would each write their own
// winners and drop the other's.
class FileLock {
 public:
  explicit FileLock(const std::string& path) {
    fd_ = open((path + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ >= 0) flock(fd_, LOCK_EX);
  }
  ~FileLock() {
    if (fd_ >= 0) close(fd_);  // releases the lock
  }

 private:
  int fd_ = -1;
};

std::mutex& TablesMutex() {
  static std::mutex mutex;
  return mutex;
}
// Each tuning file's table (one per device and cache directory), read from
// disk on first use.
std::map<std::string, std::shared_ptr<const WinnerTable>>& Tables() {
  static std::map<std::string, std::shared_ptr<const WinnerTable>> tables;
  return tables;
}


}  // namespace

namespace {

// The directory a tuning_cache setting names, resolved (and created) once:
// Gemm() asks at every product.
std::string TuningDirectory(const std::string& setting) {
  static std::mutex mutex;
  static std::map<std::string, std::string> directories;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = directories.find(setting);
  if (it == directories.end())
    it = directories.emplace(setting, CacheDirectory(setting, "tuning")).first;
  return it->second;
}

}  // namespace

std::string GemmTuningFile(const Context& ctx) {
  const std::string dir = TuningDirectory(ctx.options().tuning_cache);
  if (dir.empty()) return "";
  char name[48];
  std::snprintf(name, sizeof(name), "gemm-%016llx.txt",
                static_cast<unsigned long long>(Fnv1a(DeviceCacheKey(ctx.info()))));
  return dir + "/" + name;
}

namespace {

// Bumped by every store: a context's snapshot of its table is current while
// the count it was taken at is.
std::atomic<uint64_t> g_table_stores{0};

}  // namespace

// What a context looks up at every product, resolved once per its options
// (Context::set_options drops it) and again after a store.
struct TunedGemmSnapshot {
  uint64_t stores = 0;
  std::shared_ptr<const WinnerTable> table;  // null: the cache is off
};

std::shared_ptr<const TunedGemmSnapshot> ResolveTunedGemms(const Context& ctx) {
  auto snapshot = std::make_shared<TunedGemmSnapshot>();
  const std::string path = GemmTuningFile(ctx);
  std::lock_guard<std::mutex> lock(TablesMutex());
  snapshot->stores = g_table_stores.load();
  if (path.empty()) return snapshot;
  auto it = Tables().find(path);
  if (it == Tables().end())
    it = Tables().emplace(path, std::make_shared<const WinnerTable>(ReadTable(path))).first;
  snapshot->table = it->second;
  return snapshot;
}

ScopedGemmChoices::ScopedGemmChoices(Context& ctx, const WinnerTable& choices)
    : ctx_(ctx), previous_(ctx.gemm_choices()) {
  ctx_.set_gemm_choices(&choices);
}

ScopedGemmChoices::~ScopedGemmChoices() { ctx_.set_gemm_choices(previous_); }

bool LookupTunedGemmConfig(const Context& ctx, const GemmShapeKey& key,
                           GemmConfig* config) {
  const WinnerTable* table = ctx.gemm_choices();
  if (!table) {
    const TunedGemmSnapshot* snapshot = ctx.tuned_gemms();
    if (!snapshot || snapshot->stores != g_table_stores.load(std::memory_order_relaxed))
      snapshot = ctx.set_tuned_gemms(ResolveTunedGemms(ctx));
    table = snapshot->table.get();
    if (!table) return false;
  }
  auto found = table->find(key);
  if (found == table->end()) return false;
  *config = found->second;
  return true;
}

void StoreTunedGemmConfigs(const Context& ctx, const WinnerTable& winners) {
  const std::string path = GemmTuningFile(ctx);
  DLC_REQUIRE(!path.empty(), "GEMM tuning results need a cache directory: the run option "
                             "tuning_cache (DLCAFFE_TUNING_CACHE) is off and there is no "
                             "$XDG_CACHE_HOME or $HOME");
  std::lock_guard<std::mutex> lock(TablesMutex());
  FileLock file_lock(path);
  WinnerTable table = ReadTable(path);
  for (const auto& w : winners) table[w.first] = w.second;
  std::ostringstream text;
  text << "# dlcaffe GEMM tuning for " << DeviceCacheKey(ctx.info()) << "\n"
       << "# M N K trans_a trans_b grouped batch math a_type b_type c_type | configuration "
          "| checksum\n";
  for (const auto& entry : table) {
    const std::string line = entry.first.Text() + " | " + entry.second.Name();
    text << line << " | " << LineChecksum(line) << "\n";
  }
  text << kEndLine << table.size() << " entries\n";
  WriteFileAtomically(path, text.str());
  Tables()[path] = std::make_shared<const WinnerTable>(std::move(table));
  ++g_table_stores;
}

GemmRecording::GemmRecording(Context& ctx) : ctx_(ctx) {
  CHECK(ctx.gemm_recording() == nullptr) << "GEMM recordings do not nest";
  ctx.set_gemm_recording(this);
}

GemmRecording::~GemmRecording() { ctx_.set_gemm_recording(nullptr); }

void GemmRecording::Record(const GemmArgs& args) {
  if (seen_.emplace(ShapeKeyOf(args), products_.size()).second) products_.push_back(args);
}


namespace {

// Values in [-1, 1) from a 32-bit xorshift: cheap enough for the hundreds of
// millions of floats of a large fully connected layer's products (a
// distribution object per value cost seconds there), varied enough that a
// wrong kernel shows.
BufferPtr RandomBuffer(Context& ctx, size_t floats, uint32_t& state) {
  std::vector<float> values(std::max<size_t>(floats, 1));
  for (float& v : values) {
    state ^= state << 13;
    state ^= state >> 17;
    state ^= state << 5;
    v = static_cast<float>(state >> 8) * (2.f / 16777216.f) - 1.f;
  }
  BufferPtr buffer = ctx.Allocate(values.size() * sizeof(float));
  ctx.Write(buffer->mem(), 0, values.size() * sizeof(float), values.data());
  return buffer;
}

// The configurations a tuner may try for this product: family members of the
// kernel shape it runs (ProductChoices) that compute these transposes.
std::vector<GemmConfig> Candidates(const Context& ctx, const GemmArgs& args) {
  const bool gpu = !ProductChoices(ctx, args).cpu_shaped_kernels;
  const bool grouped =
      args.a_group || args.b_group || args.c_group || args.b_window.active();
  std::vector<GemmConfig> candidates;
  for (const GemmConfig& c : GemmConfigFamily()) {
    // Grouped and implicit operands run the GPU shape on every device.
    if (c.use_local != (gpu || grouped)) continue;
    if (c.Supports(args.trans_a, args.trans_b)) candidates.push_back(c);
  }
  return candidates;
}

}  // namespace

GemmTuning TuneGemm(Context& ctx, const GemmArgs& shape, int iterations,
                    std::chrono::steady_clock::time_point deadline) {
  GemmTuning result;
  result.key = ShapeKeyOf(shape);
  result.rule = RuleGemmConfig(ctx, shape);
  uint32_t rng = 5;
  const GemmExtents extents = OperandExtents(shape);
  BufferPtr a = RandomBuffer(ctx, extents.a, rng), b = RandomBuffer(ctx, extents.b, rng),
            c = RandomBuffer(ctx, extents.c, rng);
  BufferPtr bias =
      shape.bias ? RandomBuffer(ctx, shape.bias_offset + (shape.bias_per_column ? shape.N : shape.M),
                                rng)
                 : nullptr;
  GemmArgs args = shape;
  args.A = a->mem();
  args.B = b->mem();
  args.C = c->mem();
  args.beta = 0.f;  // every run writes the same C
  if (bias) args.bias = bias->mem();

  // The fastest of 3 rounds of `iterations` calls, or of 1 round where that
  // is already 1.5 times slower than `beat`.
  auto run = [&](const GemmConfig& config, double beat) {
    std::vector<float> out(std::max<size_t>(extents.c, 1));
    GemmWithConfig(ctx, args, config);  // builds the kernels
    ctx.Read(args.C, 0, out.size() * sizeof(float), out.data());
    double best = 1e30;
    for (int round = 0; round < 3 && (round == 0 || best < 1.5 * beat); ++round) {
      const auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < iterations; ++i) GemmWithConfig(ctx, args, config);
      ctx.Finish();
      best = std::min(best, std::chrono::duration<double, std::milli>(
                                std::chrono::steady_clock::now() - start)
                                    .count() /
                                iterations);
    }
    return std::make_pair(best, out);
  };

  const auto reference = run(result.rule, 1e30);
  result.rule_ms = result.best_ms = reference.first;
  result.best = result.rule;
  float largest = 0.f;
  for (float v : reference.second) largest = std::max(largest, std::fabs(v));
  for (const GemmConfig& candidate : Candidates(ctx, shape)) {
    if (candidate.Name() == result.rule.Name()) continue;
    if (std::chrono::steady_clock::now() >= deadline) break;
    ++result.candidates;
    const auto timed = run(candidate, result.best_ms);
    // Summation order differs between configurations; a wrong kernel errs
    // by the size of the values.
    float worst = 0.f;
    for (size_t i = 0; i < timed.second.size(); ++i)
      worst = std::max(worst, std::fabs(timed.second[i] - reference.second[i]));
    if (!(worst <= 1e-3f * largest + 1e-6f)) {
      LOG(WARNING) << "tune: " << candidate.Name() << " differs from " << result.rule.Name()
                   << " by " << worst << " on " << result.key.Text() << "; not used";
      ++result.rejected;
      continue;
    }
    if (timed.first < result.best_ms) {
      result.best_ms = timed.first;
      result.best = candidate;
    }
  }
  return result;
}

}  // namespace dlcaffe
