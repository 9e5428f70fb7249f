// Tensor names, shapes and order: transformers' modeling_llama.py (LlamaModel, LlamaDecoderLayer, LlamaAttention,
// LlamaMLP), modeling_mistral.py, modeling_mixtral.py (MixtralSparseMoeBlock: gate, experts.N.w1/w2/w3),
// modeling_qwen2.py (Qwen2Attention: q/k/v projections with bias=True, o_proj without), modeling_gpt2.py (GPT2Model;
// Conv1D stores [in, out]), modeling_bert.py (BertModel with its pooler). nn.Linear stores [out, in].
// FLOPs per sample (one sequence of `seq` tokens), as scripts/gen_models.py counts them for the zoo: a multiply-add is
// 2 FLOPs; a linear layer 2*in*out per token; attention scores and context 2*2*seq*keys*(heads*head_dim) on the
// attention layer (the full matrix: the causal mask is not exploited, as in the zoo; a sliding window bounds keys);
// norms 5 FLOPs per element (an approximation); activations, softmax, residual additions and dropout not counted.
#include "sim/model/hf_config.hpp"

#include <algorithm>
#include <filesystem>
#include <limits>
#include <optional>

#include "sim/core/json_fields.hpp"
#include "sim/model/model_json.hpp"

namespace commsim {
namespace {

constexpr double kNormFlopsPerElement = 5;  // scripts/gen_models.py NORM_FLOPS_PER_ELEMENT
constexpr std::int64_t kMaxWidth = std::int64_t{1} << 20;

// The config's fields, read by name; absent and null are both "not given" (transformers writes null for defaults).
class Config {
 public:
  Config(const Json& root, const std::string& file) : root_(root), fields_(root, file, "") {}

  std::optional<std::int64_t> optional(const std::string& key, std::int64_t min, std::int64_t max) {
    const Json* v = root_.contains(key) ? &root_.at(key) : nullptr;
    if (!v || v->is_null()) return std::nullopt;
    if (!v->is_number_integer()) fields_.fail(key, "must be an integer");
    const auto value = v->get<std::int64_t>();
    if (value < min || value > max)
      fields_.fail(
          key, "must be in [" + std::to_string(min) + ", " + std::to_string(max) + "], got " + std::to_string(value));
    return value;
  }
  std::int64_t required(const std::string& key, std::int64_t min, std::int64_t max) {
    const auto value = optional(key, min, max);
    if (!value) fields_.fail(key, "missing (a HuggingFace config.json of this model_type has it)");
    return *value;
  }
  // The first of `keys` that is given (transformers' attribute_map aliases, e.g. gpt2's n_embd for hidden_size).
  std::int64_t required_any(const std::vector<std::string>& keys, std::int64_t min, std::int64_t max) {
    for (const std::string& k : keys)
      if (auto v = optional(k, min, max)) return *v;
    return required(keys.front(), min, max);
  }
  // A field whose absence means `fallback` and whose null means none (transformers' default is not None).
  std::optional<std::int64_t> optional_or(const std::string& key, std::optional<std::int64_t> fallback,
                                          std::int64_t min, std::int64_t max) {
    return root_.contains(key) ? optional(key, min, max) : fallback;
  }
  const Json* raw(const std::string& key) const {
    const Json* v = root_.contains(key) ? &root_.at(key) : nullptr;
    return v && !v->is_null() ? v : nullptr;
  }
  bool flag(const std::string& key, bool fallback) {
    const Json* v = root_.contains(key) ? &root_.at(key) : nullptr;
    if (!v || v->is_null()) return fallback;
    if (!v->is_boolean()) fields_.fail(key, "must be true or false");
    return v->get<bool>();
  }
  std::string text(const std::string& key) {
    const Json* v = root_.contains(key) ? &root_.at(key) : nullptr;
    if (!v || v->is_null()) return "";
    if (!v->is_string()) fields_.fail(key, "must be a string");
    return v->get<std::string>();
  }
  [[noreturn]] void fail(const std::string& key, const std::string& what) const { fields_.fail(key, what); }

