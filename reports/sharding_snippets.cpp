// The frameworks' sharding knobs, as their documentation names them:
//  - PyTorch FSDP: FullyShardedDataParallel(sharding_strategy, auto_wrap_policy, limit_all_gathers, forward_prefetch,
//    backward_prefetch, mixed_precision). One all-gather and one reduce-scatter per wrapped unit, so the unit size
//    (size_based_auto_wrap_policy's min_num_params) is the bucket of both; forward_prefetch and BACKWARD_PRE fetch one
//    unit ahead; limit_all_gathers=False lets the CPU issue all-gathers without FSDP's rate limiter.
//  - DeepSpeed ZeRO (zero_optimization): reduce_bucket_size and allgather_bucket_size (stages 1-2) and
//    stage3_prefetch_bucket_size, all in elements; overlap_comm; communication_data_type (top level).
//  - Paddle: paddle.distributed.sharding.group_sharded_parallel(model, optimizer, level, buffer_max_size,
//    segment_size, sync_comm): level "os_g" (stage 2) or "p_g_os" (stage 3); buffer_max_size is the element count of
//    stage 2's gradient fusion buffer; sync_comm=True is stage 3 without a separate communication stream.
//  - MindSpore: set_auto_parallel_context(enable_parallel_optimizer=True, comm_fusion={"allgather": ...,
//    "reducescatter": ...}) (the seed document mindspore-comm-fusion.md; MindSpore lists enable_parallel_optimizer
//    among the auto-parallel options).
#include "reports/sharding_snippets.hpp"

#include <cmath>

#include "reports/format.hpp"

