#include "hw/mpi/launcher.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <thread>

#include "sim/core/error.hpp"

extern char** environ;

namespace commsim::hw {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr int kFailed = 3;
constexpr double kGraceAfterTerm_s = 3;  // after SIGTERM, how long the job gets to stop before SIGKILL
constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP};  // Ctrl-C, kill, the terminal closed

volatile sig_atomic_t g_signal = 0;
void remember_signal(int signal_number) { g_signal = signal_number; }

// hw/cluster returns the mpirun command prefix as one line of words without quoting.
std::vector<std::string> split_words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

// The job runs this very executable, whatever the current directory or PATH.
std::string self_executable() {
  std::error_code error;
  const fs::path self = fs::read_symlink("/proc/self/exe", error);
  if (error) throw InputError("/proc/self/exe", "", "cannot find the commsim executable: " + error.message());
  return self.string();
}

// Forks mpirun in its own process group, so that a time limit or a forwarded signal reaches all it started.
pid_t spawn(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t launcher = getpid();
  const pid_t pid = fork();
  if (pid < 0) throw InputError("fork", "", "cannot start mpirun");
  if (pid == 0) {
    setpgid(0, 0);
    // Should this process be killed (SIGKILL: nothing can be trapped), mpirun is told to end the job; the cluster
    // it leaves is removed by the next commsim command that touches a cluster.
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != launcher) _exit(127);
    execve(args[0], args.data(), environ);
    std::fprintf(stderr, "commsim: cannot execute %s\n", args[0]);
    _exit(127);
  }
  setpgid(pid, pid);
  return pid;
}

// Every process below this one (the job: mpirun, the rsh agents and daemons of other nodes -- which mpirun puts in
// process groups of their own -- and all ranks), read from /proc: "PID (NAME) STATE PPID ...", after NAME's ')'.
std::vector<pid_t> descendants() {
  std::vector<std::pair<pid_t, pid_t>> parent_of;  // (pid, parent)
  std::error_code ignored;
  for (const auto& entry : fs::directory_iterator("/proc", ignored)) {
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    std::getline(stat, line);
    const std::size_t name_end = line.rfind(')');
    if (name_end == std::string::npos) continue;
    std::istringstream rest(line.substr(name_end + 1));
    std::string state;
    long parent = 0;
    if (rest >> state >> parent)
      parent_of.emplace_back(static_cast<pid_t>(std::stol(line)), static_cast<pid_t>(parent));
  }
  std::vector<pid_t> found{getpid()};
  for (std::size_t i = 0; i < found.size(); ++i)
    for (auto [pid, parent] : parent_of)
      if (parent == found[i]) found.push_back(pid);
  found.erase(found.begin());
  return found;
}

void signal_job(int signal_number) {
  for (pid_t pid : descendants()) kill(pid, signal_number);
}

