#pragma once
// Emulated cluster: N "nodes" on this machine, each a Linux network namespace with one NIC (a veth) whose peer
// sits on a bridge inside a fabric namespace; both directions of every NIC are rate-limited with tc tbf.
// Needs root (CAP_NET_ADMIN + CAP_SYS_ADMIN); has_net_admin() says whether that is available.

#include <stdexcept>
#include <string>
#include <vector>

namespace commsim::hw {

struct EmulatedClusterSpec {
  int nodes = 2;                     // number of emulated nodes (namespaces), 1..64
  double nic_bandwidth_Bps = 125e6;  // egress rate of each node's NIC in bytes/s, shaped with tc tbf; 0 = unshaped
  // tbf's bucket (burst) in bytes: what passes unshaped after an idle spell. 0 = 4 ms of traffic at the rate, at
  // least two full frames; a topology's burst_bytes sets it, so that the simulator models the bucket the cluster has.
  double nic_burst_bytes = 0;
};

// The bucket tbf gets: nic_burst_bytes, or its default.
double tbf_burst_bytes(const EmulatedClusterSpec& spec);

// Every failure of the emulated cluster: the message is one line saying what failed and why.
class ClusterError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// True when network namespaces can be made here (probed by creating and removing one). Otherwise false, with a
// one-line reason in *why (if given), so the caller can fall back to plain, unshaped loopback.
bool has_net_admin(std::string* why = nullptr);

// RAII owner of one emulated cluster. Objects it creates carry the prefix "cs" + 6 hex digits: namespaces
// <prefix>-fab and <prefix>-n<i>, the bridge <prefix>-br, veths <prefix>-nic (node side, same name in every node)
// and <prefix>-p<i> (bridge side). Node i has address 198.18.0.<i+1>/16 (198.18.0.0/15 is reserved for benchmarks,
// RFC 2544). A state file (hw/cluster/cluster_state.hpp) records it with its owner's PID, its namespaces and its
// directories ($TMPDIR/commsim-<prefix>, /dev/shm/commsim-<prefix>). Everything is removed by the destructor, on
// exit() and on SIGINT/SIGTERM/SIGHUP (the signal is then re-raised), unless the cluster is persistent, in which
// case down()/down_all() remove it. A cluster whose owner died without removing it is removed by the next up(),
// down() or down_all().
class EmulatedCluster {
 public:
  static EmulatedCluster up(const EmulatedClusterSpec& spec, bool persistent = false);  // throws ClusterError
  // Removes a cluster by prefix. One in use (its owner alive, or processes inside a persistent one) is refused
  // unless `force`, which ends its run (SIGTERM to the owner, then to what is left inside) before removing it.
  static void down(const std::string& prefix, bool force = false);
  static std::vector<std::string> down_all(bool force = false);  // every recorded cluster; returns the prefixes
  static std::vector<std::string> remove_stale();                // clusters of dead owners; returns the prefixes

  EmulatedCluster(EmulatedCluster&& other) noexcept;
  EmulatedCluster& operator=(EmulatedCluster&& other) noexcept;
  EmulatedCluster(const EmulatedCluster&) = delete;
  EmulatedCluster& operator=(const EmulatedCluster&) = delete;
  ~EmulatedCluster();

  // Hands the cluster to its state file: it outlives this object and this process, until down().
  void persist();

  const std::string& prefix() const { return prefix_; }
  std::string launch_dir() const;  // $TMPDIR/commsim-<prefix>: launch files and Open MPI's session directory
  std::string shm_dir() const;     // /dev/shm/commsim-<prefix>: Open MPI's shared-memory segments
  const EmulatedClusterSpec& spec() const { return spec_; }
  std::string node_namespace(int node) const;  // "<prefix>-n<node>"
  std::string node_address(int node) const;    // "198.18.0.<node+1>"
  std::string interface_name() const;          // the node NIC's name, the same in every node namespace

  // Writes <dir>/<prefix>-hosts (node addresses, slots=ranks_per_node) and <dir>/<prefix>-rsh-agent (runs the
  // command it is given inside that host's namespace, under hostname <prefix>-n<i>). Returns the command prefix,
  // words separated by single spaces, that runs mpirun inside node 0 with these files; append "-np N program ...".
  // dir may only contain [A-Za-z0-9._/+-] so that the words never need quoting.
  std::string write_mpi_launch_files(const std::string& dir, int ranks_per_node) const;

 private:
  EmulatedCluster(EmulatedClusterSpec spec, std::string prefix, int cleanup_slot);
  void check_node(int node) const;
  void create_fabric(const std::string& ip) const;
  void create_node(int node, const std::string& ip, const std::string& tc) const;

  EmulatedClusterSpec spec_;
  std::string prefix_;
  int cleanup_slot_ = -1;  // registry entry listing what to remove; -1 = nothing to remove (persistent, moved-from)
};

}  // namespace commsim::hw
