// dlcaffe: Caffe's command line (train, test, time, device_query) on OpenCL.
#include <gflags/gflags.h>
#include <glog/logging.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <set>
#include <random>
#include <sstream>

#include "../src/core/gemm_tuning.hpp"
#include "../src/core/net_tuning.hpp"
#include "../src/passes/net_pass.hpp"
#include "dlcaffe/context.hpp"
#include "dlcaffe/data_parallel.hpp"
#include "dlcaffe/error.hpp"
#include "dlcaffe/io.hpp"
#include "dlcaffe/net.hpp"
#include "dlcaffe/onnx_import.hpp"
#include "dlcaffe/solver.hpp"
#include "dlcaffe/language_model.hpp"
#include "dlcaffe/text_generator.hpp"
#include "dlcaffe/data/bpe_tokenizer.hpp"
#include "dlcaffe/data/vocabulary.hpp"
#include "storage_flag.hpp"

DEFINE_string(device, "",
              "OpenCL device: ocl:P:D, a flat index from device_query, or cpu (the fastest "
              "CPU device); default: the first GPU, else the fastest CPU device by measurement. "
              "train: several, separated "
              "by ',' (e.g. 0,1), train one replica each (data-parallel); under mpirun the "
              "default is the host's GPU of the process's local rank");
DEFINE_string(options, "",
              "run options as name=value[,name=value], over the environment's DLCAFFE_* "
              "variables (README, 'Run options'), e.g. fusion=off,kernel_shape=gpu");
DEFINE_int32(bucket_mb, 25, "train on several devices or processes: gradients are averaged "
             "in buckets of about this many MB, each sent as soon as backward finishes it.");
DEFINE_bool(bucket_taper, true, "train on several devices or processes: the last buckets "
            "backward finishes are smaller (1/16 of --bucket_mb, doubling up), since the "
            "last one's exchange cannot overlap backward.");
DEFINE_int32(exchange_threads, 0, "train on several devices: host threads that sum each bucket "
             "of gradients (0: half the cores, 1 to 8); results do not depend on it.");
DEFINE_string(exchange_trace, "", "train on several devices or processes: write a timeline of "
              "every step's gradient exchange to this file (bench/exchange_trace.py reads it).");
DEFINE_string(exchange_diagnosis, "", "train on several devices, to find where time goes, never "
              "to train: 'copies' sends gradients to the host and back unsummed, 'none' sends "
              "nothing (the replicas train apart).");
DEFINE_double(replica_timeout, 600, "train under mpirun: seconds a process waits for the "
              "others in one exchange before it gives up and ends the job.");
DEFINE_bool(explain, false, "time, bench: log what each step of the net's plan runs (the "
            "layers it folds, its kernels' shape and algorithm, its storage types) and, "
            "from one forward pass, its GEMM products' sizes, forms and configurations");
DEFINE_string(kernel_file, "", "kernel_source: the OpenCL source (src/cl/NAME.cl) to print.");
DEFINE_string(solver, "", "The solver definition protocol buffer text file.");
DEFINE_string(model, "", "The model definition protocol buffer text file, or an ONNX model (.onnx).");
DEFINE_string(phase, "", "Optional; network phase (TRAIN or TEST). Only used for 'time'.");
DEFINE_int32(level, 0, "Optional; network level.");
DEFINE_string(stage, "", "Optional; network stages (not to be confused with phase), "
                         "separated by ','.");
DEFINE_string(snapshot, "", "Optional; the snapshot solver state to resume training.");
DEFINE_bool(check_finite, false, "train: after each layer, check that its outputs (and the "
            "gradients and weights) are finite, and stop naming the first layer that is not "
            "(the solver's check_finite; costs a host read per layer).");
DEFINE_string(weights, "", "Optional; the pretrained weights to initialize finetuning, "
                           "separated by ','. Cannot be set simultaneously with snapshot.");
DEFINE_int32(iterations, 50, "The number of iterations to run.");
DEFINE_string(input_shape, "",
              "An .onnx --model: input shapes, name:d0,d1,...[;name:...]. Dynamic dimensions "
              "(symbolic batch or sequence axes) need them in bench and tune; time reshapes "
              "the inputs to them (such a net follows its inputs' shapes; else they are 1).");
DEFINE_bool(kernels, false, "time, bench: also report the device time of each kernel, "
            "transfer and fill (OpenCL profiling events) over the passes without "
            "per-layer waits (time) or the timed iterations (bench)");
DEFINE_int32(warmup, 5, "bench: untimed iterations before the timed ones.");
DEFINE_double(tune_seconds, 20, "tune: the time budget of the tuning run (after the net is "
              "built); the GEMM products with the most arithmetic are tuned first");
DEFINE_string(mode, "forward", "bench: 'forward' (copy in + forward + result back) or "
                               "'train' (copy in + forward + backward + Adam update).");
DEFINE_string(storage, "", "bench: store every layer but the Input layers in this type "
                           "(FLOAT16 or BFLOAT16; FLOAT: as the net says), as the net's "
                           "default_forward_type and default_backward_type would; for an "
                           ".onnx model, which has no prototxt to say it in.");
DEFINE_bool(memory_plan, false, "bench --mode=forward: let activation blobs whose lifetimes "
                                "do not overlap share device storage (the inference memory "
                                "plan) before timing; logs the bytes without and with it.");