// Waits for mpirun; on a signal or at the time limit sends SIGTERM to the whole job, SIGKILL after a grace time.
struct Ended {
  int status = 0;
  bool timed_out = false;
  int signal_number = 0;
  bool stopped() const { return timed_out || signal_number != 0; }
};
Ended wait_for(pid_t pid, double timeout_s) {
  Ended ended;
  const auto start = Clock::now();
  std::optional<Clock::time_point> terminated_at;
  for (;;) {
    const pid_t done = waitpid(pid, &ended.status, WNOHANG);
    if (done == pid) return ended;
    const double elapsed_s = std::chrono::duration<double>(Clock::now() - start).count();
    if (!terminated_at && (g_signal != 0 || (timeout_s > 0 && elapsed_s > timeout_s))) {
      ended.signal_number = g_signal;
      ended.timed_out = g_signal == 0;
      signal_job(SIGTERM);
      terminated_at = Clock::now();
    }
    if (terminated_at && std::chrono::duration<double>(Clock::now() - *terminated_at).count() > kGraceAfterTerm_s)
      signal_job(SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// The job's processes can outlive mpirun (ranks and daemons of other nodes end a moment later). As the job's child
// subreaper this process inherits them: it waits for them -- not at all when the job was stopped -- and kills
// those still there, so that the job leaves no process behind.
void reap_orphans(bool stopped) {
  const auto deadline = Clock::now() + std::chrono::duration<double>(stopped ? 0 : kGraceAfterTerm_s);
  for (;;) {
    int status = 0;
    const pid_t reaped = waitpid(-1, &status, WNOHANG);
    if (reaped > 0) continue;
    if (reaped < 0) return;  // no child left
    if (Clock::now() > deadline) signal_job(SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// What rank 0 reported (report_job_status), or -1 when it never did.
int read_status(const std::string& path) {
  std::ifstream in(path);
  int code = -1;
  if (in >> code) return code;
  return -1;
}

// mpirun's own end, for the message when the job left no report.
std::string describe(const Ended& e) {
  if (WIFEXITED(e.status)) return "mpirun exited with status " + std::to_string(WEXITSTATUS(e.status));
  if (WIFSIGNALED(e.status)) return "mpirun was killed by signal " + std::to_string(WTERMSIG(e.status));
  return "mpirun ended";
}

}  // namespace

// As the shell would find it: the first executable of that name in $PATH.
std::string find_in_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    if (dir.empty()) continue;
    const std::string candidate = dir + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

void report_job_status(const JobContext& context, int exit_code) {
  if (!context.status_file.empty()) std::ofstream(context.status_file) << exit_code << "\n";
}

namespace {

// The job's own directories, for a run on plain loopback (a cluster has its own): Open MPI's session files and
// shared-memory segments go there, so that they are removed even when ranks are killed before cleaning up.
struct JobDirs {
  std::string temp, shm;
  JobDirs(std::string temp_dir, std::string shm_dir) : temp(std::move(temp_dir)), shm(std::move(shm_dir)) {
    std::error_code error;
    for (const std::string& dir : {temp, shm})
      if (fs::create_directories(dir, error); error) throw InputError(dir, "", "cannot create: " + error.message());
  }
  JobDirs(const JobDirs&) = delete;
  JobDirs& operator=(const JobDirs&) = delete;
  ~JobDirs() {
    std::error_code ignored;
    fs::remove_all(temp, ignored);
    fs::remove_all(shm, ignored);
  }
};

// Ctrl-C, SIGTERM and SIGHUP stop the job rather than this process alone; while they are installed they take
// precedence over the emulated cluster's own cleanup handlers, because this function removes the cluster itself,
// in order: job first, then files, then namespaces.
struct StopSignals {
  struct sigaction previous[std::size(kStopSignals)] = {};
  StopSignals() {
    struct sigaction action {};
    action.sa_handler = remember_signal;
    sigemptyset(&action.sa_mask);
    g_signal = 0;
    for (std::size_t i = 0; i < std::size(kStopSignals); ++i) sigaction(kStopSignals[i], &action, &previous[i]);
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
  ~StopSignals() {
    for (std::size_t i = 0; i < std::size(kStopSignals); ++i) sigaction(kStopSignals[i], &previous[i], nullptr);
  }
};

}  // namespace

namespace {

// Where the job runs: the emulated cluster (made here, removed when this goes) or this host's loopback, with the
// mpirun command prefix and the words that say which.
struct JobNetwork {
  std::optional<EmulatedCluster> cluster;  // declared before the directories: removed after them
  std::optional<JobDirs> loopback_dirs;
  std::vector<std::string> mpirun_argv;
  std::string job_dir, description;
};

void make_cluster(JobNetwork& net, const Emulation& emulation) {
  // A signal while the namespaces are made is acted on once up() returns: no job is started.
  net.cluster.emplace(EmulatedCluster::up(emulation.cluster));
  net.job_dir = net.cluster->launch_dir();
  net.mpirun_argv = split_words(net.cluster->write_mpi_launch_files(net.job_dir, emulation.ranks_per_node));
  char rate[96];
  std::snprintf(rate, sizeof rate, "%.4g MB/s (bucket %.4g kB)", emulation.cluster.nic_bandwidth_Bps / 1e6,
                tbf_burst_bytes(emulation.cluster) / 1e3);
  net.description = "emulated cluster " + net.cluster->prefix() + ": " + std::to_string(emulation.cluster.nodes) +
                    " nodes x " + std::to_string(emulation.ranks_per_node) + " ranks, each node's NIC shaped to " +
                    rate + " with tc tbf, shared memory inside a node";
}

void use_loopback(JobNetwork& net, const std::string& mpirun, int ranks) {
  const std::string name = "commsim-run-" + std::to_string(getpid());
  net.job_dir = (fs::absolute(fs::temp_directory_path()) / name).string();
  net.loopback_dirs.emplace(net.job_dir, "/dev/shm/" + name);
  net.mpirun_argv = {mpirun,
                     "--oversubscribe",
                     "--bind-to",
                     "none",
                     "--mca",
                     "mpi_yield_when_idle",
                     "1",
                     "--mca",
                     "orte_tmpdir_base",
                     net.job_dir,
                     "--mca",
                     "btl_vader_backing_directory",
                     net.loopback_dirs->shm};
  if (geteuid() == 0) net.mpirun_argv.push_back("--allow-run-as-root");
  net.description = "loopback: all " + std::to_string(ranks) + " ranks on this host, shared memory, unshaped";
}

// The ranks' command: mpirun, the request file with the job's context, the test hooks' variables (tests only).
std::vector<std::string> job_argv(const JobNetwork& net, const Launch& launch, const std::string& request_file) {
  std::vector<std::string> argv = net.mpirun_argv;
  argv.insert(argv.end(), {"-np", std::to_string(launch.ranks)});
  for (const char* name : {"COMMSIM_TEST_KILL_RANK", "COMMSIM_TEST_HANG_RANK", "COMMSIM_TEST_CORRUPT_RANK"})
    if (std::getenv(name)) argv.insert(argv.end(), {"-x", name});
  argv.insert(argv.end(), {self_executable(), "hw-run", request_file});
  return argv;
}

// The exit code for commsim from how the job ended and what rank 0 reported (-1: nothing).
int job_exit_code(const Ended& ended, int reported, double timeout_s) {
  if (ended.signal_number != 0) {
    std::fprintf(stderr, "commsim: interrupted by signal %d (%s): stopped the MPI job and removed what it made\n",
                 ended.signal_number, strsignal(ended.signal_number));
    return 128 + ended.signal_number;
  }
  if (ended.timed_out) {
    std::fprintf(stderr, "commsim: the MPI job did not finish within %g s (--timeout-s): stopped it\n", timeout_s);
    return kFailed;
  }
  if (reported < 0) {
    std::fprintf(
        stderr,
        "commsim: the MPI job ended without a result (%s): a rank died or was killed; see mpirun's report above\n",
        describe(ended).c_str());
    return kFailed;
  }
  return reported;
}

Ended run_job(const std::vector<std::string>& argv, double timeout_s) {
  Ended ended;
  if (g_signal != 0) {
    ended.signal_number = g_signal;  // arrived while the cluster was being made: no job to start
    return ended;
  }
  ended = wait_for(spawn(argv), timeout_s);
  reap_orphans(ended.stopped());
  return ended;
}

}  // namespace

// Makes the network, writes the ranks' request, runs mpirun, cleans up. The scenario was validated by the caller.
HardwareRunResponse launch_mpi_job(const Launch& launch) {
  const std::string mpirun = find_in_path("mpirun");
  if (mpirun.empty())
    throw InputError("mpirun", "", "not found in PATH (install Open MPI, e.g. apt-get install openmpi-bin)");
  std::string why;
  const bool emulate = launch.cluster && has_net_admin(&why);  // installs the cluster's handlers, if it can
  if (launch.cluster && !emulate)
    std::fprintf(stderr, "commsim: %s; running on plain loopback instead, unshaped\n", why.c_str());

  const StopSignals stop_signals;
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  JobNetwork net;
  if (emulate)
    make_cluster(net, *launch.cluster);
  else
    use_loopback(net, mpirun, launch.ranks);
  HardwareRunRequest request = launch.request;
  request.response_file.clear();
  request.job_context = {net.description, net.job_dir + "/status"};
  const std::string request_file = net.job_dir + "/request.json";
  write_request_json(request_file, to_json(request));

  std::fprintf(stderr, "commsim: %s\n", net.description.c_str());
  std::fflush(stderr);
  const Ended ended = run_job(job_argv(net, launch, request_file), launch.timeout_s);
  prctl(PR_SET_CHILD_SUBREAPER, 0);
  const int reported = read_status(request.job_context.status_file);
  std::error_code ignored;
  if (net.cluster) fs::remove_all(net.job_dir, ignored);
  net.cluster.reset();  // removes the namespaces and the cluster's directories before this function returns
  return {job_exit_code(ended, reported, launch.timeout_s), net.description, emulate};
}

}  // namespace commsim::hw
