// What each live emulated cluster of this process must remove, kept in fixed arrays so that a signal handler can
// read it: a cluster's paths are registered before they are created, and removed by its destructor, on exit() and
// on SIGINT/SIGTERM/SIGHUP (the signal is then re-raised), so a partial cluster is never leaked. Internal to
// hw/cluster.
#pragma once

#include <signal.h>

#include <string>
#include <vector>

namespace commsim::hw {

constexpr int kMaxNodes = 64;  // the most nodes of one emulated cluster (EmulatedClusterSpec.nodes)

// SIGINT, SIGTERM and SIGHUP: the signals on which owned clusters are removed.
sigset_t fatal_signal_set();

// Installs the cleanup for fatal signals and for exit() once; a signal the process ignores stays ignored.
void install_cleanup_handlers();

// Registers paths to remove (namespaces, files, directories); returns the slot. Throws ClusterError when no slot is
// free or a path is too long.
int claim_cleanup_slot(const std::vector<std::string>& paths);

// Path `path_index` of the slot is the state file: kept while a directory could not be emptied.
void set_state_file_path(int slot, int path_index);

// Removes everything the slot lists and frees it; false if some path could not be removed. Async-signal-safe.
bool remove_cleanup_slot(int slot);

// Frees the slot without removing anything (the cluster now outlives this process).
void release_cleanup_slot(int slot);

}  // namespace commsim::hw
