#include "sim/step/interference.hpp"

#include <algorithm>
#include <cmath>

namespace commsim {

double compute_share(int sms, int channels) {
  return channels < sms ? static_cast<double>(sms - channels) / sms : 1.0 / (channels + 1);
}

double SlowedCompute::rate() const {
  if (sms_ <= 0 || channels_ <= 0) return 1;
  return compute_share(sms_, channels_) / (1 + concurrent_slowdown_);
}

void SlowedCompute::start(int task, TimePs work_ps) {
  task_ = task;
  remaining_ps_ = static_cast<double>(work_ps);
  last_ = queue_.now();
  reschedule();
}

void SlowedCompute::add_channels(int channels) {
  advance();
  channels_ += channels;
  if (task_ >= 0) reschedule();
}

void SlowedCompute::advance() {
  const TimePs now = queue_.now();
  if (task_ >= 0) remaining_ps_ -= static_cast<double>(now - last_) * rate();
  last_ = now;
}

void SlowedCompute::reschedule() {
  ++version_;
  // At full speed the end is exact in integer picoseconds; slowed, rounded up to the next picosecond.
  const double left = std::max(0.0, remaining_ps_) / rate();
  queue_.schedule(add_ps(queue_.now(), static_cast<TimePs>(std::ceil(left - 1e-6)), "slowed compute time"), this,
                  version_);
}

void SlowedCompute::on_event(std::uint64_t version) {
  if (version != version_ || task_ < 0) return;
  const int task = task_;
  task_ = -1;
  ++version_;
  done_(task);
}

}  // namespace commsim
