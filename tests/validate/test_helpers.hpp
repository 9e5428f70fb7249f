// Shared by the validate tests: synthetic `commsim bench` reports and temporary folders.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "sim/core/error.hpp"

namespace commsim::validate::test_support {

// A fresh folder under the system temp dir, removed by the destructor.
struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& tag) {
    path = std::filesystem::temp_directory_path() / ("commsim-validate-" + tag + "-" + std::to_string(getpid()));
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

// The message of the InputError `f` throws; "" when it throws none (any other exception fails the test).
inline std::string input_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

inline void write(const std::string& path, const nlohmann::json& doc) { std::ofstream(path) << doc.dump(2) << "\n"; }
inline void write_text(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

// A bench report as `commsim bench --backend mpi --json` writes it: per class, round trips of one_way(bytes) x 2; the
// DGC work at a fifth of the reduction rate.
inline nlohmann::json bench_report(const std::function<double(double)>& shm_one_way,
                                   const std::function<double(double)>& tcp_one_way, double reduce_Bps = 3e9) {
  auto samples = [](const std::function<double(double)>& one_way) {
    nlohmann::json s = nlohmann::json::array();
    for (double b = 8; b <= 64.0 * 1024 * 1024; b *= 2)
      s.push_back(
          {{"bytes", static_cast<std::uint64_t>(b)}, {"seconds_per_repetition", 2 * one_way(b)}, {"repetitions", 10}});
    return s;
  };
  return {{"backend", "mpi"},
          {"ranks", 8},
          {"topology", "emulated-cpu-cluster"},
          {"host", "testhost"},
          {"commsim_version", "test"},
          {"network", "emulated cluster cs000000: 4 nodes x 2 ranks, each node's NIC shaped to 125 MB/s with tc tbf"},
          {"pingpong",
           {{{"link_class", "shm"}, {"ranks", {0, 1}}, {"samples", samples(shm_one_way)}},
            {{"link_class", "tcp"}, {"ranks", {0, 2}}, {"samples", samples(tcp_one_way)}}}},
          {"allreduce", {{"samples", nlohmann::json::array()}}},
          {"reduction", {{"reduce_Bps", reduce_Bps}}},
          {"dgc", {{"dgc_Bps", reduce_Bps / 5}}}};
}

}  // namespace commsim::validate::test_support

namespace commsim::validate::test_support {

// Adds the allreduce sweep of `commsim bench --impl schedule` on p ranks whose ring steps cost alpha_step +
// chunk/beta and whose reductions run at gamma: t(S) = 2(p-1) alpha + 2(p-1)/p S/beta + (p-1)/p S/gamma.
inline void add_ring_sweep(nlohmann::json& bench, int p, double alpha_step_s, double beta_Bps, double gamma_Bps) {
  nlohmann::json samples = nlohmann::json::array();
  for (double s = 8; s <= 16.0 * 1024 * 1024; s *= 2) {
    const double t = 2 * (p - 1) * alpha_step_s + 2.0 * (p - 1) / p * s / beta_Bps + (p - 1.0) / p * s / gamma_Bps;
    samples.push_back({{"bytes", static_cast<std::uint64_t>(s)}, {"seconds_per_repetition", t}, {"repetitions", 1}});
  }
  bench["ranks"] = p;
  bench["allreduce"] = {{"op", "allreduce"}, {"impl", "schedule"}, {"samples", samples}};
}

}  // namespace commsim::validate::test_support
