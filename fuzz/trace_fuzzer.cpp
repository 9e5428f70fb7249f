// libFuzzer harness: the PyTorch profiler (Kineto) trace reader and the model made from a trace
// (sim/model/kineto_trace.cpp: `commsim model from-trace`, `validate --trace`).
#include "fuzz/sandbox.hpp"
#include "sim/model/kineto_trace.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string file = commsim::fuzz::write_input("trace.json", data, size);
  commsim::fuzz::expect_clean_refusal([&] {
    const commsim::KinetoTrace trace = commsim::read_kineto_trace(file);
    commsim::model_from_trace(trace, file, "", 8);
  });
  return 0;
}
