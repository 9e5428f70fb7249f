// A model from a HuggingFace transformers config.json (`commsim model from-hf`): every parameter tensor in forward
// order, named and shaped as the transformers model's state_dict, and FLOPs per layer with the zoo's conventions
// (docs/model-format.md). Families, chosen by `model_type`:
//   llama, mistral, mixtral, qwen2,  decoder, RMSNorm, rotary positions (no position tensor), gated MLP
//   gemma, gemma2, phi3              (gate/up/down), grouped-query attention; mixtral: sparse MoE MLP; gemma2: four
//                                    norms per layer; phi3: fused qkv_proj and gate_up_proj
//   gpt2                             decoder, LayerNorm, learned positions, biases, Conv1D weights [in, out]
//   opt                              decoder, LayerNorm, learned positions (2 extra rows), biases, ReLU MLP fc1/fc2
//   bert                             encoder (BertModel): word/position/token-type embeddings, pooler
#pragma once

#include <cstdint>
#include <string>

#include "sim/model/model.hpp"

namespace commsim {

struct HfImport {
  std::int64_t seq = 0;  // tokens per sample; 0 = the config's context length (max_position_embeddings / n_positions)
  std::string name;      // empty: the config's _name_or_path, else the file's stem
};

// Reads `path`; a missing or mistyped field is an InputError naming the file and the field. Fields the importer
// does not use are ignored (a config.json carries dozens), fields it uses are checked, and fields that would add
// tensors it does not build (cross-attention, relative position embeddings, experts other than Mixtral's) are refused.
Model model_from_hf_config(const std::string& path, const HfImport& options = {});

}  // namespace commsim
