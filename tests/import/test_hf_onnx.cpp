// Hugging Face transformers as people export them (issue 49): GPT-2, LLaMA,
// Qwen2, BERT (token types and an attention mask as inputs), DistilBERT and
// HF's ViT, small configurations with random weights, written by
// torch.onnx.export with its defaults (torch.export and its optimizer,
// which folds parameters into constants) and with optimize=False, on the GPU
// host (tools/onnx/make_hf_tests.py; tests/import/hf_models/README.md).
// Forward against float64 PyTorch and the gradient of every parameter under
// its PyTorch name, through onnx_test_runner; and what a training import of
// the default files recovers.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include <sstream>

#include "dlcaffe/language_model.hpp"
#include "dlcaffe/net.hpp"
#include "dlcaffe/onnx_import.hpp"
#include "dlcaffe/text_generator.hpp"
#include "onnx/onnx_pb.h"
#include "util/error_of.hpp"
#include "util/run_dlcaffe.hpp"
#include "util/test_context.hpp"

namespace dlcaffe {
namespace test {
namespace {

const char* const kModels[] = {"gpt2", "llama", "qwen2", "bert", "distilbert", "vit"};

std::string ModelsDir() { return SourceDir() + "/tests/import/hf_models"; }

std::string Dir(const std::string& model, const std::string& mode) {
  return ModelsDir() + "/hf_" + model + "-" + mode;
}

OnnxModel TrainingImport(const std::string& path) {
  OnnxImportOptions options;
  options.training = true;
  return ImportOnnx(path, options);
}

// Each trained parameter's shape, by name (the ParamSpec names the import
// gives learnable blobs).
std::map<std::string, std::vector<int64_t>> TrainedShapes(const OnnxModel& model) {
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const auto& layer : model.net.layer())
    for (int i = 0; i < layer.param_size() && i < layer.blobs_size(); ++i) {
      const auto& spec = layer.param(i);
      if (!spec.has_name() || spec.lr_mult() == 0.f) continue;
      std::vector<int64_t> dims(layer.blobs(i).shape().dim().begin(), layer.blobs(i).shape().dim().end());
      shapes[spec.name()] = dims;
    }
  return shapes;
}

TEST(HuggingFaceOnnx, DefaultAndUnoptimizedExportsPassForwardAndBackward) {
  std::string dirs;
  for (const char* model : kModels)
    for (const char* mode : {"default", "optoff"}) dirs += " '" + Dir(model, mode) + "'";
  const ToolResult r = RunTool("onnx_test_runner", dirs);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(Contains(r.output, "12 passed, 0 failed, 0 skipped")) << r.output;
  for (const char* model : kModels)
    for (const char* mode : {"default", "optoff"}) {
      const std::regex pass(std::string("PASS hf_") + model + "-" + mode +
                            " \\(worst output error [^,]+, worst gradient error");
      EXPECT_TRUE(std::regex_search(r.output, pass)) << model << " " << mode << "\n" << r.output;
    }
}

// A training import of the default file trains the parameters the
// unoptimized file keeps, under the same names and shapes; the position
// tables it recovers from gathered rows hold those rows of the table.
TEST(HuggingFaceOnnx, TrainingImportRecoversWhatTheOptimizerFolded) {
  for (const char* model : kModels) {
    SCOPED_TRACE(model);
    const OnnxModel folded = TrainingImport(Dir(model, "default") + "/model.onnx");
    const OnnxModel kept = TrainingImport(Dir(model, "optoff") + "/model.onnx");
    EXPECT_TRUE(folded.frozen_parameters.empty());
    EXPECT_TRUE(kept.frozen_parameters.empty());
    const auto folded_shapes = TrainedShapes(folded), kept_shapes = TrainedShapes(kept);
    std::set<std::string> folded_names, kept_names;
    for (const auto& entry : folded_shapes) folded_names.insert(entry.first);
    for (const auto& entry : kept_shapes) kept_names.insert(entry.first);
    EXPECT_EQ(folded_names, kept_names);
    for (const auto& [name, shape] : kept_shapes) {
      auto partial = folded.partial_tables.find(name);
      std::vector<int64_t> expected = shape;
      if (partial != folded.partial_tables.end()) expected[0] = partial->second;
      EXPECT_EQ(folded_shapes.count(name) ? folded_shapes.at(name) : std::vector<int64_t>{}, expected) << name;
    }
    EXPECT_EQ(folded.tied_parameters, kept.tied_parameters);
  }
  const OnnxModel gpt2 = TrainingImport(Dir("gpt2", "default") + "/model.onnx");
  EXPECT_EQ(gpt2.tied_parameters.at("transformer.wte.weight"), "lm_head.weight");
  EXPECT_EQ(gpt2.partial_tables.at("transformer.wpe.weight"), 13);
  const OnnxModel llama = TrainingImport(Dir("llama", "default") + "/model.onnx");
  EXPECT_EQ(llama.recovered_parameters.size(), 15u);  // every Linear weight, lm_head's too
  EXPECT_EQ(TrainedShapes(llama).at("model.layers.0.self_attn.k_proj.weight"), (std::vector<int64_t>{16, 32}));
  const OnnxModel vit = TrainingImport(Dir("vit", "default") + "/model.onnx");
  EXPECT_EQ(TrainedShapes(vit).at("vit.embeddings.cls_token"), (std::vector<int64_t>{1, 1, 32}));
}

// Attention fuses into one Attention layer where its mask is fixed:
// PyTorch's NaN guard after the softmax (Where(IsNaN(p), 0, p)) is absorbed
// (the layer gives a row with no visible key 0, as the guard does) and the
// causal mask expanded over the batch is one causal plane. BERT's and
// DistilBERT's masks come from the inputs: they run op by op.
TEST(HuggingFaceOnnx, AttentionWithAFixedMaskFuses) {
  for (const char* model : kModels) {
    SCOPED_TRACE(model);
    const OnnxModel imported = TrainingImport(Dir(model, "default") + "/model.onnx");
    int attention = 0, causal = 0, softmax = 0;
    for (const auto& layer : imported.net.layer()) {
      attention += layer.type() == "Attention";
      causal += layer.type() == "Attention" && layer.attention_param().causal();
      softmax += layer.type() == "Softmax";
    }
    const std::string name = model;
    const bool input_mask = name == "bert" || name == "distilbert";
    const bool lm = name == "gpt2" || name == "llama" || name == "qwen2";
    EXPECT_EQ(attention, input_mask ? 0 : 2);
    EXPECT_EQ(softmax, input_mask ? 2 : 0);
    EXPECT_EQ(causal, lm ? 2 : 0);
  }
}

// The causal LMs exported for generation (the sequence axis dynamic) give,
// imported at the length of the prompt plus 64 tokens, the tokens
// transformers' greedy generate(do_sample=False) chose: the argmax of the
// logits at each position is the next token (teacher forcing, which for
// greedy decoding is the same test, token for token).
TEST(HuggingFaceOnnx, CausalLmsPickTheTokensTransformersGenerates) {
  for (const char* model : {"gpt2", "llama", "qwen2"}) {
    std::ifstream in(ModelsDir() + "/hf_generation/" + model + ".json");
    std::stringstream json;
    json << in.rdbuf();
    google::protobuf::Struct reference;
    ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json.str(), &reference).ok()) << model;
    std::vector<float> ids;
    for (const auto& v : reference.fields().at("prompt_ids").list_value().values()) ids.push_back(v.number_value());
    const size_t prompt = ids.size();
    std::vector<int> generated;
    for (const auto& v : reference.fields().at("float32").struct_value().fields().at("ids").list_value().values())
      generated.push_back(static_cast<int>(v.number_value()));
    ASSERT_EQ(generated.size(), 64u);
    ids.insert(ids.end(), generated.begin(), generated.end() - 1);  // the last one is only predicted
    for (const char* mode : {"default", "optoff"}) {
      SCOPED_TRACE(std::string(model) + "-" + mode);
      OnnxImportOptions options;
      options.input_shapes["input_ids"] = {1, static_cast<int>(ids.size())};
      const OnnxModel imported =
          ImportOnnx(ModelsDir() + "/hf_generation/" + model + "-" + mode + ".onnx", options);
      Net net(imported.net, TestContext());
      net.blob_by_name("input_ids")->WriteData(ids);
      net.ForwardNoLoss();
      const Blob& logits = *net.blob_by_name(imported.outputs.at(0));
      ASSERT_EQ(logits.shape(), (std::vector<int>{1, static_cast<int>(ids.size()), 320}));
      const std::vector<float> values = logits.ReadData();
      int agree = 0;
      for (size_t t = 0; t < generated.size(); ++t) {
        const float* row = values.data() + (prompt - 1 + t) * 320;
        const int argmax = static_cast<int>(std::max_element(row, row + 320) - row);
        agree += argmax == generated[t];
        EXPECT_EQ(argmax, generated[t]) << "token " << t;
      }
      EXPECT_EQ(agree, 64);
    }
  }
}

