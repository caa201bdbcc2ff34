// onnx_test_runner DIR...: runs test directories in the layout of ONNX's
// backend tests (model.onnx, test_data_set_N/input_K.pb, output_K.pb) on
// the OpenCL device, one line per test and a closing "N passed, N failed,
// N skipped" line; exits non-zero when a test failed.
//
// A test set holding grad_output_K.pb (dlcaffe's extension) is a training
// check: the model is imported for training (BatchNorm on batch
// statistics, Dropout as identity), run forward, then backward from dy =
// grad_output_K, and grad_input_K.pb (d sum(y * dy) / dx) and
// grad_<initializer>.pb (that parameter's gradient) are compared too. The
// initializers with gradient files are the ones imported as trained
// parameters (ONNX does not tell parameters from buffers; convert_onnx
// --training finds them by analysis, src/import/onnx_trainable.hpp).
//
// Tolerances: sets with a tolerances.json or gradients are whole-network
// checks, compared per tensor by relative L2 error ||ours - ref|| / ||ref||
// against the bound tolerances.json gives for the file, else 1e-3 for
// outputs and 1e-2 for gradients; other sets (single ops) use ONNX's own
// per-element rule |ours - ref| <= atol + rtol * |ref| (rtol 1e-3, atol 1e-7).
// A model the importer does not support is skipped, with the reason.
//
// --storage FLOAT16 | BFLOAT16 runs every model in that storage type (the
// net's default_forward_type / default_backward_type; its math follows the
// storage, docs/mixed-precision.md) but for its Input layers, which stay
// FLOAT, as the 16-bit benchmark nets have it: the test's float input is
// rounded to 16 bits where the first layer reads it, as autocast rounds it.
// The bounds then come from tolerances_float16.json / tolerances_bfloat16.json
// (make_torchvision_tests.py --dtypes: PyTorch autocast's distance from the
// float64 reference, by the float32 rule); a set without that file fails,
// saying so. Outputs and gradients are read back as float.
#include <dirent.h>
#include <gflags/gflags.h>
#include <glog/logging.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <set>
#include <memory>
#include <sstream>

#include "dlcaffe/context.hpp"
#include "dlcaffe/error.hpp"
#include "dlcaffe/net.hpp"
#include "dlcaffe/onnx_import.hpp"
#include "storage_flag.hpp"

DEFINE_string(device, "", "OpenCL device: ocl:P:D, a flat index or cpu (default: first GPU, else the fastest CPU device)");
DEFINE_double(rtol, 1e-3, "Per-element relative tolerance for single-op tests.");
DEFINE_double(atol, 1e-7, "Per-element absolute tolerance for single-op tests.");
DEFINE_bool(fuse, true, "Run the importer's pattern fusions.");
DEFINE_bool(verbose, false, "Print each compared tensor's error.");
DEFINE_string(dump_dir, "", "Also write each compared tensor of ours to DIR/<test>/<set>/<file> (for debugging).");
DEFINE_string(storage, "FLOAT",
              "Storage type of every layer but the Input layers: FLOAT, FLOAT16 or BFLOAT16; "
              "the 16-bit ones take their bounds from tolerances_<float16|bfloat16>.json.");

