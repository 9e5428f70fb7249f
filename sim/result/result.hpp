// The Result schema shared by the simulator and the hardware backends (design contract: step_time_s, steps[],
// throughput_samples_s, breakdown.{compute_s, comm_s, exposed_comm_s}, bytes_sent, backend, fidelity).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace commsim {

struct TraceEvent {
  std::string name;
  int stream;
  double start_s, duration_s;
  int step = 0;
  int rank = 0;   // whose timeline this is (the simulator: the step's critical rank, -1 for the mean of the ranks)
  int task = -1;  // index of the task in its step (-1: not known)
  nlohmann::json args = nlohmann::json::object();  // details: bytes, algorithm, protocol, bucket, tensors, stream
  std::vector<int> flow_from = {};  // tasks of the same step whose output this one sends (a bucket's gradients)
  // A collective's (the simulator's; -1: not known): when the framework issued it, its inputs ready (it may then wait
  // for its stream), and the part of [start, start + duration) that the library's kernel runs, without the fixed
  // costs around it (hook, copies, launch, a cycle's wait).
  double issued_s = -1, kernel_start_s = -1, kernel_end_s = -1;
};

struct Result {
  std::string scenario;
  std::string scenario_hash;  // FNV-1a of the scenario document after overrides
  std::string backend = "sim";
  std::string fidelity;
  int ranks = 0;
  int batch_per_gpu = 0;
  std::vector<double> steps_s;    // each step's time
  double step_time_s = 0;         // steady-state mean (see steady_from)
  int steady_from = 0;            // first step counted in the steady state
  double step_time_spread_s = 0;  // hardware: half the interquartile range of the steady steps
  double throughput_samples_s = 0;
  double scaling_efficiency = 0;  // throughput / (ranks x single-GPU throughput)
  double compute_s = 0, comm_s = 0, exposed_comm_s = 0, overlap_ratio = 0;  // steady-state means per step
  std::vector<double> stream_busy_s;                                        // per step, index 0 = compute stream
  std::map<std::string, double> link_class_busy_s;                          // summed over steady steps, per step
  double bytes_sent_per_rank = 0;                                           // per step, steady-state mean
  // +- relative error band of every communication time on a calibrated topology (sim/topology/calibration_band.hpp),
  // 0 when the topology was not calibrated. The step time then lies within +- comm_band_rel x comm_s: each
  // communication span changes by at most that share, compute not at all.
  double comm_band_rel = 0;
  double step_band_s() const { return comm_band_rel * comm_s; }
  std::vector<std::string> notes;
  // The scenario's settings as "dotted.key" -> JSON value (nodes, batch, strategy.*), so that a report can say how
  // two results of one scenario differ. Empty where unknown.
  std::map<std::string, std::string> settings;
  std::vector<TraceEvent> trace;  // the traced steps and ranks (sim/result/trace.hpp)

  nlohmann::json to_json() const;
  static Result from_json(const nlohmann::json& j, const std::string& file);
};

}  // namespace commsim
