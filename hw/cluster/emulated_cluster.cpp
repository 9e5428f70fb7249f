#include "hw/cluster/emulated_cluster.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "hw/cluster/cleanup_registry.hpp"
#include "hw/cluster/cluster_state.hpp"
#include "hw/cluster/system_tools.hpp"

namespace commsim::hw {
namespace {

namespace fs = std::filesystem;

constexpr double kMinShapedBandwidth_Bps = 1e3;
constexpr double kMaxShapedBandwidth_Bps = 1e12;
constexpr double kBurst_s = 0.004;        // tbf bucket: 4 ms of traffic, at least rate/HZ for HZ >= 250
constexpr double kMinBurst_bytes = 3028;  // ... and at least two full Ethernet frames
constexpr const char* kNetnsDir = "/run/netns";
constexpr const char* kShmDir = "/dev/shm";
constexpr double kStopGrace_s = 2;   // how long processes left in a cluster get after SIGTERM, before SIGKILL
constexpr double kOwnerStop_s = 15;  // how long `down --force` waits for a run to stop and clean up itself

std::string netns_path(const std::string& name) { return std::string(kNetnsDir) + "/" + name; }
std::string fabric_namespace(const std::string& prefix) { return prefix + "-fab"; }
std::string bridge_name(const std::string& prefix) { return prefix + "-br"; }
std::string peer_name(const std::string& prefix, int node) { return prefix + "-p" + std::to_string(node); }

// A namespace or a state file of this prefix exists; one that cannot be checked counts as taken.
bool prefix_taken(const std::string& prefix) {
  std::error_code unreadable;
  if (fs::exists(netns_path(fabric_namespace(prefix)), unreadable) || unreadable) return true;
  return fs::exists(state_path(prefix), unreadable) || unreadable;
}

// A run-unique prefix, "cs" + 6 random hex digits, not used by any namespace or state file on this machine.
std::string fresh_prefix() {
  std::random_device random;
  for (int attempt = 0; attempt < 100; ++attempt) {
    char prefix[16];
    std::snprintf(prefix, sizeof prefix, "cs%06x", random() & 0xffffffU);
    if (!prefix_taken(prefix)) return prefix;
  }
  throw ClusterError("no unused emulated-cluster prefix found");
}

void validate(const EmulatedClusterSpec& spec) {
  if (spec.nodes < 1 || spec.nodes > kMaxNodes) {
    throw ClusterError("EmulatedClusterSpec.nodes must be between 1 and " + std::to_string(kMaxNodes) + ", got " +
                       std::to_string(spec.nodes));
  }
  const double rate_Bps = spec.nic_bandwidth_Bps;
  if (!(rate_Bps == 0 || (rate_Bps >= kMinShapedBandwidth_Bps && rate_Bps <= kMaxShapedBandwidth_Bps))) {
    char got[32];
    std::snprintf(got, sizeof got, "%g", rate_Bps);
    throw ClusterError(
        std::string(
            "EmulatedClusterSpec.nic_bandwidth_Bps must be 0 (unshaped) or between 1e3 and 1e12 bytes/s, got ") +
        got);
  }
  if (!(spec.nic_burst_bytes == 0 || (spec.nic_burst_bytes >= kMinBurst_bytes && spec.nic_burst_bytes <= 1e12)))
    throw ClusterError("EmulatedClusterSpec.nic_burst_bytes must be 0 (4 ms at the rate) or between " +
                       std::to_string(std::llround(kMinBurst_bytes)) + " and 1e12 bytes, got " +
                       std::to_string(spec.nic_burst_bytes));
}

// tbf on one device's egress: the rate in bits/s (tc's "bps" would mean bytes), the spec's bucket (by default 4 ms
// of traffic; tbf splits larger GSO packets itself), and up to 50 ms of queue before it drops, enough for one TCP
// stream to fill it.
std::vector<std::string> tbf_command(const std::string& tc, const std::string& netns, const std::string& device,
                                     const EmulatedClusterSpec& spec) {
  const std::string rate = std::to_string(std::llround(spec.nic_bandwidth_Bps * 8)) + "bit";
  const std::string burst = std::to_string(std::llround(tbf_burst_bytes(spec)));
  return {tc,    "-n",   netns, "qdisc", "replace", "dev",     device, "root",
          "tbf", "rate", rate,  "burst", burst,     "latency", "50ms"};
}

void write_text_file(const std::string& path, const std::string& text, fs::perms permissions) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  out.close();
  std::error_code error;
  if (out) fs::permissions(path, permissions, error);
  if (!out || error) throw ClusterError("cannot write " + path);
}

}  // namespace

