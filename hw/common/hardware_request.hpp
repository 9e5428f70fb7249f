// The one seam between commsim and a hardware job: what to run (HardwareRunRequest) and what came back
// (HardwareRunResponse). A command that measures (`run`, `bench`, `calibrate`, `validate`, `regress`) fills a
// request; the request crosses a process boundary only as this JSON (`commsim hw-run REQUEST.json`, and the file
// the MPI launcher gives every rank), read back strictly: a bad field is exit 2 with one line naming file and field.
// Free of MPI and CUDA, so validate/ (which runs the hardware as a child process, never links it) uses it too.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/core/json_fields.hpp"

namespace commsim::hw {

enum class HardwareJob : std::uint8_t {
  Run,    // a scenario's Plan, measured (Result JSON, the schema `commsim simulate` writes)
  Bench,  // the calibration microbenchmarks of a topology (the bench report, hw/mpi/bench.hpp)
};

// Set by the MPI launcher alone, for the ranks of the job it starts: what the job runs on and where rank 0 reports
// its exit code. Empty in every other request.
struct JobContext {
  std::string network;      // "loopback: ..." or "emulated cluster <prefix>: ..." (the launcher's words)
  std::string status_file;  // rank 0 writes its exit code here
  bool empty() const { return network.empty() && status_file.empty(); }
};

struct HardwareRunRequest {
  HardwareJob job = HardwareJob::Run;
  std::string backend = "mpi";  // mpi | nccl
  // Run
  std::string scenario;           // scenario file
  std::vector<std::string> sets;  // --set key=value overrides, as `commsim simulate` takes them
  int steps = 0;                  // > 0: overrides the scenario's step count
  int warmup = 2;                 // steps run first, not counted
  std::string impl = "schedule";  // mpi: schedule (the simulator's schedules) | native (Open MPI's collectives)
  bool check = false;             // verifiable inputs, every collective result checked
  std::string trace_file, trace_format = "chrome";  // Run: a trace of the first measured steps (chrome | kineto)
  // Bench
  std::string topology;            // topology file
  int nodes = 0;                   // > 0: overrides the topology's node count
  std::string max_bytes = "256M";  // largest size
  // Both
  bool cluster = false;       // mpi: inside an emulated cluster of the topology (else loopback)
  double timeout_s = 0;       // > 0: stop the job after this long
  std::string result_file;    // Run: the Result JSON; Bench: the bench report ("" nowhere, "-" standard output)
  std::string response_file;  // where `commsim hw-run` writes the HardwareRunResponse ("" nowhere)
  JobContext job_context;     // the launcher's, for its ranks
};

// What came back: the exit code (0 ok, 1 a check failed, 2 bad input, 3 the job failed or ran out of time,
// 128 + signal interrupted) and the network the job ran on (the launcher falls back to loopback when it cannot make
// an emulated cluster, so a caller that asked for one checks `cluster`). The measured Result or bench report is in
// the request's result_file.
struct HardwareRunResponse {
  int exit_code = -1;
  std::string network;   // empty when no MPI job was started (NCCL, or refused before launching)
  bool cluster = false;  // network is an emulated cluster
};

Json to_json(const HardwareRunRequest& request);
// Strict: unknown keys, wrong types, out-of-range numbers and a job without its input are InputErrors naming `file`
// and the field.
HardwareRunRequest read_hardware_request(const Json& document, const std::string& file);
HardwareRunRequest read_hardware_request_file(const std::string& file);

Json to_json(const HardwareRunResponse& response);
HardwareRunResponse read_hardware_response(const Json& document, const std::string& file);

// Writes `doc` (2-space indented) to `path`; InputError naming `path` when it cannot.
void write_request_json(const std::string& path, const Json& doc);

}  // namespace commsim::hw