DEFINE_string(prompt, "", "generate: the text the model continues (at least one token).");
DEFINE_int32(tokens, 200, "generate: how many tokens to sample.");
DEFINE_double(temperature, 1.0, "generate: logits are divided by it before sampling; 0 takes "
              "the most likely token.");
DEFINE_int32(top_k, 0, "generate: sample from the k most likely tokens only (0: all).");
DEFINE_uint64(seed, 0, "generate: the sampler's seed (the same seed, the same text).");
DEFINE_string(vocab, "", "generate: convert_text's vocab.txt (default: vocab.txt beside "
              "--weights, else beside --model).");
DEFINE_bool(kv_cache, true, "generate: keep the keys and values of earlier positions, so a "
            "token costs one position's work; false reruns the whole context per token.");
DEFINE_string(tokenizer, "", "generate: a Hugging Face tokenizer.json (byte-level BPE: GPT-2, "
              "LLaMA 3, Qwen2) for --prompt and the output, in place of --vocab.");
DEFINE_string(prompt_ids, "", "generate: the prompt as token ids (comma-separated); the output "
              "is the generated ids, one line.");
DEFINE_int32(context, 0, "generate, for an .onnx model with a dynamic sequence axis: the longest "
             "context it runs at (default: the prompt's length plus --tokens).");
DEFINE_string(sigint_effect, "stop", "Optional; action to take when a SIGINT signal is "
                                     "received: snapshot, stop or none.");
DEFINE_string(sighup_effect, "snapshot", "Optional; action to take when a SIGHUP signal is "
                                         "received: snapshot, stop or none.");

using namespace dlcaffe;

namespace {

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  std::stringstream in(s);
  std::string part;
  while (std::getline(in, part, sep))
    if (!part.empty()) parts.push_back(part);
  return parts;
}

caffe::Phase PhaseFromFlag(caffe::Phase default_phase) {
  if (FLAGS_phase.empty()) return default_phase;
  if (FLAGS_phase == "TRAIN") return caffe::TRAIN;
  if (FLAGS_phase == "TEST") return caffe::TEST;
  DLC_FAIL("--phase must be TRAIN or TEST, got '" << FLAGS_phase << "'");
}

// Signals only set flags; the solver polls them after each iteration (each
// replica's thread, in data-parallel training: atomics, lock-free).
std::atomic<int> g_sigint{0}, g_sighup{0};
void OnSigint(int) { g_sigint.store(1); }
void OnSighup(int) { g_sighup.store(1); }

SolverAction ActionFromFlag(const std::string& flag, const char* name) {
  if (flag == "stop") return SolverAction::kStop;
  if (flag == "snapshot") return SolverAction::kSnapshot;
  if (flag == "none") return SolverAction::kNone;
  DLC_FAIL("--" << name << " must be snapshot, stop or none, got '" << flag << "'");
}

// The environment's run options, then --options, then --device.
RunOptions ToolRunOptions() {
  RunOptions options = RunOptions::FromEnvironment();
  options.SetList(FLAGS_options);
  if (!FLAGS_device.empty()) options.device = FLAGS_device;
  return options;
}

std::unique_ptr<Context> MakeContext() {
  auto ctx = Context::Create(ToolRunOptions());
  LOG(INFO) << "Using OpenCL device " << ctx->info().Describe();
  return ctx;
}

// Under mpirun without --device: the GPU of this process's rank among the
// processes of its host (each process its own GPU, as far as they go), or
// the default device where there is no GPU.
std::string DefaultDeviceOfRank(const ProcessGroup& processes) {
  if (processes.size() == 1 || !ToolRunOptions().device.empty()) return "";
  std::vector<DeviceInfo> gpus;
  for (const DeviceInfo& d : ListDevices())
    if (d.is_gpu()) gpus.push_back(d);
  if (gpus.empty()) return "";
  const DeviceInfo& gpu = gpus[processes.local_rank() % gpus.size()];
  return std::to_string(gpu.flat_index);
}

void CopyWeights(const std::string& list, Solver* solver) {
  for (const auto& file : Split(list, ',')) {
    LOG(INFO) << "Finetuning from " << file;
    solver->net().CopyTrainedLayersFrom(file);
    for (const auto& test_net : solver->test_nets()) test_net->CopyTrainedLayersFrom(file);
  }
}

