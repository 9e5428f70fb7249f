// Reads topologies/*.json into a ClusterTopology or an AstraTopology. Every field is checked; every error names
// the file and the field (docs/topology-format.md is the format).
#include <algorithm>
#include <map>

#include "sim/collective/nccl_model.hpp"
#include "sim/core/json_document_cache.hpp"
#include "sim/core/json_fields.hpp"
#include "sim/core/limits.hpp"
#include "sim/topology/astra_topology.hpp"
#include "sim/topology/cluster_topology.hpp"
#include "sim/topology/topology_document.hpp"

namespace commsim {
namespace {

constexpr std::pair<std::string_view, LinkClass> kLinkClassNames[] = {
    {"nvlink", LinkClass::NvLink}, {"nvswitch", LinkClass::NvSwitch}, {"pcie", LinkClass::Pcie},
    {"upi", LinkClass::Upi},       {"shm", LinkClass::Shm},           {"rdma", LinkClass::Rdma},
    {"tcp", LinkClass::Tcp},       {"fabric", LinkClass::Fabric},     {"efa", LinkClass::Efa},
    {"tcpx", LinkClass::Tcpx}};

std::string class_list() {
  std::string s;
  for (auto [name, c] : kLinkClassNames) s += (s.empty() ? "" : ", ") + std::string(name);
  return s;
}

DeviceKind parse_device_kind(JsonFields& f, const std::string& key) {
  static const std::map<std::string, DeviceKind> kinds = {
      {"gpu", DeviceKind::Gpu},           {"cpu_rank", DeviceKind::CpuRank},
      {"cpu", DeviceKind::Cpu},           {"pcie_switch", DeviceKind::PcieSwitch},
      {"nvswitch", DeviceKind::NvSwitch}, {"nic", DeviceKind::Nic}};
  std::string s = f.string(key);
  auto it = kinds.find(s);
  if (it == kinds.end())
    f.fail(key, "unknown device kind \"" + s + "\" (gpu, cpu_rank, cpu, pcie_switch, nvswitch, nic)");
  return it->second;
}

// A link's latency in seconds: in [0, 1]. A second per hop is no interconnect, and the bound keeps a collective's
// summed latencies (steps x latency, steps < 2 x kMaxRanks) inside the simulated time range.
double link_latency_s(JsonFields& f, const std::string& key, double fallback) {
  if (!f.has(key)) return fallback;
  const double s = f.number(key);
  if (!(s >= 0 && s <= kMaxLinkLatencySeconds)) f.fail(key, "must be in [0, 1] seconds, got " + f.raw(key).dump());
  return s;
}

LinkParams parse_link_params(JsonFields& f, LinkClass c) {
  LinkParams p;
  p.link_class = c;
  p.latency_s = link_latency_s(f, "latency_s", 0);
  p.bandwidth_Bps = f.positive("bandwidth_Bps");
  p.efficiency = f.number_or("efficiency", 1.0);
  if (!(p.efficiency > 0 && p.efficiency <= 1)) f.fail("efficiency", "must be in (0, 1]");
  p.per_flow_Bps = f.positive_or("per_flow_Bps", 0);
  if (f.has("flows") && p.per_flow_Bps <= 0) f.fail("flows", "needs per_flow_Bps (what one flow reaches)");
  p.flows = static_cast<int>(f.integer_or("flows", 1, 1, 4096));
  p.burst_bytes = f.positive_or("burst_bytes", 0);
  if (f.has("burst_Bps") && p.burst_bytes <= 0) f.fail("burst_Bps", "needs burst_bytes (the token bucket's depth)");
  if (p.burst_bytes > 0) {
    p.burst_Bps = f.positive("burst_Bps");
    if (p.burst_Bps <= p.effective_Bps())
      f.fail("burst_Bps", "must exceed the sustained rate bandwidth_Bps x efficiency (" +
                              std::to_string(p.effective_Bps()) + " B/s)");
  }
  return p;
}

// The "library" block: which communication library runs the collectives, and what it detects of the machine.
CommLibrary parse_library(JsonFields& top) {
  CommLibrary lib;
  if (!top.has("library")) return lib;
  JsonFields f = top.object("library");
  const std::string name = f.string("name");
  if (name == "nccl")
    lib.kind = LibraryKind::Nccl;
  else if (name == "mpi")
    lib.kind = LibraryKind::Mpi;
  else
    f.fail("name", "unknown library \"" + name + "\" (nccl, mpi)");
  lib.version = f.string_or("version", "");
  if (lib.kind == LibraryKind::Nccl) {
    if (lib.version.empty()) f.fail("version", "an NCCL topology names its NCCL version (e.g. \"2.18\")");
    // Checked here, not where a model first prices with it: a run that never does (flow) must refuse it too.
    if (const std::string problem = nccl::release_problem(lib.version); !problem.empty()) f.fail("version", problem);
    const std::string arch = f.string("gpu_arch");
    if (!parse_gpu_arch(arch, lib.gpu_arch))
      f.fail("gpu_arch", "unknown GPU generation \"" + arch + "\" (volta, ampere, hopper, blackwell)");
    const std::string cpu = f.string_or("cpu_vendor", "intel");
    if (cpu != "intel" && cpu != "amd" && cpu != "arm") f.fail("cpu_vendor", "must be intel, amd or arm");
    lib.cpu_amd = cpu == "amd";
    lib.cpu_arm = cpu == "arm";
    lib.channels = static_cast<int>(f.integer_or("channels", 0, 0, 64));
    lib.nvls = f.boolean_or("nvls", false);
    if (lib.nvls && lib.gpu_arch < GpuArch::Hopper) f.fail("nvls", "NVLink SHARP needs Hopper or later");
    lib.collnet = f.boolean_or("collnet", false);
    if (f.has("concurrent_step_delay_us"))
      f.fail("concurrent_step_delay_us", "is an mpi library's (NCCL's collectives are priced by NCCL's model)");
    lib.sms = static_cast<int>(f.integer_or("sms", 0, 1, 1024));
    lib.concurrent_slowdown = f.number_or("concurrent_slowdown", 0);
    if (!(lib.concurrent_slowdown >= 0 && lib.concurrent_slowdown < 1))
      f.fail("concurrent_slowdown", "must be in [0, 1)");
    if (lib.concurrent_slowdown > 0 && lib.sms == 0)
      f.fail("concurrent_slowdown", "needs sms (the slowdown is on top of the SMs the channels take)");
    if (const Json* fitted = f.raw_optional("fitted")) {
      JsonFields scales = f.object("fitted");
      for (auto& [key, value] : fitted->items()) {
        JsonFields s = scales.object(key);
        // A round of NVLS chunks is a few microseconds of synchronisation; a millisecond is no fit of that.
        const double chunk_round_us = s.has("chunk_round_us") ? s.number_within("chunk_round_us", 0, 1000) : 0;
        lib.fitted[key] = {s.positive("latency_scale"), s.positive("bandwidth_scale"), chunk_round_us};
        s.reject_unknown();
      }
      lib.fitted_source = f.string("fitted_source");
      lib.fitted_band_rel = f.number_or("fitted_band_rel", 0);
      if (!(lib.fitted_band_rel >= 0 && lib.fitted_band_rel < 10)) f.fail("fitted_band_rel", "must be in [0, 10)");
      lib.fitted_launch_us_per_gpu = f.number_or("fitted_launch_us_per_gpu", 0);
      if (!(lib.fitted_launch_us_per_gpu >= 0 && lib.fitted_launch_us_per_gpu < 1000))
        f.fail("fitted_launch_us_per_gpu", "must be in [0, 1000) microseconds");
      lib.fitted_gpus_per_thread = static_cast<int>(f.integer_or("fitted_gpus_per_thread", 0, 1, 1024));
    }
  } else if (f.has("concurrent_step_delay_us")) {
    lib.concurrent_step_delay_s = f.number_within("concurrent_step_delay_us", 0, kMaxLinkLatencySeconds * 1e6) * 1e-6;
  }
  f.string("source");  // where the version and the machine facts come from
  f.reject_unknown();
  return lib;
}

using LinkClasses = std::map<std::string, LinkParams>;

// `link_classes`: the parameters of every class the file defines, each with its source.
LinkClasses parse_link_classes(JsonFields& top) {
  LinkClasses classes;
  JsonFields lc = top.object("link_classes");
  for (auto& [key, value] : top.raw("link_classes").items()) {
    LinkClass c;
    if (!parse_link_class(key, c)) lc.fail(key, "unknown link class (known: " + class_list() + ")");
    JsonFields f = lc.object(key);
    classes[key] = parse_link_params(f, c);
    f.string("source");  // every number needs its source
    f.reject_unknown();
  }
  return classes;
}

// `node.devices` into spec.devices, their NICs resolved; returns each device's index by name.
std::map<std::string, int> parse_devices(JsonFields& node, const std::string& file, ClusterSpec& spec) {
  std::map<std::string, int> index;
  const Json& devices = node.array("devices");
  if (devices.size() > static_cast<std::size_t>(kMaxDevicesPerNode))
    node.fail("devices", std::to_string(devices.size()) + " devices exceed the limit of " +
                             std::to_string(kMaxDevicesPerNode) + " per node");
  std::vector<std::string> nic_names;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    JsonFields d(devices[i], file, "node.devices[" + std::to_string(i) + "]");
    TemplateDevice device{d.string("name"), parse_device_kind(d, "kind")};
    if (index.count(device.name)) d.fail("name", "duplicate device name \"" + device.name + "\"");
    nic_names.push_back(d.string_or("nic", ""));
    if (!nic_names.back().empty() && device.kind != DeviceKind::Gpu && device.kind != DeviceKind::CpuRank)
      d.fail("nic", "only rank devices (gpu, cpu_rank) choose a nic");
    d.reject_unknown();
    index[device.name] = static_cast<int>(spec.devices.size());
    spec.devices.push_back(device);
  }
  for (std::size_t i = 0; i < spec.devices.size(); ++i) {
    if (nic_names[i].empty()) continue;
    auto it = index.find(nic_names[i]);
    const std::string field = "node.devices[" + std::to_string(i) + "].nic";
    if (it == index.end() || spec.devices[it->second].kind != DeviceKind::Nic)
      throw InputError(file, field, "\"" + nic_names[i] + "\" is not a device of kind nic");
    spec.devices[i].nic = it->second;
  }
  return index;
}

// One entry of `node.links`: its ends by device name, its class's parameters and the link's own overrides.
TemplateLink parse_link(JsonFields& l, const LinkClasses& classes, const std::map<std::string, int>& index) {
  TemplateLink link;
  for (auto [key, end] : {std::pair{"a", &link.a}, std::pair{"b", &link.b}}) {
    std::string name = l.string(key);
    auto it = index.find(name);
    if (it == index.end()) l.fail(key, "unknown device \"" + name + "\"");
    *end = it->second;
  }
  if (link.a == link.b) l.fail("b", "a link must join two different devices");
  std::string cls = l.string("class");
  auto it = classes.find(cls);
  if (it == classes.end()) {
    LinkClass unused;
    l.fail("class", parse_link_class(cls, unused) ? "class \"" + cls + "\" is not defined in link_classes"
                                                  : "unknown link class \"" + cls + "\" (known: " + class_list() + ")");
  }
  link.params = it->second;
  link.params.latency_s = link_latency_s(l, "latency_s", link.params.latency_s);
  link.params.bandwidth_Bps =
      l.positive_or("bandwidth_Bps", link.params.bandwidth_Bps) * static_cast<double>(l.integer_or("lanes", 1, 1, 64));
  link.params.efficiency = l.number_or("efficiency", link.params.efficiency);
  if (!(link.params.efficiency > 0 && link.params.efficiency <= 1)) l.fail("efficiency", "must be in (0, 1]");
  l.string_or("source", "");
  l.reject_unknown();
  return link;
}

// `nodes` (or --nodes), within the limits on ranks per node and in all.
void parse_node_count(JsonFields& top, JsonFields& node, int nodes_override, ClusterSpec& spec) {
  const std::string& file = top.file();
  spec.nodes = static_cast<int>(top.integer("nodes", 1, kMaxNodes));
  if (nodes_override > 0) {
    if (nodes_override > kMaxNodes)
      throw InputError(
          "--nodes", "",
          std::to_string(nodes_override) + " exceeds the limit of " + std::to_string(kMaxNodes) + " nodes");
    spec.nodes = nodes_override;
  }
  const auto rpn = std::count_if(spec.devices.begin(), spec.devices.end(), [](const TemplateDevice& d) {
    return d.kind == DeviceKind::Gpu || d.kind == DeviceKind::CpuRank;
  });
  if (rpn > kMaxRanksPerNode)
    node.fail("devices", std::to_string(rpn) + " ranks (gpu, cpu_rank) exceed the limit of " +
                             std::to_string(kMaxRanksPerNode) + " per node");
  if (rpn * spec.nodes > kMaxRanks)
    throw InputError(nodes_override > 0 ? "--nodes" : file, nodes_override > 0 ? "" : "nodes",
                     std::to_string(spec.nodes) + " nodes of " + std::to_string(rpn) + " ranks exceed the limit of " +
                         std::to_string(kMaxRanks) + " ranks");
}

// `fabric`: the switches joining the nodes.
FabricSpec parse_fabric(JsonFields& top, const LinkClasses& classes) {
  FabricSpec out;
  JsonFields fabric = top.object("fabric");
  static const std::map<std::string, FabricKind> fabric_kinds = {{"none", FabricKind::None},
                                                                 {"single_switch", FabricKind::SingleSwitch},
                                                                 {"fat_tree", FabricKind::FatTree},
                                                                 {"rail_optimized", FabricKind::RailOptimized}};
  std::string kind = fabric.string("kind");
  auto fk = fabric_kinds.find(kind);
  if (fk == fabric_kinds.end())
    fabric.fail("kind", "unknown fabric \"" + kind + "\" (none, single_switch, fat_tree, rail_optimized)");
  out.kind = fk->second;
  if (out.kind != FabricKind::None) {
    std::string cls = fabric.string("link_class");
    auto it = classes.find(cls);
    if (it == classes.end()) fabric.fail("link_class", "class \"" + cls + "\" is not defined in link_classes");
    out.nic_link = it->second;
    out.spine_link = it->second;
  }
  if (out.kind == FabricKind::FatTree || out.kind == FabricKind::RailOptimized) {
    out.nodes_per_leaf = static_cast<int>(fabric.integer("nodes_per_leaf", 1, 1 << 20));
    out.spines = static_cast<int>(fabric.integer("spines", 1, 1 << 16));
    out.oversubscription = fabric.number_or("oversubscription", 1.0);
    if (!(out.oversubscription >= 1)) fabric.fail("oversubscription", "must be >= 1");
  }
  fabric.reject_unknown();
  return out;
}

std::unique_ptr<Topology> load_cluster(const Json& root, const std::string& file, int nodes_override) {
  JsonFields top(root, file, "");
  ClusterSpec spec;
  spec.source_file = file;
  spec.name = top.string("name");
  top.string_or("description", "");
  top.raw_optional("sources");
  const LinkClasses classes = parse_link_classes(top);
  JsonFields node = top.object("node");
  const std::map<std::string, int> index = parse_devices(node, file, spec);
  const Json& links = node.array("links");
  for (std::size_t i = 0; i < links.size(); ++i) {
    JsonFields l(links[i], file, "node.links[" + std::to_string(i) + "]");
    const TemplateLink link = parse_link(l, classes, index);
    // Two links between one pair of devices are one link written twice, or parallel links, which `lanes` states.
    for (std::size_t j = 0; j < spec.links.size(); ++j)
      if (std::minmax(spec.links[j].a, spec.links[j].b) == std::minmax(link.a, link.b))
        l.fail("b", "joins the devices node.links[" + std::to_string(j) +
                        "] joins already (one link per pair: give parallel links as lanes)");
    spec.links.push_back(link);
  }
  node.reject_unknown();
  parse_node_count(top, node, nodes_override, spec);
  spec.fabric = parse_fabric(top, classes);
  spec.gpudirect_p2p = top.boolean_or("gpudirect_p2p", true);
  spec.gpudirect_rdma = top.boolean_or("gpudirect_rdma", true);
  CommLibrary library = parse_library(top);
  top.reject_unknown();
  auto topology = std::make_unique<ClusterTopology>(std::move(spec));
  topology->set_library(std::move(library));
  return topology;
}

std::unique_ptr<Topology> load_astra(const Json& root, const std::string& file, int nodes_override) {
  JsonFields top(root, file, "");
  std::string name = top.string("name");
  top.string_or("description", "");
  top.raw_optional("sources");
  JsonFields astra = top.object("astra_sim");
  const Json& kinds = astra.array("topology");
  const Json& counts = astra.array("npus_count");
  const Json& bandwidths = astra.array("bandwidth");
  const Json& latencies = astra.array("latency");
  if (kinds.empty()) astra.fail("topology", "needs at least one dimension");
  for (auto [key, arr] :
       {std::pair{"npus_count", &counts}, std::pair{"bandwidth", &bandwidths}, std::pair{"latency", &latencies}})
    if (arr->size() != kinds.size())
      astra.fail(key, "has " + std::to_string(arr->size()) + " entries, topology has " + std::to_string(kinds.size()));
  std::vector<AstraDimension> dims;
  for (std::size_t i = 0; i < kinds.size(); ++i) {
    const std::string at = "[" + std::to_string(i) + "]";
    static const std::map<std::string, BlockKind> blocks = {
        {"Ring", BlockKind::Ring}, {"FullyConnected", BlockKind::FullyConnected}, {"Switch", BlockKind::Switch}};
    auto b = kinds[i].is_string() ? blocks.find(kinds[i].get<std::string>()) : blocks.end();
    if (b == blocks.end()) astra.fail("topology" + at, "must be Ring, FullyConnected or Switch");
    if (!counts[i].is_number_integer() || counts[i].get<std::int64_t>() < 1 ||
        counts[i].get<std::int64_t>() > (1 << 24))
      astra.fail("npus_count" + at, "must be an integer in [1, 16777216]");
    if (!bandwidths[i].is_number() || !(bandwidths[i].get<double>() > 0))
      astra.fail("bandwidth" + at, "must be > 0 (GB/s)");
    if (!latencies[i].is_number() ||
        !(latencies[i].get<double>() >= 0 && latencies[i].get<double>() <= kMaxLinkLatencySeconds * 1e9))
      astra.fail("latency" + at, "must be in [0, 1e9] (ns), got " + latencies[i].dump());
    LinkParams link{LinkClass::Fabric, latencies[i].get<double>() * 1e-9, bandwidths[i].get<double>() * 1e9, 1.0};
    dims.push_back({b->second, static_cast<int>(counts[i].get<std::int64_t>()), link});
  }
  if (nodes_override > 0) {
    if (dims.size() < 2)
      throw InputError(file, "astra_sim.topology", "--nodes needs at least two dimensions (it sets the last)");
    dims.back().npus = nodes_override;
  }
  std::int64_t npus = 1;  // each dimension is at most 2^24, so the product is checked before it can overflow
  for (const AstraDimension& d : dims) {
    npus *= d.npus;
    if (npus > kMaxRanks)
      throw InputError(nodes_override > 0 ? "--nodes" : file, nodes_override > 0 ? "" : "astra_sim.npus_count",
                       "the dimensions give more than " + std::to_string(kMaxRanks) + " NPUs, the limit");
  }
  astra.reject_unknown();
  top.reject_unknown();
  return std::make_unique<AstraTopology>(name, file, std::move(dims));
}

}  // namespace

