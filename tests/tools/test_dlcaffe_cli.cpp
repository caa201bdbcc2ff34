// The dlcaffe command line: Caffe's log lines, snapshots and resume, and one
// clear message with a non-zero exit for bad input.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <filesystem>
#include <cstdio>
#include <cstdlib>
#include <regex>

#include "dlcaffe/io.hpp"
#include "util/run_dlcaffe.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {

namespace {

std::string WriteTemp(const std::string& name, const std::string& text) {
  static const std::string dir = TempDir();
  const std::string path = dir + "/" + name;
  WriteFileAtomically(path, text);
  return path;
}

// A training net for `bench --mode=train`, which draws labels below 1000.
const char kTinyTrainNet[] = R"(
    name: 'tiny'
    layer { name: 'in' type: 'Input' top: 'data' top: 'label'
            input_param { shape { dim: 3 dim: 5 } shape { dim: 3 } } }
    layer { name: 'ip' type: 'InnerProduct' bottom: 'data' top: 'ip'
            inner_product_param { num_output: 1000 } }
    layer { name: 'loss' type: 'SoftmaxWithLoss' bottom: 'ip' bottom: 'label' top: 'loss' })";

}  // namespace

TEST(DlcaffeCli, DeviceQueryListsDevices) {
  ToolResult r = RunDlcaffe("device_query");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(Contains(r.output, "Device 0: ocl:")) << r.output;
}

TEST(DlcaffeCli, MalformedSolverNamesFileLineAndColumn) {
  const std::string path = WriteTemp("bad_solver.prototxt", "base_lr: 0.01\nmomentum 0.9 x\n");
  ExpectCleanError(RunDlcaffe("train --solver=" + path), path + ":2:");
}

TEST(DlcaffeCli, MissingSolverFileIsNamed) {
  ExpectCleanError(RunDlcaffe("train --solver=/nonexistent/solver.prototxt"),
                   "/nonexistent/solver.prototxt");
}

TEST(DlcaffeCli, UnknownLayerTypeListsKnownTypes) {
  const std::string net = WriteTemp("unknown_type.prototxt", R"(
    layer { name: 'in' type: 'Input' top: 'data' input_param { shape { dim: 1 dim: 4 } } }
    layer { name: 'mystery' type: 'Convolution3000' bottom: 'data' top: 'out' })");
  ToolResult r = RunDlcaffe("time --model=" + net + " --iterations=1");
  ExpectCleanError(r, "'Convolution3000'");
  EXPECT_TRUE(Contains(r.output, "InnerProduct")) << r.output;
}

TEST(DlcaffeCli, MissingDatabaseNamesThePath) {
  const std::string net = WriteTemp("missing_db.prototxt", R"(
    layer { name: 'd' type: 'Data' top: 'data' top: 'label'
            data_param { source: '/nonexistent/mnist_lmdb' batch_size: 4 backend: LMDB } })");
  ExpectCleanError(RunDlcaffe("time --model=" + net + " --iterations=1"), "/nonexistent/mnist_lmdb");
}

TEST(DlcaffeCli, WeightsAndSnapshotTogetherAreRefused) {
  ExpectCleanError(RunDlcaffe("train --solver=models/lenet/lenet_solver.prototxt "
                       "--weights=a.caffemodel --snapshot=b.solverstate"),
                   "--snapshot");
}

TEST(DlcaffeCli, NoOpenCLDeviceIsAClearError) {
  // An ICD loader that finds no driver: no platform at all.
  const std::string empty = TempDir();
  ExpectCleanError(RunDlcaffe("time --model=models/lenet/lenet.prototxt", "OCL_ICD_VENDORS=" + empty +
                                                                      " OCL_ICD_FILENAMES="),
                   "no OpenCL device found");
}

TEST(DlcaffeCli, UnknownDeviceListsTheDevices) {
  ToolResult r = RunDlcaffe("time --model=models/lenet/lenet.prototxt --device=ocl:9:9");
  ExpectCleanError(r, "'ocl:9:9'");
  EXPECT_TRUE(Contains(r.output, "ocl:0:0")) << r.output;
}

TEST(DlcaffeCli, KernelThatFailsToBuildShowsTheBuildLog) {
  // A copy of the kernels with a syntax error in pooling.cl, read from disk.
  const std::string dir = TempDir();
  const std::string copy = "cp -r '" + SourceDir() + "/src/cl/.' '" + dir + "/' && printf "
                           "'__kernel void broken( { }\\n' >> '" + dir + "/pooling.cl'";
  ASSERT_EQ(std::system(copy.c_str()), 0);
  ToolResult r = RunDlcaffe("time --model=models/lenet/lenet.prototxt --iterations=1",
                        "DLCAFFE_KERNEL_CACHE=off DLCAFFE_CL_DIR=" + dir);
  ExpectCleanError(r, "pooling.cl failed to build");
  EXPECT_TRUE(Contains(r.output, "Build log")) << r.output;
}

