// `commsim model from-hf CONFIG.json` and `commsim model from-trace TRACE.json`: model files from where users have
// their models (a HuggingFace config, a PyTorch profiler trace), docs/model-format.md.
#include <cstdio>

#include "cli/commands.hpp"
#include "sim/core/error.hpp"
#include "sim/model/hf_config.hpp"
#include "sim/model/kineto_trace.hpp"
#include "sim/model/model_json.hpp"

namespace commsim::cli {
namespace {

struct ModelOptions {
  std::string input, output, name;
  std::int64_t seq = 0;
  int batch = 1;
};

// The model file to -o, or to stdout without it (so it pipes); the summary goes to stdout only with -o.
void emit(const Model& m, const ModelOptions& o) {
  if (o.output.empty() || o.output == "-") {
    std::fputs(model_file_text(m).c_str(), stdout);
    return;
  }
  write_model_file(m, o.output, "-o");
  std::printf("%s: %.6g M parameters in %zu tensors, %zu layers -> %s\n", m.name.c_str(),
              static_cast<double>(m.parameters()) / 1e6, m.tensors.size(), m.layers.size(), o.output.c_str());
}

// --name "" would be taken as no name and silently become the default one.
CLI::Validator non_empty_name() {
  return CLI::Validator(
      [](std::string& name) -> std::string { return name.empty() ? "is empty (leave it out for the default)" : ""; },
      "NAME");
}

}  // namespace

void register_model(CLI::App& app, int& exit_code) {
  CLI::App* cmd =
      app.add_subcommand("model", "Write a model file from a HuggingFace config or a PyTorch profiler trace");
  cmd->require_subcommand(1);

  auto hf = std::make_shared<ModelOptions>();
  CLI::App* from_hf = cmd->add_subcommand("from-hf", "model file from a HuggingFace transformers config.json");
  from_hf
      ->add_option("config", hf->input,
                   "config.json (model_type llama, mistral, mixtral, qwen2, gemma, gemma2, phi3, gpt2, opt, bert)")
      ->required();
  from_hf->add_option("-o,--output", hf->output, "model file to write (default and -: stdout)")
      ->check(writable_file_or_stdout());
  from_hf->add_option("--seq", hf->seq, "tokens per sample (default: the config's context length)")
      ->check(number_in(1, 1 << 24));
  from_hf->add_option("--name", hf->name, "model name (default: the config's _name_or_path, else the file name)")
      ->check(non_empty_name());
  from_hf->callback([hf, &exit_code] {
    emit(model_from_hf_config(hf->input, {hf->seq, hf->name}), *hf);
    exit_code = 0;
  });

  auto trace = std::make_shared<ModelOptions>();
  CLI::App* from_trace = cmd->add_subcommand(
      "from-trace", "model file with measured compute times from a PyTorch profiler (Kineto) trace");
  from_trace->add_option("trace", trace->input, "Chrome trace JSON (torch.profiler export_chrome_trace)")->required();
  from_trace->add_option("-o,--output", trace->output, "model file to write (default and -: stdout)")
      ->check(writable_file_or_stdout());
  from_trace->add_option("--name", trace->name, "model name (default: the trace file's name)")->check(non_empty_name());
  from_trace->add_option("--batch", trace->batch, "samples per traced step and rank (times are divided by it)")
      ->check(number_in(1, 1 << 20));
  from_trace->callback([trace, &exit_code] {
    const KinetoTrace parsed = read_kineto_trace(trace->input);
    emit(model_from_trace(parsed, trace->input, trace->name, trace->batch), *trace);
    exit_code = 0;
  });
}

}  // namespace commsim::cli
