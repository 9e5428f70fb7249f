#include "hw/cluster/cluster_state.hpp"

#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "hw/cluster/emulated_cluster.hpp"

namespace commsim::hw {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr const char* kNetnsDir = "/run/netns";

std::string one_line(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text;
}

// "PID (NAME) STATE PPID ..." -> the fields after NAME's closing parenthesis (NAME may hold spaces and ')').
std::vector<std::string> stat_fields_after_name(pid_t pid, std::string* name = nullptr) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(in, line);
  const std::size_t open = line.find('('), close = line.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return {};
  if (name) *name = line.substr(open + 1, close - open - 1);
  std::istringstream rest(line.substr(close + 1));
  return {std::istream_iterator<std::string>(rest), std::istream_iterator<std::string>()};
}

// The identity of a network namespace: the (device, inode) its nsfs file has, whether reached through a bind mount
// in /run/netns or through /proc/PID/ns/net.
bool namespace_id(const std::string& path, dev_t& device, ino_t& inode) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return false;
  device = st.st_dev;
  inode = st.st_ino;
  return true;
}

std::vector<pid_t> all_processes() {
  std::vector<pid_t> pids;
  std::error_code ignored;
  for (const auto& entry : fs::directory_iterator("/proc", ignored)) {
    const std::string name = entry.path().filename().string();
    if (!name.empty() && name.find_first_not_of("0123456789") == std::string::npos)
      pids.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return pids;
}

std::string process_name(pid_t pid) {
  std::string name;
  stat_fields_after_name(pid, &name);
  return name;
}

void check_owned(const std::string& file, const std::string& prefix, const std::string& what, const std::string& name,
                 bool path) {
  const bool inside = path ? fs::path(name).is_absolute() && fs::path(name).filename() == "commsim-" + prefix &&
                                 name.find("/../") == std::string::npos
                           : name.starts_with(prefix + "-") && name.find('/') == std::string::npos;
  if (!inside) throw ClusterError(file + " lists " + what + " '" + name + "' outside cluster " + prefix);
}

}  // namespace

std::string state_dir() {
  const char* dir = std::getenv("COMMSIM_STATE_DIR");
  return dir && *dir ? dir : "/run/commsim";
}

std::string state_path(const std::string& prefix) { return state_dir() + "/" + prefix + ".json"; }

