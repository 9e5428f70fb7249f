// Validators of numeric options. CLI11's PositiveNumber and NonNegativeNumber print their range with DBL_MAX in
// full (309 digits); these state the bound in the option's own terms and refuse NaN and infinity.
#include <cmath>
#include <cstdio>
#include <limits>

#include "cli/commands.hpp"
#include "sim/collective/nccl_model.hpp"
#include "sim/core/error.hpp"

namespace commsim::cli {

namespace {

std::string plain(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.15g", x);
  return buf;
}

}  // namespace

CLI::Validator number_in(double min, double max) {
  const std::string range = max == std::numeric_limits<double>::infinity()
                                ? "must be >= " + plain(min)
                                : "must be in [" + plain(min) + ", " + plain(max) + "]";
  return CLI::Validator(
      [min, max, range](std::string& text) -> std::string {
        double x = 0;
        try {
          std::size_t used = 0;
          x = std::stod(text, &used);
          if (used != text.size()) return "\"" + text + "\" is not a number";
        } catch (const std::exception&) {
          return "\"" + text + "\" is not a number";
        }
        if (!std::isfinite(x) || x < min || x > max) return range + ", got " + text;
        return "";
      },
      max == std::numeric_limits<double>::infinity() ? "NUMBER >= " + plain(min)
                                                     : "NUMBER in [" + plain(min) + ", " + plain(max) + "]");
}

std::uint64_t parse_byte_size(const std::string& text) {
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    throw InputError("--max-bytes", "", "\"" + text + "\" is not a size (e.g. 64M)");
  }
  const std::string unit = text.substr(used);
  double scale = 1;
  if (unit == "K" || unit == "k")
    scale = 1024.0;
  else if (unit == "M" || unit == "m")
    scale = 1024.0 * 1024;
  else if (unit == "G" || unit == "g")
    scale = 1024.0 * 1024 * 1024;
  else if (!unit.empty())
    throw InputError("--max-bytes", "", "\"" + text + "\": unknown unit \"" + unit + "\" (K, M, G)");
  const double bytes = value * scale;
  if (!(bytes >= 8)) throw InputError("--max-bytes", "", "must be at least 8 bytes, got " + text);
  if (!(bytes <= static_cast<double>(kMaxBytes)))
    throw InputError("--max-bytes", "", text + " is over the 1 TiB limit (1024G)");
  return static_cast<std::uint64_t>(bytes);
}

CLI::Validator nccl_release() {
  return CLI::Validator([](std::string& text) { return nccl::release_problem(text); }, "RELEASE");
}

CLI::Validator byte_size() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        try {
          parse_byte_size(text);
        } catch (const InputError& e) {
          const std::string what = e.what();
          return what.substr(what.find(": ") + 2);  // CLI11 names the option itself
        }
        return "";
      },
      "SIZE");
}

int missing_mpi_backend() {
  std::fprintf(stderr,
               "commsim: this build has no MPI backend (it was not built: MPI not found at configure time, or "
               "COMMSIM_MPI=OFF)\n");
  return 2;
}

int missing_nccl_backend() {
  std::fprintf(stderr,
               "commsim: this build has no NCCL backend (it was not built: CUDA or NCCL not found at configure time, "
               "or COMMSIM_NCCL=OFF)\n");
  return 2;
}

}  // namespace commsim::cli
