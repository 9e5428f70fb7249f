#include "tests/hw/fault_harness.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <thread>

namespace commsim::test {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

const std::string kCommsim = COMMSIM_CLI_PATH;

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<std::string> names_in(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ignored;
  for (const auto& entry : fs::directory_iterator(dir, ignored)) names.push_back(entry.path().filename().string());
  return names;
}

std::string comm_of(pid_t pid) {
  std::string comm = read_file("/proc/" + std::to_string(pid) + "/comm");
  if (!comm.empty() && comm.back() == '\n') comm.pop_back();
  return comm;
}

}  // namespace

std::string cluster_prefix_in(const std::string& text) {
  std::smatch m;
  return std::regex_search(text, m, std::regex("emulated cluster (cs[0-9a-f]{6})")) ? m[1].str() : "";
}

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

FaultSandbox::FaultSandbox() {
  char root[] = "/tmp/commsim-fault-XXXXXX";
  if (!mkdtemp(root)) std::abort();
  root_ = root;
  temp_dir_ = root_ + "/tmp";
  state_dir_ = root_ + "/state";
  log_ = root_ + "/log";
  fs::create_directories(temp_dir_);
  fs::create_directories(state_dir_);
  for (const std::string& name : names_in("/dev/shm")) shm_before_.insert(name);
}

// Cleans up whatever a failed test left, so that one failure does not spill into the next test or the machine.
FaultSandbox::~FaultSandbox() {
  for (pid_t pid : processes()) kill(pid, SIGKILL);
  if (!clusters().empty()) run({"cluster", "down", "--all", "--force"}, 30);
  for (const std::string& prefix : clusters()) fs::remove(state_dir_ + "/" + prefix + ".json");
  std::error_code ignored;
  fs::remove_all(root_, ignored);
}

pid_t FaultSandbox::start(const std::vector<std::string>& args, const std::vector<std::string>& env) {
  const pid_t pid = fork();
  if (pid == 0) {
    const int fd = open(log_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
    dup2(fd, STDOUT_FILENO);
    dup2(fd, STDERR_FILENO);
    for (int signal_number : {SIGINT, SIGTERM, SIGHUP}) signal(signal_number, SIG_DFL);  // as from a terminal
    setenv("TMPDIR", temp_dir_.c_str(), 1);
    setenv("COMMSIM_STATE_DIR", state_dir_.c_str(), 1);
    for (const std::string& e : env) putenv(const_cast<char*>(e.c_str()));
    std::vector<char*> argv = {const_cast<char*>(kCommsim.c_str())};
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  return pid;
}

int FaultSandbox::wait_exit(pid_t pid, double timeout_s) {
  const auto start = Clock::now();
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (seconds_since(start) > timeout_s) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return status;
}

bool FaultSandbox::running(pid_t pid) const {
  int status = 0;
  return waitpid(pid, &status, WNOHANG) == 0;
}

int FaultSandbox::run(const std::vector<std::string>& args, double timeout_s) {
  const int status = wait_exit(start(args), timeout_s);
  return status >= 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string FaultSandbox::log() const { return read_file(log_); }

std::vector<pid_t> FaultSandbox::processes() const {
  const std::string tag = "TMPDIR=" + temp_dir_ + '\0';
  std::vector<pid_t> found;
  for (const std::string& name : names_in("/proc")) {
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(name));
    if (pid == getpid()) continue;
    const std::string environment = read_file("/proc/" + name + "/environ") + '\0';
    if (environment.find(tag) == std::string::npos) continue;
    const std::string stat = read_file("/proc/" + name + "/stat");
    const std::size_t close = stat.rfind(')');
    if (close != std::string::npos && close + 2 < stat.size() && stat[close + 2] == 'Z') continue;  // zombie
    found.push_back(pid);
  }
  return found;
}

std::vector<pid_t> FaultSandbox::processes_named(const std::string& comm) const {
  std::vector<pid_t> found;
  for (pid_t pid : processes())
    if (comm_of(pid) == comm) found.push_back(pid);
  return found;
}

bool FaultSandbox::wait_for_ranks(pid_t launcher, int count, double timeout_s) const {
  const auto start = Clock::now();
  while (seconds_since(start) < timeout_s) {
    int ranks = 0;
    for (pid_t pid : processes()) {
      std::error_code error;
      const fs::path exe = fs::read_symlink("/proc/" + std::to_string(pid) + "/exe", error);
      ranks += !error && exe == fs::path(kCommsim) && pid != launcher;
    }
    if (ranks >= count) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

std::vector<std::string> FaultSandbox::clusters() const {
  std::vector<std::string> prefixes;
  for (const std::string& name : names_in(state_dir_))
    if (name.size() == 13 && name.ends_with(".json")) prefixes.push_back(name.substr(0, 8));
  return prefixes;
}

std::string FaultSandbox::wait_for_cluster(double timeout_s) const {
  const auto start = Clock::now();
  while (seconds_since(start) < timeout_s) {
    if (const std::vector<std::string> found = clusters(); !found.empty()) return found.front();
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return "";
}

std::string FaultSandbox::leftovers(const std::string& prefix) const {
  std::string found;
  for (pid_t pid : processes()) found += "process " + std::to_string(pid) + " " + comm_of(pid) + "\n";
  if (!prefix.empty()) {
    for (const std::string& name : names_in("/run/netns"))
      if (name.starts_with(prefix)) found += "namespace " + name + "\n";
    for (const std::string& name : names_in("/sys/class/net"))  // the host's own links
      if (name.starts_with(prefix)) found += "host link " + name + "\n";
  }
  for (const std::string& name : names_in(state_dir_)) found += "state file " + name + "\n";
  for (const std::string& name : names_in(temp_dir_)) found += "temp file " + temp_dir_ + "/" + name + "\n";
  for (const std::string& name : names_in("/dev/shm")) {
    // Open MPI's segments of the cluster's job live in /dev/shm/commsim-<prefix>/; other jobs on this machine may
    // add their own entries meanwhile, so only names with the prefix count.
    const bool ours = !prefix.empty() && name.find(prefix) != std::string::npos;
    if (ours && !shm_before_.count(name)) found += "shared memory /dev/shm/" + name + "\n";
  }
  return found;
}

}  // namespace commsim::test
