#include "explore/interrupt.hpp"

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "sim/core/error.hpp"

namespace commsim::explore {

namespace {

volatile sig_atomic_t g_signal = 0;    // first signal received
volatile sig_atomic_t g_may_exit = 1;  // a second signal ends the process (nothing written yet)
struct sigaction g_previous_int {
}, g_previous_term{};

void on_signal(int signal_number) {
  if (g_signal != 0 && g_may_exit) _exit(128 + g_signal);  // async-signal-safe; no output has been started
  if (g_signal == 0) g_signal = signal_number;
}

}  // namespace

InterruptGuard::InterruptGuard() {
  g_signal = 0;
  g_may_exit = 1;
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, &g_previous_int);
  sigaction(SIGTERM, &action, &g_previous_term);
  if (const char* hook = std::getenv("COMMSIM_TEST_SIGNAL_AFTER_ROWS")) {
    // Strict: a test hook that is silently ignored would let a cancellation test pass without cancelling.
    unsigned long items = 0;
    int signal_number = 0, consumed = 0;
    if (std::sscanf(hook, "%lu:%d%n", &items, &signal_number, &consumed) != 2 || hook[consumed] != '\0' ||
        (signal_number != SIGINT && signal_number != SIGTERM))
      throw InputError("environment", "COMMSIM_TEST_SIGNAL_AFTER_ROWS",
                       "must be N:SIG with SIG " + std::to_string(SIGINT) + " (SIGINT) or " + std::to_string(SIGTERM) +
                           " (SIGTERM), got '" + hook + "'");
    test_after_items_ = items;
    test_signal_ = signal_number;
  }
}

InterruptGuard::~InterruptGuard() {
  sigaction(SIGINT, &g_previous_int, nullptr);
  sigaction(SIGTERM, &g_previous_term, nullptr);
}

int InterruptGuard::signal() const { return g_signal; }

void InterruptGuard::writing() { g_may_exit = 0; }

void InterruptGuard::item_done(std::size_t done) const {
  if (test_signal_ > 0 && done == test_after_items_) kill(getpid(), test_signal_);
}

const char* signal_name(int signal_number) {
  return signal_number == SIGINT ? "SIGINT" : signal_number == SIGTERM ? "SIGTERM" : "a signal";
}

}  // namespace commsim::explore
