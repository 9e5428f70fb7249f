#include "reports/snippets.hpp"

#include <algorithm>
#include <cmath>

#include "reports/format.hpp"

namespace commsim::reports {

namespace {

std::string py_list(const std::vector<double>& v) {
  std::string out = "[";
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + number(v[i]);
  return out + "]";
}

bool size_fusion(const Strategy& s) { return s.fusion.mode == FusionMode::Size || s.fusion.mode == FusionMode::Auto; }

// Paddle's fuse_grad_size_in_MB and MindSpore's comm_fusion "size" config are whole MB (an int: Paddle's setter
// ignores any other value with a warning; the seed mindspore-comm-fusion.md gives the config's type as int): the
// nearest one, at least 1, and a comment naming the size commsim priced when that differs.
std::string whole_mb(double size_mb, std::string& note) {
  const double whole = std::max(1.0, std::round(size_mb));
  if (whole != size_mb) note = "# " + number(size_mb) + " MB simulated; the setting takes whole MB\n";
  return number(whole);
}

}  // namespace

int hierarchy_leaders(const Strategy& s, int nodes, int ranks) {
  if (s.hierarchical_allreduce_leaders > 0) return s.hierarchical_allreduce_leaders;
  if (s.hierarchical_allreduce_group_size > 0) return ranks / s.hierarchical_allreduce_group_size;
  return nodes;
}

std::string paddle_snippet(const Strategy& s, int nodes, int ranks) {
  std::string out =
      "import paddle.distributed.fleet as fleet\n"
      "strategy = fleet.DistributedStrategy()\n";
  if (size_fusion(s)) {
    std::string note;
    out += "strategy.fuse_grad_size_in_MB = " + whole_mb(s.fusion.size_mb, note) + "\n" + note;
  }
  out += "strategy.nccl_comm_num = " + std::to_string(s.nccl_comm_num) + "\n";
  // sync_nccl_allreduce is not the overlap of compute and communication, which Paddle does by default (the seed
  // paddle-overlap.txt): True (its default) has each allreduce's host thread wait for its stream
  // (all_reduce_op_handle.cc SyncNCCLAllReduce), so that several communicators do not overlap one another
  // (graph_execution_optimizer.py warns of it); commsim's streams always run concurrently, as with False.
  out += "strategy.sync_nccl_allreduce = False\n";
  if (!s.overlap)
    out +=
        "# every allreduce after backward (overlap false) has no DistributedStrategy switch: Paddle overlaps "
        "them with backward\n";
  if (s.use_hierarchical_allreduce) {
    out += "strategy.use_hierarchical_allreduce = True\n";
    // Paddle reads inter_nranks as the ranks per group (gen_nccl_id_op.cc: inter_trainer_id = trainer_id %
    // inter_nranks; the ranks with trainer_id % inter_nranks == 0 are the leaders), one rank per GPU.
    const int leaders = hierarchy_leaders(s, nodes, ranks), group = ranks / std::max(1, leaders);
    out += "strategy.hierarchical_allreduce_inter_nranks = " + std::to_string(group) +
           "  # ranks per group, not the number of leaders: " + std::to_string(leaders) + " groups of " +
           std::to_string(group) + " ranks, leaders are ranks 0, " + std::to_string(group) + ", " +
           std::to_string(2 * group) + ", ...\n";
  }
  if (s.comm_dtype == CommDtype::Fp16) out += "strategy.fp16_allreduce = True\n";
  if (s.comm_dtype == CommDtype::Bf16 || s.comm_dtype == CommDtype::Fp8)
    out += "# " + std::string(to_string(s.comm_dtype)) + " gradient communication has no DistributedStrategy switch\n";
  if (s.dgc) {
    out += "strategy.dgc = True\nstrategy.dgc_configs = {\"rampup_begin_step\": " +
           std::to_string(s.dgc->rampup_begin_step) + ", \"rampup_step\": " + std::to_string(s.dgc->rampup_step) +
           ", \"sparsity\": " + py_list(s.dgc->sparsity) + "}\n";
  }
  if (s.localsgd && !s.localsgd->adaptive) {
    out +=
        "strategy.localsgd = True\nstrategy.localsgd_configs = {\"k_steps\": " + std::to_string(s.localsgd->k_steps) +
        ", \"begin_step\": " + std::to_string(s.localsgd->begin_step) + "}\n";
  }
  if (s.localsgd && s.localsgd->adaptive) {
    out += "strategy.adaptive_localsgd = True\nstrategy.adaptive_localsgd_configs = {\"init_k_steps\": " +
           std::to_string(s.localsgd->init_k_steps) + ", \"begin_step\": " + std::to_string(s.localsgd->begin_step) +
           "}\n";
  }
  return out + "fleet.init(is_collective=True, strategy=strategy)\n";
}

std::string mindspore_snippet(const Strategy& s) {
  std::string fusion, size_note;
  if (s.fusion.mode == FusionMode::None) {
    fusion = "{\"openstate\": False}";
  } else if (s.fusion.mode == FusionMode::Index) {
    std::string list;
    for (int i : s.fusion.indices) list += (list.empty() ? "" : ", ") + std::to_string(i);
    fusion = "{\"allreduce\": {\"mode\": \"index\", \"config\": [" + list + "]}}";
  } else if (s.fusion.mode == FusionMode::Auto) {
    fusion = "{\"allreduce\": {\"mode\": \"auto\", \"config\": None}}";
  } else {
    fusion = "{\"allreduce\": {\"mode\": \"size\", \"config\": " + whole_mb(s.fusion.size_mb, size_note) + "}}";
  }
  std::string out =
      "import mindspore as ms\n"
      "ms.set_auto_parallel_context(parallel_mode=ms.ParallelMode.DATA_PARALLEL, comm_fusion=" +
      fusion + ")\n" + size_note;
  // gradient_fp32_sync=False (allreduce in the gradients' dtype) is listed for the auto-parallel modes only.
  if (s.comm_dtype != CommDtype::Fp32)
    out +=
        "# " + std::string(to_string(s.comm_dtype)) +
        " gradient communication: no DATA_PARALLEL setting (gradient_fp32_sync applies to the auto-parallel modes)\n";
  if (s.dgc) out += "# DGC: no MindSpore setting\n";
  if (s.localsgd) out += "# Local SGD: no MindSpore setting\n";
  return out;
}

// DDP's first bucket (torch/nn/parallel/distributed.py, bucket_bytes_cap_default): 1 MiB
// (dist._DEFAULT_FIRST_BUCKET_BYTES) only when bucket_cap_mb is not passed, the cap itself when it is. So DDP's
// defaults are 25 MiB buckets after a 1 MiB first one, and an explicit cap gives the first bucket that cap too.
std::string pytorch_snippet(const Strategy& s) {
  std::string out = "from torch.nn.parallel import DistributedDataParallel as DDP\n";
  const double first_mb = s.fusion.first_bucket_cap_mb();
  if (s.fusion.mode == FusionMode::Size && s.fusion.size_mb == 25 && first_mb == 1)
    out += "model = DDP(model, device_ids=[local_rank])  # DDP's defaults: 25 MB buckets, the first one 1 MB\n";
  else if (s.fusion.mode == FusionMode::Size || s.fusion.mode == FusionMode::Auto) {
    out += "model = DDP(model, device_ids=[local_rank], bucket_cap_mb=" + number(s.fusion.size_mb) + ")\n";
    if (s.fusion.mode == FusionMode::Size && first_mb != s.fusion.size_mb)
      out += "# a " + number(first_mb) +
             " MB first bucket is not settable here: DDP makes its first bucket 1 MB only "
             "with bucket_cap_mb left out (then 25 MB buckets), else bucket_cap_mb\n";
  } else
    out += "model = DDP(model, device_ids=[local_rank])  # DDP fuses by size only (bucket_cap_mb)\n";
  if (s.comm_dtype == CommDtype::Fp16 || s.comm_dtype == CommDtype::Bf16) {
    out += "from torch.distributed.algorithms.ddp_comm_hooks import default_hooks\n";
    out += "model.register_comm_hook(state=None, hook=default_hooks." + std::string(to_string(s.comm_dtype)) +
           "_compress_hook)\n";
  }
  if (s.comm_dtype == CommDtype::Fp8) out += "# fp8 gradient communication: no built-in DDP comm hook\n";
  if (s.dgc) out += "# DGC: no built-in DDP comm hook (powerSGD_hook is a different, low-rank compressor)\n";
  if (s.localsgd && !s.localsgd->adaptive) {
    out +=
        "from torch.distributed.algorithms.ddp_comm_hooks.post_localSGD_hook import PostLocalSGDState, "
        "post_localSGD_hook\n"
        "from torch.distributed.algorithms.model_averaging.averagers import PeriodicModelAverager\n"
        "model.register_comm_hook(PostLocalSGDState(process_group=None, subgroup=None, start_localSGD_iter=" +
        std::to_string(s.localsgd->begin_step) +
        "), post_localSGD_hook)\n"
        "averager = PeriodicModelAverager(period=" +
        std::to_string(s.localsgd->k_steps) + ", warmup_steps=" + std::to_string(s.localsgd->begin_step) +
        ")  # call averager.average_parameters(model.parameters()) after optimizer.step()\n";
  }
  if (s.nccl_comm_num > 1)
    out += "# nccl_comm_num = " + std::to_string(s.nccl_comm_num) + ": DDP uses one communication stream\n";
  return out;
}

std::string horovod_snippet(const Strategy& s) {
  std::string out = "import horovod.torch as hvd\n";
  const bool fp16 = s.comm_dtype == CommDtype::Fp16;
  out += std::string("optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters()") +
         (fp16 ? ", compression=hvd.Compression.fp16" : "") + ")\n";
  if (s.comm_dtype == CommDtype::Bf16 || s.comm_dtype == CommDtype::Fp8)
    out += "# " + std::string(to_string(s.comm_dtype)) +
           " gradient communication: Horovod's built-in compressors are Compression.none and Compression.fp16 only\n";
  if (s.dgc) out += "# DGC: no built-in Horovod compressor\n";
  if (s.localsgd) out += "# Local SGD: no built-in Horovod setting\n";
  if (size_fusion(s))
    out += "# export HOROVOD_FUSION_THRESHOLD=" + std::to_string(static_cast<long long>(s.fusion.size_mb * 1048576)) +
           "  # tensor fusion buffer in bytes (" + number(s.fusion.size_mb) + " MB)\n";
  if (s.use_hierarchical_allreduce)
    out += "# export HOROVOD_HIERARCHICAL_ALLREDUCE=1  # Horovod's groups are the nodes\n";
  return out;
}

std::string nccl_env_snippet(const Strategy& s) {
  std::string out;
  switch (s.use_hierarchical_allreduce ? Algorithm::Hierarchical : s.algorithm) {
    case Algorithm::Ring:
      out += "export NCCL_ALGO=Ring\n";
      break;
    case Algorithm::Tree:
      out += "export NCCL_ALGO=Tree\n";
      break;
    case Algorithm::Nvls:
      out += "export NCCL_ALGO=NVLS  # NVLink SHARP; needs NCCL_NVLS_ENABLE unset or 1\n";
      break;
    case Algorithm::NvlsTree:
      out += "export NCCL_ALGO=NVLSTree  # NVLink SHARP in the node, trees across nodes\n";
      break;
    case Algorithm::CollNetDirect:
      out += "export NCCL_ALGO=CollNetDirect NCCL_COLLNET_ENABLE=1  # needs the SHARP plugin\n";
      break;
    case Algorithm::CollNetChain:
      out += "export NCCL_ALGO=CollNetChain NCCL_COLLNET_ENABLE=1  # needs the SHARP plugin\n";
      break;
    case Algorithm::Pat:
      out += "export NCCL_ALGO=PAT\n";
      break;
    case Algorithm::Auto:
      out += "# NCCL_ALGO unset: NCCL's tuner picks the algorithm per size\n";
      break;
    case Algorithm::Hierarchical:
      out += "# hierarchical allreduce is done by the framework (above), not by an NCCL_ALGO; leave NCCL_ALGO unset\n";
      break;
    default:
      out += "# NCCL has no " + std::string(to_string(s.algorithm)) +
             " allreduce and no framework above sets one: only commsim's MPI backend runs it\n";
  }
  if (s.channels > 0)
    out += "export NCCL_MIN_NCHANNELS=" + std::to_string(s.channels) +
           " NCCL_MAX_NCHANNELS=" + std::to_string(s.channels) + "\n";
  return out;
}

// Open MPI's allreduce algorithms (ompi/mca/coll/tuned/coll_tuned_allreduce_decision.c, allreduce_algorithms):
// 1 basic_linear, 2 nonoverlapping, 3 recursive_doubling, 4 ring, 5 segmented_ring, 6 rabenseifner (a reduce-scatter
// by recursive halving and an allgather by recursive doubling: commsim's halving-doubling).
std::string mpi_env_snippet(const Strategy& s) {
  const std::string force = "mpirun --mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_allreduce_algorithm ";
  switch (s.use_hierarchical_allreduce ? Algorithm::Hierarchical : s.algorithm) {
    case Algorithm::Ring:
      return force + "4 ...  # ring\n";
    case Algorithm::HalvingDoubling:
      return force + "6 ...  # rabenseifner: recursive-halving reduce-scatter, recursive-doubling allgather\n";
    case Algorithm::Auto:
      return "# coll_tuned_use_dynamic_rules unset: Open MPI's decision rules pick the allreduce by size\n";
    case Algorithm::Hierarchical:
      return "# hierarchical allreduce is done by the framework (above); Open MPI needs no setting for it\n";
    default:
      return "# Open MPI has no " + std::string(to_string(s.algorithm)) +
             " allreduce (its algorithms: basic_linear, nonoverlapping, recursive_doubling, ring, segmented_ring, "
             "rabenseifner) and no framework above sets one: only commsim's MPI backend runs it\n";
  }
}

}  // namespace commsim::reports