// The reference of hf_generation/<model>.json: the prompt's ids, and the
// ids and text transformers' greedy generate gave in float32.
struct GenerationReference {
  std::vector<int> prompt, generated;
  std::string text;
};

GenerationReference ReadGenerationReference(const std::string& model) {
  std::ifstream in(ModelsDir() + "/hf_generation/" + model + ".json");
  std::stringstream json;
  json << in.rdbuf();
  google::protobuf::Struct root;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(json.str(), &root).ok()) << model;
  GenerationReference r;
  for (const auto& v : root.fields().at("prompt_ids").list_value().values())
    r.prompt.push_back(static_cast<int>(v.number_value()));
  const auto& run = root.fields().at("float32").struct_value().fields();
  for (const auto& v : run.at("ids").list_value().values()) r.generated.push_back(static_cast<int>(v.number_value()));
  r.text = run.at("text").string_value();
  return r;
}

std::string Joined(const std::vector<int>& ids, const std::string& separator) {
  std::string text;
  for (size_t i = 0; i < ids.size(); ++i) text += (i ? separator : "") + std::to_string(ids[i]);
  return text;
}

// `dlcaffe generate` on an imported causal LM, with the key/value cache (one
// token at a time after the prompt) and without (each token running the
// sequence again), gives transformers' 64 greedy tokens; through the
// model's tokenizer.json, its text.
TEST(HuggingFaceOnnx, GenerateFromAnImportGivesTransformersTokens) {
  for (const char* model : {"gpt2", "llama", "qwen2"}) {
    const GenerationReference ref = ReadGenerationReference(model);
    for (const char* mode : {"default", "optoff"})
      for (const char* cache : {"true", "false"}) {
        SCOPED_TRACE(std::string(model) + "-" + mode + ", kv_cache " + cache);
        const ToolResult r = RunDlcaffe("generate --model='" + ModelsDir() + "/hf_generation/" + model +
                                        "-" + mode + ".onnx' --prompt_ids=" + Joined(ref.prompt, ",") +
                                        " --tokens=64 --temperature=0 --kv_cache=" + cache,
                                        "GLOG_minloglevel=1");  // no log lines between the tokens
        EXPECT_EQ(r.exit_code, 0) << r.output;
        EXPECT_TRUE(Contains(r.output, Joined(ref.generated, " ") + "\n")) << r.output;
      }
  }
  // Qwen2's continuation is printable text ("astst..."), which the others' is not.
  const GenerationReference qwen2 = ReadGenerationReference("qwen2");
  const ToolResult r = RunDlcaffe("generate --model='" + ModelsDir() + "/hf_generation/qwen2-default.onnx' "
                                  "--tokenizer='" + ModelsDir() + "/hf_generation/tokenizer.json' "
                                  "--prompt='The plan decides' --tokens=64 --temperature=0",
                                  "GLOG_minloglevel=1");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(Contains(r.output, "The plan decides" + qwen2.text + "\n")) << r.output;
}