int Train() {
  DLC_REQUIRE(!FLAGS_solver.empty(), "train needs --solver=solver.prototxt");
  DLC_REQUIRE(FLAGS_snapshot.empty() || FLAGS_weights.empty(),
              "give --snapshot or --weights, not both: --snapshot resumes a run, "
              "--weights starts a new one from pretrained weights");
  caffe::SolverParameter param = ReadSolverParams(FLAGS_solver);
  const std::vector<std::string> stages = Split(FLAGS_stage, ',');
  param.mutable_train_state()->set_level(FLAGS_level);
  for (const auto& s : stages) param.mutable_train_state()->add_stage(s);
  if (FLAGS_check_finite) param.set_check_finite(true);
  const SolverAction on_sigint = ActionFromFlag(FLAGS_sigint_effect, "sigint_effect");
  const SolverAction on_sighup = ActionFromFlag(FLAGS_sighup_effect, "sighup_effect");

  std::signal(SIGINT, OnSigint);
  std::signal(SIGHUP, OnSighup);
  const auto action_request = [on_sigint, on_sighup]() {
    if (g_sigint.exchange(0) && on_sigint != SolverAction::kNone) return on_sigint;
    if (g_sighup.exchange(0) && on_sighup != SolverAction::kNone) return on_sighup;
    return SolverAction::kNone;
  };

  // Several devices, or several processes of an MPI launch: data-parallel.
  std::unique_ptr<ProcessGroup> processes = ProcessGroup::Join(nullptr, nullptr);
  processes->set_timeout(FLAGS_replica_timeout);
  std::vector<std::string> devices = Split(FLAGS_device, ',');
  if (processes->size() > 1 || devices.size() > 1) {
    if (processes->rank() != 0) FLAGS_minloglevel = std::max(FLAGS_minloglevel, 1);
    if (devices.empty()) devices.push_back(DefaultDeviceOfRank(*processes));
    DLC_REQUIRE(FLAGS_bucket_mb > 0, "--bucket_mb must be positive");
    DataParallelOptions options;
    options.devices = devices;
    options.run_options = ToolRunOptions();
    options.resume_file = FLAGS_snapshot;
    options.weights = Split(FLAGS_weights, ',');
    options.bucket_bytes = static_cast<size_t>(FLAGS_bucket_mb) << 20;
    DLC_REQUIRE(FLAGS_exchange_threads >= 0, "--exchange_threads must be 0 or more");
    options.exchange_threads = FLAGS_exchange_threads;
    options.bucket_taper = FLAGS_bucket_taper;
    options.exchange_trace = FLAGS_exchange_trace;
    options.exchange_diagnosis = FLAGS_exchange_diagnosis;
    options.action_request = action_request;
    LOG(INFO) << "Starting Optimization";
    try {
      TrainDataParallel(param, options, *processes);
    } catch (const std::exception& e) {
      if (processes->size() == 1) throw;
      // Ending alone would leave the others waiting for this process.
      // One write: mpirun passes each write on as it comes, and the ranks'
      // lines would mix.
      std::cerr << ("dlcaffe: error: rank " + std::to_string(processes->rank()) + ": " +
                    e.what() + "\n")
                << std::flush;
      processes->Abort(1);
    }
    return 0;
  }

  auto ctx = MakeContext();
  LOG(INFO) << "Starting Optimization";
  std::unique_ptr<Solver> solver = SolverRegistry::Create(param, *ctx);
  solver->set_action_request(action_request);
  if (!FLAGS_weights.empty()) CopyWeights(FLAGS_weights, solver.get());
  solver->Solve(FLAGS_snapshot);
  return 0;
}

// --input_shape for a net built from the .onnx file: its inputs reshaped,
// which a model with dynamic dimensions follows.
void ReshapeInputs(Net& net) {
  if (FLAGS_input_shape.empty()) return;
  DLC_REQUIRE(IsOnnxPath(FLAGS_model), "--input_shape is for .onnx models; a prototxt's Input "
                                       "layers fix their shapes");
  for (const auto& [name, shape] : ParseInputShapes(FLAGS_input_shape)) {
    const auto& inputs = net.input_blobs();
    Blob* input = net.has_blob(name) ? net.blob_by_name(name).get() : nullptr;
    DLC_REQUIRE(input && std::find(inputs.begin(), inputs.end(), input) != inputs.end(),
                "--input_shape: '" << name << "' is not an input of " << FLAGS_model);
    input->Reshape(shape);
  }
  net.Reshape();
}

int Test() {
  DLC_REQUIRE(!FLAGS_model.empty(), "test needs --model=net.prototxt");
  DLC_REQUIRE(!FLAGS_weights.empty(), "test needs --weights=net.caffemodel");
  auto ctx = MakeContext();
  Net net(FLAGS_model, caffe::TEST, *ctx, FLAGS_level, Split(FLAGS_stage, ','));
  net.CopyTrainedLayersFrom(FLAGS_weights);
  LOG(INFO) << "Running for " << FLAGS_iterations << " iterations.";
  std::vector<double> scores;
  std::vector<int> score_blob;
  double loss = 0;
  for (int i = 0; i < FLAGS_iterations; ++i) {
    const float iter_loss = net.Forward();
    loss += iter_loss;
    int idx = 0;
    for (size_t j = 0; j < net.output_blobs().size(); ++j) {
      const std::string& name = net.blob_names()[net.output_blob_indices()[j]];
      for (float v : net.output_blobs()[j]->ReadData()) {
        if (i == 0) {
          scores.push_back(v);
          score_blob.push_back(net.output_blob_indices()[j]);
        } else {
          scores[idx] += v;
        }
        LOG(INFO) << "Batch " << i << ", " << name << " = " << v;
        ++idx;
      }
    }
  }
  loss /= FLAGS_iterations;
  LOG(INFO) << "Loss: " << loss;
  for (size_t i = 0; i < scores.size(); ++i) {
    const std::string& name = net.blob_names()[score_blob[i]];
    const float weight = net.blob_loss_weights()[score_blob[i]];
    const double mean = scores[i] / FLAGS_iterations;
    std::ostringstream loss_msg;
    if (weight != 0.f) loss_msg << " (* " << weight << " = " << weight * mean << " loss)";
    LOG(INFO) << name << " = " << mean << loss_msg.str();
  }
  return 0;
}

double MsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

// `time/bench --kernels`: device time per pass of each kernel function, then of
// each program (function and -D options), most first.
void ReportKernelTimes(const std::vector<KernelTime>& times, int passes) {
  double total = 0;
  std::map<std::string, KernelTime> by_function;
  for (const KernelTime& t : times) {
    total += t.ms;
    const std::string function = t.label.substr(0, t.label.find(" ["));
    KernelTime& f = by_function[function];
    f.label = function;
    f.calls += t.calls;
    f.ms += t.ms;
  }
  std::vector<KernelTime> functions;
  for (auto& f : by_function) functions.push_back(f.second);
  SortByTime(&functions);
  const auto print = [&](const KernelTime& t) {
    LOG(INFO) << std::fixed << std::setprecision(3) << std::setw(9) << t.ms / passes
              << " ms " << std::setw(5) << std::setprecision(1) << 100 * t.ms / total << "% "
              << std::setw(5) << t.calls / passes << " calls  " << t.label;
  };
  LOG(INFO) << "Kernel device time per pass (" << std::fixed << std::setprecision(3)
            << total / passes << " ms in all), by function:";
  for (const KernelTime& f : functions) print(f);
  LOG(INFO) << "By program (function [options]):";
  for (const KernelTime& t : times) print(t);
}

int Time() {
  DLC_REQUIRE(!FLAGS_model.empty(), "time needs --model=net.prototxt");
  DLC_REQUIRE(FLAGS_iterations > 0, "--iterations must be positive");
  auto ctx = MakeContext();
  if (FLAGS_kernels) ctx->EnableKernelProfile();
  const caffe::Phase phase = PhaseFromFlag(caffe::TRAIN);
  Net net(FLAGS_model, phase, *ctx, FLAGS_level, Split(FLAGS_stage, ','));
  ReshapeInputs(net);
  // As Caffe's time: the inputs hold zeros (written, not left to whatever
  // fresh memory holds; zero is a valid label).
  for (Blob* input : net.input_blobs()) input->SetData(0.f);
  if (FLAGS_explain) LOG(INFO) << "Plan:\n" << net.ExplainWithProducts();

  LOG(INFO) << "Performing Forward";
  const float initial_loss = net.Forward();
  LOG(INFO) << "Initial loss: " << initial_loss;
  LOG(INFO) << "Performing Backward";
  net.Backward();
  ctx->Finish();

  const auto& layers = net.layers();
  const int n = static_cast<int>(layers.size());
  std::vector<double> forward_ms(n, 0.0), backward_ms(n, 0.0);
  double forward_total = 0, backward_total = 0;
  LOG(INFO) << "*** Benchmark begins ***";
  LOG(INFO) << "Testing for " << FLAGS_iterations << " iterations.";
  // Per-layer times need a wait after each layer; the pipelined time below
  // runs the same passes without any.
  const auto total_start = std::chrono::steady_clock::now();
  for (int it = 0; it < FLAGS_iterations; ++it) {
    const auto iter_start = std::chrono::steady_clock::now();
    auto pass_start = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) {
      const auto t = std::chrono::steady_clock::now();
      layers[i]->Reshape(net.bottom_vecs()[i], net.top_vecs()[i]);
      layers[i]->Forward(net.bottom_vecs()[i], net.top_vecs()[i]);
      ctx->Finish();
      forward_ms[i] += MsSince(t);
    }
    forward_total += MsSince(pass_start);
    pass_start = std::chrono::steady_clock::now();
    for (int i = n - 1; i >= 0; --i) {
      const auto t = std::chrono::steady_clock::now();
      if (net.layer_need_backward()[i])
        layers[i]->Backward(net.top_vecs()[i], net.bottom_need_backward()[i],
                            net.bottom_vecs()[i]);
      ctx->Finish();
      backward_ms[i] += MsSince(t);
    }
    backward_total += MsSince(pass_start);
    LOG(INFO) << "Iteration: " << it + 1 << " forward-backward time: " << MsSince(iter_start)
              << " ms.";
  }
  LOG(INFO) << "Average time per layer: ";
  for (int i = 0; i < n; ++i) {
    const std::string& name = net.layer_names()[i];
    LOG(INFO) << std::setfill(' ') << std::setw(10) << name
              << "\tforward: " << forward_ms[i] / FLAGS_iterations << " ms.";
    LOG(INFO) << std::setfill(' ') << std::setw(10) << name
              << "\tbackward: " << backward_ms[i] / FLAGS_iterations << " ms.";
  }
  LOG(INFO) << "Average Forward pass: " << forward_total / FLAGS_iterations << " ms.";
  LOG(INFO) << "Average Backward pass: " << backward_total / FLAGS_iterations << " ms.";
  LOG(INFO) << "Average Forward-Backward: " << MsSince(total_start) / FLAGS_iterations
            << " ms.";
  // Without a wait between layers, as training runs.
  if (FLAGS_kernels) ctx->kernel_profile()->Collect();  // only these passes count
  const auto pipelined_start = std::chrono::steady_clock::now();
  for (int it = 0; it < FLAGS_iterations; ++it) {
    net.ForwardNoLoss();
    net.Backward();
  }
  ctx->Finish();
  LOG(INFO) << "Average Forward-Backward without per-layer waits: "
            << MsSince(pipelined_start) / FLAGS_iterations << " ms.";
  LOG(INFO) << "Total Time: " << MsSince(total_start) << " ms.";
  if (FLAGS_kernels) ReportKernelTimes(ctx->kernel_profile()->Collect(), FLAGS_iterations);
  LOG(INFO) << "*** Benchmark ends ***";
  return 0;
}

