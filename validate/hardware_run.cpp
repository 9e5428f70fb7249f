#include "validate/hardware_run.hpp"

#include <filesystem>

#include "sim/core/data_path.hpp"
#include "validate/process.hpp"

namespace commsim::validate {
namespace {

namespace fs = std::filesystem;

std::string last_line(const std::string& log) {
  std::string last = tail_lines(log, 1);
  while (!last.empty() && last.back() == '\n') last.pop_back();
  return last;
}

// The response the child wrote; exit code -1 when it wrote none (killed, or not a commsim).
hw::HardwareRunResponse read_response(const std::string& file) {
  if (!path_exists(file)) return {};
  return hw::read_hardware_response(read_json_file(file), file);
}

// Why the run is not usable, or "" when it is.
std::string why_not_ok(const HardwareRun& run, const ProcessResult& process, const hw::HardwareRunRequest& request) {
  const int code = process.exit_code;
  if (code != 0 || (!request.result_file.empty() && !path_exists(request.result_file)))
    return "commsim hw-run exited " + std::to_string(code) + (process.timed_out ? " (timed out)" : "") + ": " +
           last_line(run.log_file) + " (log: " + run.log_file + ")";
  if (request.cluster && !run.response.cluster)
    return "asked for the emulated cluster but the run reports network \"" + run.response.network +
           "\" (log: " + run.log_file + ")";
  return "";
}

}  // namespace

HardwareRun run_on_hardware(const std::string& commsim, const hw::HardwareRunRequest& request, const std::string& stem,
                            double timeout_s) {
  hw::HardwareRunRequest r = request;
  r.response_file = fs::absolute(stem + ".response.json").string();
  const std::string request_file = stem + ".request.json";
  std::error_code ignored;
  fs::remove(r.response_file, ignored);
  if (!r.result_file.empty()) fs::remove(r.result_file, ignored);
  hw::write_request_json(request_file, hw::to_json(r));
  HardwareRun run;
  run.log_file = stem + ".log";
  ProcessResult process;
  try {
    process = run_process({commsim, "hw-run", request_file}, run.log_file, timeout_s);
    run.response = read_response(r.response_file);
  } catch (const std::exception& e) {  // cannot start the child, or it left a malformed response
    run.error = e.what();
    return run;
  }
  run.exit_code = process.exit_code;
  run.timed_out = process.timed_out;
  run.wall_s = process.seconds;
  run.error = why_not_ok(run, process, r);
  if (run.ok() && r.job == hw::HardwareJob::Run && !r.result_file.empty())
    run.result = Result::from_json(read_json_file(r.result_file), r.result_file);
  return run;
}

}  // namespace commsim::validate
