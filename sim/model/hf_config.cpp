// Tensor names, shapes and order: transformers' modeling_llama.py (LlamaModel, LlamaDecoderLayer, LlamaAttention,
// LlamaMLP), modeling_mistral.py, modeling_mixtral.py (MixtralSparseMoeBlock: gate, experts.N.w1/w2/w3),
// modeling_qwen2.py (Qwen2Attention: q/k/v projections with bias=True, o_proj without), modeling_gemma.py
// (GemmaAttention, GemmaMLP), modeling_gemma2.py (Gemma2DecoderLayer's four norms), modeling_phi3.py (Phi3Attention's
// fused qkv_proj, Phi3MLP's fused gate_up_proj), modeling_gpt2.py (GPT2Model; Conv1D stores [in, out]),
// modeling_opt.py (OPTDecoder, OPTDecoderLayer), modeling_bert.py (BertModel with its pooler). nn.Linear stores
// [out, in].
// FLOPs per sample (one sequence of `seq` tokens), as scripts/gen_models.py counts them for the zoo: a multiply-add is
// 2 FLOPs; a linear layer 2*in*out per token (a fused projection as its parts); attention scores and context
// 2*2*seq*keys*(heads*head_dim) on the attention layer (the full matrix: the causal mask is not exploited, as in the
// zoo; a sliding window bounds keys); norms 5 FLOPs per element (an approximation); activations, softmax, soft-capping,
// embedding scaling, residual additions and dropout not counted.
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

// The layers a config's layer_types marks "sliding_attention", where it lists them (transformers'
// layer_type_validation: one entry per layer, each "full_attention" or "sliding_attention").
std::optional<std::vector<bool>> listed_sliding_layers(Config& c, std::int64_t layers) {
  const Json* types = c.raw("layer_types");
  if (!types) return std::nullopt;
  if (!types->is_array() || types->size() != u(layers)) c.fail("layer_types", "must list num_hidden_layers entries");
  std::vector<bool> windowed(u(layers));
  for (std::size_t i = 0; i < windowed.size(); ++i) {
    const Json& t = (*types)[i];
    if (t != "full_attention" && t != "sliding_attention")
      c.fail("layer_types", "entries must be \"full_attention\" or \"sliding_attention\"");
    windowed[i] = t == "sliding_attention";
  }
  return windowed;
}

// Qwen2's layers with a sliding window: layer_types' where listed, else those with index >= max_window_layers
// (Qwen2Config.__post_init__; its default 28).
std::vector<bool> qwen2_windowed_layers(Config& c, std::int64_t layers) {
  if (auto listed = listed_sliding_layers(c, layers)) return *listed;
  std::vector<bool> windowed(u(layers));
  const std::int64_t first = c.optional("max_window_layers", 0, 4096).value_or(28);
  for (std::int64_t i = 0; i < layers; ++i) windowed[u(i)] = i >= first;
  return windowed;
}

// Gemma 2's: layer_types' where listed, else every other layer from the first (Gemma2Config: "sliding_attention" if
// (i + 1) % 2, so layers 0, 2, 4, ...; Gemma2Attention keeps sliding_window on those only).
std::vector<bool> gemma2_windowed_layers(Config& c, std::int64_t layers) {
  if (auto listed = listed_sliding_layers(c, layers)) return *listed;
  std::vector<bool> windowed(u(layers));
  for (std::int64_t i = 0; i < layers; ++i) windowed[u(i)] = i % 2 == 0;
  return windowed;
}

// The keys each query attends to, per layer: seq, or a sliding window where smaller. As transformers builds the
// attention: LlamaAttention and GemmaAttention have no window; MistralAttention, MixtralAttention and Phi3Attention
// apply sliding_window to every layer (null: none; absent: MistralConfig's default 4096, MixtralConfig's and
// Phi3Config's None); Qwen2Config keeps sliding_window (default 4096) only with use_sliding_window (default false), on
// the layers qwen2_windowed_layers names; Gemma2Config's sliding_window (default 4096) applies on the layers
// gemma2_windowed_layers names.
std::vector<double> keys_per_layer(Config& c, const std::string& type, std::int64_t layers, std::int64_t seq) {
  constexpr std::int64_t kMaxWindow = std::int64_t{1} << 30;
  std::optional<std::int64_t> window;
  std::vector<bool> windowed(u(layers), true);
  if (type == "mistral" || type == "gemma2" || (type == "qwen2" && c.flag("use_sliding_window", false)))
    window = c.optional_or("sliding_window", 4096, 1, kMaxWindow);
  else if (type == "mixtral" || type == "phi3")
    window = c.optional("sliding_window", 1, kMaxWindow);
  if (window && type == "qwen2") windowed = qwen2_windowed_layers(c, layers);
  if (window && type == "gemma2") windowed = gemma2_windowed_layers(c, layers);
  std::vector<double> keys(u(layers), f(seq));
  for (std::size_t i = 0; i < keys.size(); ++i)
    if (window && windowed[i]) keys[i] = f(std::min(seq, *window));
  return keys;
}