// The speed benchmark used against other frameworks (issue 5): the whole
// step a user pays for, pipelined with no wait between layers, mean over
// --iterations after --warmup. forward: host->device copy of the input batch,
// forward, output back to the host. train: copy of data and labels, forward,
// backward and an Adam update, all on the device.
int Bench() {
  DLC_REQUIRE(!FLAGS_model.empty(), "bench needs --model=net.prototxt");
  DLC_REQUIRE(FLAGS_iterations > 0 && FLAGS_warmup >= 0, "--iterations must be positive");
  DLC_REQUIRE(FLAGS_mode == "forward" || FLAGS_mode == "train",
              "--mode must be forward or train, got '" << FLAGS_mode << "'");
  const bool train = FLAGS_mode == "train";
  DLC_REQUIRE(!(train && FLAGS_memory_plan),
              "--memory_plan is for --mode=forward: it shares activation storage, which "
              "training needs for its backward pass");
  // Before the model is read: a mistyped type must not wait for an import.
  const caffe::Type storage =
      FLAGS_storage.empty() ? caffe::FLOAT : ParseStorageFlag(FLAGS_storage);
  auto ctx = MakeContext();
  if (FLAGS_kernels) ctx->EnableKernelProfile();
  // A prototxt, or an .onnx model imported for this mode.
  caffe::NetParameter net_param =
      ReadNetOrOnnx(FLAGS_model, ctx->options(), train, ParseInputShapes(FLAGS_input_shape));
  if (train && IsOnnxPath(FLAGS_model)) {
    // The output's shape, from the net as imported (before the loss).
    caffe::NetParameter probe = net_param;
    probe.mutable_state()->set_phase(caffe::TEST);
    const Net forward(probe, *ctx);
    DLC_REQUIRE(!forward.output_blobs().empty(), FLAGS_model << ": the model has no output");
    AddClassifierLoss(&net_param, forward.output_blobs()[0]->shape(), FLAGS_model);
  }
  // The probe's buffers are not the step's memory: freed, not kept idle in
  // the pool, where they would count as the step's.
  ctx->pool().Trim();
  // After the loss is added: its label Input stays float too.
  StoreNetIn(&net_param, storage);
  std::unique_ptr<Net> net_holder;
  std::unique_ptr<Solver> solver;
  if (train) {
    caffe::SolverParameter param;
    *param.mutable_net_param() = net_param;
    param.set_type("Adam");
    param.set_base_lr(1e-4f);
    param.set_lr_policy("fixed");
    param.set_momentum(0.9f);
    param.set_display(0);
    param.set_snapshot_after_train(false);
    solver = SolverRegistry::Create(param, *ctx);
  } else {
    net_param.mutable_state()->set_phase(caffe::TEST);
    net_holder = std::make_unique<Net>(net_param, *ctx);
  }
  Net& net = train ? solver->net() : *net_holder;
  DLC_REQUIRE(!net.input_blobs().empty(), FLAGS_model << ": bench needs a net fed by an "
                                                         "Input layer (data, and label for train)");
  if (FLAGS_memory_plan) net.PlanInferenceMemory();  // logs the bytes
  if (FLAGS_explain) {
    // Zeros are valid data, labels and token ids for the explaining pass.
    for (Blob* input : net.input_blobs()) input->SetData(0.f);
    LOG(INFO) << "Plan:\n" << net.ExplainWithProducts();
  }
  // Host batches made once: uniform pixels, labels in range of the output,
  // ids in range of the Embed layers that read an input (token ids).
  std::vector<std::vector<float>> host_inputs;
  Rng rng(1);
  for (size_t i = 0; i < net.input_blobs().size(); ++i) {
    Blob* blob = net.input_blobs()[i];
    std::vector<float> values(blob->count());
    uint32_t range = i > 0 ? 1000 : 0;
    for (size_t l = 0; l < net.layers().size(); ++l) {
      const Layer& layer = *net.layers()[l];
      if (std::string(layer.type()) == "SoftmaxWithLoss" && i > 0 && net.bottom_vecs()[l][1] == blob)
        range = net.bottom_vecs()[l][0]->shape().back();
      if (std::string(layer.type()) == "Embed" && net.bottom_vecs()[l][0] == blob) {
        const uint32_t rows = layer.layer_param().embed_param().input_dim();
        range = range ? std::min(range, rows) : rows;
      }
    }
    for (float& v : values)
      v = range ? static_cast<float>(rng() % range) : std::uniform_real_distribution<float>(-1, 1)(rng);
    host_inputs.push_back(std::move(values));
  }
  // The result comes back each iteration as it is stored (16-bit outputs
  // as 16 bits), as a framework hands its output to the host.
  const Blob* output_blob = net.output_blobs().empty() ? nullptr : net.output_blobs()[0];
  std::vector<char> output_bytes(output_blob ? output_blob->count() * output_blob->element_bytes()
                                             : 0);
  auto iteration = [&] {
    for (size_t i = 0; i < host_inputs.size(); ++i)
      net.input_blobs()[i]->WriteData(host_inputs[i]);
    if (train) {
      solver->StepWithoutSync();
    } else {
      net.ForwardNoLoss();
      if (!output_bytes.empty())
        ctx->Read(output_blob->data(), 0, output_bytes.size(), output_bytes.data());
    }
  };
  for (int i = 0; i < FLAGS_warmup; ++i) iteration();
  ctx->Finish();
  if (FLAGS_kernels) ctx->kernel_profile()->Collect();  // only the timed iterations count
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < FLAGS_iterations; ++i) iteration();
  ctx->Finish();
  const double ms = MsSince(start) / FLAGS_iterations;
  if (FLAGS_kernels) ReportKernelTimes(ctx->kernel_profile()->Collect(), FLAGS_iterations);
  const std::vector<float> output =
      output_bytes.empty() ? std::vector<float>() : output_blob->ReadData();
  if (!output.empty()) {
    // Identifies the last output bit for bit (compare runs, e.g. with and
    // without --memory_plan).
    uint64_t hash = 1469598103934665603ull;  // FNV-1a over the float bits
    double sum = 0;
    for (float v : output) {
      uint32_t bits;
      std::memcpy(&bits, &v, sizeof bits);
      hash = (hash ^ bits) * 1099511628211ull;
      sum += v;
    }
    LOG(INFO) << "Output '" << net.blob_names()[net.output_blob_indices()[0]] << "': "
              << output.size() << " values, sum " << std::setprecision(9) << sum
              << ", bit hash " << std::hex << hash;
  }
  std::cout << "bench " << net.name() << " " << FLAGS_mode << " " << ms << " ms/iter ("
            << net.input_blobs()[0]->shape_string() << ", "
            << (FLAGS_storage.empty() ? "" : FLAGS_storage + " storage, ") << FLAGS_iterations
            << " iterations after " << FLAGS_warmup << " warm-up)" << std::endl;
  // What the run took of the device: every buffer the pool holds (in use or
  // kept for reuse) — the counterpart of PyTorch's allocator peak.
  const BufferPool& pool = ctx->pool();
  std::cout << "bench " << net.name() << " device memory " << std::fixed << std::setprecision(1)
            << (pool.bytes_in_use() + pool.bytes_idle()) / 1048576.0 << " MiB (in use "
            << pool.bytes_in_use() / 1048576.0 << ", idle " << pool.bytes_idle() / 1048576.0
            << ")" << std::endl;
  return 0;
}

