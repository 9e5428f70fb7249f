#include "hw/common/hardware_request.hpp"

#include <fstream>

#include "sim/core/limits.hpp"

namespace commsim::hw {
namespace {

const char* job_name(HardwareJob job) { return job == HardwareJob::Run ? "run" : "bench"; }

HardwareJob parse_job(JsonFields& f) {
  const std::string job = f.string("job");
  if (job == "run") return HardwareJob::Run;
  if (job == "bench") return HardwareJob::Bench;
  f.fail("job", "\"" + job + "\" is not a job (run, bench)");
}

std::string one_of(JsonFields& f, const std::string& key, const std::string& fallback,
                   const std::vector<std::string>& allowed) {
  const std::string value = f.string_or(key, fallback);
  std::string list;
  for (const std::string& a : allowed) {
    if (value == a) return value;
    list += (list.empty() ? "" : ", ") + a;
  }
  f.fail(key, "\"" + value + "\" is not one of " + list);
}

std::vector<std::string> strings(JsonFields& f, const std::string& key) {
  std::vector<std::string> out;
  if (!f.has(key)) return out;
  const Json& items = f.array(key);
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (!items[i].is_string()) f.fail(key + "[" + std::to_string(i) + "]", "must be a string");
    out.push_back(items[i].get<std::string>());
  }
  return out;
}

JobContext read_context(JsonFields& top) {
  JobContext c;
  if (!top.has("job_context")) return c;
  JsonFields f = top.object("job_context");
  c.network = f.string("network");
  c.status_file = f.string("status_file");
  f.reject_unknown();
  return c;
}

// The input the job needs, present: a scenario to run, a topology to bench.
void require_input(JsonFields& f, const HardwareRunRequest& r) {
  if (r.job == HardwareJob::Run && r.scenario.empty()) f.fail("scenario", "missing: a run job needs a scenario file");
  if (r.job == HardwareJob::Bench && r.topology.empty())
    f.fail("topology", "missing: a bench job needs a topology file");
}

}  // namespace

Json to_json(const HardwareRunRequest& r) {
  Json doc = {{"job", job_name(r.job)},
              {"backend", r.backend},
              {"scenario", r.scenario},
              {"sets", r.sets},
              {"steps", r.steps},
              {"warmup", r.warmup},
              {"impl", r.impl},
              {"check", r.check},
              {"trace_file", r.trace_file},
              {"trace_format", r.trace_format},
              {"topology", r.topology},
              {"nodes", r.nodes},
              {"max_bytes", r.max_bytes},
              {"cluster", r.cluster},
              {"timeout_s", r.timeout_s},
              {"result_file", r.result_file},
              {"response_file", r.response_file}};
  if (!r.job_context.empty())
    doc["job_context"] = {{"network", r.job_context.network}, {"status_file", r.job_context.status_file}};
  return doc;
}

HardwareRunRequest read_hardware_request(const Json& document, const std::string& file) {
  JsonFields f(document, file, "");
  HardwareRunRequest r;
  r.job = parse_job(f);
  r.backend = one_of(f, "backend", "mpi", {"mpi", "nccl"});
  r.scenario = f.string_or("scenario", "");
  r.sets = strings(f, "sets");
  r.steps = static_cast<int>(f.integer_or("steps", 0, 0, kMaxSteps));
  r.warmup = static_cast<int>(f.integer_or("warmup", 2, 0, kMaxSteps));
  r.impl = one_of(f, "impl", r.job == HardwareJob::Run ? "schedule" : "native", {"schedule", "native"});
  r.check = f.boolean_or("check", false);
  r.trace_file = f.string_or("trace_file", "");
  r.trace_format = one_of(f, "trace_format", "chrome", {"chrome", "kineto"});
  r.topology = f.string_or("topology", "");
  r.nodes = static_cast<int>(f.integer_or("nodes", 0, 0, kMaxNodes));
  r.max_bytes = f.string_or("max_bytes", "256M");
  r.cluster = f.boolean_or("cluster", false);
  r.timeout_s = f.number_or("timeout_s", 0);
  if (r.timeout_s < 0) f.fail("timeout_s", "must be >= 0");
  r.result_file = f.string_or("result_file", "");
  r.response_file = f.string_or("response_file", "");
  r.job_context = read_context(f);
  require_input(f, r);
  f.reject_unknown();
  return r;
}

HardwareRunRequest read_hardware_request_file(const std::string& file) {
  return read_hardware_request(read_json_file(file), file);
}

Json to_json(const HardwareRunResponse& r) {
  return {{"exit_code", r.exit_code}, {"network", r.network}, {"cluster", r.cluster}};
}

HardwareRunResponse read_hardware_response(const Json& document, const std::string& file) {
  JsonFields f(document, file, "");
  HardwareRunResponse r;
  r.exit_code = static_cast<int>(f.integer("exit_code", 0, 255));
  r.network = f.string("network");
  r.cluster = f.boolean_or("cluster", false);
  f.reject_unknown();
  return r;
}

void write_request_json(const std::string& path, const Json& doc) {
  std::ofstream out(path);
  out << doc.dump(2) << "\n";
  if (!out) throw InputError(path, "", "cannot write");
}

}  // namespace commsim::hw
