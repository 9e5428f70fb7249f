// Ctrl-C (SIGINT) and SIGTERM during a long evaluation: the first signal is recorded so that the work stops after the
// items in flight and what is done can still be written (marked partial); a second one ends the process at once with
// 128 + signal, which is safe because nothing has been written yet (writing() says when that changes).
#pragma once

#include <cstddef>

namespace commsim::explore {

class InterruptGuard {
 public:
  InterruptGuard();   // installs the handlers for SIGINT and SIGTERM
  ~InterruptGuard();  // restores the previous handlers
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

  // The first signal received (SIGINT or SIGTERM), 0 when none.
  int signal() const;
  // From now on a second signal is recorded only: the outputs are being written (each file replaced atomically).
  void writing();
  // Test hook: with COMMSIM_TEST_SIGNAL_AFTER_ROWS="N:SIG" in the environment, the process sends itself signal SIG
  // when the N-th item is done -- a deterministic stand-in for a user's Ctrl-C. Call after each item (serialised).
  void item_done(std::size_t done) const;

 private:
  std::size_t test_after_items_ = 0;
  int test_signal_ = 0;
};

// "SIGINT", "SIGTERM", or "a signal", for the partial notes of the outputs.
const char* signal_name(int signal_number);

}  // namespace commsim::explore