// Tunes the GEMM products of one forward and backward pass of --model on this
// device within --tune_seconds, costliest first, and stores the winners for
// this device and driver (used by every later run on it) if the whole net
// runs faster with them (core/net_tuning.hpp).
int Tune() {
  DLC_REQUIRE(!FLAGS_model.empty(), "tune needs --model=net.prototxt");
  NetTuningOptions options;
  // A tuning run times each candidate over a few calls, not --iterations' 50.
  if (!gflags::GetCommandLineFlagInfoOrDie("iterations").is_default)
    options.iterations = FLAGS_iterations;
  DLC_REQUIRE(options.iterations > 0, "--iterations must be positive");
  DLC_REQUIRE(FLAGS_tune_seconds > 0, "--tune_seconds must be positive");
  options.budget_seconds = FLAGS_tune_seconds;
  auto ctx = MakeContext();
  caffe::NetParameter net_param =
      ReadNetOrOnnx(FLAGS_model, ctx->options(), PhaseFromFlag(caffe::TRAIN) == caffe::TRAIN,
                    ParseInputShapes(FLAGS_input_shape));
  net_param.mutable_state()->set_phase(PhaseFromFlag(caffe::TRAIN));
  // An imported model has no loss: backward runs from zero output diffs,
  // which has the products' shapes all the same.
  if (IsOnnxPath(FLAGS_model)) net_param.set_force_backward(true);
  Net net(net_param, *ctx);
  const NetTuningReport r = TuneNet(*ctx, net, options);
  for (const GemmTuning& t : r.tunings)
    LOG(INFO) << "tune: M N K ta tb grouped batch math a b c = " << t.key.Text() << ": rule ["
              << t.rule.Name() << "] " << t.rule_ms << " ms, best [" << t.best.Name() << "] "
              << t.best_ms << " ms (" << t.candidates << " tried"
              << (t.rejected ? ", " + std::to_string(t.rejected) + " rejected" : "") << ")";
  LOG(INFO) << "tune: " << r.tuned << " of " << r.products << " distinct GEMM products in "
            << FLAGS_model << " tuned (" << std::fixed << std::setprecision(0)
            << 100 * r.tuned_share << "% of the GEMM arithmetic) in " << std::setprecision(1)
            << r.seconds << " s";
  LOG(INFO) << "tune: one forward + backward pass: " << std::setprecision(3) << r.net_rule_ms
            << " ms by the rule, " << r.net_tuned_ms << " ms tuned; "
            << (r.kept ? "winners stored in "
                       : "the rule's choices kept (tuning found nothing faster), stored in ")
            << GemmTuningFile(*ctx);
  return 0;
}