bool has_net_admin(std::string* why) {
  try {
    install_cleanup_handlers();
    const std::string probe = fresh_prefix() + "-probe";
    const int slot = claim_cleanup_slot({netns_path(probe)});
    std::string error;
    try {
      run_helper({find_tool("ip"), "netns", "add", probe});
    } catch (const ClusterError& e) {
      error = e.what();
    }
    remove_cleanup_slot(slot);
    if (!error.empty()) throw ClusterError(error);
    return true;
  } catch (const ClusterError& e) {
    if (why)
      *why =
          "cannot create network namespaces (needs root, or CAP_NET_ADMIN and CAP_SYS_ADMIN): " + std::string(e.what());
    return false;
  }
}

EmulatedCluster::EmulatedCluster(EmulatedClusterSpec spec, std::string prefix, int cleanup_slot)
    : spec_(spec), prefix_(std::move(prefix)), cleanup_slot_(cleanup_slot) {}

EmulatedCluster::EmulatedCluster(EmulatedCluster&& other) noexcept
    : spec_(other.spec_), prefix_(std::move(other.prefix_)), cleanup_slot_(std::exchange(other.cleanup_slot_, -1)) {}

EmulatedCluster& EmulatedCluster::operator=(EmulatedCluster&& other) noexcept {
  if (this != &other) {
    EmulatedCluster old(std::move(*this));
    spec_ = other.spec_;
    prefix_ = std::move(other.prefix_);
    cleanup_slot_ = std::exchange(other.cleanup_slot_, -1);
  }
  return *this;
}

// Removes the namespaces (which takes their veths and the bridge with them), the launch and shared-memory
// directories and the state file.
EmulatedCluster::~EmulatedCluster() {
  if (cleanup_slot_ < 0) return;
  bool removed = true;
  for (const std::string& dir : {launch_dir(), shm_dir()}) {  // first, so that the state file goes too
    std::error_code error;
    fs::remove_all(dir, error);
    removed = removed && !error;
  }
  removed = remove_cleanup_slot(cleanup_slot_) && removed;
  if (!removed) std::fprintf(stderr, "commsim: could not fully remove emulated cluster %s\n", prefix_.c_str());
}

double tbf_burst_bytes(const EmulatedClusterSpec& spec) {
  return spec.nic_burst_bytes > 0 ? spec.nic_burst_bytes : std::max(spec.nic_bandwidth_Bps * kBurst_s, kMinBurst_bytes);
}

// Registers everything for cleanup first, writes the state file, then builds fabric and nodes; if any step
// throws, the half-built cluster's destructor removes what exists. Clusters left by dead owners go first.
EmulatedCluster EmulatedCluster::up(const EmulatedClusterSpec& spec, bool persistent) {
  validate(spec);
  install_cleanup_handlers();
  remove_stale();
  const std::string ip = find_tool("ip");
  const std::string tc = spec.nic_bandwidth_Bps > 0 ? find_tool("tc") : "";
  ClusterState state;
  state.prefix = fresh_prefix();
  state.owner_pid = getpid();
  state.owner_start = process_start(getpid());
  state.nodes = spec.nodes;
  state.nic_bandwidth_Bps = spec.nic_bandwidth_Bps;
  state.namespaces = {fabric_namespace(state.prefix)};
  for (int node = 0; node < spec.nodes; ++node) state.namespaces.push_back(state.prefix + "-n" + std::to_string(node));
  EmulatedCluster cluster(spec, state.prefix, -1);
  state.temp_dirs = {cluster.launch_dir(), cluster.shm_dir()};
  std::vector<std::string> paths;
  for (const std::string& name : state.namespaces) paths.push_back(netns_path(name));
  paths.push_back(cluster.launch_dir() + "/" + state.prefix + "-hosts");
  paths.push_back(cluster.launch_dir() + "/" + state.prefix + "-rsh-agent");
  paths.insert(paths.end(), state.temp_dirs.begin(), state.temp_dirs.end());
  paths.push_back(state_path(state.prefix));

  cluster.cleanup_slot_ = claim_cleanup_slot(paths);
  set_state_file_path(cluster.cleanup_slot_, static_cast<int>(paths.size()) - 1);
  write_state(state);
  cluster.create_fabric(ip);
  for (int node = 0; node < spec.nodes; ++node) cluster.create_node(node, ip, tc);
  if (persistent) cluster.persist();
  return cluster;
}