namespace commsim::reports {

namespace {

std::string torch_dtype(CommDtype d) { return d == CommDtype::Fp16 ? "torch.float16" : "torch.bfloat16"; }

}  // namespace

std::uint64_t elements_in_mb(double mb) { return static_cast<std::uint64_t>(std::llround(mb * 1048576.0 / 4)); }

std::string fsdp_snippet(const Strategy& s) {
  const Sharding& sh = s.sharding;
  const bool stage3 = sh.stage == 3;
  const int depth = sh.prefetch_buckets;
  std::string out =
      "import functools, torch\n"
      "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP, ShardingStrategy, BackwardPrefetch";
  out += s.comm_dtype == CommDtype::Fp16 || s.comm_dtype == CommDtype::Bf16 ? ", MixedPrecision\n" : "\n";
  out += "from torch.distributed.fsdp.wrap import size_based_auto_wrap_policy\n";
  out +=
      std::string("model = FSDP(model, sharding_strategy=ShardingStrategy.") +
      (stage3 ? "FULL_SHARD,\n" : "SHARD_GRAD_OP,  # the nearest to stage 2: parameters stay gathered in backward\n");
  out += "    auto_wrap_policy=functools.partial(size_based_auto_wrap_policy, min_num_params=" +
         std::to_string(elements_in_mb(sh.allgather_fusion_mb)) + "),  # units of about " +
         number(sh.allgather_fusion_mb) + " MB: one all-gather and one reduce-scatter each\n";
  if (stage3) {
    out += std::string("    limit_all_gathers=") + (depth < 0 ? "False" : "True") + ",\n";
    out += std::string("    forward_prefetch=") + (depth != 0 ? "True" : "False") + ",\n";
    out += std::string("    backward_prefetch=") + (depth != 0 ? "BackwardPrefetch.BACKWARD_PRE" : "None") + ",\n";
  }
  if (s.comm_dtype == CommDtype::Fp16 || s.comm_dtype == CommDtype::Bf16)
    // The plan all-gathers parameters in the comm dtype too; FSDP does so in param_dtype, which is also the dtype
    // forward and backward compute in (torch.distributed.fsdp.MixedPrecision).
    out += "    mixed_precision=MixedPrecision(param_dtype=" + torch_dtype(s.comm_dtype) +
           ", reduce_dtype=" + torch_dtype(s.comm_dtype) + "),  # gathers and reduce-scatters in " +
           torch_dtype(s.comm_dtype) + ", as simulated\n";
  out += ")\n";
  if (stage3 && depth >= 2)
    out += "# prefetch " + std::to_string(depth) +
           " buckets ahead: FSDP prefetches one unit ahead at most (the settings above are the nearest)\n";
  if (sh.reducescatter_fusion_mb != sh.allgather_fusion_mb)
    out += "# reduce-scatter buckets of " + number(sh.reducescatter_fusion_mb) +
           " MB: FSDP reduce-scatters per unit, it has no separate setting\n";
  if (s.comm_dtype == CommDtype::Fp8) out += "# fp8 gradient communication: no FSDP setting\n";
  return out;
}

std::string deepspeed_snippet(const Strategy& s, std::uint64_t model_elements) {
  const Sharding& sh = s.sharding;
  const int depth = sh.prefetch_buckets;
  const std::uint64_t prefetch =
      depth < 0 ? model_elements : static_cast<std::uint64_t>(depth) * elements_in_mb(sh.allgather_fusion_mb);
  std::string out = "ds_config = {\n  \"zero_optimization\": {\n";
  out += "    \"stage\": " + std::to_string(sh.stage) + ",\n";
  out += std::string("    \"overlap_comm\": ") + (s.overlap ? "true" : "false") + ",\n";
  out +=
      "    \"reduce_bucket_size\": " + std::to_string(elements_in_mb(sh.reducescatter_fusion_mb)) + ",  # elements\n";
  out += "    \"allgather_bucket_size\": " + std::to_string(elements_in_mb(sh.allgather_fusion_mb)) + ",  # elements" +
         (sh.stage == 3 ? " (read by stages 1-2; stage 3 gathers by the prefetch bucket)" : "") + "\n";
  if (sh.stage == 3)
    out += "    \"stage3_prefetch_bucket_size\": " + std::to_string(prefetch) + "  # elements: " +
           (depth < 0 ? "the whole model, no limit" : std::to_string(depth) + " all-gather bucket(s) ahead") + "\n";
  out += "  },\n";
  if (s.comm_dtype == CommDtype::Fp16 || s.comm_dtype == CommDtype::Bf16)
    out += "  \"communication_data_type\": \"" + std::string(to_string(s.comm_dtype)) + "\",\n";
  out += "}\n";
  if (s.comm_dtype == CommDtype::Fp8)
    out += "# fp8 gradient communication: DeepSpeed's communication_data_type has none\n";
  return out;
}

std::string paddle_sharding_snippet(const Strategy& s) {
  const Sharding& sh = s.sharding;
  std::string out = "from paddle.distributed.sharding import group_sharded_parallel\n";
  out += "model, optimizer, scaler = group_sharded_parallel(model, optimizer, level=\"" +
         std::string(sh.stage == 3 ? "p_g_os" : "os_g") + "\", scaler=scaler";
  if (sh.stage == 2) out += ", buffer_max_size=" + std::to_string(elements_in_mb(sh.reducescatter_fusion_mb));
  if (sh.stage == 3) out += std::string(", sync_comm=") + (s.overlap ? "False" : "True");
  out += ")\n";
  if (sh.stage == 3)
    out += "# all-gather buckets of " + number(sh.allgather_fusion_mb) + " MB, reduce-scatter buckets of " +
           number(sh.reducescatter_fusion_mb) + " MB and the prefetch depth: no group_sharded_parallel setting\n";
  else
    out += "# all-gather buckets of " + number(sh.allgather_fusion_mb) + " MB: no group_sharded_parallel setting\n";
  if (s.comm_dtype != CommDtype::Fp32)
    out += "# " + std::string(to_string(s.comm_dtype)) + " gradient communication: no group_sharded_parallel setting\n";
  return out;
}

std::string mindspore_sharding_snippet(const Strategy& s) {
  const Sharding& sh = s.sharding;
  std::string out = "import mindspore as ms\n";
  out +=
      "ms.set_auto_parallel_context(parallel_mode=ms.ParallelMode.SEMI_AUTO_PARALLEL, "
      "enable_parallel_optimizer=True,\n";
  out += "    comm_fusion={\"allgather\": {\"mode\": \"size\", \"config\": " + number(sh.allgather_fusion_mb) +
         "}, \"reducescatter\": {\"mode\": \"size\", \"config\": " + number(sh.reducescatter_fusion_mb) + "}})\n";
  out += "# optimizer parallel is an auto-parallel option; layers without a shard strategy stay data parallel\n";
  if (sh.stage == 3) out += "# prefetch depth: no set_auto_parallel_context setting\n";
  if (s.comm_dtype != CommDtype::Fp32)
    out += "# " + std::string(to_string(s.comm_dtype)) + " communication: no set_auto_parallel_context setting\n";
  return out;
}

}  // namespace commsim::reports