// The vocabulary for generate: --vocab, else vocab.txt beside the weights
// or the model.
std::string VocabularyPath() {
  if (!FLAGS_vocab.empty()) return FLAGS_vocab;
  for (const std::string& beside : {FLAGS_weights, FLAGS_model}) {
    const size_t slash = beside.find_last_of('/');
    const std::string candidate =
        (slash == std::string::npos ? std::string() : beside.substr(0, slash + 1)) + "vocab.txt";
    if (!beside.empty() && std::ifstream(candidate).good()) return candidate;
  }
  DLC_FAIL("generate needs --vocab=vocab.txt (convert_text writes it beside the databases); "
           "none was found beside --weights or --model");
}

// --prompt_ids: "1, 2,3" -> {1, 2, 3}.
std::vector<int> ParsePromptIds(const std::string& text) {
  std::vector<int> ids;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    const size_t start = item.find_first_not_of(' ');
    DLC_REQUIRE(start != std::string::npos, "--prompt_ids='" << text << "' has an empty item");
    size_t used = 0;
    int id = -1;
    try {
      id = std::stoi(item.substr(start), &used);
    } catch (const std::exception&) {
      used = 0;
    }
    DLC_REQUIRE(used > 0 && item.find_first_not_of(' ', start + used) == std::string::npos && id >= 0,
                "--prompt_ids='" << text << "': '" << item << "' is not a token id");
    ids.push_back(id);
  }
  DLC_REQUIRE(!ids.empty(), "--prompt_ids is empty");
  return ids;
}

int Generate() {
  DLC_REQUIRE(!FLAGS_model.empty(), "generate needs --model=deploy.prototxt (or a causal LM's .onnx)");
  const bool onnx = IsOnnxPath(FLAGS_model);
  DLC_REQUIRE(onnx || !FLAGS_weights.empty(), "generate needs --weights=model.caffemodel");
  DLC_REQUIRE(!FLAGS_prompt.empty() || !FLAGS_prompt_ids.empty(),
              "generate needs --prompt=\"...\" or --prompt_ids=1,2,3 (at least one token)");
  DLC_REQUIRE(FLAGS_prompt.empty() || FLAGS_prompt_ids.empty(),
              "give --prompt or --prompt_ids, not both");
  DLC_REQUIRE(FLAGS_tokens >= 0, "--tokens must be >= 0, got " << FLAGS_tokens);
  // The tokens: ids as given, a tokenizer.json's BPE, or convert_text's vocabulary.
  std::unique_ptr<BpeTokenizer> tokenizer;
  std::unique_ptr<Vocabulary> vocabulary;
  std::vector<int> prompt;
  if (!FLAGS_prompt_ids.empty()) {
    prompt = ParsePromptIds(FLAGS_prompt_ids);
  } else if (!FLAGS_tokenizer.empty()) {
    tokenizer = std::make_unique<BpeTokenizer>(BpeTokenizer::Load(FLAGS_tokenizer));
    prompt = tokenizer->Encode(FLAGS_prompt);
    DLC_REQUIRE(!prompt.empty(), "the prompt gives no tokens");
  } else {
    vocabulary = std::make_unique<Vocabulary>(Vocabulary::Load(VocabularyPath()));
    prompt = vocabulary->Encode(FLAGS_prompt);
  }
  auto ctx = MakeContext();
  const int context =
      FLAGS_context > 0 ? FLAGS_context : static_cast<int>(prompt.size()) + FLAGS_tokens;
  std::unique_ptr<Net> model = OpenLanguageModel(FLAGS_model, FLAGS_weights, context, FLAGS_kv_cache, *ctx);
  Net& net = *model;
  const bool use_cache = FLAGS_kv_cache;
  TextGenerator generator(net, use_cache);
  const int known = tokenizer ? tokenizer->size() : vocabulary ? vocabulary->size() : 0;
  DLC_REQUIRE(!vocabulary || generator.vocabulary() == known,
              FLAGS_model << " gives logits for " << generator.vocabulary()
                          << " tokens, but the vocabulary " << VocabularyPath() << " has " << known);
  DLC_REQUIRE(!tokenizer || generator.vocabulary() >= known,
              FLAGS_model << " gives logits for " << generator.vocabulary() << " tokens, fewer than "
                          << FLAGS_tokenizer << "'s " << known);
  SamplingOptions options;
  options.temperature = static_cast<float>(FLAGS_temperature);
  options.top_k = FLAGS_top_k;
  std::mt19937_64 rng(FLAGS_seed);
  std::cout << (FLAGS_prompt_ids.empty() ? FLAGS_prompt : std::string()) << std::flush;
  // The rate is taken from the second token on: an imported model's net is
  // rebuilt at one token's length for the first step after the prompt.
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  Clock::time_point first_token = start, second_token = start;
  int count = 0;
  generator.Generate(prompt, FLAGS_tokens, options, rng, [&](int id) {
    if (count == 0) first_token = Clock::now();
    if (count == 1) second_token = Clock::now();
    ++count;
    if (tokenizer) std::cout << tokenizer->Decode({id});
    else if (vocabulary) std::cout << vocabulary->Decode(id);
    else std::cout << (count > 1 ? " " : "") << id;
    std::cout << std::flush;
  });
  ctx->Finish();
  const Clock::time_point end = Clock::now();
  std::cout << std::endl;
  const auto ms = [](Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); };
  const double rest_s = std::chrono::duration<double>(end - second_token).count();
  const int rest = std::max(0, count - 2);
  LOG(INFO) << "Prompt: " << prompt.size() << " tokens, first token after " << ms(first_token - start)
            << " ms, second after " << (count > 1 ? ms(second_token - first_token) : 0.0)
            << " ms; then " << rest << " tokens in " << rest_s << " s ("
            << (rest > 0 && rest_s > 0 ? rest / rest_s : 0.0) << " tokens/s"
            << (use_cache ? ", key/value cache" : ", no cache") << ")";
  return 0;
}