TEST(DlcaffeCli, BenchTimesForwardAndTrainingSteps) {
  ToolResult forward = RunDlcaffe(
      "bench --model=models/lenet/lenet.prototxt --mode=forward --iterations=2 --warmup=1");
  ASSERT_EQ(forward.exit_code, 0) << forward.output;
  EXPECT_TRUE(Contains(forward.output, "bench LeNet forward ")) << forward.output;
  const std::string train_net = WriteTemp("bench_train.prototxt", kTinyTrainNet);
  ToolResult train =
      RunDlcaffe("bench --model=" + train_net + " --mode=train --iterations=2 --warmup=1");
  ASSERT_EQ(train.exit_code, 0) << train.output;
  EXPECT_TRUE(Contains(train.output, "bench tiny train ")) << train.output;
  ExpectCleanError(RunDlcaffe("bench --model=models/lenet/lenet.prototxt --mode=fast"),
                   "--mode");
}

// --storage: every layer but the Input stored in the type asked, as the
// net's default_forward_type would say; the kernel profile shows the
// float input's conversion and the 16-bit loss kernels.
TEST(DlcaffeCli, BenchStoresTheNetInTheTypeAsked) {
  const std::string net = WriteTemp("storage_train.prototxt", kTinyTrainNet);
  const std::string bench = "bench --model=" + net + " --mode=train --iterations=1 --warmup=0 --kernels";
  ToolResult plain = RunDlcaffe(bench);
  ASSERT_EQ(plain.exit_code, 0) << plain.output;
  EXPECT_FALSE(Contains(plain.output, "convert_float32_")) << plain.output;
  EXPECT_FALSE(Contains(plain.output, " storage, ")) << plain.output;
  const std::array<std::array<std::string, 3>, 2> types = {
      {{"FLOAT16", "float16", "1"}, {"BFLOAT16", "bfloat16", "2"}}};
  for (const auto& [type, lower, code] : types) {
    ToolResult r = RunDlcaffe(bench + " --storage=" + type);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(Contains(r.output, "bench tiny train ")) << r.output;
    EXPECT_TRUE(Contains(r.output, type + " storage, ")) << r.output;
    EXPECT_TRUE(Contains(r.output, "convert_float32_" + lower)) << r.output;
    // The Input (data and label) stays float: a Convert layer feeds the
    // InnerProduct (a bfloat16 label would hold class ids only up to 256).
    EXPECT_TRUE(Contains(r.output, "2 of 3 layers store " + type + ", 1 Convert layers added"))
        << r.output;
    EXPECT_TRUE(Contains(r.output, "softmax_loss_forward [ -DDATA_TYPE=" + code + "]"))
        << r.output;
  }
  ExpectCleanError(RunDlcaffe(bench + " --storage=INT8"), "--storage INT8 is not a storage type");
  // An .onnx model, which has no prototxt to say it in: its data Input and
  // the label Input that bench adds with the loss stay float.
  ToolResult onnx = RunDlcaffe(
      "bench --model=tests/fuzz/corpus/onnx_import/classifier.onnx --mode=train "
      "--iterations=1 --warmup=0 --storage=BFLOAT16");
  ASSERT_EQ(onnx.exit_code, 0) << onnx.output;
  EXPECT_TRUE(Contains(onnx.output, "7 of 9 layers store BFLOAT16, 1 Convert layers added"))
      << onnx.output;
  EXPECT_TRUE(Contains(onnx.output, "BFLOAT16 storage, ")) << onnx.output;
}