namespace dlcaffe {
namespace {

bool IsDir(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}
bool IsFile(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}
std::vector<std::string> List(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') names.push_back(e->d_name);
    closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}
std::string Basename(const std::string& path) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  const size_t slash = p.find_last_of('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

// tolerances.json: a flat map from file name to bound.
std::map<std::string, double> ReadTolerances(const std::string& path) {
  std::map<std::string, double> bounds;
  std::ifstream in(path);
  if (!in) return bounds;
  std::stringstream text;
  text << in.rdbuf();
  const std::string s = text.str();
  size_t pos = 0;
  while ((pos = s.find('"', pos)) != std::string::npos) {
    const size_t end = s.find('"', pos + 1);
    DLC_REQUIRE(end != std::string::npos, path << ": unterminated string");
    const std::string key = s.substr(pos + 1, end - pos - 1);
    const size_t colon = s.find(':', end);
    DLC_REQUIRE(colon != std::string::npos, path << ": expected ':' after \"" << key << "\"");
    char* after = nullptr;
    const double value = std::strtod(s.c_str() + colon + 1, &after);
    DLC_REQUIRE(after != s.c_str() + colon + 1, path << ": no number for \"" << key << "\"");
    bounds[key] = value;
    pos = after - s.c_str();
  }
  return bounds;
}

struct Comparison {
  bool ok = true;
  double error = 0;  // relative L2, or the worst element's excess ratio
  std::string detail;
};

Comparison Compare(const std::vector<float>& ours, const std::vector<float>& ref,
                   const std::vector<int>& ours_shape, const std::vector<int>& ref_shape,
                   bool relative_l2, double bound) {
  Comparison c;
  auto count = [](const std::vector<int>& s) {
    long n = 1;
    for (int d : s) n *= d;
    return n;
  };
  if (ours.size() != ref.size() || count(ours_shape) != count(ref_shape)) {
    c.ok = false;
    std::ostringstream d;
    d << "shape differs: ours " << ours.size() << " values, reference " << ref.size();
    c.detail = d.str();
    return c;
  }
  if (relative_l2) {
    double diff = 0, norm = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
      diff += (double(ours[i]) - ref[i]) * (double(ours[i]) - ref[i]);
      norm += double(ref[i]) * ref[i];
    }
    c.error = norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
    c.ok = std::isfinite(c.error) && c.error <= bound;
    std::ostringstream d;
    d << "relative L2 error " << std::setprecision(3) << c.error << " (bound " << bound << ")";
    c.detail = d.str();
    return c;
  }
  size_t worst = 0;
  double worst_excess = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double allowed = FLAGS_atol + FLAGS_rtol * std::fabs(double(ref[i]));
    const double err = std::fabs(double(ours[i]) - ref[i]);
    const bool same_nan = std::isnan(ours[i]) && std::isnan(ref[i]);
    const bool same_inf = std::isinf(ours[i]) && ours[i] == ref[i];
    const double excess = same_nan || same_inf ? 0 : (std::isfinite(err) ? err / allowed : INFINITY);
    if (excess > worst_excess || std::isnan(excess)) {
      worst_excess = std::isnan(excess) ? INFINITY : excess;
      worst = i;
    }
  }
  c.error = worst_excess;
  c.ok = worst_excess <= 1.0;
  std::ostringstream d;
  d << "worst element " << worst << ": " << (ref.empty() ? 0.f : ours[worst]) << " vs "
    << (ref.empty() ? 0.f : ref[worst]) << " (" << std::setprecision(3) << worst_excess
    << "x the tolerance)";
  c.detail = d.str();
  return c;
}

// The storage type --storage names (FLOAT: the nets as imported).
caffe::Type StorageFlag() { return ParseStorageFlag(FLAGS_storage); }

// The generator's name of a 16-bit type (its --dtypes).
std::string DtypeName(caffe::Type storage) {
  return storage == caffe::FLOAT16 ? "float16" : storage == caffe::BFLOAT16 ? "bfloat16" : "float32";
}

// tolerances.json, or tolerances_float16.json / tolerances_bfloat16.json.
std::string ToleranceFile(caffe::Type storage) {
  return storage == caffe::FLOAT ? "tolerances.json" : "tolerances_" + DtypeName(storage) + ".json";
}

// "N of M layers store BFLOAT16, K Convert layers; in FLOAT: Type xN ..."
// (--verbose): which layers the storage pass kept in float32.
std::string StorageSummary(const Net& net, caffe::Type storage) {
  int narrow = 0, converts = 0;
  std::map<std::string, int> in_float;
  for (size_t i = 0; i < net.layers().size(); ++i) {
    const caffe::LayerParameter& p = net.layers()[i]->layer_param();
    // A layer's type is that of its tops (an inserted Split has no
    // forward_type: it stores as its bottom).
    const std::vector<Blob*>& tops = net.top_vecs()[i];
    const bool in_storage = tops.empty() ? p.forward_type() == storage
                                         : tops[0]->storage_type() != StorageType::kFloat32;
    if (p.type() == "Convert") ++converts;
    else if (in_storage) ++narrow;
    else ++in_float[p.type()];
  }
  std::ostringstream s;
  s << narrow << " of " << net.layers().size() - converts << " layers store "
    << caffe::Type_Name(storage) << ", " << converts << " Convert layers";
  if (!in_float.empty()) {
    s << "; in FLOAT:";
    for (const auto& t : in_float) s << " " << t.first << " x" << t.second;
  }
  return s.str();
}

enum class Outcome { kPassed, kFailed, kSkipped };

struct TestResult {
  Outcome outcome = Outcome::kPassed;
  std::string message;
  double worst_output = 0, worst_gradient = 0;
};

bool Unsupported(const std::string& message) {
  return message.find("not supported") != std::string::npos ||
         message.find("does not read") != std::string::npos ||
         message.find("takes float inputs") != std::string::npos ||
         message.find("outside the range the importer supports") != std::string::npos;
}

// One test_data_set_N against the model.
TestResult RunSet(Context& ctx, const std::string& model_path, const std::string& set_dir) {
  TestResult result;
  const bool training = IsFile(set_dir + "/grad_output_0.pb");
  const caffe::Type storage = StorageFlag();
  const std::string tolerance_file = ToleranceFile(storage);
  // 16-bit storage: only the bounds measured for that type judge it.
  DLC_REQUIRE(storage == caffe::FLOAT || IsFile(set_dir + "/" + tolerance_file),
              set_dir << ": no " << tolerance_file << ": the bounds for "
                      << caffe::Type_Name(storage)
                      << " storage (make_torchvision_tests.py --dtypes " << DtypeName(storage)
                      << " writes them: PyTorch autocast's distance from the reference); "
                         "the float32 bounds of tolerances.json do not apply");
  const std::map<std::string, double> bounds = ReadTolerances(set_dir + "/" + tolerance_file);
  const bool whole_network = training || IsFile(set_dir + "/" + tolerance_file);
  auto input_file = [&](size_t k) { return set_dir + "/input_" + std::to_string(k) + ".pb"; };

  OnnxImportOptions options;
  options.training = training;
  options.fuse_patterns = FLAGS_fuse;
  // A training set's grad_<initializer>.pb files say which initializers are
  // the model's parameters: those train; every other one (buffers, masks,
  // constants an exporter folded) is a constant, as in PyTorch.
  if (training) {
    std::set<std::string> trained;
    for (const std::string& file : List(set_dir))
      if (file.rfind("grad_", 0) == 0 && file.rfind("grad_output_", 0) != 0 &&
          file.rfind("grad_input_", 0) != 0 && file.size() > 8 && file.substr(file.size() - 3) == ".pb")
        trained.insert(file.substr(5, file.size() - 8));
    options.trained_initializers = trained;
  }
  // Inputs by name, from their files. ONNX's backend feeds input_K.pb to
  // the K-th graph input: a file whose tensor names no graph input (some of
  // onnx 1.17's Cast tests call theirs 'x') takes that input's name.
  const std::vector<std::string> graph_inputs = OnnxGraphInputNames(model_path);
  std::map<std::string, std::string> input_files;
  std::vector<std::string> input_names;
  for (size_t k = 0; IsFile(input_file(k)); ++k) {
    std::vector<int> shape;
    std::string name;
    try {
      ReadOnnxTensorFile(input_file(k), &shape, &name);
    } catch (const Error&) {
      name.clear();  // not a tensor (a sequence or optional): the import says so
    }
    if (!name.empty() && k < graph_inputs.size() &&
        std::find(graph_inputs.begin(), graph_inputs.end(), name) == graph_inputs.end())
      name = graph_inputs[k];
    input_files[name] = input_file(k);
    input_names.push_back(name);
    // The test's tensors give the shapes (as a runtime with dynamic shapes would take them).
    if (!name.empty()) options.input_shapes[name] = shape;
  }
  // Import; an input the importer needs at import time (a weight, a shape,
  // indices, a non-float tensor) is fixed to its file's values, and dynamic
  // dimensions to the files' shapes, one retry per such input.
  OnnxModel model;
  for (int attempt = 0;; ++attempt) {
    try {
      model = ImportOnnx(model_path, options);
      break;
    } catch (const Error& e) {
      const std::string msg = e.what();
      if (attempt > 16) throw;
      if (msg.find("dynamic dimension") != std::string::npos || msg.find("has no shape") != std::string::npos) {
        for (const auto& entry : input_files) {
          std::vector<int> shape;
          ReadOnnxTensorFile(entry.second, &shape);
          options.input_shapes[entry.first] = shape;
        }
        continue;
      }
      std::string name;
      for (const std::string& marker : {std::string("graph input '"), std::string(" ('")}) {
        const size_t at = msg.find(marker);
        if (at == std::string::npos) continue;
        const size_t start = at + marker.size(), end = msg.find('\'', start);
        if (end != std::string::npos) name = msg.substr(start, end - start);
        break;
      }
      const bool fixable = msg.find("takes float inputs") != std::string::npos ||
                           msg.find("known at import time") != std::string::npos;
      if (!fixable || !input_files.count(name) || options.constant_input_files.count(name)) throw;
      options.constant_input_files[name] = input_files[name];
      options.input_shapes.erase(name);
    }
  }
  caffe::NetParameter param = model.net;
  param.mutable_state()->set_phase(training ? caffe::TRAIN : caffe::TEST);
  if (training) param.set_force_backward(true);
  StoreNetIn(&param, storage);
  Net net(param, ctx);
  if (FLAGS_verbose && storage != caffe::FLOAT)
    std::cout << "    " << Basename(set_dir) << ": " << StorageSummary(net, storage) << "\n";
  for (const std::string& name : input_names) {
    if (options.constant_input_files.count(name)) continue;
    DLC_REQUIRE(std::find(model.inputs.begin(), model.inputs.end(), name) != model.inputs.end(),
                set_dir << ": '" << name << "' is not a graph input of the model");
    std::vector<int> shape;
    const std::vector<float> values = ReadOnnxTensorFile(input_files[name], &shape);
    Blob* blob = net.blob_by_name(name).get();
    DLC_REQUIRE(blob->count() == static_cast<int>(values.size()),
                input_files[name] << " holds " << values.size() << " values, the graph input '"
                                  << name << "' has shape " << blob->shape_string());
    blob->WriteData(values);
  }
  net.ForwardNoLoss();

  auto check = [&](const std::string& file, const std::vector<float>& ours,
                   const std::vector<int>& ours_shape, bool gradient, int64_t kept_rows = 0) {
    std::vector<int> ref_shape;
    std::string ref_name;
    std::vector<float> ref = ReadOnnxTensorFile(set_dir + "/" + file, &ref_shape, &ref_name);
    // A table the file keeps rows 0..kept_rows-1 of (positions the exporter
    // gathered and folded): PyTorch's gradient must be zero on the rest, and
    // the kept rows are compared.
    if (kept_rows > 0 && !ref_shape.empty() && ref_shape[0] > kept_rows) {
      const size_t row = ref.size() / ref_shape[0];
      for (size_t i = kept_rows * row; i < ref.size(); ++i)
        if (ref[i] != 0.f) {
          if (result.outcome == Outcome::kPassed) {
            result.outcome = Outcome::kFailed;
            result.message = file + ": the file keeps rows 0.." + std::to_string(kept_rows - 1) +
                             " of this table, but PyTorch's gradient reaches row " +
                             std::to_string(i / row);
          }
          return;
        }
      ref.resize(kept_rows * row);
      ref_shape[0] = static_cast<int>(kept_rows);
    }
    if (!FLAGS_dump_dir.empty()) {
      const std::string set = Basename(set_dir);
      const std::string dir = FLAGS_dump_dir + "/" + Basename(set_dir.substr(0, set_dir.size() - set.size() - 1)) + "/" + set;
      if (system(("mkdir -p '" + dir + "'").c_str()) == 0)
        WriteOnnxTensorFile(dir + "/" + file, ref_name, ours_shape, ours);
    }
    auto b = bounds.find(file);
    if (b == bounds.end() && storage != caffe::FLOAT) {
      if (result.outcome == Outcome::kPassed) {
        result.outcome = Outcome::kFailed;
        result.message = file + ": no bound in " + tolerance_file;
      }
      return;
    }
    const double bound = b != bounds.end() ? b->second : gradient ? 1e-2 : 1e-3;
    const Comparison c = Compare(ours, ref, ours_shape, ref_shape, whole_network, bound);
    double& worst = gradient ? result.worst_gradient : result.worst_output;
    worst = std::max(worst, c.error);
    if (FLAGS_verbose) std::cout << "    " << file << ": " << c.detail << "\n";
    if (!c.ok && result.outcome == Outcome::kPassed) {
      result.outcome = Outcome::kFailed;
      result.message = file + ": " + c.detail;
    }
  };

  for (size_t k = 0; k < model.outputs.size(); ++k) {
    const std::string file = "output_" + std::to_string(k) + ".pb";
    if (!IsFile(set_dir + "/" + file)) continue;
    const Blob* blob = net.blob_by_name(model.outputs[k]).get();
    check(file, blob->ReadData(), blob->shape(), false);
  }
  if (!training) return result;

  net.ClearParamDiffs();
  for (size_t k = 0; k < model.outputs.size(); ++k) {
    const std::string file = set_dir + "/grad_output_" + std::to_string(k) + ".pb";
    Blob* blob = net.blob_by_name(model.outputs[k]).get();
    if (!IsFile(file)) {
      blob->WriteDiff(std::vector<float>(blob->count(), 0.f));
      continue;
    }
    std::vector<int> shape;
    const std::vector<float> dy = ReadOnnxTensorFile(file, &shape);
    DLC_REQUIRE(dy.size() == static_cast<size_t>(blob->count()),
                file << ": " << dy.size() << " values for output '" << model.outputs[k]
                     << "' of shape " << blob->shape_string());
    blob->WriteDiff(dy);
  }
  net.Backward();
  for (size_t k = 0; k < input_names.size(); ++k) {
    const std::string file = "grad_input_" + std::to_string(k) + ".pb";
    if (!IsFile(set_dir + "/" + file)) continue;
    const Blob* blob = net.blob_by_name(input_names[k]).get();
    check(file, blob->ReadDiff(), blob->shape(), true);
  }
  for (const std::string& file : List(set_dir)) {
    if (file.rfind("grad_", 0) != 0 || file.rfind("grad_output_", 0) == 0 ||
        file.rfind("grad_input_", 0) == 0 || file.size() < 8 || file.substr(file.size() - 3) != ".pb")
      continue;
    std::string initializer = file.substr(5, file.size() - 8);
    auto tied = model.tied_parameters.find(initializer);  // another name of a tied weight
    if (tied != model.tied_parameters.end()) initializer = tied->second;
    auto source = model.parameters.find(initializer);
    if (source == model.parameters.end()) {
      if (result.outcome == Outcome::kPassed) {
        result.outcome = Outcome::kFailed;
        result.message = file + ": the initializer '" + initializer + "' is not a parameter of the imported net";
      }
      continue;
    }
    const Layer* layer = net.layer_by_name(source->second.layer);
    const Blob& blob = *layer->blobs().at(source->second.blob_index);
    auto partial = model.partial_tables.find(initializer);
    check(file, blob.ReadDiff(), blob.shape(), true,
          partial == model.partial_tables.end() ? 0 : partial->second);
  }
  return result;
}

TestResult RunTest(Context& ctx, const std::string& dir) {
  const std::string model = dir + "/model.onnx";
  TestResult total;
  if (!IsFile(model)) {
    total.outcome = Outcome::kFailed;
    total.message = "no model.onnx";
    return total;
  }
  int sets = 0;
  for (const std::string& name : List(dir)) {
    if (name.rfind("test_data_set_", 0) != 0 || !IsDir(dir + "/" + name)) continue;
    ++sets;
    TestResult r;
    try {
      r = RunSet(ctx, model, dir + "/" + name);
    } catch (const std::exception& e) {
      r.outcome = Unsupported(e.what()) ? Outcome::kSkipped : Outcome::kFailed;
      r.message = e.what();
    }
    total.worst_output = std::max(total.worst_output, r.worst_output);
    total.worst_gradient = std::max(total.worst_gradient, r.worst_gradient);
    if (r.outcome != Outcome::kPassed && total.outcome == Outcome::kPassed) {
      total.outcome = r.outcome;
      total.message = name + ": " + r.message;
    }
    if (r.outcome == Outcome::kSkipped) break;
  }
  if (sets == 0) {
    total.outcome = Outcome::kFailed;
    total.message = "no test_data_set_N directory";
  }
  return total;
}

}  // namespace
}  // namespace dlcaffe

