// A scenario: cluster (topology + node count), model, device, batch, steps and the communication strategy, with
// the knobs named as the frameworks name them (Paddle DistributedStrategy, MindSpore comm_fusion, PyTorch DDP).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sim/collective/collective.hpp"
#include "sim/core/json_fields.hpp"
#include "sim/model/model.hpp"
#include "sim/scenario/overheads.hpp"

namespace commsim {

enum class FusionMode : std::uint8_t { None, Size, Index, Auto };
enum class CommDtype : std::uint8_t { Fp32, Fp16, Bf16, Fp8 };
int dtype_bytes(CommDtype d);
std::string_view to_string(CommDtype d);

struct Fusion {
  FusionMode mode = FusionMode::Size;
  double size_mb = 25;         // Size: bucket threshold (PyTorch DDP bucket_cap_mb default 25)
  double first_bucket_mb = 0;  // Size: DDP's smaller first bucket (1 MB in DDP); 0 = same as size_mb
  // The cap of the first bucket filled (the last layers' gradients): first_bucket_mb, or size_mb when it is 0.
  double first_bucket_cap_mb() const { return first_bucket_mb > 0 ? first_bucket_mb : size_mb; }
  std::vector<int> indices;  // Index: MindSpore split indices into the forward-ordered tensor list
};

struct Dgc {  // Paddle dgc_configs
  int rampup_begin_step = 0;
  int rampup_step = 1;
  std::vector<double> sparsity{0.999};
  std::uint64_t min_elements = 16384;  // smaller tensors stay dense (as Paddle's DGC skips small parameters)
};

struct LocalSgd {  // Paddle localsgd_configs / adaptive_localsgd_configs
  bool adaptive = false;
  int k_steps = 1;       // fixed interval (plain)
  int init_k_steps = 1;  // adaptive: the first interval (not capped; later ones are chosen in [1, 16])
  int begin_step = 0;    // the parameters are averaged at every step up to this one (post-local SGD)
  // Adaptive: the learning rate and the loss, from which AdaComm derives the interval.
  double lr_initial = 0.1, lr_decay_factor = 1, loss_initial = 1, loss_final = 1;
  int lr_decay_every_steps = 0, loss_half_life_steps = 0;
};

struct Sharding {                       // ZeRO-2/3, FSDP, MindSpore optimizer parallel
  int stage = 0;                        // 0 = off, 2 = gradients and optimizer state sharded, 3 = parameters too
  double allgather_fusion_mb = 64;      // MindSpore comm_fusion "allgather" size
  double reducescatter_fusion_mb = 64;  // MindSpore comm_fusion "reducescatter" size
  // Stage 3: how many all-gather buckets may be fetched ahead of the one the compute is using; -1 = as far as the
  // stream allows (memory is not modelled), 0 = on demand, 1 = one ahead (FSDP forward_prefetch / BACKWARD_PRE).
  int prefetch_buckets = -1;
};

// Which waiting collective a communication stream runs next (ByteScheduler, Peng et al., SOSP 2019).
enum class CommPriority : std::uint8_t {
  Fifo,          // in the order the Plan lists them (backward order), each step after the previous one's last
  ForwardOrder,  // the ready one whose layer the next forward needs first; the next step's forward of layer i waits
                 // only for the collectives of layer i's gradients (ByteScheduler's crossing of the step barrier)
};
std::string_view to_string(CommPriority p);

struct Stragglers {
  std::uint64_t seed = 1;
  double compute_cv = 0;             // per-rank, per-step compute time ~ normal(1, cv), floored at 0.5
  std::map<int, double> slow_ranks;  // rank -> fixed compute slowdown factor
};

struct Strategy {
  Fusion fusion;
  bool overlap = true;    // false: all communication after backward (the seed's serial mode, not a Paddle knob)
  int nccl_comm_num = 1;  // communication streams
  Algorithm algorithm = Algorithm::Ring;
  bool use_hierarchical_allreduce = false;
  // Hierarchical allreduce groups, given as one of two numbers (0 = unset; both unset: one group per node):
  int hierarchical_allreduce_leaders = 0;     // number of groups = number of leaders
  int hierarchical_allreduce_group_size = 0;  // ranks per group: what Paddle's hierarchical_allreduce_inter_nranks is
  int channels = 0;                           // 0 = the topology's default (one per NIC)
  CommDtype comm_dtype = CommDtype::Fp32;
  // ByteScheduler's tensor partitioning: each bucket's collective is split into pieces of at most this many MiB,
  // one collective each (with the fixed costs of one); 0 = off.
  double partition_mb = 0;
  CommPriority priority = CommPriority::Fifo;
  std::optional<Dgc> dgc;
  std::optional<LocalSgd> localsgd;
  Sharding sharding;
  Stragglers stragglers;
};

struct Device {
  std::string name;
  double peak_flops = 0;  // FLOP/s of the datatype the model trains in
  double efficiency = 0;  // sustained fraction of peak (model FLOPs utilisation)
  double memory_Bps = 0;  // memory bandwidth, for casts, top-k selection and reductions
  // Measured rate of a rank's DGC work per fp32 gradient byte (residual, selection, clearing, averaging: what
  // `commsim bench` times as dgc_Bps); 0 = priced as seven memory passes at memory_Bps.
  double dgc_Bps = 0;
};

struct Scenario {
  std::string name;
  std::string file;
  std::string topology_path;  // resolved against the scenario's folder
  int nodes = 0;              // 0 = the topology's own
  std::string nccl_version;   // empty = the topology's library.version; else the NCCL release to price with
  std::string model_path;
  Device device;
  int batch_per_gpu = 1;
  int steps = 10;
  Strategy strategy;
  Framework framework;  // fixed per-collective and per-bucket costs (libraries/overheads.json); absent: "none"
};

// Loads a scenario; `overrides` are "dotted.key=value" pairs applied to the JSON first (value parsed as JSON,
// else taken as a string). Unknown keys are errors.
Scenario load_scenario(const std::string& path, const std::vector<std::string>& overrides = {});
// The same from a parsed document (for sweeps); `file` names it in errors and resolves relative paths.
Scenario parse_scenario(const Json& document, const std::string& file);
Json apply_overrides(Json document, const std::vector<std::string>& overrides, const std::string& file);

}  // namespace commsim
