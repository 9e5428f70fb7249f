#include "hw/cluster/cleanup_registry.hpp"

#include <sys/mount.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <mutex>

#include "hw/cluster/emulated_cluster.hpp"

namespace commsim::hw {
namespace {

constexpr int kFatalSignals[] = {SIGINT, SIGTERM, SIGHUP};
constexpr int kMaxLiveClusters = 16;
// node namespaces, fabric namespace, 2 launch files, launch and shared-memory directories, state file
constexpr int kMaxPathsPerCluster = kMaxNodes + 6;
constexpr std::size_t kPathCapacity = 256;

struct CleanupSlot {
  std::atomic<bool> live{false};
  pid_t owner_pid = 0;
  int path_count = 0;
  int state_index = -1;  // the state file's entry: kept while a directory could not be emptied (see remove_slot)
  char paths[kMaxPathsPerCluster][kPathCapacity] = {};
};

CleanupSlot g_slots[kMaxLiveClusters];
std::mutex g_slots_mutex;
struct sigaction g_previous_actions[std::size(kFatalSignals)];

// Removes one registered path with async-signal-safe calls only: a namespace is a bind mount under /run/netns
// (undone exactly as `ip netns delete` does: detach, unlink); a state or launch file is a plain file (umount2 just
// fails); a directory is removed if empty (what Open MPI left in it is removed by the owner's normal cleanup).
bool remove_path(const char* path, bool& left_nonempty_dir) {
  umount2(path, MNT_DETACH);
  if (unlink(path) == 0 || errno == ENOENT) return true;
  if (errno != EISDIR) return false;
  if (rmdir(path) == 0 || errno == ENOENT) return true;
  left_nonempty_dir = left_nonempty_dir || errno == ENOTEMPTY || errno == EEXIST;
  return left_nonempty_dir;
}

// Removes everything a slot lists and frees it; false if some path could not be removed. Async-signal-safe. A
// directory still holding files (Open MPI's, of a job this process ran) keeps the state file, so the next commsim
// command finds the cluster stale (its owner gone) and removes the rest.
bool remove_slot(CleanupSlot& slot) {
  bool removed = true, left_nonempty_dir = false;
  for (int i = 0; i < slot.path_count; ++i) {
    if (i == slot.state_index && left_nonempty_dir) continue;
    removed = remove_path(slot.paths[i], left_nonempty_dir) && removed;
  }
  slot.live.store(false);
  return removed;
}

// Removes every live cluster of this process; forked children inherit the registry but do not own its clusters.
void remove_all_owned() {
  const pid_t self = getpid();
  for (CleanupSlot& slot : g_slots) {
    if (slot.live.load() && slot.owner_pid == self) remove_slot(slot);
  }
}

// SIGINT/SIGTERM/SIGHUP: clean up, restore the previous disposition and re-raise, so the process still ends the
// way it would have (the signal stays blocked until this handler returns).
void on_fatal_signal(int signal_number) {
  remove_all_owned();
  for (std::size_t i = 0; i < std::size(kFatalSignals); ++i) {
    if (kFatalSignals[i] == signal_number) sigaction(signal_number, &g_previous_actions[i], nullptr);
  }
  raise(signal_number);
}

}  // namespace

sigset_t fatal_signal_set() {
  sigset_t set;
  sigemptyset(&set);
  for (int signal_number : kFatalSignals) sigaddset(&set, signal_number);
  return set;
}

void install_cleanup_handlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction action {};
    action.sa_handler = on_fatal_signal;
    action.sa_mask = fatal_signal_set();
    action.sa_flags = SA_RESTART;  // matters only if a previous handler lets the process go on
    for (std::size_t i = 0; i < std::size(kFatalSignals); ++i) {
      sigaction(kFatalSignals[i], nullptr, &g_previous_actions[i]);
      const bool ignored =
          !(g_previous_actions[i].sa_flags & SA_SIGINFO) && g_previous_actions[i].sa_handler == SIG_IGN;
      if (!ignored) sigaction(kFatalSignals[i], &action, nullptr);
    }
    std::atexit(remove_all_owned);
  });
}

int claim_cleanup_slot(const std::vector<std::string>& paths) {
  std::lock_guard lock(g_slots_mutex);
  for (int index = 0; index < kMaxLiveClusters; ++index) {
    CleanupSlot& slot = g_slots[index];
    if (slot.live.load()) continue;
    slot.owner_pid = getpid();
    slot.state_index = -1;
    slot.path_count = static_cast<int>(paths.size());
    for (std::size_t i = 0; i < paths.size(); ++i) {
      if (paths[i].size() >= kPathCapacity)
        throw ClusterError("path too long for the cleanup registry (TMPDIR too deep?): " + paths[i]);
      std::snprintf(slot.paths[i], kPathCapacity, "%s", paths[i].c_str());
    }
    slot.live.store(true);
    return index;
  }
  throw ClusterError("too many emulated clusters alive in this process (at most " + std::to_string(kMaxLiveClusters) +
                     ")");
}

void set_state_file_path(int slot, int path_index) { g_slots[slot].state_index = path_index; }

bool remove_cleanup_slot(int slot) { return remove_slot(g_slots[slot]); }

void release_cleanup_slot(int slot) { g_slots[slot].live.store(false); }

}  // namespace commsim::hw
