// Generation from Python: dlcaffe.Tokenizer (a Hugging Face tokenizer.json's
// byte-level BPE) and dlcaffe.TextGenerator (a causal LM opened as `dlcaffe
// generate` opens it, with the key/value cache).
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <random>

#include "bindings.hpp"
#include "dlcaffe/data/bpe_tokenizer.hpp"
#include "dlcaffe/language_model.hpp"
#include "dlcaffe/text_generator.hpp"
#include "runtime.hpp"

namespace dlcaffe_python {

namespace {

using dlcaffe::BpeTokenizer;

// The net and the generator reading it, kept together.
struct PyTextGenerator {
  std::shared_ptr<dlcaffe::Net> net;
  std::unique_ptr<dlcaffe::TextGenerator> generator;
};

std::shared_ptr<PyTextGenerator> OpenGenerator(const py::object& model, const py::object& weights,
                                               int context, bool kv_cache) {
  auto result = std::make_shared<PyTextGenerator>();
  const std::string weights_path =
      weights.is_none() ? std::string() : PathArgument(weights, "dlcaffe.TextGenerator: weights");
  result->net = dlcaffe::OpenLanguageModel(PathArgument(model, "dlcaffe.TextGenerator: model"),
                                           weights_path, context, kv_cache, CurrentContext());
  result->generator = std::make_unique<dlcaffe::TextGenerator>(*result->net, kv_cache);
  return result;
}

}  // namespace

void BindGeneration(py::module_& m) {
  py::class_<BpeTokenizer, std::shared_ptr<BpeTokenizer>>(m, "Tokenizer", R"doc(
A Hugging Face tokenizer.json's byte-level BPE (GPT-2, LLaMA 3, Qwen2):
Tokenizer(path).encode(text) -> ids, .decode(ids) -> text.)doc")
      .def(py::init([](const py::object& path) {
             return std::make_shared<BpeTokenizer>(
                 BpeTokenizer::Load(PathArgument(path, "dlcaffe.Tokenizer: path")));
           }),
           py::arg("path"))
      .def("encode", &BpeTokenizer::Encode, py::arg("text"))
      .def("decode", &BpeTokenizer::Decode, py::arg("ids"), py::arg("skip_special_tokens") = true)
      .def("__len__", &BpeTokenizer::size);

  py::class_<PyTextGenerator, std::shared_ptr<PyTextGenerator>>(m, "TextGenerator", R"doc(
A causal language model for generation, opened as `dlcaffe generate` opens it:
a deploy prototxt with its weights, or an .onnx export with a dynamic sequence
axis, imported at `context` tokens (prompt plus new ones). With kv_cache each
new token runs alone against the key/value caches; without, every token reruns
the sequence.

    lm = dlcaffe.TextGenerator('gpt2.onnx', context=96)
    ids = lm.generate(prompt_ids, tokens=64, temperature=0)   # greedy)doc")
      .def(py::init(&OpenGenerator), py::arg("model"), py::arg("weights") = py::none(),
           py::arg("context") = 0, py::arg("kv_cache") = true)
      .def_property_readonly("context", [](const PyTextGenerator& g) { return g.generator->context(); })
      .def_property_readonly("vocabulary",
                             [](const PyTextGenerator& g) { return g.generator->vocabulary(); })
      .def_property_readonly("net", [](const PyTextGenerator& g) { return g.net; })
      .def("reset", [](PyTextGenerator& g) { g.generator->Reset(); },
           "Forgets the sequence so far.")
      .def("feed",
           [](PyTextGenerator& g, const std::vector<int>& ids) {
             const std::vector<float> logits = g.generator->Feed(ids);
             return py::array_t<float>(static_cast<py::ssize_t>(logits.size()), logits.data());
           },
           py::arg("ids"),
           "Appends ids to the sequence; returns the logits for the token after it.")
      .def("generate",
           [](PyTextGenerator& g, const std::vector<int>& prompt, int tokens, float temperature,
              int top_k, uint64_t seed) {
             dlcaffe::SamplingOptions options;
             options.temperature = temperature;
             options.top_k = top_k;
             std::mt19937_64 rng(seed);
             return g.generator->Generate(prompt, tokens, options, rng);
           },
           py::arg("prompt_ids"), py::arg("tokens"), py::arg("temperature") = 1.f,
           py::arg("top_k") = 0, py::arg("seed") = 0,
           "Feeds the prompt, then samples `tokens` ids (temperature 0: greedy); returns them.");
}

}  // namespace dlcaffe_python