int main(int argc, char** argv) {
  FLAGS_logtostderr = true;
  FLAGS_minloglevel = 1;  // the per-net initialization lines would drown the results
  gflags::SetUsageMessage(
      "runs ONNX backend-test directories (model.onnx + test_data_set_N)\n"
      "usage: onnx_test_runner [flags] DIR...   (a DIR without model.onnx: each subdirectory)");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  google::InitGoogleLogging(argv[0]);
  if (argc < 2) {
    gflags::ShowUsageWithFlagsRestrict(argv[0], "tools/onnx_test_runner");
    return 1;
  }
  using namespace dlcaffe;
  std::unique_ptr<Context> ctx;
  try {
    StorageFlag();
    ctx = Context::Create(FLAGS_device);
  } catch (const std::exception& e) {
    std::cerr << "onnx_test_runner: error: " << e.what() << std::endl;
    return 1;
  }
  std::vector<std::string> dirs;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (IsFile(arg + "/model.onnx")) {
      dirs.push_back(arg);
    } else if (IsDir(arg)) {
      for (const std::string& name : List(arg))
        if (IsFile(arg + "/" + name + "/model.onnx")) dirs.push_back(arg + "/" + name);
    } else {
      std::cerr << "onnx_test_runner: error: " << arg << ": no such directory" << std::endl;
      return 1;
    }
  }
  int passed = 0, failed = 0, skipped = 0;
  for (const std::string& dir : dirs) {
    const TestResult r = RunTest(*ctx, dir);
    const std::string name = Basename(dir);
    switch (r.outcome) {
      case Outcome::kPassed:
        ++passed;
        std::cout << "PASS " << name << std::setprecision(3) << " (worst output error "
                  << r.worst_output;
        if (r.worst_gradient > 0) std::cout << ", worst gradient error " << r.worst_gradient;
        std::cout << ")\n";
        break;
      case Outcome::kFailed:
        ++failed;
        std::cout << "FAIL " << name << ": " << r.message << "\n";
        break;
      case Outcome::kSkipped:
        ++skipped;
        std::cout << "SKIP " << name << ": " << r.message << "\n";
        break;
    }
    std::cout.flush();
  }
  std::cout << passed << " passed, " << failed << " failed, " << skipped << " skipped";
  if (StorageFlag() != caffe::FLOAT) std::cout << " (" << FLAGS_storage << " storage)";
  std::cout << std::endl;
  return failed == 0 ? 0 : 1;
}
