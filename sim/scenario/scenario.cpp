#include "sim/scenario/scenario.hpp"

#include <filesystem>

#include "sim/collective/registry.hpp"
#include "sim/core/data_path.hpp"
#include "sim/core/limits.hpp"
#include "sim/core/output_file.hpp"
#include "sim/model/device_library.hpp"

namespace commsim {

int dtype_bytes(CommDtype d) {
  static constexpr int bytes[] = {4, 2, 2, 1};
  return bytes[static_cast<int>(d)];
}
std::string_view to_string(CommDtype d) {
  static constexpr std::string_view names[] = {"fp32", "fp16", "bf16", "fp8"};
  return names[static_cast<int>(d)];
}
std::string_view to_string(CommPriority p) { return p == CommPriority::Fifo ? "fifo" : "forward_order"; }

namespace {

// Split indices point into a model's tensor list; no model has a million parameter tensors.
constexpr std::int64_t kMaxFusionIndex = 1 << 20;

// A path the scenario names, checked here so that the error names the scenario and its field, not only the path.
std::string existing_file(JsonFields& f, const std::string& key, const std::string& path) {
  std::error_code ec;
  if (const std::string why = not_an_input_file(path, "JSON file"); !why.empty()) f.fail(key, path + " " + why);
  if (!std::filesystem::exists(path, ec)) f.fail(key, "no such file " + path);
  return path;
}

Fusion parse_fusion(JsonFields f) {
  Fusion fusion;
  const std::string mode = f.string("mode");
  if (mode == "none")
    fusion.mode = FusionMode::None;
  else if (mode == "size")
    fusion.mode = FusionMode::Size;
  else if (mode == "index")
    fusion.mode = FusionMode::Index;
  else if (mode == "auto")
    fusion.mode = FusionMode::Auto;
  else
    f.fail("mode", "unknown fusion mode \"" + mode + "\" (none, size, index, auto)");
  // Another mode's field is known, not unknown: `--set strategy.fusion.mode=none` keeps the block's size_mb, and
  // the message should say that it no longer applies rather than that it does not exist.
  static constexpr std::pair<const char*, const char*> kFieldMode[] = {
      {"size_mb", "size"}, {"first_bucket_mb", "size"}, {"indices", "index"}};
  for (const auto& [field, owner] : kFieldMode)
    if (f.has(field) && mode != owner)
      f.fail(field, "does not apply with mode \"" + mode + "\" (only with mode \"" + owner + "\")");
  if (fusion.mode == FusionMode::Size) {
    fusion.size_mb = f.positive("size_mb");
    fusion.first_bucket_mb = f.positive_or("first_bucket_mb", fusion.size_mb);
  }
  if (fusion.mode == FusionMode::Auto) fusion.size_mb = 64;  // MindSpore "auto": 64 MB
  if (fusion.mode == FusionMode::Index) {
    const Json& indices = f.array("indices");
    if (indices.empty())
      f.fail("indices",
             "needs at least one split index (MindSpore all_reduce_fusion_config); for one bucket use mode \"size\"");
    for (std::size_t i = 0; i < indices.size(); ++i) {
      // Checked as JSON first: a value beyond int would wrap in the conversion (4294967295 to -1).
      const Json& index = indices[i];
      if (!index.is_number_integer() || (index.is_number_unsigned() && index.get<std::uint64_t>() > kMaxFusionIndex) ||
          index.get<std::int64_t>() < 1 || index.get<std::int64_t>() > kMaxFusionIndex)
        f.fail("indices[" + std::to_string(i) + "]",
               "must be an integer in [1, " + std::to_string(kMaxFusionIndex) + "], got " + index.dump());
      const int v = static_cast<int>(index.get<std::int64_t>());
      if (!fusion.indices.empty() && v <= fusion.indices.back())
        f.fail("indices[" + std::to_string(i) + "]", "split indices must increase");
      fusion.indices.push_back(v);
    }
  }
  f.reject_unknown();
  return fusion;
}

Dgc parse_dgc(JsonFields f) {
  Dgc d;
  d.rampup_begin_step = static_cast<int>(f.integer("rampup_begin_step", 0, 1 << 30));
  d.rampup_step = static_cast<int>(f.integer("rampup_step", 1, 1 << 30));
  const Json& s = f.array("sparsity");
  if (s.empty()) f.fail("sparsity", "needs at least one value");
  d.sparsity.clear();
  for (std::size_t i = 0; i < s.size(); ++i) {
    // Paddle's DGC kernel enforces 0 <= 1 - sparsity < 1 (dgc_op.h: PADDLE_ENFORCE_LT(ratio, 1.0)), so 0 is not a
    // sparsity; 1 (Paddle's k = 0) would never send a gradient, refused here.
    if (!s[i].is_number() || !(s[i].get<double>() > 0 && s[i].get<double>() < 1))
      f.fail("sparsity[" + std::to_string(i) + "]",
             "must be in (0, 1) (Paddle's DGC needs 1 - sparsity < 1), got " + s[i].dump());
    d.sparsity.push_back(s[i].get<double>());
  }
  d.min_elements = static_cast<std::uint64_t>(f.integer_or("min_elements", 16384, 0, std::int64_t{1} << 40));
  f.reject_unknown();
  return d;
}

LocalSgd parse_localsgd(JsonFields f, bool adaptive) {
  LocalSgd l;
  l.adaptive = adaptive;
  l.begin_step = static_cast<int>(f.integer_or("begin_step", 1, 0, 1 << 30));
  if (!adaptive) {
    l.k_steps = static_cast<int>(f.integer("k_steps", 1, 1 << 20));
  } else {
    // Paddle takes init_k_steps as the first interval without a cap (localsgd_optimizer.py, schedules.cpp).
    l.init_k_steps = static_cast<int>(f.integer("init_k_steps", 1, 1 << 20));
    l.lr_initial = f.positive_or("lr_initial", 0.1);
    l.lr_decay_factor = f.positive_or("lr_decay_factor", 1);
    l.lr_decay_every_steps = static_cast<int>(f.integer_or("lr_decay_every_steps", 0, 0, 1 << 30));
    l.loss_initial = f.positive_or("loss_initial", 1);
    l.loss_final = f.positive_or("loss_final", l.loss_initial);
    l.loss_half_life_steps = static_cast<int>(f.integer_or("loss_half_life_steps", 0, 0, 1 << 30));
  }
  f.reject_unknown();
  return l;
}

CommDtype parse_dtype(JsonFields& f, const std::string& key) {
  const std::string s = f.string(key);
  for (int i = 0; i < 4; ++i)
    if (to_string(static_cast<CommDtype>(i)) == s) return static_cast<CommDtype>(i);
  f.fail(key, "unknown dtype \"" + s + "\" (fp32, fp16, bf16, fp8)");
}

// Paddle's hierarchical_allreduce_inter_nranks is the size of each group (gen_nccl_id_op.cc: inter_trainer_id =
// trainer_id % inter_nranks, leaders are the ranks with trainer_id % inter_nranks == 0), while the Fleet document
// calls it the number of leaders; the two readings differ unless groups and group size are equal. The scenario names
// which one it means (docs/scenario-format.md).
void parse_hierarchy_groups(JsonFields& f, Strategy& s) {
  if (f.has("hierarchical_allreduce_inter_nranks"))
    f.fail("hierarchical_allreduce_inter_nranks",
           "is ambiguous (Paddle's code reads it as ranks per group, the Fleet document as the number of leaders): "
           "write hierarchical_allreduce_group_size (Paddle's meaning) or hierarchical_allreduce_leaders");
  if (f.has("hierarchical_allreduce_leaders") && f.has("hierarchical_allreduce_group_size"))
    f.fail("hierarchical_allreduce_group_size", "give either hierarchical_allreduce_leaders or the group size");
  s.hierarchical_allreduce_leaders = static_cast<int>(f.integer_or("hierarchical_allreduce_leaders", 0, 1, 1 << 24));
  // Paddle enforces inter_nranks > 1 (gen_nccl_id_op.cc, parallel_executor.cc).
  s.hierarchical_allreduce_group_size =
      static_cast<int>(f.integer_or("hierarchical_allreduce_group_size", 0, 2, 1 << 24));
}

Sharding parse_sharding(JsonFields& sh) {
  Sharding s;
  s.stage = static_cast<int>(sh.integer("stage", 0, 3));
  if (s.stage == 1)
    sh.fail("stage", "stage 1 shards only optimizer state and communicates like plain data parallel; use 0, 2 or 3");
  s.allgather_fusion_mb = sh.positive_or("allgather_fusion_mb", 64);
  s.reducescatter_fusion_mb = sh.positive_or("reducescatter_fusion_mb", 64);
  if (const Json* prefetch = sh.raw_optional("prefetch_buckets"); prefetch && *prefetch != "unlimited") {
    if (!prefetch->is_number_integer())
      sh.fail("prefetch_buckets", "must be an integer >= 0 or \"unlimited\", got " + prefetch->dump());
    s.prefetch_buckets = static_cast<int>(sh.integer("prefetch_buckets", 0, 1 << 20));
  }
  return s;
}

Stragglers parse_stragglers(JsonFields st) {
  Stragglers s;
  s.seed = static_cast<std::uint64_t>(st.integer_or("seed", 1, 0, std::int64_t{1} << 62));
  s.compute_cv = st.number_or("compute_cv", 0);
  if (s.compute_cv < 0 || s.compute_cv > 1) st.fail("compute_cv", "must be in [0, 1]");
  if (const Json* slow = st.raw_optional("slow_ranks")) {
    if (!slow->is_object()) st.fail("slow_ranks", "must be an object {\"rank\": factor}");
    for (auto& [k, v] : slow->items()) {
      int rank = -1;
      try {
        rank = std::stoi(k);
      } catch (...) {
      }
      if (rank < 0 || std::to_string(rank) != k) st.fail("slow_ranks." + k, "key must be a rank number");
      if (!v.is_number() || v.get<double>() < 1) st.fail("slow_ranks." + k, "factor must be a number >= 1");
      s.slow_ranks[rank] = v.get<double>();
    }
  }
  st.reject_unknown();
  return s;
}

// ByteScheduler's knobs: partition_mb (> 0 when given) and priority ("fifo" or "forward_order").
void parse_scheduling(JsonFields& f, Strategy& s) {
  if (f.has("partition_mb")) s.partition_mb = f.positive("partition_mb");
  if (!f.has("priority")) return;
  const std::string p = f.string("priority");
  if (p == "fifo")
    s.priority = CommPriority::Fifo;
  else if (p == "forward_order")
    s.priority = CommPriority::ForwardOrder;
  else
    f.fail("priority", "unknown priority \"" + p + "\" (fifo, forward_order)");
}

void parse_algorithm_field(JsonFields& f, Strategy& s) {
  if (!f.has("algorithm")) return;
  const std::string a = f.string("algorithm");
  if (!parse_algorithm(a, s.algorithm))
    f.fail("algorithm", "unknown algorithm \"" + a + "\" (" + algorithm_names(", ") + ")");
}

// The techniques that change what a step communicates: DGC, Local SGD and sharding, and which combine.
void parse_techniques(JsonFields& f, Strategy& s) {
  if (f.has("dgc")) s.dgc = parse_dgc(f.object("dgc"));
  if (f.has("localsgd") && f.has("adaptive_localsgd"))
    f.fail("adaptive_localsgd", "use either localsgd or adaptive_localsgd");
  if (f.has("localsgd")) s.localsgd = parse_localsgd(f.object("localsgd"), false);
  if (f.has("adaptive_localsgd")) s.localsgd = parse_localsgd(f.object("adaptive_localsgd"), true);
  if (s.dgc && s.localsgd) f.fail("dgc", "DGC and Local SGD cannot be combined (Paddle rejects it too)");
  if (f.has("sharding")) {
    JsonFields sh = f.object("sharding");
    s.sharding = parse_sharding(sh);
    sh.reject_unknown();
    if (s.sharding.stage && (s.dgc || s.localsgd))
      sh.fail("stage", "sharding cannot be combined with DGC or Local SGD");
    // A sharded step reduce-scatters and all-gathers in rings (plan_sharded.cpp): an allreduce algorithm would be
    // ignored without a word.
    if (s.sharding.stage && s.algorithm != Algorithm::Ring && s.algorithm != Algorithm::Auto)
      f.fail(s.use_hierarchical_allreduce ? "use_hierarchical_allreduce" : "algorithm",
             "sharded steps run ring reduce-scatters and all-gathers; " + std::string(to_string(s.algorithm)) +
                 " is an allreduce algorithm (leave it out, or ring)");
  }
  // Partitions and priorities reorder the dense gradient allreduces of plain data parallel steps only.
  const bool scheduled = s.partition_mb > 0 || s.priority != CommPriority::Fifo;
  if (scheduled && (s.dgc || s.localsgd || s.sharding.stage))
    f.fail(s.partition_mb > 0 ? "partition_mb" : "priority",
           "applies to the gradient allreduces of plain data parallel steps; it cannot be combined with DGC, Local "
           "SGD or sharding");
}

Strategy parse_strategy(JsonFields f) {
  Strategy s;
  if (f.has("fusion")) s.fusion = parse_fusion(f.object("fusion"));
  s.overlap = f.boolean_or("overlap", true);
  s.nccl_comm_num = static_cast<int>(f.integer_or("nccl_comm_num", 1, 1, 64));
  parse_algorithm_field(f, s);
  s.use_hierarchical_allreduce = f.boolean_or("use_hierarchical_allreduce", false);
  parse_hierarchy_groups(f, s);
  if (s.use_hierarchical_allreduce) s.algorithm = Algorithm::Hierarchical;
  s.channels = static_cast<int>(f.integer_or("channels", 0, 0, kMaxChannels));
  if (f.has("comm_dtype")) s.comm_dtype = parse_dtype(f, "comm_dtype");
  parse_scheduling(f, s);
  parse_techniques(f, s);
  if (f.has("stragglers")) s.stragglers = parse_stragglers(f.object("stragglers"));
  f.reject_unknown();
  return s;
}

}  // namespace

Json apply_overrides(Json document, const std::vector<std::string>& overrides, const std::string& file) {
  for (const std::string& o : overrides) {
    const auto eq = o.find('=');
    if (eq == std::string::npos || eq == 0) throw InputError("--set", "", "\"" + o + "\" is not key=value");
    const std::string key = o.substr(0, eq), text = o.substr(eq + 1);
    const Json value = parse_json_value(text, "--set " + key).value_or(Json(text));
    Json* at = &document;
    std::size_t start = 0;
    while (true) {
      const auto dot = key.find('.', start);
      const std::string part = key.substr(start, dot - start);
      if (part.empty()) throw InputError("--set", key, "empty path component");
      if (!at->is_object()) throw InputError(file, key, "cannot set a field inside a non-object");
      if (dot == std::string::npos) {
        (*at)[part] = value;
        break;
      }
      at = &(*at)[part];
      if (at->is_null()) *at = Json::object();
      start = dot + 1;
    }
  }
  return document;
}

Scenario parse_scenario(const Json& document, const std::string& file) {
  JsonFields top(document, file, "");
  Scenario s;
  s.file = file;
  s.name = top.string("name");
  top.string_or("description", "");
  s.topology_path = existing_file(top, "topology", resolve_beside(file, top.string("topology")));
  s.nodes = static_cast<int>(top.integer_or("nodes", 0, 1, kMaxNodes));
  // A release such as 2.20 is a JSON number once --set parses it, and 2.20 reads back as 2.2: asked for as a string.
  if (const Json* release = top.raw_optional("nccl_version"); release != nullptr && !release->is_string())
    top.fail("nccl_version",
             "must be a string such as \"2.26.2\" (on the command line: --set 'nccl_version=\"2.26\"')");
  s.nccl_version = top.string_or("nccl_version", "");
  if (top.has("nccl_version") && s.nccl_version.empty())
    top.fail("nccl_version", "must name a release such as \"2.26.2\"");
  s.model_path = existing_file(top, "model", resolve_beside(file, top.string("model")));
  {
    JsonFields d = top.object("device");
    s.device = parse_device(d);  // explicit numbers, or a device of the library (sim/model/device_library.hpp)
  }
  s.batch_per_gpu = static_cast<int>(top.integer("batch_per_gpu", 1, 1 << 20));
  s.steps = static_cast<int>(top.integer_or("steps", 10, 1, kMaxSteps));
  if (top.has("strategy")) s.strategy = parse_strategy(top.object("strategy"));
  if (top.has("framework")) s.framework = parse_framework(top.object("framework"));
  top.reject_unknown();
  return s;
}

Scenario load_scenario(const std::string& path, const std::vector<std::string>& overrides) {
  return parse_scenario(apply_overrides(read_json_file(path), overrides, path), path);
}

}  // namespace commsim
