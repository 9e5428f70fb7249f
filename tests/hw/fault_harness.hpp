// What the cluster fault tests share: a private sandbox per test (its own TMPDIR and cluster state directory, so
// that `cluster down --all` and the leftover checks see only what this test made), commsim started in it as a
// child process, and the census of everything a run can leave behind.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <set>
#include <string>
#include <vector>

namespace commsim::test {

class FaultSandbox {
 public:
  FaultSandbox();   // creates the directories and notes what /dev/shm holds
  ~FaultSandbox();  // kills whatever this sandbox's runs left, removes their clusters and the directories
  FaultSandbox(const FaultSandbox&) = delete;
  FaultSandbox& operator=(const FaultSandbox&) = delete;

  // Starts `commsim ARGS` with TMPDIR and COMMSIM_STATE_DIR pointing into the sandbox, plus `env`; stdout and
  // stderr go to a log file. Returns its PID.
  pid_t start(const std::vector<std::string>& args, const std::vector<std::string>& env = {});
  // Waits up to timeout_s for `pid` to end; returns its wait status, or -1 if it did not end (it is then killed).
  int wait_exit(pid_t pid, double timeout_s);
  bool running(pid_t pid) const;  // not ended yet (a child of this process)
  // Runs `commsim ARGS` to the end (at most timeout_s) and returns its exit code (-1: did not exit normally).
  int run(const std::vector<std::string>& args, double timeout_s = 60);
  std::string log() const;  // everything the commands started so far printed

  // Processes started by this sandbox's commands (found by the TMPDIR in their environment, which every process
  // of a job inherits: launcher, mpirun, rsh agents, orted, ranks).
  std::vector<pid_t> processes() const;
  std::vector<pid_t> processes_named(const std::string& comm) const;
  // Waits until `count` ranks (commsim processes other than `launcher`) run; false after timeout_s.
  bool wait_for_ranks(pid_t launcher, int count, double timeout_s) const;
  // Prefixes of the clusters recorded in this sandbox's state directory.
  std::vector<std::string> clusters() const;
  // Waits until a cluster is recorded; "" after timeout_s.
  std::string wait_for_cluster(double timeout_s) const;

  // One line per thing left behind by this sandbox's commands, "" when nothing is: a process, a namespace or host
  // link named with `prefix`, a state file, a file in the sandbox's TMPDIR, or a /dev/shm entry that was not there
  // before and names the prefix (the job's shared-memory directory, or a segment named after a node's hostname).
  std::string leftovers(const std::string& prefix) const;

  const std::string& temp_dir() const { return temp_dir_; }
  const std::string& state_dir() const { return state_dir_; }

 private:
  std::string root_, temp_dir_, state_dir_, log_;
  std::set<std::string> shm_before_;
};

double seconds_since(std::chrono::steady_clock::time_point start);
// The prefix in commsim's "emulated cluster csXXXXXX: ..." line, "" if none.
std::string cluster_prefix_in(const std::string& text);

}  // namespace commsim::test