// The key/value cache on an import for decoding: after the prompt each new
// token runs alone (the net at input length 1, each attention over the
// cached positions), and gives the logits the whole sequence run at once
// gives at its position (the positions, and the rotary tables computed from
// them, follow the decode position). Imported without decoding, the net
// refuses to decode incrementally rather than fold positions from 0.
TEST(HuggingFaceOnnx, KeyValueCacheGivesTheWholeSequencesLogits) {
  for (const char* model : {"gpt2", "llama", "qwen2"})
    for (const char* mode : {"default", "optoff"}) {
      SCOPED_TRACE(std::string(model) + "-" + mode);
      const GenerationReference ref = ReadGenerationReference(model);
      std::vector<int> ids = ref.prompt;
      ids.insert(ids.end(), ref.generated.begin(), ref.generated.begin() + 16);
      const std::string path = ModelsDir() + "/hf_generation/" + model + "-" + mode + ".onnx";
      const int context = static_cast<int>(ids.size());
      std::unique_ptr<Net> whole = OpenLanguageModel(path, "", context, false, TestContext());
      std::unique_ptr<Net> cached = OpenLanguageModel(path, "", context, true, TestContext());
      TextGenerator rerun(*whole, false), decoder(*cached, true);
      std::vector<float> expected = rerun.Feed(ref.prompt), got = decoder.Feed(ref.prompt);
      double worst = 0;
      for (size_t t = ref.prompt.size();; ++t) {
        ASSERT_EQ(got.size(), expected.size());
        for (size_t v = 0; v < got.size(); ++v)
          worst = std::max(worst, std::fabs(double(got[v]) - expected[v]));
        if (t == ids.size()) break;
        expected = rerun.Feed({ids[t]});
        got = decoder.Feed({ids[t]});
        ASSERT_EQ(cached->input_blobs()[0]->shape(), (std::vector<int>{1, 1})) << "position " << t;
      }
      // Float sums in another order (one query row against the cache, the
      // rotary angles in float on the device): logits of about 1 agree to
      // a few ulp of the sums.
      EXPECT_LT(worst, 2e-5);
      std::cout << model << "-" << mode << ": largest logit difference with the cache " << worst << "\n";
    }
  Net folded(ModelsDir() + "/hf_generation/gpt2-default.onnx", caffe::TEST, TestContext());
  DecodeState state;
  state.incremental = true;
  state.capacity = 8;
  EXPECT_TRUE(Contains(ErrorOf([&] { folded.SetDecodeState(state); }), "import it for decoding"));
}