bool is_prefix(const std::string& text) {
  return text.size() == 8 && text.starts_with("cs") && std::all_of(text.begin() + 2, text.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

unsigned long long process_start(pid_t pid) {
  // Fields after the name: 0 state, 1 ppid, ... 19 starttime (field 22 of proc(5)).
  const std::vector<std::string> fields = stat_fields_after_name(pid);
  if (fields.size() < 20 || fields[0] == "Z" || fields[0] == "X") return 0;
  return std::stoull(fields[19]);
}

void write_state(const ClusterState& s) {
  const nlohmann::json state = {
      {"prefix", s.prefix},         {"owner_pid", s.owner_pid}, {"owner_start", s.owner_start},
      {"persistent", s.persistent}, {"nodes", s.nodes},         {"nic_bandwidth_Bps", s.nic_bandwidth_Bps},
      {"namespaces", s.namespaces}, {"temp_dirs", s.temp_dirs}};
  std::error_code ignored;
  fs::create_directories(state_dir(), ignored);
  const std::string path = state_path(s.prefix), partial = path + ".partial";
  {
    std::ofstream out(partial, std::ios::trunc);
    out << state.dump(2) << "\n";
    if (!out) throw ClusterError("cannot write " + partial);
  }
  fs::permissions(partial, fs::perms::owner_read | fs::perms::owner_write, ignored);
  if (std::rename(partial.c_str(), path.c_str()) != 0) {
    std::remove(partial.c_str());
    throw ClusterError("cannot write " + path + ": " + std::strerror(errno));
  }
}

ClusterState read_state(const std::string& prefix) {
  if (!is_prefix(prefix)) throw ClusterError("'" + prefix + "' is not an emulated-cluster prefix (cs + 6 hex digits)");
  const std::string file = state_path(prefix);
  std::ifstream in(file);
  if (!in) throw ClusterError("no emulated cluster " + prefix + ": " + file + " does not exist");
  ClusterState s;
  try {
    const nlohmann::json j = nlohmann::json::parse(in);
    s.prefix = j.at("prefix").get<std::string>();
    s.owner_pid = j.at("owner_pid").get<pid_t>();
    s.owner_start = j.value("owner_start", 0ULL);  // absent in files of older versions
    s.persistent = j.at("persistent").get<bool>();
    s.nodes = j.value("nodes", 0);
    s.nic_bandwidth_Bps = j.value("nic_bandwidth_Bps", 0.0);
    s.namespaces = j.at("namespaces").get<std::vector<std::string>>();
    s.temp_dirs = j.value("temp_dirs", std::vector<std::string>{});
  } catch (const nlohmann::json::exception& e) {
    throw ClusterError(file + " is not a cluster state file: " + one_line(e.what()));
  }
  if (s.prefix != prefix) throw ClusterError(file + " describes cluster '" + s.prefix + "', not " + prefix);
  for (const std::string& name : s.namespaces) check_owned(file, prefix, "namespace", name, false);
  for (const std::string& dir : s.temp_dirs) check_owned(file, prefix, "directory", dir, true);
  return s;
}

std::vector<std::string> recorded_prefixes() {
  std::vector<std::string> prefixes;
  std::error_code ignored;
  for (const fs::directory_entry& entry : fs::directory_iterator(state_dir(), ignored)) {
    const std::string prefix = entry.path().stem().string();
    if (entry.path().extension() == ".json" && is_prefix(prefix)) prefixes.push_back(prefix);
  }
  std::sort(prefixes.begin(), prefixes.end());
  return prefixes;
}

std::vector<pid_t> processes_inside(const ClusterState& state) {
  std::vector<std::pair<dev_t, ino_t>> ids;
  for (const std::string& name : state.namespaces) {
    dev_t device;
    ino_t inode;
    if (namespace_id(std::string(kNetnsDir) + "/" + name, device, inode)) ids.emplace_back(device, inode);
  }
  std::vector<pid_t> inside;
  if (ids.empty()) return inside;
  for (pid_t pid : all_processes()) {
    dev_t device;
    ino_t inode;
    if (pid != getpid() && namespace_id("/proc/" + std::to_string(pid) + "/ns/net", device, inode) &&
        std::find(ids.begin(), ids.end(), std::pair{device, inode}) != ids.end())
      inside.push_back(pid);
  }
  return inside;
}

bool owner_alive(const ClusterState& state) {
  if (state.persistent || state.owner_pid <= 0) return false;
  const unsigned long long start = process_start(state.owner_pid);
  return start != 0 && (state.owner_start == 0 || start == state.owner_start);
}

bool is_stale(const ClusterState& state) { return !state.persistent && !owner_alive(state); }

std::string in_use(const ClusterState& state) {
  if (owner_alive(state))
    return "its run (PID " + std::to_string(state.owner_pid) + " " + process_name(state.owner_pid) + ") is alive";
  if (is_stale(state)) return "";  // whatever still runs inside was left by a dead owner
  const std::vector<pid_t> inside = processes_inside(state);
  if (inside.empty()) return "";
  std::string list;
  for (std::size_t i = 0; i < inside.size() && i < 3; ++i)
    list += (i ? ", " : "") + ("PID " + std::to_string(inside[i]) + " " + process_name(inside[i]));
  if (inside.size() > 3) list += ", ...";
  return std::to_string(inside.size()) + (inside.size() == 1 ? " process runs" : " processes run") + " inside it (" +
         list + ")";
}

void remove_recorded(const ClusterState& state, double grace_s) {
  // Processes first: a namespace whose last process is gone takes its veths (and the fabric its bridge) with it.
  for (pid_t pid : processes_inside(state)) kill(pid, SIGTERM);
  const auto deadline = Clock::now() + std::chrono::duration<double>(grace_s);
  while (!processes_inside(state).empty() && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  for (pid_t pid : processes_inside(state)) kill(pid, SIGKILL);

  std::string failure;
  for (const std::string& name : state.namespaces) {
    const std::string path = std::string(kNetnsDir) + "/" + name;
    umount2(path.c_str(), MNT_DETACH);  // as `ip netns delete` does: detach the bind mount, then unlink
    if (unlink(path.c_str()) != 0 && errno != ENOENT && failure.empty())
      failure = "cannot remove " + path + ": " + std::strerror(errno);
  }
  for (const std::string& dir : state.temp_dirs) {
    std::error_code error;
    fs::remove_all(dir, error);
    if (error && failure.empty()) failure = "cannot remove " + dir + ": " + error.message();
  }
  const std::string file = state_path(state.prefix);
  if (unlink(file.c_str()) != 0 && errno != ENOENT && failure.empty())
    failure = "cannot remove " + file + ": " + std::strerror(errno);
  if (!failure.empty()) throw ClusterError(failure);
}

}  // namespace commsim::hw
