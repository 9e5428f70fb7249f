// Running the built commsim as a user would stop it or watch it: with a deterministic stand-in for Ctrl-C, and on a
// pseudo-terminal. Shared by the tests of the commands that show progress and stop cleanly (sweep, collective).
#pragma once

#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "tests/reports/test_helpers.hpp"

namespace commsim::test {

// The signal arrives from the test hook (COMMSIM_TEST_SIGNAL_AFTER_ROWS=N:SIG: the process sends itself SIG when its
// N-th row -- a sweep's configuration, a collective's size -- is done), so the rows done do not depend on timing.
inline CliRun run_with_signal_after(const std::string& args, const std::string& hook) {
  setenv("COMMSIM_TEST_SIGNAL_AFTER_ROWS", hook.c_str(), 1);
  CliRun r = commsim(args);
  unsetenv("COMMSIM_TEST_SIGNAL_AFTER_ROWS");
  return r;
}

struct TerminalRun {
  int code = -1;
  std::string seen;  // stdout and stderr together, as the terminal shows them
};

// Runs `commsim ARGS` on a pseudo-terminal (forkpty), which is what isatty() sees in an interactive shell.
inline TerminalRun run_on_terminal(const std::string& args) {
  TerminalRun run;
  int terminal = -1;
  const pid_t pid = forkpty(&terminal, nullptr, nullptr, nullptr);
  if (pid < 0) return run;
  if (pid == 0) {
    const std::string command = std::string(COMMSIM_CLI_PATH) + " " + args;
    execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  char buffer[4096];
  for (ssize_t n; (n = read(terminal, buffer, sizeof buffer)) > 0;)
    run.seen.append(buffer, static_cast<std::size_t>(n));
  close(terminal);
  int status = 0;
  waitpid(pid, &status, 0);
  run.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

}  // namespace commsim::test