TEST(HuggingFaceOnnx, GenerateRefusesWhatAnImportCannotDo) {
  for (const char* cache : {"true", "false"}) {
    const ToolResult fixed = RunDlcaffe("generate --model='" + Dir("gpt2", "default") +
                                        "/model.onnx' --prompt_ids=1,2 --tokens=3 --kv_cache=" + cache);
    ExpectCleanError(fixed, "its token input 'input_ids' has a fixed length; export it with the "
                            "sequence axis dynamic");
  }
  const ToolResult ids = RunDlcaffe("generate --model='" + ModelsDir() +
                                    "/hf_generation/gpt2-default.onnx' --prompt_ids=1,x --tokens=3");
  ExpectCleanError(ids, "'x' is not a token id");
}

// Without the nodes' metadata the file cannot say where its folded
// constants came from: the import names each parameter it could not
// recover, keeps it frozen and says how to export without folding.
TEST(HuggingFaceOnnx, UntraceableFoldsStayFrozenAndAreNamed) {
  onnx::ModelProto proto;
  {
    std::ifstream in(Dir("llama", "default") + "/model.onnx", std::ios::binary);
    ASSERT_TRUE(proto.ParseFromIstream(&in));
  }
  // onnx >= 1.16's NodeProto.metadata_props (field 9): unknown to Debian's.
  for (auto& node : *proto.mutable_graph()->mutable_node()) {
    node.GetReflection()->MutableUnknownFields(&node)->Clear();
    const auto* field = node.GetDescriptor()->FindFieldByNumber(9);
    if (field) node.GetReflection()->ClearField(&node, field);
  }
  const std::string path = TempDir() + "/llama_no_metadata.onnx";
  {
    std::ofstream out(path, std::ios::binary);
    ASSERT_TRUE(proto.SerializeToOstream(&out));
  }
  const OnnxModel model = TrainingImport(path);
  EXPECT_EQ(model.frozen_parameters.size(), 15u);
  EXPECT_TRUE(model.recovered_parameters.empty());
  const auto trained = TrainedShapes(model);
  for (const std::string& name : model.frozen_parameters) {
    EXPECT_FALSE(trained.count(name)) << name;
    EXPECT_TRUE(name.rfind("model.layers.", 0) == 0 || name == "lm_head.weight") << name;
  }
  // Nothing else trains in their place (the folded copies "val_93" are constants).
  for (const auto& entry : trained) EXPECT_EQ(entry.first.rfind("val_", 0), std::string::npos) << entry.first;
  const ToolResult r = RunTool("convert_onnx", "--training '" + path + "' '" + TempDir() + "/l.prototxt' '" +
                                                   TempDir() + "/l.caffemodel'");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(Contains(r.output, "the exporter folded 15 parameter(s) into constants the import cannot trace "
                                 "back: lm_head.weight, model.layers.0.mlp.down_proj.weight"))
      << r.output;
  EXPECT_TRUE(Contains(r.output, "optimize=False")) << r.output;
}

}  // namespace
}  // namespace test
}  // namespace dlcaffe