// From now on the state file owns the cluster: `commsim cluster down` removes it, not this process's end.
void EmulatedCluster::persist() {
  if (cleanup_slot_ < 0) return;
  ClusterState state = read_state(prefix_);
  state.persistent = true;
  write_state(state);
  release_cleanup_slot(cleanup_slot_);
  cleanup_slot_ = -1;
}

std::string EmulatedCluster::launch_dir() const {
  return (fs::absolute(fs::temp_directory_path()) / ("commsim-" + prefix_)).string();
}

std::string EmulatedCluster::shm_dir() const { return std::string(kShmDir) + "/commsim-" + prefix_; }

// The fabric namespace holds the bridge every node's veth peer is attached to.
void EmulatedCluster::create_fabric(const std::string& ip) const {
  const std::string fabric = fabric_namespace(prefix_);
  run_helper({ip, "netns", "add", fabric});
  run_helper({ip, "-n", fabric, "link", "set", "lo", "up"});
  run_helper({ip, "-n", fabric, "link", "add", bridge_name(prefix_), "type", "bridge"});
  run_helper({ip, "-n", fabric, "link", "set", bridge_name(prefix_), "up"});
}

// A node: its namespace, a veth created directly inside it (the host's namespace never sees it) with the peer in
// the fabric, its address, and tbf on both the node's egress and the bridge's egress toward the node.
void EmulatedCluster::create_node(int node, const std::string& ip, const std::string& tc) const {
  const std::string fabric = fabric_namespace(prefix_);
  const std::string netns = node_namespace(node);
  const std::string peer = peer_name(prefix_, node);
  run_helper({ip, "netns", "add", netns});
  run_helper(
      {ip, "link", "add", interface_name(), "netns", netns, "type", "veth", "peer", "name", peer, "netns", fabric});
  run_helper({ip, "-n", fabric, "link", "set", peer, "master", bridge_name(prefix_), "up"});
  run_helper({ip, "-n", netns, "link", "set", "lo", "up"});
  run_helper({ip, "-n", netns, "addr", "add", node_address(node) + "/16", "dev", interface_name()});
  run_helper({ip, "-n", netns, "link", "set", interface_name(), "up"});
  if (spec_.nic_bandwidth_Bps > 0) {
    run_helper(tbf_command(tc, netns, interface_name(), spec_));
    run_helper(tbf_command(tc, fabric, peer, spec_));
  }
}