// --kernels: device time per kernel function and program from profiling
// events, per timed iteration, the transfers and fills included.
TEST(DlcaffeCli, KernelsReportsDeviceTimePerKernel) {
  const std::string net = WriteTemp("kernels_train.prototxt", kTinyTrainNet);
  ToolResult bench = RunDlcaffe("bench --model=" + net +
                                " --mode=train --iterations=3 --warmup=1 --kernels");
  ASSERT_EQ(bench.exit_code, 0) << bench.output;
  EXPECT_TRUE(Contains(bench.output, "Kernel device time per pass (")) << bench.output;
  // Per iteration: one Adam update per parameter blob (the weights and the
  // bias), one launch that clears both gradients, the data and the labels
  // written.
  const auto per_pass = [&](int calls, const std::string& label) {
    const std::regex line("\\b" + std::to_string(calls) + " calls  " + label);
    EXPECT_TRUE(std::regex_search(bench.output, line))
        << "no '" << calls << " calls  " << label << "' in:\n" << bench.output;
  };
  // (The GPU shape updates both small blobs in one launch: adam_update_many.)
  const std::regex adam("\\b(2 calls  adam_update\\b|1 calls  adam_update_many)");
  EXPECT_TRUE(std::regex_search(bench.output, adam)) << bench.output;
  per_pass(1, "set_floats8");
  per_pass(2, "\\(write to the device\\)");
  EXPECT_TRUE(Contains(bench.output, "gemm_tiled [-DMR=")) << bench.output;
  ToolResult time = RunDlcaffe("time --model=" + net + " --iterations=2 --kernels");
  ASSERT_EQ(time.exit_code, 0) << time.output;
  EXPECT_TRUE(Contains(time.output, "Kernel device time per pass (")) << time.output;
  EXPECT_TRUE(Contains(time.output, "softmax_loss_forward")) << time.output;
}

// --explain logs the plan's steps; kernel_source prints a kernel's whole
// text as the compiler gets it (the storage types' macros in the header).
TEST(DlcaffeCli, ExplainAndKernelSourceShowWhatRuns) {
  const std::string net = WriteTemp("explain.prototxt", kTinyTrainNet);
  ToolResult time = RunDlcaffe("time --model=" + net + " --iterations=1 --explain");
  ASSERT_EQ(time.exit_code, 0) << time.output;
  EXPECT_TRUE(Contains(time.output, "step 1: 'ip' (InnerProduct)")) << time.output;
  EXPECT_TRUE(Contains(time.output, "step 2: 'loss' (SoftmaxWithLoss)")) << time.output;
  EXPECT_TRUE(Contains(time.output, "    product ")) << time.output;  // the ip's
  ToolResult bench = RunDlcaffe("bench --model=" + net + " --iterations=1 --warmup=0 --explain");
  ASSERT_EQ(bench.exit_code, 0) << bench.output;
  EXPECT_TRUE(Contains(bench.output, "step 1: 'ip' (InnerProduct)")) << bench.output;
  EXPECT_TRUE(Contains(bench.output, "    product ")) << bench.output;

  ToolResult source = RunDlcaffe("kernel_source --kernel_file=gemm_tiled.cl");
  ASSERT_EQ(source.exit_code, 0) << source.output;
  EXPECT_TRUE(Contains(source.output, "#define STORAGE_LOAD_1(p, i) vload_half((i), (p))"))
      << source.output;
  EXPECT_TRUE(Contains(source.output, "__kernel")) << source.output;
  EXPECT_FALSE(Contains(source.output, "#include \"")) << source.output;
  ExpectCleanError(RunDlcaffe("kernel_source --kernel_file=no_such.cl"), "no_such.cl");
}

TEST(DlcaffeCli, TuneStoresWinnersThatLaterRunsUse) {
  const std::string cache = TempDir();
  const std::string env = "DLCAFFE_TUNING_CACHE='" + cache + "'";
  const std::string net = WriteTemp("tune.prototxt", R"(
    name: 'tiny'
    layer { name: 'in' type: 'Input' top: 'data' top: 'label'
            input_param { shape { dim: 2 dim: 3 dim: 9 dim: 9 } shape { dim: 2 } } }
    layer { name: 'conv' type: 'Convolution' bottom: 'data' top: 'conv'
            convolution_param { num_output: 5 kernel_size: 3 } }
    layer { name: 'ip' type: 'InnerProduct' bottom: 'conv' top: 'ip'
            inner_product_param { num_output: 4 } }
    layer { name: 'loss' type: 'SoftmaxWithLoss' bottom: 'ip' bottom: 'label' top: 'loss' })");
  ToolResult tune = RunDlcaffe("tune --model=" + net + " --iterations=1", env);
  ASSERT_EQ(tune.exit_code, 0) << tune.output;
  EXPECT_TRUE(Contains(tune.output, "distinct GEMM products")) << tune.output;
  // Whether the winners or the rule's own choices are stored depends on
  // which made the whole net faster in this run; either way the device's
  // tuning file is written in the cache.
  EXPECT_TRUE(Contains(tune.output, "stored in " + cache + "/gemm-")) << tune.output;
  int tuning_files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(cache))
    tuning_files += entry.path().filename().string().rfind("gemm-", 0) == 0 &&
                    entry.path().extension() == ".txt";
  EXPECT_EQ(tuning_files, 1);
  // The convolution forward: 5 filters of 3 x 3 x 3 over 2 x 7 x 7 outputs.
  EXPECT_TRUE(Contains(tune.output, "= 5 98 27 0 0 ")) << tune.output;
  // A later run with the winners trains as before.
  ToolResult bench = RunDlcaffe("bench --model=" + net + " --mode=train --iterations=1 --warmup=0", env);
  EXPECT_EQ(bench.exit_code, 0) << bench.output;
  ExpectCleanError(RunDlcaffe("tune"), "--model");
}

