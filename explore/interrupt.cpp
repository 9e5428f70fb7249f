#include "explore/interrupt.hpp"

#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

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
    const std::string text = hook;
    const std::size_t colon = text.find(':');
    if (colon != std::string::npos) {
      test_after_items_ = std::strtoul(text.substr(0, colon).c_str(), nullptr, 10);
      test_signal_ = std::atoi(text.substr(colon + 1).c_str());
    }
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