 private:
  const Json& root_;
  JsonFields fields_;
};

using Shape = std::vector<std::uint64_t>;
struct Param {
  std::string name;
  Shape shape;
};

class Builder {
 public:
  explicit Builder(Model& m) : m_(m) {}
  void layer(const std::string& name, double forward_flops, const std::vector<Param>& params) {
    Layer l;
    l.name = name;
    l.forward_flops_per_sample = forward_flops;
    l.backward_flops_per_sample = 2 * forward_flops;  // the loader's default (docs/model-format.md)
    for (const Param& p : params) {
      std::uint64_t elements = 1;
      for (std::uint64_t d : p.shape) elements *= d;
      l.tensors.push_back(static_cast<int>(m_.tensors.size()));
      m_.tensors.push_back({p.name, elements, static_cast<int>(m_.layers.size()), p.shape});
    }
    m_.layers.push_back(std::move(l));
  }

 private:
  Model& m_;
};

std::uint64_t u(std::int64_t v) { return static_cast<std::uint64_t>(v); }
double f(std::int64_t v) { return static_cast<double>(v); }

// Qwen2's layers with a sliding window: layer_types' "sliding_attention" entries where the config lists them, else
// those with index >= max_window_layers (Qwen2Config.__post_init__; its default 28).
std::vector<bool> qwen2_windowed_layers(Config& c, std::int64_t layers) {
  std::vector<bool> windowed(u(layers));
  const Json* types = c.raw("layer_types");
  if (!types) {
    const std::int64_t first = c.optional("max_window_layers", 0, 4096).value_or(28);
    for (std::int64_t i = 0; i < layers; ++i) windowed[u(i)] = i >= first;
    return windowed;
  }
  if (!types->is_array() || types->size() != u(layers)) c.fail("layer_types", "must list num_hidden_layers entries");
  for (std::size_t i = 0; i < windowed.size(); ++i) {
    const Json& t = (*types)[i];
    if (t != "full_attention" && t != "sliding_attention")
      c.fail("layer_types", "entries must be \"full_attention\" or \"sliding_attention\"");
    windowed[i] = t == "sliding_attention";
  }
  return windowed;
}

// The keys each query attends to, per layer: seq, or a sliding window where smaller. As transformers builds the
// attention: LlamaAttention has no window; MistralAttention and MixtralAttention apply sliding_window to every layer
// (null: none; absent: MistralConfig's default 4096, MixtralConfig's None); Qwen2Config keeps sliding_window (default
// 4096) only with use_sliding_window (default false), on the layers qwen2_windowed_layers names.
std::vector<double> keys_per_layer(Config& c, const std::string& type, std::int64_t layers, std::int64_t seq) {
  constexpr std::int64_t kMaxWindow = std::int64_t{1} << 30;
  std::optional<std::int64_t> window;
  std::vector<bool> windowed(u(layers), true);
  if (type == "mistral" || (type == "qwen2" && c.flag("use_sliding_window", false)))
    window = c.optional_or("sliding_window", 4096, 1, kMaxWindow);
  else if (type == "mixtral")
    window = c.optional("sliding_window", 1, kMaxWindow);
  if (window && type == "qwen2") windowed = qwen2_windowed_layers(c, layers);
  std::vector<double> keys(u(layers), f(seq));
  for (std::size_t i = 0; i < keys.size(); ++i)
    if (window && windowed[i]) keys[i] = f(std::min(seq, *window));
  return keys;
}

// The fields of a gated decoder's config: llama, mistral, mixtral, qwen2 (transformers' defaults where a field is
// absent: tie_word_embeddings false, attention_bias / mlp_bias false).
struct DecoderShape {
  std::int64_t d = 0, layers = 0, heads = 0, kv = 0, hd = 0, ff = 0, vocab = 0;
  bool tied = false, qkv_bias = false, o_bias = false, mlp_bias = false;
  std::int64_t experts = 0, per_token = 0;  // mixtral
  std::vector<double> keys;                 // per layer: the keys each query attends to
};

DecoderShape decoder_shape(Config& c, const std::string& type, std::int64_t seq) {
  DecoderShape s;
  s.d = c.required("hidden_size", 1, kMaxWidth);
  s.layers = c.required("num_hidden_layers", 1, 4096);
  s.heads = c.required("num_attention_heads", 1, s.d);
  s.kv = c.optional("num_key_value_heads", 1, s.heads).value_or(s.heads);
  if (s.heads % s.kv != 0) c.fail("num_key_value_heads", "must divide num_attention_heads");
  const auto given_head_dim = c.optional("head_dim", 1, kMaxWidth);
  if (!given_head_dim && s.d % s.heads != 0)
    c.fail("num_attention_heads", "must divide hidden_size (no head_dim given)");
  s.hd = given_head_dim.value_or(s.d / s.heads);
  s.ff = c.required("intermediate_size", 1, std::int64_t{1} << 22);
  s.vocab = c.required("vocab_size", 1, std::int64_t{1} << 24);
  s.tied = c.flag("tie_word_embeddings", false);
  // Biases as transformers builds them: LlamaAttention and LlamaMLP take attention_bias and mlp_bias; MistralAttention,
  // MistralMLP, MixtralAttention and Mixtral's experts hard-code bias=False; Qwen2Attention has q/k/v bias=True and
  // o_proj bias=False, Qwen2MLP bias=False. The flags are read for llama only, as transformers reads them.
  const bool llama = type == "llama";
  s.qkv_bias = type == "qwen2" || (llama && c.flag("attention_bias", false));
  s.o_bias = llama && c.flag("attention_bias", false);
  s.mlp_bias = llama && c.flag("mlp_bias", false);
  if (type == "mixtral") {
    // MixtralConfig's attribute_map reads num_experts as num_local_experts.
    s.experts = c.required_any({"num_local_experts", "num_experts"}, 1, 4096);
    if (c.optional("num_experts", 1, 4096).value_or(s.experts) != s.experts)
      c.fail("num_experts", "differs from num_local_experts, which it stands for in MixtralConfig");
    s.per_token = c.required("num_experts_per_tok", 1, s.experts);
  }
  s.keys = keys_per_layer(c, type, s.layers, seq);
  return s;
}

std::vector<Param> linear_params(const std::string& name, std::int64_t in, std::int64_t out, bool bias) {
  std::vector<Param> p{{name + ".weight", {u(out), u(in)}}};
  if (bias) p.push_back({name + ".bias", {u(out)}});
  return p;
}
std::vector<Param> joined(std::vector<Param> a, const std::vector<Param>& more) {
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

// A decoder block's feed-forward: the gated MLP, or Mixtral's router over all experts for every token, each token
// then running through `per_token` experts.
void decoder_mlp(Builder& b, const DecoderShape& s, const std::string& p, std::int64_t seq) {
  if (s.experts == 0) {
    const std::string mlp = p + "mlp.";
    b.layer(p + "mlp", 2 * 3 * f(s.d) * f(s.ff) * f(seq),
            joined(joined(linear_params(mlp + "gate_proj", s.d, s.ff, s.mlp_bias),
                          linear_params(mlp + "up_proj", s.d, s.ff, s.mlp_bias)),
                   linear_params(mlp + "down_proj", s.ff, s.d, s.mlp_bias)));
    return;
  }
  const std::string moe = p + "block_sparse_moe.";
  std::vector<Param> params = linear_params(moe + "gate", s.d, s.experts, false);
  for (std::int64_t e = 0; e < s.experts; ++e) {
    const std::string x = moe + "experts." + std::to_string(e) + ".";
    params = joined(
        joined(joined(params, linear_params(x + "w1", s.d, s.ff, false)), linear_params(x + "w2", s.ff, s.d, false)),
        linear_params(x + "w3", s.d, s.ff, false));
  }
  b.layer(p + "block_sparse_moe",
          2 * f(s.d) * f(s.experts) * f(seq) + f(s.per_token) * 2 * 3 * f(s.d) * f(s.ff) * f(seq), params);
}

void decoder_block(Builder& b, const DecoderShape& s, std::int64_t i, std::int64_t seq) {
  const double norm = kNormFlopsPerElement * f(seq) * f(s.d);
  const std::string p = "model.layers." + std::to_string(i) + ".";
  b.layer(p + "input_layernorm", norm, {{p + "input_layernorm.weight", {u(s.d)}}});
  const std::string a = p + "self_attn.";
  b.layer(p + "self_attn",
          2 * f(s.d) * f((s.heads + 2 * s.kv) * s.hd) * f(seq) + 2 * 2 * f(seq) * s.keys[u(i)] * f(s.heads * s.hd),
          joined(joined(linear_params(a + "q_proj", s.d, s.heads * s.hd, s.qkv_bias),
                        linear_params(a + "k_proj", s.d, s.kv * s.hd, s.qkv_bias)),
                 linear_params(a + "v_proj", s.d, s.kv * s.hd, s.qkv_bias)));
  b.layer(a + "o_proj", 2 * f(s.heads * s.hd) * f(s.d) * f(seq),
          linear_params(a + "o_proj", s.heads * s.hd, s.d, s.o_bias));
  b.layer(p + "post_attention_layernorm", norm, {{p + "post_attention_layernorm.weight", {u(s.d)}}});
  decoder_mlp(b, s, p, seq);
}

void gated_decoder(Config& c, const std::string& type, std::int64_t seq, Model& m) {
  const DecoderShape s = decoder_shape(c, type, seq);
  Builder b(m);
  const double norm = kNormFlopsPerElement * f(seq) * f(s.d);
  b.layer("model.embed_tokens", 0, {{"model.embed_tokens.weight", {u(s.vocab), u(s.d)}}});  // a lookup
  for (std::int64_t i = 0; i < s.layers; ++i) decoder_block(b, s, i, seq);
  b.layer("model.norm", norm, {{"model.norm.weight", {u(s.d)}}});
  // Logits for every position; with tied embeddings the weight is embed_tokens' (communicated once, with it).
  b.layer("lm_head", 2 * f(s.d) * f(s.vocab) * f(seq),
          s.tied ? std::vector<Param>{} : std::vector<Param>{{"lm_head.weight", {u(s.vocab), u(s.d)}}});
  m.sample = "sequence of " + std::to_string(seq) + " tokens";
}

// add_cross_attention gives every GPT2Block and BertLayer a crossattention block (its own q/k/v, output and norm),
// which this importer does not build: refused rather than left out of the count.
void refuse_cross_attention(Config& c) {
  if (c.flag("add_cross_attention", false))
    c.fail("add_cross_attention", "true adds cross-attention blocks to every layer, which from-hf does not build");
}

// GPT-2 (GPT2LMHeadModel; tie_word_embeddings defaults to true as in every PretrainedConfig). Same layers, names
// and FLOPs as scripts/gen_models.py gpt_decoder, so the zoo's gpt2-xl is this importer's output for its config.

void gpt2(Config& c, std::int64_t seq, std::int64_t ctx, Model& m) {
  refuse_cross_attention(c);
  const std::int64_t d = c.required_any({"n_embd", "hidden_size"}, 1, kMaxWidth);
  const std::int64_t layers = c.required_any({"n_layer", "num_hidden_layers"}, 1, 4096);
  const std::int64_t heads = c.required_any({"n_head", "num_attention_heads"}, 1, d);
  if (d % heads != 0) c.fail("n_head", "must divide n_embd");
  const std::int64_t ff = c.optional("n_inner", 1, std::int64_t{1} << 22).value_or(4 * d);
  const std::int64_t vocab = c.required("vocab_size", 1, std::int64_t{1} << 24);
  const bool tied = c.flag("tie_word_embeddings", true);
  Builder b(m);
  const double norm = kNormFlopsPerElement * f(seq) * f(d);
  auto conv1d = [](const std::string& name, std::int64_t in, std::int64_t out) {
    return std::vector<Param>{{name + ".weight", {u(in), u(out)}}, {name + ".bias", {u(out)}}};
  };
  auto ln = [&](const std::string& name) {
    b.layer(name, norm, {{name + ".weight", {u(d)}}, {name + ".bias", {u(d)}}});
  };
  b.layer("embeddings", f(seq) * f(d), {{"wte.weight", {u(vocab), u(d)}}, {"wpe.weight", {u(ctx), u(d)}}});
  for (std::int64_t i = 0; i < layers; ++i) {
    const std::string p = "h." + std::to_string(i) + ".";
    ln(p + "ln_1");
    b.layer(p + "attn", 2 * f(d) * 3 * f(d) * f(seq) + 2 * 2 * f(seq) * f(seq) * f(d),
            conv1d(p + "attn.c_attn", d, 3 * d));
    b.layer(p + "attn.c_proj", 2 * f(d) * f(d) * f(seq), conv1d(p + "attn.c_proj", d, d));
    ln(p + "ln_2");
    b.layer(p + "mlp.c_fc", 2 * f(d) * f(ff) * f(seq), conv1d(p + "mlp.c_fc", d, ff));
    b.layer(p + "mlp.c_proj", 2 * f(ff) * f(d) * f(seq), conv1d(p + "mlp.c_proj", ff, d));
  }
  ln("ln_f");
  b.layer("lm_head", 2 * f(d) * f(vocab) * f(seq),
          tied ? std::vector<Param>{} : std::vector<Param>{{"lm_head.weight", {u(vocab), u(d)}}});
  m.sample = "sequence of " + std::to_string(seq) + " tokens";
}

// BertModel (no pre-training or task heads): as scripts/gen_models.py bert_large.
void bert(Config& c, std::int64_t seq, std::int64_t ctx, Model& m) {
  refuse_cross_attention(c);
  // relative_key and relative_key_query give each layer's BertSelfAttention a distance_embedding (2 *
  // max_position_embeddings - 1 rows) and other score FLOPs; only BertConfig's default, absolute, is built here.
  const std::string positions = c.text("position_embedding_type");
  if (!positions.empty() && positions != "absolute")
    c.fail("position_embedding_type", "\"" + positions + "\" is not supported (only \"absolute\")");
  const std::int64_t d = c.required("hidden_size", 1, kMaxWidth);
  const std::int64_t layers = c.required("num_hidden_layers", 1, 4096);
  const std::int64_t heads = c.required("num_attention_heads", 1, d);
  if (d % heads != 0) c.fail("num_attention_heads", "must divide hidden_size");
  const std::int64_t ff = c.required("intermediate_size", 1, std::int64_t{1} << 22);
  const std::int64_t vocab = c.required("vocab_size", 1, std::int64_t{1} << 24);
  const std::int64_t types = c.optional("type_vocab_size", 1, 1 << 20).value_or(2);  // BertConfig default
  Builder b(m);
  const double norm = kNormFlopsPerElement * f(seq) * f(d);
  auto linear = [](const std::string& name, std::int64_t in, std::int64_t out) {
    return std::vector<Param>{{name + ".weight", {u(out), u(in)}}, {name + ".bias", {u(out)}}};
  };
  auto ln = [&](const std::string& name) {
    return std::vector<Param>{{name + ".weight", {u(d)}}, {name + ".bias", {u(d)}}};
  };
  const std::string e = "embeddings.";
  std::vector<Param> embeddings{{e + "word_embeddings.weight", {u(vocab), u(d)}},
                                {e + "position_embeddings.weight", {u(ctx), u(d)}},
                                {e + "token_type_embeddings.weight", {u(types), u(d)}}};
  for (const Param& p : ln(e + "LayerNorm")) embeddings.push_back(p);
  b.layer("embeddings", 2 * f(seq) * f(d) + norm, embeddings);  // three embeddings summed, LayerNorm
  for (std::int64_t i = 0; i < layers; ++i) {
    const std::string p = "encoder.layer." + std::to_string(i) + ".";
    const std::string a = p + "attention.self.";
    std::vector<Param> qkv = linear(a + "query", d, d);
    for (const char* w : {"key", "value"})
      for (const Param& x : linear(a + w, d, d)) qkv.push_back(x);
    b.layer(p + "attention.self", 3 * 2 * f(d) * f(d) * f(seq) + 2 * 2 * f(seq) * f(seq) * f(d), qkv);
    const std::string o = p + "attention.output.";
    b.layer(o + "dense", 2 * f(d) * f(d) * f(seq), linear(o + "dense", d, d));
    b.layer(o + "LayerNorm", norm, ln(o + "LayerNorm"));
    b.layer(p + "intermediate.dense", 2 * f(d) * f(ff) * f(seq), linear(p + "intermediate.dense", d, ff));
    b.layer(p + "output.dense", 2 * f(ff) * f(d) * f(seq), linear(p + "output.dense", ff, d));
    b.layer(p + "output.LayerNorm", norm, ln(p + "output.LayerNorm"));
  }
  b.layer("pooler.dense", 2 * f(d) * f(d), linear("pooler.dense", d, d));  // the [CLS] token only
  m.sample = "sequence of " + std::to_string(seq) + " tokens";
}

// Experts this importer does not build: DeepSeek's shared and routed experts (n_shared_experts, n_routed_experts,
// moe_intermediate_size), Qwen2-MoE's (num_experts, shared_expert_intermediate_size), and any expert count on a model
// type without experts (only Mixtral's num_local_experts / num_experts are read). Zero or null means none.
void refuse_unbuilt_experts(Config& c, const std::string& type) {
  std::vector<std::string> keys{"n_shared_experts", "n_routed_experts", "shared_expert_intermediate_size",
                                "moe_intermediate_size"};
  if (type != "mixtral") keys.insert(keys.end(), {"num_local_experts", "num_experts", "num_experts_per_tok"});
  for (const std::string& k : keys)
    if (c.optional(k, 0, std::numeric_limits<std::int64_t>::max()).value_or(0) != 0)
      c.fail(k, "experts that from-hf does not build for model_type " + type + " (only mixtral's)");
}

}  // namespace

Model model_from_hf_config(const std::string& path, const HfImport& options) {
  const Json root = read_json_file(path);
  if (!root.is_object()) throw InputError(path, "", "a HuggingFace config.json is a JSON object");
  Config c(root, path);
  const std::string type = c.text("model_type");
  if (type.empty()) c.fail("model_type", "missing (llama, mistral, mixtral, qwen2, gpt2, bert)");
  const bool gated = type == "llama" || type == "mistral" || type == "mixtral" || type == "qwen2";
  if (!gated && type != "gpt2" && type != "bert")
    c.fail("model_type", "\"" + type + "\" is not supported (llama, mistral, mixtral, qwen2, gpt2, bert)");
  Model m;
  const std::string given = c.text("_name_or_path");
  m.name = !options.name.empty() ? options.name : !given.empty() ? given : std::filesystem::path(path).stem().string();
  const std::string url = c.text("_source_url");  // optional: where the config was published
  m.source = "HuggingFace config " + std::filesystem::path(path).filename().string() +
             (url.empty() ? "" : " (" + url + ")") + ", model_type " + type + ", imported by commsim model from-hf";
  // The architecture's size first (the error a truncated config most likely has), then the context length.
  if (gated) c.required("hidden_size", 1, kMaxWidth);
  std::int64_t ctx = 0;
  if (type == "gpt2")
    ctx = c.required_any({"n_positions", "n_ctx", "max_position_embeddings"}, 1, std::int64_t{1} << 24);
  else if (type == "bert" || options.seq == 0)
    ctx = c.required("max_position_embeddings", 1, std::int64_t{1} << 24);
  const std::int64_t seq = options.seq > 0 ? options.seq : ctx;
  if ((type == "gpt2" || type == "bert") && seq > ctx)
    throw InputError(
        "--seq", "",
        std::to_string(seq) + " tokens exceed the learned positions of " + path + " (" + std::to_string(ctx) + ")");
  refuse_unbuilt_experts(c, type);
  if (gated)
    gated_decoder(c, type, seq, m);
  else if (type == "gpt2")
    gpt2(c, seq, ctx, m);
  else
    bert(c, seq, ctx, m);
  m.description = type + " model from " + std::filesystem::path(path).filename().string() + ", " +
                  std::to_string(m.tensors.size()) + " parameter tensors in forward order (state_dict names); " +
                  "one sample = one " + m.sample + ". FLOPs: linear 2*in*out per token, attention scores and context " +
                  "on the attention layer (full matrix), norms 5 per element; activations not counted.";
  check_loads_back(m, path);
  return m;
}

}  // namespace commsim