TEST(DlcaffeCli, TimePrintsCaffesBenchmarkLines) {
  ToolResult r = RunDlcaffe("time --model=models/cifar10_quick/cifar10_quick.prototxt --iterations=2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* line : {"*** Benchmark begins ***", "conv1\tforward: ", "conv1\tbackward: ",
                           "Average Forward pass: ", "Average Backward pass: ",
                           "Average Forward-Backward: ", "*** Benchmark ends ***"})
    EXPECT_TRUE(Contains(r.output, line)) << "missing '" << line << "' in:\n" << r.output;
}

TEST(DlcaffeCli, DebugInfoLogsForwardBackwardAndUpdate) {
  if (!FileExists(SourceDir() + "/examples/mnist/mnist_train_lmdb"))
    GTEST_FAIL() << "run data/mnist/get_mnist.sh first (the test command does)";
  const std::string solver = WriteTemp("debug_solver.prototxt", R"(
    net: "models/lenet/lenet_train_test.prototxt"
    base_lr: 0.01
    lr_policy: "fixed"
    display: 1
    max_iter: 2
    debug_info: true
    snapshot_after_train: false
    snapshot_prefix: "/tmp/unused")");
  ToolResult r = RunDlcaffe("train --solver=" + solver);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* line :
       {"[Forward] Layer conv1, top blob conv1 data: ", "[Forward] Layer conv1, param blob 0 data: ",
        "[Backward] Layer ip2, bottom blob ip1 diff: ", "[Backward] Layer conv1, param blob 1 diff: ",
        "[Update] Layer conv1, param 0 data: "})
    EXPECT_TRUE(Contains(r.output, line)) << "missing '" << line << "' in:\n" << r.output;
  // The data layer's labels get no gradient, so no backward line names them.
  EXPECT_FALSE(Contains(r.output, "bottom blob label diff")) << r.output;
}

TEST(DlcaffeCli, TrainSnapshotAndResumeOnMnist) {
  if (!FileExists(SourceDir() + "/examples/mnist/mnist_train_lmdb"))
    GTEST_FAIL() << "run data/mnist/get_mnist.sh first (the test command does)";
  const std::string dir = TempDir();
  const std::string solver = WriteTemp("short_solver.prototxt", R"(
    net: "models/lenet/lenet_train_test.prototxt"
    test_iter: 2
    test_interval: 40
    base_lr: 0.01
    momentum: 0.9
    weight_decay: 0.0005
    lr_policy: "inv"
    gamma: 0.0001
    power: 0.75
    display: 20
    max_iter: 40
    snapshot: 20
    snapshot_prefix: ")" + dir + R"(/lenet"
    random_seed: 1)");
  ToolResult r = RunDlcaffe("train --solver=" + solver);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* line :
       {"Iteration 0, Testing net (#0)", "Test net output #0: accuracy = ",
        "Test net output #1: loss = ", "Iteration 20 (", " iter/s, ", "s/20 iters), loss = ",
        "Train net output #0: loss = ", "Iteration 20, lr = ",
        "Snapshotting to binary proto file ", "Snapshotting solver state to binary proto file ",
        "Iteration 40, loss = ", "Iteration 40, Testing net (#0)", "Optimization Done."})
    EXPECT_TRUE(Contains(r.output, line)) << "missing '" << line << "' in:\n" << r.output;
  EXPECT_TRUE(FileExists(dir + "/lenet_iter_20.caffemodel"));
  EXPECT_TRUE(FileExists(dir + "/lenet_iter_40.solverstate"));

  ToolResult resumed = RunDlcaffe("train --solver=" + solver + " --snapshot=" + dir +
                       "/lenet_iter_20.solverstate");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_TRUE(Contains(resumed.output, "Restoring previous solver status from")) << resumed.output;
  EXPECT_FALSE(Contains(resumed.output, "Iteration 0, Testing")) << resumed.output;
  EXPECT_TRUE(Contains(resumed.output, "Optimization Done.")) << resumed.output;

  ToolResult tested = RunDlcaffe("test --model=models/lenet/lenet_train_test.prototxt --weights=" + dir +
                      "/lenet_iter_40.caffemodel --iterations=3");
  ASSERT_EQ(tested.exit_code, 0) << tested.output;
  EXPECT_TRUE(Contains(tested.output, "accuracy = ")) << tested.output;
}

}  // namespace test
}  // namespace dlcaffe