// The whole text of one kernel source as it is compiled (the header, the
// storage types' generated macros, the includes), for tools that compile it
// elsewhere (tools/extra/kernel_sass.py).
int KernelSource() {
  DLC_REQUIRE(!FLAGS_kernel_file.empty(), "kernel_source needs --kernel_file=NAME.cl");
  std::cout << ProgramCache::SourceText(FLAGS_kernel_file, ToolRunOptions().kernel_source_dir);
  return 0;
}

int DeviceQuery() {
  const auto devices = ListDevices();
  DLC_REQUIRE(!devices.empty(), "no OpenCL device found; install an OpenCL driver, "
                                "e.g. 'apt-get install pocl-opencl-icd' for the CPU");
  for (const auto& d : devices) {
    LOG(INFO) << "Device " << d.flat_index << ": ocl:" << d.platform_index << ":"
              << d.device_index;
    LOG(INFO) << "  Platform: " << d.platform_name;
    LOG(INFO) << "  Name: " << d.name;
    LOG(INFO) << "  Vendor: " << d.vendor;
    LOG(INFO) << "  Version: " << d.version;
    LOG(INFO) << "  Driver: " << d.driver_version;
    LOG(INFO) << "  Type: " << (d.is_gpu() ? "GPU" : d.is_cpu() ? "CPU" : "other");
    LOG(INFO) << "  Compute units: " << d.compute_units;
    LOG(INFO) << "  Global memory: " << d.global_mem_bytes / (1 << 20) << " MiB";
    LOG(INFO) << "  Local memory: " << d.local_mem_bytes / 1024 << " KiB";
    LOG(INFO) << "  Max work-group size: " << d.max_work_group_size;
  }
  // What a run without --device takes (or what --device / DLCAFFE_DEVICE
  // names): scripts/test.sh quotes this line for each of its legs.
  RunOptions options = RunOptions::FromEnvironment();
  if (!FLAGS_device.empty()) options.device = FLAGS_device;
  std::string why;
  const DeviceInfo chosen = ChooseDevice(options, &why);
  LOG(INFO) << "Default device: " << chosen.Describe() << ": " << why;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  FLAGS_logtostderr = true;
  FLAGS_colorlogtostderr = false;
  gflags::SetUsageMessage(
      "command line brew\n"
      "usage: dlcaffe <command> <args>\n\n"
      "commands:\n"
      "  train           train or finetune a model\n"
      "  test            score a model\n"
      "  device_query    show OpenCL devices\n"
      "  time            benchmark model execution time\n"
      "  generate        sample text from a language model: --model=deploy.prototxt\n"
      "                  --weights --prompt --tokens --temperature --top_k --seed, or an\n"
      "                  imported causal LM: --model=gpt2.onnx --tokenizer=tokenizer.json\n"
      "                  (or --prompt_ids=1,2,3)\n"
      "  bench           time whole steps: --mode=forward|train (for comparisons)\n"
      "  tune            measure the GEMM kernels for --model's shapes on this device\n"
      "                  and keep the fastest (DLCAFFE_TUNING_CACHE=dir|off)\n"
      "  kernel_source   print the text the OpenCL compiler gets for --kernel_file\n"
      "                  (the shared header and every include in place)");
  gflags::SetVersionString("0.1");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  google::InitGoogleLogging(argv[0]);
  if (argc != 2) {
    gflags::ShowUsageWithFlagsRestrict(argv[0], "tools/dlcaffe");
    return 1;
  }
  const std::map<std::string, int (*)()> commands = {
      {"train", Train}, {"test", Test}, {"time", Time}, {"bench", Bench},
      {"tune", Tune},   {"generate", Generate}, {"device_query", DeviceQuery},
      {"kernel_source", KernelSource}};
  auto it = commands.find(argv[1]);
  if (it == commands.end()) {
    std::cerr << "dlcaffe: unknown command '" << argv[1]
              << "' (commands: train, test, time, bench, tune, generate, device_query, "
                 "kernel_source)\n";
    return 1;
  }
  try {
    DLC_REQUIRE(!FLAGS_memory_plan || it->first == "bench",
                "--memory_plan applies to 'bench --mode=forward' only, not to '"
                    << it->first << "'");
    return it->second();
  } catch (const Error& e) {
    std::cerr << ("dlcaffe: error: " + std::string(e.what()) + "\n") << std::flush;
  } catch (const std::exception& e) {
    std::cerr << ("dlcaffe: error: " + std::string(e.what()) + "\n") << std::flush;
  }
  return 1;
}
