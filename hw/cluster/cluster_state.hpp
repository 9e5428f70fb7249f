#pragma once
// The record of one emulated cluster on this machine (hw/cluster/emulated_cluster.hpp), kept in a state file so that
// any later commsim process can find it: who owns it, what it is made of, and whether it is still in use. A cluster
// whose owner died without cleaning up (SIGKILL, a crash) is "stale": the next command that brings a cluster up,
// and `commsim cluster down`, remove it -- processes inside it, namespaces (with their veths and bridge), temporary
// and shared-memory files, and the state file.

#include <sys/types.h>

#include <string>
#include <vector>

namespace commsim::hw {

struct ClusterState {
  std::string prefix;                  // "cs" + 6 hex digits; every object's name starts with it
  pid_t owner_pid = 0;                 // the process that built it (and removes it, unless persistent)
  unsigned long long owner_start = 0;  // its start time (/proc/PID/stat field 22), to tell a reused PID apart
  bool persistent = false;             // kept after its owner ends, until `commsim cluster down`
  int nodes = 0;
  double nic_bandwidth_Bps = 0;
  std::vector<std::string> namespaces;  // node and fabric namespaces, each "<prefix>-..."
  std::vector<std::string> temp_dirs;   // launch files, Open MPI's session files, shared memory; ".../commsim-<prefix>"
};

// Where state files live: $COMMSIM_STATE_DIR if set (so that independent test runs on one machine keep apart),
// otherwise /run/commsim.
std::string state_dir();
std::string state_path(const std::string& prefix);
bool is_prefix(const std::string& text);

// Start time of a process in clock ticks since boot, 0 if there is no such process or it is a zombie.
unsigned long long process_start(pid_t pid);

// Writes the state file atomically (a reader never sees half of it). Throws ClusterError.
void write_state(const ClusterState& state);
// Reads and checks a state file: every namespace and temporary directory it lists must belong to its prefix, so a
// corrupted file can never make commsim remove anything else. Throws ClusterError (one line).
ClusterState read_state(const std::string& prefix);
// Prefixes of every state file in state_dir().
std::vector<std::string> recorded_prefixes();

// Processes inside any of the cluster's namespaces (mpirun, orted, ranks, a shell someone left in a node).
std::vector<pid_t> processes_inside(const ClusterState& state);
// Owner alive (same PID and start time) and the cluster not yet handed over to the state file (not persistent).
bool owner_alive(const ClusterState& state);
// Not persistent and its owner is gone: nobody will ever remove it but a later commsim command.
bool is_stale(const ClusterState& state);
// Why the cluster must not be removed now: "" when nothing uses it, otherwise a phrase such as
// "its run (PID 4242) is alive" or "3 processes run inside it (PID 77 mpirun, ...)".
std::string in_use(const ClusterState& state);

// Removes everything the state lists: SIGTERM to the processes inside, SIGKILL to those left after grace_s, then
// namespaces, temporary directories and the state file. Throws ClusterError if something could not be removed.
void remove_recorded(const ClusterState& state, double grace_s);

}  // namespace commsim::hw
