// `commsim model from-hf`: models from HuggingFace configs (tests/data/hf/*.json, each written from the published
// config.json named in its _source_url). For every config the parameter count is derived here from the
// architecture's formula, must equal the importer's count exactly, and must match the published total within one
// unit of the published figure's last digit (the published figures are the exact counts rounded).
#include "sim/model/hf_config.hpp"

#include <cmath>

#include "sim/model/model_json.hpp"
#include "tests/sim/test_util.hpp"

namespace commsim::test {
namespace {

using u64 = std::uint64_t;

// Llama-family decoder (llama, mistral, mixtral, qwen2): embeddings V*d (and an untied lm_head V*d), per layer two
// RMSNorm weights 2d, Q and O projections H*hd*d each, K and V projections KV*hd*d each, a gated MLP 3*d*ff (or E
// experts of 3*d*ff plus the d*E router), Qwen2's q/k/v biases (H + 2 KV)*hd; the final norm d.
u64 gated_decoder_count(u64 d, u64 layers, u64 heads, u64 kv, u64 ff, u64 vocab, bool tied, u64 experts = 0,
                        bool qkv_bias = false) {
  const u64 hd = d / heads;
  const u64 attention = 2 * heads * hd * d + 2 * kv * hd * d + (qkv_bias ? (heads + 2 * kv) * hd : 0);
  const u64 mlp = experts ? experts * 3 * d * ff + d * experts : 3 * d * ff;
  return vocab * d * (tied ? 1 : 2) + d + layers * (2 * d + attention + mlp);
}

// GPT-2 with d_ff = 4d: per block c_attn 3d^2+3d, c_proj d^2+d, c_fc 4d^2+4d, mlp c_proj 4d^2+d, two LayerNorms 4d
// = 12d^2 + 13d; embeddings (V + positions)*d; ln_f 2d; lm_head tied to wte.
u64 gpt2_count(u64 d, u64 layers, u64 vocab, u64 positions) {
  return (vocab + positions) * d + layers * (12 * d * d + 13 * d) + 2 * d;
}

// BertModel with d_ff = 4d: embeddings (V + positions + token types)*d + LayerNorm 2d; per layer Q, K, V 3d^2+3d,
// attention output d^2+d, two LayerNorms 4d, intermediate 4d^2+4d, output 4d^2+d = 12d^2 + 13d; pooler d^2 + d.
u64 bert_count(u64 d, u64 layers, u64 vocab, u64 positions, u64 types) {
  return (vocab + positions + types) * d + 2 * d + layers * (12 * d * d + 13 * d) + d * d + d;
}

struct Published {
  const char* config;
  u64 derived;        // from the formula above
  double published;   // as the source states it
  double last_digit;  // one unit of its last digit
  const char* source;
};

TEST(HfConfig, ParameterCountsMatchTheFormulaAndThePublishedTotals) {
  const Published cases[] = {
      // Llama 3 8B: d 4096, 32 layers, 32 heads, 8 KV heads, ff 14336, vocab 128256, untied -> 8 030 261 248.
      {"llama-3-8b", gated_decoder_count(4096, 32, 32, 8, 14336, 128256, false), 8.03e9, 0.01e9,
       "https://huggingface.co/meta-llama/Meta-Llama-3-8B (8.03B params)"},
      {"llama-3-70b", gated_decoder_count(8192, 80, 64, 8, 28672, 128256, false), 70.6e9, 0.1e9,
       "https://huggingface.co/meta-llama/Meta-Llama-3-70B (70.6B params)"},
      {"mistral-7b-v0.1", gated_decoder_count(4096, 32, 32, 8, 14336, 32000, false), 7.24e9, 0.01e9,
       "https://huggingface.co/mistralai/Mistral-7B-v0.1 (7.24B params)"},
      {"mixtral-8x7b-v0.1", gated_decoder_count(4096, 32, 32, 8, 14336, 32000, false, 8), 46.7e9, 0.1e9,
       "https://huggingface.co/mistralai/Mixtral-8x7B-v0.1 (46.7B params)"},
      {"qwen2-7b", gated_decoder_count(3584, 28, 28, 4, 18944, 152064, false, 0, true), 7.62e9, 0.01e9,
       "https://huggingface.co/Qwen/Qwen2-7B (7.62B params)"},
      {"gpt2", gpt2_count(768, 12, 50257, 1024), 124e6, 1e6,
       "https://huggingface.co/openai-community/gpt2 model card (124M parameters)"},
      {"gpt2-xl", gpt2_count(1600, 48, 50257, 1024), 1.5e9, 0.1e9,
       "https://huggingface.co/openai-community/gpt2-xl model card (1.5B parameter version)"},
      {"bert-base-uncased", bert_count(768, 12, 30522, 512, 2), 110e6, 1e6,
       "Devlin et al. 2018, arXiv:1810.04805 sec. 3 (BERT-BASE 110M)"},
  };
  for (const Published& c : cases) {
    SCOPED_TRACE(c.config);
    const Model m = model_from_hf_config(std::string("tests/data/hf/") + c.config + ".json");
    EXPECT_EQ(m.parameters(), c.derived);
    EXPECT_LE(std::abs(static_cast<double>(m.parameters()) - c.published), c.last_digit) << c.source;
  }
  // The two totals the assignment names, spelled out: 8 030 261 248 (Llama 3 8B), 46 702 792 704 (Mixtral 8x7B).
  EXPECT_EQ(gated_decoder_count(4096, 32, 32, 8, 14336, 128256, false), 8'030'261'248u);
  EXPECT_EQ(gated_decoder_count(4096, 32, 32, 8, 14336, 32000, false, 8), 46'702'792'704u);
}

TEST(HfConfig, TensorsAreInForwardOrderWithStateDictNamesAndShapes) {
  const Model m = model_from_hf_config("tests/data/hf/llama-3-8b.json");
  // embed_tokens, 32 x (input_layernorm, q, k, v, o, post_attention_layernorm, gate, up, down), norm, lm_head.
  ASSERT_EQ(m.tensors.size(), 1u + 32 * 9 + 2);
  EXPECT_EQ(m.tensors.front().name, "model.embed_tokens.weight");
  EXPECT_EQ(m.tensors[2].name, "model.layers.0.self_attn.q_proj.weight");
  // nn.Linear stores [out, in]: k_proj maps 4096 to 8 KV heads x 128 = 1024.
  EXPECT_EQ(m.tensors[3].shape, (std::vector<u64>{1024, 4096}));
  EXPECT_EQ(m.tensors.back().name, "lm_head.weight");
  for (std::size_t i = 1; i < m.tensors.size(); ++i) EXPECT_GE(m.tensors[i].layer, m.tensors[i - 1].layer);
  // GPT-2's Conv1D stores [in, out]: c_attn maps 768 to 3 x 768.
  const Model g = model_from_hf_config("tests/data/hf/gpt2.json");
  EXPECT_EQ(g.tensors[4].name, "h.0.attn.c_attn.weight");  // after wte, wpe, ln_1.weight, ln_1.bias
  EXPECT_EQ(g.tensors[4].shape, (std::vector<u64>{768, 2304}));
}

TEST(HfConfig, FlopsFollowTheZooConventions) {
  // Llama 3 8B at 8192 tokens: the linear layers are 2 FLOPs per parameter per token for every weight used once
  // per token (all but the embedding lookup): 2 * (N - V*d) * seq; attention scores and context add
  // 4 * seq^2 * H*hd per layer; the norms add 5 * seq * d each (65 of them). The sum must be exactly that.
  const Model m = model_from_hf_config("tests/data/hf/llama-3-8b.json");
  const double seq = 8192, d = 4096;
  const double linear = 2 * (static_cast<double>(m.parameters()) - 128256 * d - 65 * d) * seq;
  const double attention = 32 * 4 * seq * seq * d;
  const double norms = 65 * 5 * seq * d;
  double total = 0;
  for (const Layer& l : m.layers) total += l.forward_flops_per_sample;
  EXPECT_NEAR(total, linear + attention + norms, 1e-9 * total);
  // Mixtral: each token runs through 2 of the 8 experts, so the MoE layer counts 2/8 of the expert weights
  // (2 * 3 * d * ff per token for two experts) plus the router 2 * d * 8.
  const Model x = model_from_hf_config("tests/data/hf/mixtral-8x7b-v0.1.json", {4096, ""});
  const Layer& moe = x.layers[5];
  ASSERT_EQ(moe.name, "model.layers.0.block_sparse_moe");
  EXPECT_DOUBLE_EQ(moe.forward_flops_per_sample, 4096.0 * (2 * 4096 * 8 + 2 * 2 * 3 * 4096.0 * 14336));
}

TEST(HfConfig, SlidingWindowBoundsTheKeysPerQuery) {
  // Mistral 7B (sliding_window 4096) at 8192 tokens: each query attends to 4096 keys, so the attention layer is the
  // q/k/v projections 2 * d * (H + 2 KV) * hd * seq plus 2 * 2 * seq * 4096 * H * hd (not seq * seq).
  const Model m = model_from_hf_config("tests/data/hf/mistral-7b-v0.1.json", {8192, ""});
  const double d = 4096, seq = 8192, hd = 128;
  EXPECT_DOUBLE_EQ(m.layers[2].forward_flops_per_sample, 2 * d * (32 + 16) * hd * seq + 4 * seq * 4096 * 32 * hd);
  // Qwen2-7B's config carries sliding_window 131072 with use_sliding_window false: the window is not applied.
  const Model q = model_from_hf_config("tests/data/hf/qwen2-7b.json", {262144, ""});
  EXPECT_DOUBLE_EQ(q.layers[2].forward_flops_per_sample,
                   2 * 3584.0 * (28 + 8) * 128 * 262144 + 4 * 262144.0 * 262144 * 28 * 128);
}

// A shipped config with `fields` set (null written as null), in this process's temp folder; returns its path.
std::string patched(const std::string& config, const Json& fields) {
  Json doc = Json::parse(read_file("tests/data/hf/" + config + ".json"));
  for (const auto& [key, value] : fields.items()) doc[key] = value;
  return write_temp_json(config + "-patched.json", doc);
}

// The attention layer of decoder block i: after embed_tokens, blocks of 5 layers (input_layernorm, self_attn, o_proj,
// post_attention_layernorm, mlp), self_attn second.
double attention_flops(const Model& m, std::size_t block) {
  return m.layers[1 + 5 * block + 1].forward_flops_per_sample;
}

// Each shipped config with its fields set is refused, the message naming the patched file and the (first) field.
void expect_each_refused(const std::vector<std::pair<std::string, Json>>& cases) {
  for (const auto& [config, fields] : cases) {
    const std::string field = fields.begin().key();
    SCOPED_TRACE(config + " " + field);
    const std::string path = patched(config, fields);
    const std::string error = error_of([&] { model_from_hf_config(path); });
    EXPECT_EQ(error.rfind(path + ": " + field + ": ", 0), 0u) << error;
  }
}

TEST(HfConfig, SlidingWindowFollowsEachFamilysAttention) {
  // Qwen2-7B (d 3584, 28 heads and 4 KV heads of 128) at 8192 tokens: q/k/v projections 2*d*(28+8)*128*seq, then
  // 4*seq*keys*28*128. With use_sliding_window true, sliding_window 4096 and max_window_layers 26, transformers'
  // Qwen2Config makes layers 26 and 27 "sliding_attention" (i >= max_window_layers): keys 4096 there, 8192 below.
  const double seq = 8192, qwen_qkv = 2 * 3584.0 * (28 + 8) * 128 * seq;
  const Model q = model_from_hf_config(
      patched("qwen2-7b", {{"use_sliding_window", true}, {"sliding_window", 4096}, {"max_window_layers", 26}}),
      {8192, ""});
  EXPECT_DOUBLE_EQ(attention_flops(q, 25), qwen_qkv + 4 * seq * seq * 28 * 128);
  EXPECT_DOUBLE_EQ(attention_flops(q, 26), qwen_qkv + 4 * seq * 4096 * 28 * 128);
  EXPECT_DOUBLE_EQ(attention_flops(q, 27), qwen_qkv + 4 * seq * 4096 * 28 * 128);
  // layer_types, where given, names the windowed layers instead (here block 0 only).
  Json types = Json::array();
  for (int i = 0; i < 28; ++i) types.push_back(i == 0 ? "sliding_attention" : "full_attention");
  const Model t = model_from_hf_config(
      patched("qwen2-7b", {{"use_sliding_window", true}, {"sliding_window", 4096}, {"layer_types", types}}),
      {8192, ""});
  EXPECT_DOUBLE_EQ(attention_flops(t, 0), qwen_qkv + 4 * seq * 4096 * 28 * 128);
  EXPECT_DOUBLE_EQ(attention_flops(t, 27), qwen_qkv + 4 * seq * seq * 28 * 128);
  // Without use_sliding_window (Qwen2Config's default false) no layer is windowed, whatever sliding_window says.
  const Model off = model_from_hf_config(patched("qwen2-7b", {{"use_sliding_window", nullptr}}), {8192, ""});
  EXPECT_DOUBLE_EQ(attention_flops(off, 27), qwen_qkv + 4 * seq * seq * 28 * 128);
  // LlamaAttention has no window: Llama 3 8B (d 4096, 32 heads and 8 KV heads of 128) keeps all 8192 keys.
  const double llama_qkv = 2 * 4096.0 * (32 + 16) * 128 * seq, full = 4 * seq * seq * 32 * 128;
  const Model l = model_from_hf_config(patched("llama-3-8b", {{"sliding_window", 4096}}), {8192, ""});
  EXPECT_DOUBLE_EQ(attention_flops(l, 0), llama_qkv + full);
  // Mistral and Mixtral have Llama 3 8B's attention shapes. Mixtral's sliding_window is null (none): all keys.
  // Mistral's null is none too, but absent is MistralConfig's default 4096.
  const Model x = model_from_hf_config("tests/data/hf/mixtral-8x7b-v0.1.json", {8192, ""});
  EXPECT_DOUBLE_EQ(attention_flops(x, 31), llama_qkv + full);
  const Model none = model_from_hf_config(patched("mistral-7b-v0.1", {{"sliding_window", nullptr}}), {8192, ""});
  EXPECT_DOUBLE_EQ(attention_flops(none, 0), llama_qkv + full);
  Json absent = Json::parse(read_file("tests/data/hf/mistral-7b-v0.1.json"));
  absent.erase("sliding_window");
  const Model fallback = model_from_hf_config(write_temp_json("mistral-no-window.json", absent), {8192, ""});
  EXPECT_DOUBLE_EQ(attention_flops(fallback, 0), llama_qkv + 4 * seq * 4096 * 32 * 128);
}

TEST(HfConfig, AbsentKvHeadsTakeTheConfigClassDefault) {
  // Without num_key_value_heads, MistralConfig and MixtralConfig use 8 (their __init__ default): Mistral-7B's count is
  // unchanged, as it states 8. LlamaConfig uses num_attention_heads: Llama-3-8B becomes multi-head, its k and v
  // projections 32 instead of 8 heads of 128 by 4096, 2 x 24 x 128 x 4096 = 25 165 824 more per layer, 32 layers.
  // Qwen2Config's default 32 does not divide Qwen2-7B's 28 heads, so that config is refused, as transformers' model
  // would fail to build.
  const auto without_kv = [&](const std::string& config) {
    Json doc = Json::parse(read_file("tests/data/hf/" + config + ".json"));
    doc.erase("num_key_value_heads");
    return write_temp_json(config + "-no-kv.json", doc);
  };
  EXPECT_EQ(model_from_hf_config(without_kv("mistral-7b-v0.1")).parameters(),
            model_from_hf_config("tests/data/hf/mistral-7b-v0.1.json").parameters());
  EXPECT_EQ(model_from_hf_config(without_kv("llama-3-8b")).parameters(),
            model_from_hf_config("tests/data/hf/llama-3-8b.json").parameters() + 32u * 25'165'824u);
  EXPECT_THROW(model_from_hf_config(without_kv("qwen2-7b")), InputError);
}

TEST(HfConfig, BiasFlagsChangeOnlyTheFamiliesThatReadThem) {
  // transformers hard-codes bias=False in MistralAttention, MistralMLP, MixtralAttention and Mixtral's experts, in
  // Qwen2's o_proj and MLP, and in Phi3Attention and Phi3MLP: the flags change no count there (gemma's below).
  const Json biases = {{"attention_bias", true}, {"mlp_bias", true}};
  for (const char* config : {"mistral-7b-v0.1", "mixtral-8x7b-v0.1", "qwen2-7b", "phi-3-mini-4k-instruct"}) {
    SCOPED_TRACE(config);
    EXPECT_EQ(model_from_hf_config(patched(config, biases)).parameters(),
              model_from_hf_config(std::string("tests/data/hf/") + config + ".json").parameters());
  }
  // LlamaAttention takes attention_bias for q, k, v and o: (32 + 8 + 8) * 128 + 4096 = 10 240 per layer; LlamaMLP
  // takes mlp_bias for gate, up and down: 14 336 + 14 336 + 4096 = 32 768 per layer; 32 layers.
  const u64 plain = model_from_hf_config("tests/data/hf/llama-3-8b.json").parameters();
  EXPECT_EQ(model_from_hf_config(patched("llama-3-8b", biases)).parameters(), plain + 32 * (10'240u + 32'768u));
}

TEST(HfConfig, FieldsThatAddUnbuiltTensorsAreRefused) {
  // Each would add tensors (cross-attention blocks, distance embeddings, other experts) that the importer does not
  // build: refused, naming the file and the field, rather than counted without them.
  const std::vector<std::pair<std::string, Json>> cases = {
      {"gpt2", {{"add_cross_attention", true}}},
      {"bert-base-uncased", {{"add_cross_attention", true}}},
      {"bert-base-uncased", {{"position_embedding_type", "relative_key"}}},
      {"bert-base-uncased", {{"position_embedding_type", "relative_key_query"}}},
      {"llama-3-8b", {{"num_local_experts", 8}}},
      {"llama-3-8b", {{"num_experts", 64}}},
      {"qwen2-7b", {{"shared_expert_intermediate_size", 5632}}},
      {"mixtral-8x7b-v0.1", {{"n_shared_experts", 2}}},
      {"mixtral-8x7b-v0.1", {{"num_experts", 16}}},  // MixtralConfig's alias of num_local_experts (8 here)
  };
  expect_each_refused(cases);
  // Zero or null experts are none, and BertConfig's default "absolute" is what is built: the same models.
  EXPECT_EQ(model_from_hf_config(patched("llama-3-8b", {{"num_local_experts", 0}, {"n_shared_experts", nullptr}}))
                .parameters(),
            8'030'261'248u);
  EXPECT_EQ(model_from_hf_config(patched("bert-base-uncased", {{"position_embedding_type", "absolute"}})).parameters(),
            bert_count(768, 12, 30522, 512, 2));
  // Mixtral's num_experts equal to num_local_experts is the same model.
  EXPECT_EQ(model_from_hf_config(patched("mixtral-8x7b-v0.1", {{"num_experts", 8}})).parameters(), 46'702'792'704u);
}

TEST(HfConfig, AModelTheLoaderWouldRefuseIsNotWritten) {
  // d = 2^20 with a 2^22 MLP: q, k, v, o 4 * 2^40 and gate, up, down 3 * 2^42 elements, 2^44 per layer, so 128
  // layers hold 2^51, past the model loader's 2^50 (kMaxElements): refused, naming the config.
  const std::string path = patched("llama-3-8b", {{"hidden_size", 1 << 20},
                                                  {"num_attention_heads", 1024},
                                                  {"num_key_value_heads", 1024},
                                                  {"intermediate_size", 1 << 22},
                                                  {"num_hidden_layers", 128}});
  const std::string error = error_of([&] { model_from_hf_config(path, {1, ""}); });
  EXPECT_EQ(error.rfind(path, 0), 0u) << error;
  EXPECT_NE(error.find("add up past 2^50"), std::string::npos) << error;
}

TEST(HfConfig, ReproducesTheZoosGpt2XlAndBertLarge) {
  // scripts/gen_models.py wrote these two from the published shapes independently of the importer: the same
  // tensors (names, element counts, order) and the same FLOPs per layer must come out.
  for (auto [config, zoo] : {std::pair{"gpt2-xl", "gpt2-xl"}, std::pair{"bert-large-uncased", "bert-large"}}) {
    SCOPED_TRACE(config);
    const Model imported = model_from_hf_config(std::string("tests/data/hf/") + config + ".json");
    const Model shipped = load_model(std::string("scenarios/models/") + zoo + ".json");
    ASSERT_EQ(imported.layers.size(), shipped.layers.size());
    ASSERT_EQ(imported.tensors.size(), shipped.tensors.size());
    for (std::size_t i = 0; i < imported.tensors.size(); ++i) {
      EXPECT_EQ(imported.tensors[i].name, shipped.tensors[i].name);
      EXPECT_EQ(imported.tensors[i].elements, shipped.tensors[i].elements);
    }
    for (std::size_t i = 0; i < imported.layers.size(); ++i) {
      EXPECT_EQ(imported.layers[i].name, shipped.layers[i].name);
      EXPECT_EQ(imported.layers[i].forward_flops_per_sample, shipped.layers[i].forward_flops_per_sample);
    }
  }
}

TEST(HfConfig, WrittenFileReadsBackAsTheSameModel) {
  const Model m = model_from_hf_config("tests/data/hf/mixtral-8x7b-v0.1.json", {1024, "mixtral"});
  TempDir dir;
  const std::string path = (dir.path() / "mixtral.json").string();
  write_model_file(m, path, "-o");
  const Model back = load_model(path);
  EXPECT_EQ(back.name, "mixtral");
  EXPECT_EQ(back.parameters(), m.parameters());
  ASSERT_EQ(back.tensors.size(), m.tensors.size());
  for (std::size_t i = 0; i < m.tensors.size(); ++i) EXPECT_EQ(back.tensors[i].shape, m.tensors[i].shape);
  for (std::size_t i = 0; i < m.layers.size(); ++i)
    EXPECT_EQ(back.layers[i].forward_flops_per_sample, m.layers[i].forward_flops_per_sample);
}

TEST(HfConfig, TheZoosLlamaModelsAreTheImportersOutput) {
  // scenarios/models/llama-3-{8b,70b}.json were written by `commsim model from-hf tests/data/hf/llama-3-*.json
  // --name llama-3-*`: regenerating them gives the same text.
  for (const char* name : {"llama-3-8b", "llama-3-70b"}) {
    SCOPED_TRACE(name);
    const Model m = model_from_hf_config(std::string("tests/data/hf/") + name + ".json", {0, name});
    EXPECT_EQ(model_file_text(m), read_file(std::string("scenarios/models/") + name + ".json"));
  }
}

// The published total, as the source rounds it: within one unit of its last digit.
void expect_published(const Model& m, double published, double last_digit, const char* source) {
  EXPECT_LE(std::abs(static_cast<double>(m.parameters()) - published), last_digit) << source;
}

// Gemma (gemma, gemma2): head_dim hd from the config (256, not d/H); embeddings V*d, tied to lm_head; per layer q and
// o H*hd*d each, k and v KV*hd*d each, the gated MLP 3*d*ff, `norms` RMSNorm weights of d (gemma 2, gemma2 4); the
// final norm d; no biases.
u64 gemma_count(u64 d, u64 layers, u64 heads, u64 kv, u64 hd, u64 ff, u64 vocab, u64 norms) {
  return vocab * d + d + layers * (2 * heads * hd * d + 2 * kv * hd * d + 3 * d * ff + norms * d);
}

TEST(HfConfig, GemmaHasItsOwnHeadDimMultiQueryAttentionAndTiedEmbeddings) {
  // Gemma-2B: embeddings 256000*2048 = 524 288 000; per layer q and o 8*256*2048 = 4 194 304 each, k and v (one KV
  // head) 256*2048 = 524 288 each, MLP 3*2048*16384 = 100 663 296, norms 2*2048: 110 104 576; x 18 = 1 981 882 368;
  // final norm 2048; no lm_head: 2 506 172 416.
  const Model m2 = model_from_hf_config("tests/data/hf/gemma-2b.json");
  EXPECT_EQ(m2.parameters(), gemma_count(2048, 18, 8, 1, 256, 16384, 256000, 2));
  EXPECT_EQ(m2.parameters(), 2'506'172'416u);
  expect_published(m2, 2.51e9, 0.01e9, "https://huggingface.co/google/gemma-2b (2.51B params)");
  // Gemma-7B: 16 heads of 256 are 4096 wide on a 3072 model: 256000*3072 = 786 432 000; per layer q, k, v, o
  // 4*4096*3072 = 50 331 648, MLP 3*3072*24576 = 226 492 416, norms 6144: 276 830 208; x 28 = 7 751 245 824; final
  // norm 3072: 8 537 680 896.
  const Model m7 = model_from_hf_config("tests/data/hf/gemma-7b.json");
  EXPECT_EQ(m7.parameters(), gemma_count(3072, 28, 16, 16, 256, 24576, 256000, 2));
  EXPECT_EQ(m7.parameters(), 8'537'680'896u);
  expect_published(m7, 8.54e9, 0.01e9, "https://huggingface.co/google/gemma-7b (8.54B params)");
  // embed_tokens, 18 x (input_layernorm, q, k, v, o, post_attention_layernorm, gate, up, down), norm; no lm_head.
  ASSERT_EQ(m2.tensors.size(), 1u + 18 * 9 + 1);
  EXPECT_EQ(m2.tensors[3].name, "model.layers.0.self_attn.k_proj.weight");
  EXPECT_EQ(m2.tensors[3].shape, (std::vector<u64>{256, 2048}));
  EXPECT_EQ(m2.tensors.back().name, "model.norm.weight");
  EXPECT_EQ(m7.tensors[2].shape, (std::vector<u64>{4096, 3072}));  // q_proj [H*hd, d]
  // The logits are computed with the tied weight; GemmaAttention has no window: at 8192 tokens the attention layer
  // is 2*d*(H + 2 KV)*hd*seq + 4*seq*seq*H*hd.
  const double seq = 8192;
  EXPECT_DOUBLE_EQ(m2.layers.back().forward_flops_per_sample, 2 * 2048 * 256000 * seq);
  EXPECT_DOUBLE_EQ(m2.layers[2].forward_flops_per_sample, 2 * 2048 * 10 * 256 * seq + 4 * seq * seq * 8 * 256);
  // GemmaConfig's defaults where the fields are absent: head_dim 256 and 16 KV heads (not d/H, not H).
  Json absent = Json::parse(read_file("tests/data/hf/gemma-7b.json"));
  absent.erase("head_dim");
  absent.erase("num_key_value_heads");
  EXPECT_EQ(model_from_hf_config(write_temp_json("gemma-defaults.json", absent)).parameters(), 8'537'680'896u);
  // GemmaAttention takes attention_bias for q, k, v and o: (8 + 1 + 1)*256 + 2048 = 4608 per layer, 18 layers;
  // GemmaMLP hard-codes bias=False, so mlp_bias changes nothing. Untied, lm_head adds V*d.
  EXPECT_EQ(model_from_hf_config(patched("gemma-2b", {{"attention_bias", true}, {"mlp_bias", true}})).parameters(),
            2'506'172'416u + 18 * 4608u);
  EXPECT_EQ(model_from_hf_config(patched("gemma-2b", {{"tie_word_embeddings", false}})).parameters(),
            2'506'172'416u + 256000u * 2048);
}

TEST(HfConfig, Gemma2HasFourNormsPerLayerAndAWindowOnEveryOtherLayer) {
  // Gemma-2-9B: embeddings 256000*3584 = 917 504 000; per layer q and o 16*256*3584 = 14 680 064 each, k and v
  // 8*256*3584 = 7 340 032 each, MLP 3*3584*14336 = 154 140 672, four norms 4*3584 = 14 336: 198 195 200; x 42 =
  // 8 324 198 400; final norm 3584; no lm_head: 9 241 705 984.
  const Model m = model_from_hf_config("tests/data/hf/gemma-2-9b.json", {8192, ""});
  EXPECT_EQ(m.parameters(), gemma_count(3584, 42, 16, 8, 256, 14336, 256000, 4));
  EXPECT_EQ(m.parameters(), 9'241'705'984u);
  expect_published(m, 9.24e9, 0.01e9, "https://huggingface.co/google/gemma-2-9b (9.24B params)");
  // Gemma2DecoderLayer's forward order: seven layers per block after embed_tokens.
  const char* order[] = {
      "input_layernorm",           "self_attn", "self_attn.o_proj",          "post_attention_layernorm",
      "pre_feedforward_layernorm", "mlp",       "post_feedforward_layernorm"};
  for (std::size_t k = 0; k < 7; ++k) EXPECT_EQ(m.layers[1 + k].name, std::string("model.layers.0.") + order[k]);
  EXPECT_EQ(m.layers.size(), 1u + 42 * 7 + 2);
  // Layers 0, 2, ... use sliding_window 4096 (Gemma2Config's layer_types default), layers 1, 3, ... all 8192 keys:
  // the attention layer of block i is 2*d*(H + 2 KV)*hd*seq + 4*seq*keys*H*hd.
  const double seq = 8192, qkv = 2 * 3584.0 * (16 + 16) * 256 * seq;
  auto attention = [](const Model& x, std::size_t block) {
    return x.layers[1 + 7 * block + 1].forward_flops_per_sample;
  };
  EXPECT_DOUBLE_EQ(attention(m, 0), qkv + 4 * seq * 4096 * 16 * 256);
  EXPECT_DOUBLE_EQ(attention(m, 1), qkv + 4 * seq * seq * 16 * 256);
  EXPECT_DOUBLE_EQ(attention(m, 40), qkv + 4 * seq * 4096 * 16 * 256);
  // layer_types, where given, names the windowed layers; a null sliding_window is none.
  Json types = Json::array();
  for (int i = 0; i < 42; ++i) types.push_back(i == 1 ? "sliding_attention" : "full_attention");
  const Model t = model_from_hf_config(patched("gemma-2-9b", {{"layer_types", types}}), {8192, ""});
  EXPECT_DOUBLE_EQ(attention(t, 0), qkv + 4 * seq * seq * 16 * 256);
  EXPECT_DOUBLE_EQ(attention(t, 1), qkv + 4 * seq * 4096 * 16 * 256);
  const Model none = model_from_hf_config(patched("gemma-2-9b", {{"sliding_window", nullptr}}), {8192, ""});
  EXPECT_DOUBLE_EQ(attention(none, 0), qkv + 4 * seq * seq * 16 * 256);
}

// Phi-3: embeddings V*d and the untied lm_head V*d; per layer the fused qkv_proj (H + 2 KV)*hd*d, o_proj H*hd*d, the
// fused gate_up_proj 2*ff*d, down_proj ff*d, two RMSNorm weights 2d; the final norm d; no biases; hd = d/H.
u64 phi3_count(u64 d, u64 layers, u64 heads, u64 kv, u64 ff, u64 vocab) {
  const u64 hd = d / heads;
  return 2 * vocab * d + d + layers * ((heads + 2 * kv) * hd * d + heads * hd * d + 2 * ff * d + ff * d + 2 * d);
}

TEST(HfConfig, Phi3FusesQkvAndGateUpWithTheFlopsOfTheirParts) {
  // Phi-3-mini-4k: embeddings and lm_head 2*32064*3072 = 197 001 216; per layer qkv_proj (32 + 64)*96*3072 =
  // 28 311 552, o_proj 3072*3072 = 9 437 184, gate_up_proj 16384*3072 = 50 331 648, down_proj 8192*3072 = 25 165 824,
  // norms 6144: 113 252 352; x 32 = 3 624 075 264; final norm 3072: 3 821 079 552.
  const Model m = model_from_hf_config("tests/data/hf/phi-3-mini-4k-instruct.json");
  EXPECT_EQ(m.parameters(), phi3_count(3072, 32, 32, 32, 8192, 32064));
  EXPECT_EQ(m.parameters(), 3'821'079'552u);
  expect_published(m, 3.82e9, 0.01e9, "https://huggingface.co/microsoft/Phi-3-mini-4k-instruct (3.82B params)");
  // embed_tokens, 32 x (input_layernorm, qkv_proj, o_proj, post_attention_layernorm, gate_up_proj, down_proj), norm,
  // lm_head.
  ASSERT_EQ(m.tensors.size(), 1u + 32 * 6 + 2);
  EXPECT_EQ(m.tensors[2].name, "model.layers.0.self_attn.qkv_proj.weight");
  EXPECT_EQ(m.tensors[2].shape, (std::vector<u64>{9216, 3072}));
  EXPECT_EQ(m.tensors[5].name, "model.layers.0.mlp.gate_up_proj.weight");
  EXPECT_EQ(m.tensors[5].shape, (std::vector<u64>{16384, 3072}));
  EXPECT_EQ(m.tensors.back().name, "lm_head.weight");
  // At its 4096 tokens: the fused projections count as q, k, v and gate, up (2*in*out per token each), and
  // Phi3Attention applies sliding_window 2047 on every layer.
  const double seq = 4096;
  EXPECT_DOUBLE_EQ(m.layers[2].forward_flops_per_sample, 2 * 3072 * 96.0 * 96 * seq + 4 * seq * 2047 * 32 * 96);
  EXPECT_DOUBLE_EQ(m.layers[5].forward_flops_per_sample, 2 * 3 * 3072 * 8192.0 * seq);
  // Grouped-query: 8 KV heads make qkv_proj (32 + 16)*96 = 4608 rows.
  EXPECT_EQ(model_from_hf_config(patched("phi-3-mini-4k-instruct", {{"num_key_value_heads", 8}})).tensors[2].shape,
            (std::vector<u64>{4608, 3072}));
}

// OPT with word_embed_proj_dim = d and LayerNorms before the blocks: embed_tokens V*d, learned positions (P + 2)*d;
// per layer q, k, v, out_proj 4*(d^2 + d), fc1 d*ff + ff, fc2 ff*d + d, two LayerNorms 4d; the final LayerNorm 2d;
// lm_head tied to embed_tokens.
u64 opt_count(u64 d, u64 layers, u64 ff, u64 vocab, u64 positions) {
  return vocab * d + (positions + 2) * d + layers * (4 * (d * d + d) + d * ff + ff + ff * d + d + 4 * d) + 2 * d;
}

TEST(HfConfig, OptHasOffsetPositionsBiasesAndItsProjections) {
  // OPT-1.3B: embed_tokens 50272*2048 = 102 957 056, positions (2048 + 2)*2048 = 4 198 400; per layer q, k, v,
  // out_proj 4*(2048^2 + 2048) = 16 785 408, fc1 2048*8192 + 8192 = 16 785 408, fc2 8192*2048 + 2048 = 16 779 264,
  // LayerNorms 4*2048 = 8192: 50 358 272; x 24 = 1 208 598 528; final LayerNorm 4096: 1 315 758 080.
  const Model m = model_from_hf_config("tests/data/hf/opt-1.3b.json");
  EXPECT_EQ(m.parameters(), opt_count(2048, 24, 8192, 50272, 2048));
  EXPECT_EQ(m.parameters(), 1'315'758'080u);
  expect_published(m, 1.3e9, 0.1e9, "Zhang et al. 2022, arXiv:2205.01068 Table 1 (OPT 1.3B)");
  EXPECT_EQ(m.tensors[1].name, "model.decoder.embed_positions.weight");
  EXPECT_EQ(m.tensors[1].shape, (std::vector<u64>{2050, 2048}));
  EXPECT_EQ(m.tensors[2].name, "model.decoder.layers.0.self_attn_layer_norm.weight");
  EXPECT_EQ(m.tensors[4].name, "model.decoder.layers.0.self_attn.q_proj.weight");
  EXPECT_EQ(m.tensors.back().name, "model.decoder.final_layer_norm.bias");
  // FLOPs at 2048 tokens: linear 2*in*out per token (q, k, v, out_proj, fc1, fc2 and the tied lm_head), attention
  // 4*seq*seq*d per layer, 49 LayerNorms of 5*seq*d, and the positions' addition seq*d.
  const double seq = 2048, d = 2048;
  const double linear = 2 * seq * (24 * (4 * d * d + 2 * d * 8192) + d * 50272);
  double total = 0;
  for (const Layer& l : m.layers) total += l.forward_flops_per_sample;
  EXPECT_NEAR(total, linear + 24 * 4 * seq * seq * d + 49 * 5 * seq * d + seq * d, 1e-9 * total);
  // OPT-350m's shape: d 1024 with 512-wide embeddings (project_in and project_out, 512*1024 each), LayerNorms after
  // the blocks and no final one: 50272*512 + 2050*1024 + 2*524 288 + 24*(4*(1024^2 + 1024) + 2*1024*4096 + 4096 +
  // 1024 + 4*1024) = 25 739 264 + 2 099 200 + 1 048 576 + 302 309 376 = 331 196 416.
  const Model small = model_from_hf_config(patched("opt-1.3b", {{"hidden_size", 1024},
                                                                {"num_attention_heads", 16},
                                                                {"ffn_dim", 4096},
                                                                {"word_embed_proj_dim", 512},
                                                                {"do_layer_norm_before", false}}));
  EXPECT_EQ(small.parameters(), 331'196'416u);
  EXPECT_EQ(small.tensors[0].shape, (std::vector<u64>{50272, 512}));
  EXPECT_EQ(small.tensors[1].name, "model.decoder.project_in.weight");
  EXPECT_EQ(small.tensors[11].name, "model.decoder.layers.0.self_attn_layer_norm.weight");  // after out_proj
  EXPECT_EQ(small.tensors.back().name, "model.decoder.project_out.weight");
  // enable_bias false drops 24*(4*2048 + 8192 + 2048) biases; layer_norm_elementwise_affine false the LayerNorms'
  // (24*2 + 1)*2*2048 weights and biases; _remove_final_layer_norm the final one's 4096.
  EXPECT_EQ(model_from_hf_config(patched("opt-1.3b", {{"enable_bias", false}})).parameters(),
            1'315'758'080u - 24 * (4 * 2048u + 8192 + 2048));
  EXPECT_EQ(model_from_hf_config(patched("opt-1.3b", {{"layer_norm_elementwise_affine", false}})).parameters(),
            1'315'758'080u - 49 * 2 * 2048u);
  EXPECT_EQ(model_from_hf_config(patched("opt-1.3b", {{"_remove_final_layer_norm", true}})).parameters(),
            1'315'758'080u - 4096);
}

TEST(HfConfig, TheGemmaPhi3AndOptFamiliesRefuseWhatTheyDoNotBuild) {
  // Experts on these model types would be tensors the importer does not build; a layer_types of the wrong length, a
  // mistyped flag and a KV head count that does not divide the heads are not these architectures either.
  Json short_types = Json::array({"full_attention"});
  const std::vector<std::pair<std::string, Json>> cases = {
      {"gemma-2b", {{"num_local_experts", 8}}},          {"gemma-2-9b", {{"n_routed_experts", 64}}},
      {"phi-3-mini-4k-instruct", {{"num_experts", 16}}}, {"opt-1.3b", {{"moe_intermediate_size", 1408}}},
      {"gemma-2-9b", {{"layer_types", short_types}}},    {"opt-1.3b", {{"enable_bias", "yes"}}},
      {"gemma-2b", {{"num_key_value_heads", 3}}},
  };
  expect_each_refused(cases);
  // OPT's positions are learned: no more tokens than max_position_embeddings.
  const std::string error = error_of([] { model_from_hf_config("tests/data/hf/opt-1.3b.json", {4096, ""}); });
  EXPECT_EQ(error.rfind("--seq", 0), 0u) << error;
}

}  // namespace
}  // namespace commsim::test
