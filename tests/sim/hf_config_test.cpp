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

TEST(HfConfig, BiasFlagsAreLlamasOnly) {
  // transformers hard-codes bias=False in MistralAttention, MistralMLP, MixtralAttention and Mixtral's experts, and
  // in Qwen2's o_proj and MLP: the flags change no count there.
  const Json biases = {{"attention_bias", true}, {"mlp_bias", true}};
  for (const char* config : {"mistral-7b-v0.1", "mixtral-8x7b-v0.1", "qwen2-7b"}) {
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
  const std::pair<std::string, Json> cases[] = {
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
  for (const auto& [config, fields] : cases) {
    const std::string field = fields.begin().key();
    SCOPED_TRACE(config + " " + field);
    const std::string path = patched(config, fields);
    const std::string error = error_of([&] { model_from_hf_config(path); });
    EXPECT_EQ(error.rfind(path + ": " + field + ": ", 0), 0u) << error;
  }
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

}  // namespace
}  // namespace commsim::test