std::vector<Topology::RingHop> Topology::ring_hops() const {
  const std::vector<int> order = ring_order();
  std::vector<RingHop> hops;
  for (std::size_t i = 0; i < order.size() && order.size() > 1; ++i) {
    const int a = order[i], b = order[(i + 1) % order.size()];
    const RingHop hop{path_cost(a, b), node_of(a) == node_of(b)};
    const bool known = std::any_of(hops.begin(), hops.end(), [&](const RingHop& h) {
      return h.same_node == hop.same_node && h.cost.latency_s == hop.cost.latency_s &&
             h.cost.bottleneck_Bps == hop.cost.bottleneck_Bps;
    });
    if (!known) hops.push_back(hop);
  }
  return hops;
}

std::string_view to_string(GpuArch a) {
  static constexpr std::string_view names[] = {"volta", "ampere", "hopper", "blackwell"};
  return names[static_cast<int>(a)];
}
bool parse_gpu_arch(std::string_view s, GpuArch& out) {
  for (int i = 0; i <= static_cast<int>(GpuArch::Blackwell); ++i)
    if (to_string(static_cast<GpuArch>(i)) == s) return (out = static_cast<GpuArch>(i)), true;
  return false;
}

std::string_view to_string(LinkClass c) {
  for (auto [name, value] : kLinkClassNames)
    if (value == c) return name;
  return "?";
}

bool parse_link_class(std::string_view name, LinkClass& out) {
  for (auto [n, value] : kLinkClassNames)
    if (n == name) {
      out = value;
      return true;
    }
  return false;
}

std::unique_ptr<Topology> load_topology(const std::string& path, int nodes_override) {
  const std::shared_ptr<const Json> document = read_json_document(path);  // shared within a grid evaluation
  return load_topology_document(*document, path, nodes_override);
}

std::unique_ptr<Topology> load_topology_document(const Json& root, const std::string& file, int nodes_override) {
  if (!root.is_object()) throw InputError(file, "(top level)", "must be a JSON object");
  if (root.contains("astra_sim")) return load_astra(root, file, nodes_override);
  return load_cluster(root, file, nodes_override);
}

}  // namespace commsim