// A cluster in use is refused unless forced. Forced, a live owner (a `commsim run`) is asked to stop with SIGTERM,
// which ends its job and removes the cluster; whatever is left after kOwnerStop_s is removed here.
void EmulatedCluster::down(const std::string& prefix, bool force) {
  const ClusterState state = read_state(prefix);
  const std::string busy = in_use(state);
  if (!busy.empty() && !force)
    throw ClusterError("emulated cluster " + prefix + " is in use: " + busy + "; give --force to end it");
  if (owner_alive(state)) {
    kill(state.owner_pid, SIGTERM);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(kOwnerStop_s);
    while (owner_alive(state) && fs::exists(state_path(prefix)) && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (!fs::exists(state_path(prefix))) return;  // the run removed its cluster itself
  }
  remove_recorded(state, kStopGrace_s);
}

// Tries every cluster, then reports the first failure, so one bad or busy cluster does not keep the others alive.
std::vector<std::string> EmulatedCluster::down_all(bool force) {
  std::vector<std::string> removed;
  std::string first_failure;
  for (const std::string& prefix : recorded_prefixes()) {
    try {
      down(prefix, force);
      removed.push_back(prefix);
    } catch (const ClusterError& e) {
      if (first_failure.empty()) first_failure = e.what();
    }
  }
  if (!first_failure.empty()) throw ClusterError(first_failure);
  return removed;
}

// A stale cluster's owner is dead, so nothing else will remove it; a state file that cannot be read is left for
// `cluster down` to report.
std::vector<std::string> EmulatedCluster::remove_stale() {
  std::vector<std::string> removed;
  for (const std::string& prefix : recorded_prefixes()) {
    try {
      const ClusterState state = read_state(prefix);
      if (!is_stale(state)) continue;
      remove_recorded(state, 0);
      std::fprintf(stderr, "commsim: removed emulated cluster %s, left behind by PID %d, which is gone\n",
                   prefix.c_str(), static_cast<int>(state.owner_pid));
      removed.push_back(prefix);
    } catch (const ClusterError&) {
    }
  }
  return removed;
}

void EmulatedCluster::check_node(int node) const {
  if (node < 0 || node >= spec_.nodes) {
    throw ClusterError("node " + std::to_string(node) + " is not in cluster " + prefix_ + " (nodes 0.." +
                       std::to_string(spec_.nodes - 1) + ")");
  }
}

std::string EmulatedCluster::node_namespace(int node) const {
  check_node(node);
  return prefix_ + "-n" + std::to_string(node);
}

std::string EmulatedCluster::node_address(int node) const {
  check_node(node);
  return "198.18.0." + std::to_string(node + 1);
}

std::string EmulatedCluster::interface_name() const { return prefix_ + "-nic"; }

// mpirun must run inside node 0: its daemons in the other nodes connect back to it over the fabric, which the
// host namespace is not part of. Each remote node gets its own hostname (a UTS namespace) because Open MPI names
// shared-memory segments and session directories by hostname, and identical names on two "nodes" collide.
std::string EmulatedCluster::write_mpi_launch_files(const std::string& dir, int ranks_per_node) const {
  if (ranks_per_node < 1) {
    throw ClusterError("ranks_per_node must be at least 1, got " + std::to_string(ranks_per_node));
  }
  const bool plain = !dir.empty() && std::all_of(dir.begin(), dir.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::strchr("._/+-", c) != nullptr;
  });
  if (!plain) throw ClusterError("MPI launch directory may only contain [A-Za-z0-9._/+-], got '" + dir + "'");
  std::error_code error;
  fs::create_directories(dir, error);
  if (error) throw ClusterError("cannot create " + dir + ": " + error.message());
  fs::create_directories(shm_dir(), error);
  if (error) throw ClusterError("cannot create " + shm_dir() + ": " + error.message());

  const std::string hostfile = dir + "/" + prefix_ + "-hosts";
  const std::string agent = dir + "/" + prefix_ + "-rsh-agent";
  std::string hosts;
  std::string cases;
  for (int node = 0; node < spec_.nodes; ++node) {
    hosts += node_address(node) + " slots=" + std::to_string(ranks_per_node) + "\n";
    cases += "  " + node_address(node) + ") node=" + node_namespace(node) + " ;;\n";
  }
  write_text_file(hostfile, hosts, fs::perms::owner_read | fs::perms::owner_write);
  std::string script = "#!/bin/sh\n";
  script +=
      "# rsh agent for emulated cluster " + prefix_ + ": mpirun calls it like ssh, as \"agent HOST COMMAND...\";\n";
  script += "# it runs COMMAND with sh inside HOST's network namespace, under that node's hostname.\n";
  script += "host=\"$1\"; shift\n";
  script += "case \"$host\" in\n" + cases;
  script += "  *) echo \"commsim rsh agent: $host is not a node of cluster " + prefix_ + "\" >&2; exit 255 ;;\n";
  script += "esac\n";
  script += "exec " + find_tool("ip") + " netns exec \"$node\" " + find_tool("unshare") + " --uts /bin/sh -c \"" +
            find_tool("hostname") + " $node && $*\"\n";
  write_text_file(agent, script, fs::perms::owner_all);

  // clang-format off
  return join({find_tool("ip"), "netns", "exec", node_namespace(0), "mpirun", "--hostfile", hostfile,
               "--mca", "plm_rsh_agent", agent,
               "--mca", "btl_tcp_if_include", interface_name(),
               "--mca", "oob_tcp_if_include", interface_name(),
               "--mca", "mpi_yield_when_idle", "1", "--allow-run-as-root", "--oversubscribe",
               // Open MPI's session files and shared-memory segments in the cluster's own directories, which the
               // cluster's removal takes away even when ranks were killed before cleaning up.
               "--mca", "orte_tmpdir_base", dir, "--mca", "btl_vader_backing_directory", shm_dir()});
  // clang-format on
}

}  // namespace commsim::hw
