#include "hw/cluster/system_tools.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "hw/cluster/cleanup_registry.hpp"
#include "hw/cluster/emulated_cluster.hpp"

extern char** environ;

namespace commsim::hw {

std::string one_line(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return text;
}

std::string join(const std::vector<std::string>& words) {
  std::string line;
  for (const std::string& word : words) line += (line.empty() ? "" : " ") + word;
  return line;
}

// Finds a system tool by absolute path, so that a PATH without sbin (non-login shells, sudo) still works.
std::string find_tool(const std::string& name) {
  for (const char* dir : {"/usr/sbin", "/sbin", "/usr/bin", "/bin"}) {
    const std::string path = std::string(dir) + "/" + name;
    if (access(path.c_str(), X_OK) == 0) return path;
  }
  throw ClusterError("'" + name + "' not found in /usr/sbin, /sbin, /usr/bin or /bin");
}

// Runs a helper (ip, tc) from an argument vector, without a shell, and throws with its stderr when it fails.
// Fatal signals stay blocked in this thread meanwhile, so cleanup never races a helper that is still creating
// something; a signal that arrived is handled (cleanup, re-raise) as soon as the helper is done.
void run_helper(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  int stderr_pipe[2];
  if (pipe2(stderr_pipe, O_CLOEXEC) != 0) throw ClusterError("pipe: " + std::string(std::strerror(errno)));

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, stderr_pipe[1], STDERR_FILENO);
  const sigset_t fatal = fatal_signal_set();
  sigset_t previous_mask;
  pthread_sigmask(SIG_BLOCK, &fatal, &previous_mask);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setsigmask(&attributes, &previous_mask);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK);
  pid_t pid = 0;
  const int spawn_error = posix_spawn(&pid, args[0], &actions, &attributes, args.data(), environ);
  posix_spawnattr_destroy(&attributes);
  posix_spawn_file_actions_destroy(&actions);
  close(stderr_pipe[1]);

  std::string error_output;
  char buffer[512];
  for (ssize_t n; spawn_error == 0 && (n = read(stderr_pipe[0], buffer, sizeof buffer)) != 0;) {
    if (n > 0) {
      error_output.append(buffer, static_cast<std::size_t>(n));
    } else if (errno != EINTR) {
      break;
    }
  }
  close(stderr_pipe[0]);
  int status = 0;
  while (spawn_error == 0 && waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  pthread_sigmask(SIG_SETMASK, &previous_mask, nullptr);

  if (spawn_error != 0) throw ClusterError(join(argv) + ": cannot start: " + std::strerror(spawn_error));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    const std::string how = WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status))
                                              : "signal " + std::to_string(WTERMSIG(status));
    throw ClusterError(join(argv) + " failed (" + how + "): " + one_line(error_output));
  }
}

}  // namespace commsim::hw