// The fields of a gated decoder's config: llama, mistral, mixtral, qwen2, gemma, gemma2, phi3 (transformers' defaults
// where a field is absent: tie_word_embeddings false but true for gemma and gemma2, attention_bias / mlp_bias false).
struct DecoderShape {
  std::int64_t d = 0, layers = 0, heads = 0, kv = 0, hd = 0, ff = 0, vocab = 0;
  bool tied = false, qkv_bias = false, o_bias = false, mlp_bias = false;
  bool fused = false;                       // phi3: one qkv_proj and one gate_up_proj
  bool sandwich_norms = false;              // gemma2: pre_ and post_feedforward_layernorm around the MLP
  std::int64_t experts = 0, per_token = 0;  // mixtral
  std::vector<double> keys;                 // per layer: the keys each query attends to
};

// The attention's head counts and width. Absent num_key_value_heads and head_dim take the config class's defaults:
// LlamaConfig and Phi3Config num_attention_heads (their default None means that); MistralConfig and MixtralConfig 8
// KV heads, Qwen2Config 32 (their __init__ defaults); GemmaConfig 16, Gemma2Config 4, both head_dim 256
// (GemmaAttention reads config.head_dim, not hidden_size / heads); head_dim otherwise hidden_size / heads.
void attention_shape(Config& c, const std::string& type, DecoderShape& s) {
  s.heads = c.required("num_attention_heads", 1, s.d);
  const bool gemma = type == "gemma" || type == "gemma2";
  const std::int64_t default_kv = type == "gemma"                          ? 16
                                  : type == "gemma2"                       ? 4
                                  : type == "mistral" || type == "mixtral" ? 8
                                  : type == "qwen2"                        ? 32
                                                                           : s.heads;
  s.kv = c.optional("num_key_value_heads", 1, s.heads).value_or(default_kv);
  if (s.kv > s.heads || s.heads % s.kv != 0) c.fail("num_key_value_heads", "must divide num_attention_heads");
  std::optional<std::int64_t> head_dim = c.optional("head_dim", 1, kMaxWidth);
  if (!head_dim && gemma) head_dim = 256;
  if (!head_dim && s.d % s.heads != 0) c.fail("num_attention_heads", "must divide hidden_size (no head_dim given)");
  s.hd = head_dim.value_or(s.d / s.heads);
}

DecoderShape decoder_shape(Config& c, const std::string& type, std::int64_t seq) {
  DecoderShape s;
  s.d = c.required("hidden_size", 1, kMaxWidth);
  s.layers = c.required("num_hidden_layers", 1, 4096);
  attention_shape(c, type, s);
  s.ff = c.required("intermediate_size", 1, std::int64_t{1} << 22);
  s.vocab = c.required("vocab_size", 1, std::int64_t{1} << 24);
  const bool gemma = type == "gemma" || type == "gemma2";
  s.tied = c.flag("tie_word_embeddings", gemma);  // GemmaConfig, Gemma2Config: true; the others false
  // Biases as transformers builds them: LlamaAttention, GemmaAttention and Gemma2Attention take attention_bias (q, k, v
  // and o), LlamaMLP takes mlp_bias; GemmaMLP, MistralAttention, MistralMLP, MixtralAttention, Mixtral's experts,
  // Phi3Attention and Phi3MLP hard-code bias=False; Qwen2Attention has q/k/v bias=True and o_proj bias=False, Qwen2MLP
  // bias=False. The flags are read only where transformers reads them.
  const bool attention_bias = (type == "llama" || gemma) && c.flag("attention_bias", false);
  s.qkv_bias = type == "qwen2" || attention_bias;
  s.o_bias = attention_bias;
  s.mlp_bias = type == "llama" && c.flag("mlp_bias", false);
  s.fused = type == "phi3";
  s.sandwich_norms = type == "gemma2";
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

// An RMSNorm (LlamaRMSNorm, GemmaRMSNorm: a weight of `d`, no bias) as a layer of its own.
void rms_norm(Builder& b, const std::string& name, std::int64_t d, std::int64_t seq) {
  b.layer(name, kNormFlopsPerElement * f(seq) * f(d), {{name + ".weight", {u(d)}}});
}
// A LayerNorm: weight and bias of `d`, none without elementwise_affine (OPT's layer_norm_elementwise_affine false).
void layer_norm(Builder& b, const std::string& name, std::int64_t d, std::int64_t seq, bool affine = true) {
  b.layer(name, kNormFlopsPerElement * f(seq) * f(d),
          affine ? std::vector<Param>{{name + ".weight", {u(d)}}, {name + ".bias", {u(d)}}} : std::vector<Param>{});
}
// Logits for every position from `in` features; with tied embeddings the weight is the token embedding's
// (communicated once, with it), so lm_head holds no tensor.
void lm_head(Builder& b, std::int64_t in, std::int64_t vocab, std::int64_t seq, bool tied) {
  b.layer("lm_head", 2 * f(in) * f(vocab) * f(seq),
          tied ? std::vector<Param>{} : std::vector<Param>{{"lm_head.weight", {u(vocab), u(in)}}});
}

// A decoder block's feed-forward: the gated MLP (Phi3MLP fuses gate and up into one gate_up_proj of 2*ff rows, gate
// first), or Mixtral's router over all experts for every token, each token then running through `per_token` experts.
void decoder_mlp(Builder& b, const DecoderShape& s, const std::string& p, std::int64_t seq) {
  if (s.experts == 0) {
    const std::string mlp = p + "mlp.";
    const std::vector<Param> gate_up = s.fused ? linear_params(mlp + "gate_up_proj", s.d, 2 * s.ff, false)
                                               : joined(linear_params(mlp + "gate_proj", s.d, s.ff, s.mlp_bias),
                                                        linear_params(mlp + "up_proj", s.d, s.ff, s.mlp_bias));
    b.layer(p + "mlp", 2 * 3 * f(s.d) * f(s.ff) * f(seq),
            joined(gate_up, linear_params(mlp + "down_proj", s.ff, s.d, s.mlp_bias)));
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

// The query, key and value projections: three, or Phi3Attention's one qkv_proj (the query heads, then the key heads,
// then the value heads: (heads + 2 * kv) * head_dim rows).
std::vector<Param> qkv_params(const DecoderShape& s, const std::string& a) {
  if (s.fused) return linear_params(a + "qkv_proj", s.d, (s.heads + 2 * s.kv) * s.hd, false);
  return joined(joined(linear_params(a + "q_proj", s.d, s.heads * s.hd, s.qkv_bias),
                       linear_params(a + "k_proj", s.d, s.kv * s.hd, s.qkv_bias)),
                linear_params(a + "v_proj", s.d, s.kv * s.hd, s.qkv_bias));
}

// Gemma2DecoderLayer normalizes the attention's output (post_attention_layernorm) and runs the MLP between
// pre_feedforward_layernorm and post_feedforward_layernorm; the others normalize the MLP's input only (there named
// post_attention_layernorm).
void decoder_block(Builder& b, const DecoderShape& s, std::int64_t i, std::int64_t seq) {
  const std::string p = "model.layers." + std::to_string(i) + ".";
  rms_norm(b, p + "input_layernorm", s.d, seq);
  const std::string a = p + "self_attn.";
  b.layer(p + "self_attn",
          2 * f(s.d) * f((s.heads + 2 * s.kv) * s.hd) * f(seq) + 2 * 2 * f(seq) * s.keys[u(i)] * f(s.heads * s.hd),
          qkv_params(s, a));
  b.layer(a + "o_proj", 2 * f(s.heads * s.hd) * f(s.d) * f(seq),
          linear_params(a + "o_proj", s.heads * s.hd, s.d, s.o_bias));
  rms_norm(b, p + "post_attention_layernorm", s.d, seq);
  if (s.sandwich_norms) rms_norm(b, p + "pre_feedforward_layernorm", s.d, seq);
  decoder_mlp(b, s, p, seq);
  if (s.sandwich_norms) rms_norm(b, p + "post_feedforward_layernorm", s.d, seq);
}

void gated_decoder(Config& c, const std::string& type, std::int64_t seq, Model& m) {
  const DecoderShape s = decoder_shape(c, type, seq);
  Builder b(m);
  b.layer("model.embed_tokens", 0, {{"model.embed_tokens.weight", {u(s.vocab), u(s.d)}}});  // a lookup
  for (std::int64_t i = 0; i < s.layers; ++i) decoder_block(b, s, i, seq);
  rms_norm(b, "model.norm", s.d, seq);
  lm_head(b, s.d, s.vocab, seq, s.tied);
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
  auto conv1d = [](const std::string& name, std::int64_t in, std::int64_t out) {
    return std::vector<Param>{{name + ".weight", {u(in), u(out)}}, {name + ".bias", {u(out)}}};
  };
  b.layer("embeddings", f(seq) * f(d), {{"wte.weight", {u(vocab), u(d)}}, {"wpe.weight", {u(ctx), u(d)}}});
  for (std::int64_t i = 0; i < layers; ++i) {
    const std::string p = "h." + std::to_string(i) + ".";
    layer_norm(b, p + "ln_1", d, seq);
    b.layer(p + "attn", 2 * f(d) * 3 * f(d) * f(seq) + 2 * 2 * f(seq) * f(seq) * f(d),
            conv1d(p + "attn.c_attn", d, 3 * d));
    b.layer(p + "attn.c_proj", 2 * f(d) * f(d) * f(seq), conv1d(p + "attn.c_proj", d, d));
    layer_norm(b, p + "ln_2", d, seq);
    b.layer(p + "mlp.c_fc", 2 * f(d) * f(ff) * f(seq), conv1d(p + "mlp.c_fc", d, ff));
    b.layer(p + "mlp.c_proj", 2 * f(ff) * f(d) * f(seq), conv1d(p + "mlp.c_proj", ff, d));
  }
  layer_norm(b, "ln_f", d, seq);
  lm_head(b, d, vocab, seq, tied);
  m.sample = "sequence of " + std::to_string(seq) + " tokens";
}

// OPTForCausalLM (modeling_opt.py), its FLOPs as GPT-2's. OPTDecoder: embed_tokens [vocab, word_embed_proj_dim];
// project_in and project_out (nn.Linear, bias=False) where word_embed_proj_dim differs from hidden_size;
// OPTLearnedPositionalEmbedding of max_position_embeddings + 2 rows (its offset 2); the final_layer_norm only with
// do_layer_norm_before and without _remove_final_layer_norm. OPTDecoderLayer: self_attn_layer_norm, OPTAttention's
// q/k/v/out_proj, final_layer_norm, fc1 and fc2 (ReLU, not gated), the linears with bias=enable_bias (default true),
// the LayerNorms with elementwise_affine=layer_norm_elementwise_affine (default true); each norm before its block
// with do_layer_norm_before (default true), after it without (OPT-350m). OPTForCausalLM's lm_head
// [vocab, word_embed_proj_dim] is tied to embed_tokens (tie_word_embeddings, true by default).
struct OptShape {
  std::int64_t d = 0, layers = 0, ff = 0, vocab = 0, proj = 0;
  bool bias = true, affine = true, pre_norm = true;
};

void opt_block(Builder& b, const OptShape& s, std::int64_t i, std::int64_t seq) {
  const std::string p = "model.decoder.layers." + std::to_string(i) + ".";
  const std::string a = p + "self_attn.";
  if (s.pre_norm) layer_norm(b, p + "self_attn_layer_norm", s.d, seq, s.affine);
  b.layer(p + "self_attn", 2 * f(s.d) * 3 * f(s.d) * f(seq) + 2 * 2 * f(seq) * f(seq) * f(s.d),
          joined(joined(linear_params(a + "q_proj", s.d, s.d, s.bias), linear_params(a + "k_proj", s.d, s.d, s.bias)),
                 linear_params(a + "v_proj", s.d, s.d, s.bias)));
  b.layer(a + "out_proj", 2 * f(s.d) * f(s.d) * f(seq), linear_params(a + "out_proj", s.d, s.d, s.bias));
  if (!s.pre_norm) layer_norm(b, p + "self_attn_layer_norm", s.d, seq, s.affine);
  if (s.pre_norm) layer_norm(b, p + "final_layer_norm", s.d, seq, s.affine);
  b.layer(p + "fc1", 2 * f(s.d) * f(s.ff) * f(seq), linear_params(p + "fc1", s.d, s.ff, s.bias));
  b.layer(p + "fc2", 2 * f(s.ff) * f(s.d) * f(seq), linear_params(p + "fc2", s.ff, s.d, s.bias));
  if (!s.pre_norm) layer_norm(b, p + "final_layer_norm", s.d, seq, s.affine);
}

void opt(Config& c, std::int64_t seq, std::int64_t ctx, Model& m) {
  OptShape s;
  s.d = c.required("hidden_size", 1, kMaxWidth);
  s.layers = c.required("num_hidden_layers", 1, 4096);
  const std::int64_t heads = c.required("num_attention_heads", 1, s.d);
  if (s.d % heads != 0) c.fail("num_attention_heads", "must divide hidden_size");
  s.ff = c.required("ffn_dim", 1, std::int64_t{1} << 22);
  s.vocab = c.required("vocab_size", 1, std::int64_t{1} << 24);
  s.proj = c.optional("word_embed_proj_dim", 1, kMaxWidth).value_or(s.d);
  s.bias = c.flag("enable_bias", true);
  s.affine = c.flag("layer_norm_elementwise_affine", true);
  s.pre_norm = c.flag("do_layer_norm_before", true);
  const bool final_norm = s.pre_norm && !c.flag("_remove_final_layer_norm", false);
  const bool tied = c.flag("tie_word_embeddings", true);
  const std::string dec = "model.decoder.";
  Builder b(m);
  b.layer(dec + "embed_tokens", 0, {{dec + "embed_tokens.weight", {u(s.vocab), u(s.proj)}}});  // a lookup
  if (s.proj != s.d)
    b.layer(dec + "project_in", 2 * f(s.proj) * f(s.d) * f(seq), linear_params(dec + "project_in", s.proj, s.d, false));
  // The positions' lookup, added to the tokens' embeddings.
  b.layer(dec + "embed_positions", f(seq) * f(s.d), {{dec + "embed_positions.weight", {u(ctx + 2), u(s.d)}}});
  for (std::int64_t i = 0; i < s.layers; ++i) opt_block(b, s, i, seq);
  if (final_norm) layer_norm(b, dec + "final_layer_norm", s.d, seq, s.affine);
  if (s.proj != s.d)
    b.layer(dec + "project_out", 2 * f(s.d) * f(s.proj) * f(seq),
            linear_params(dec + "project_out", s.d, s.proj, false));
  lm_head(b, s.proj, s.vocab, seq, tied);
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
  const std::string families = " (llama, mistral, mixtral, qwen2, gemma, gemma2, phi3, gpt2, opt, bert)";
  if (type.empty()) c.fail("model_type", "missing" + families);
  const bool gated = type == "llama" || type == "mistral" || type == "mixtral" || type == "qwen2" || type == "gemma" ||
                     type == "gemma2" || type == "phi3";
  const bool learned_positions = type == "gpt2" || type == "opt" || type == "bert";
  if (!gated && !learned_positions) c.fail("model_type", "\"" + type + "\" is not supported" + families);
  Model m;
  const std::string given = c.text("_name_or_path");
  m.name = !options.name.empty() ? options.name : !given.empty() ? given : std::filesystem::path(path).stem().string();
  const std::string url = c.text("_source_url");  // optional: where the config was published
  m.source = "HuggingFace config " + std::filesystem::path(path).filename().string() +
             (url.empty() ? "" : " (" + url + ")") + ", model_type " + type + ", imported by commsim model from-hf";
  // The architecture's size first (the error a truncated config most likely has), then the context length.
  if (gated || type == "opt") c.required("hidden_size", 1, kMaxWidth);
  std::int64_t ctx = 0;
  if (type == "gpt2")
    ctx = c.required_any({"n_positions", "n_ctx", "max_position_embeddings"}, 1, std::int64_t{1} << 24);
  else if (learned_positions || options.seq == 0)
    ctx = c.required("max_position_embeddings", 1, std::int64_t{1} << 24);
  const std::int64_t seq = options.seq > 0 ? options.seq : ctx;
  if (learned_positions && seq > ctx)
    throw InputError(
        "--seq", "",
        std::to_string(seq) + " tokens exceed the learned positions of " + path + " (" + std::to_string(ctx) + ")");
  refuse_unbuilt_experts(c, type);
  if (gated)
    gated_decoder(c, type, seq, m);
  else if (type == "gpt2")
    gpt2(c, seq, ctx, m);
  else if (type == "opt")
    opt(c, seq, ctx, m);
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
