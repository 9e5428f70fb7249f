// PyTorch profiler (Kineto) traces: reading them (model from-trace, validate --trace) and writing them (run and
// simulate --trace-format kineto). Three traces:
//   tests/data/trace/nccl-two-buckets.json  hand-written in the shape PyTorch 2.x writes for NCCL jobs; every number
//                                           below is derived from the event times written in it (in microseconds)
//   tests/data/trace/emulated-tiny-mpi.json recorded on the development machine by
//       commsim run --backend mpi scenarios/emulated-tiny.json --cluster --trace F --trace-format kineto
//   tests/data/trace/ddp-gloo-mlp-small.json recorded with PyTorch by scripts/trace_ddp_gloo.py (see the test)
//   tests/data/trace/resnet50-ddp-nccl-h100.json.gz recorded with PyTorch 2.11 on an H100 by
//       scripts/trace_ddp_nccl.py (see the test)
//   a trace of a prediction, written and read back here.
#include "sim/model/kineto_trace.hpp"

#include "sim/model/model_json.hpp"
#include "sim/result/kineto_export.hpp"
#include "sim/step/simulation.hpp"
#include "tests/sim/test_util.hpp"
#include "validate/trace_check.hpp"

namespace commsim::test {
namespace {

// Hand-written events (the contents of a Kineto document's traceEvents) read back as a trace.
KinetoTrace read_events(const TempDir& dir, const std::string& events) {
  const std::string path = (dir.path() / "hand-written.json").string();
  std::ofstream(path) << R"({"traceEvents": [)" << events << "]}";
  return read_kineto_trace(path);
}

// tests/data/trace/nccl-two-buckets.json changed by `edit`, written to `dir`; returns its path. Its events (index:
// what): 1 ProfilerStep#5 [1000, 11000) us, 3 Linear_0's forward, 14 and 16 step 5's NCCL allreduces (1 000 000 and
// 250 000 floats, group of 8, both after the backward began at 4000), 17 ProfilerStep#6 [11000, 21000).
template <typename Edit>
std::string edited_two_buckets(const TempDir& dir, Edit&& edit) {
  Json doc = Json::parse(read_file("tests/data/trace/nccl-two-buckets.json"));
  edit(doc["traceEvents"]);
  const std::string path = (dir.path() / "edited.json").string();
  std::ofstream(path) << doc.dump();
  return path;
}

TEST(KinetoTrace, HandWrittenNcclTrace) {
  // Two ProfilerStep spans of 10 000 us. Per step: Linear_0 forward 1000 us, Linear_1 2000 us (leaves inside
  // Net_0, which is not a layer); backward ops joined by sequence number: Linear_1 3000 us, Linear_0 1000 us.
  // Compute = the GPU's non-NCCL kernels [0,1] [1,3] [3,6] [6,7] ms = 7 ms, so exposed = 10 - 7 = 3 ms.
  // Collectives come from the NCCL kernels (the 20 us record_param_comms CPU spans are left alone): 2000 us for
  // 1 000 000 floats, 2500 us for 250 000.
  const KinetoTrace t = read_kineto_trace("tests/data/trace/nccl-two-buckets.json");
  ASSERT_EQ(t.steps.size(), 2u);
  EXPECT_NEAR(t.mean_step_s(), 10e-3, 1e-12);
  ASSERT_EQ(t.modules.size(), 2u);
  EXPECT_EQ(t.modules[0].name, "Linear_0");
  EXPECT_NEAR(t.modules[0].forward_s, 1e-3, 1e-12);
  EXPECT_NEAR(t.modules[0].backward_s, 1e-3, 1e-12);
  EXPECT_NEAR(t.modules[1].forward_s, 2e-3, 1e-12);
  EXPECT_NEAR(t.modules[1].backward_s, 3e-3, 1e-12);
  EXPECT_NEAR(t.mean_exposed_comm_s(), 3e-3, 1e-12);
  EXPECT_EQ(t.collective_source, CollectiveSource::NcclKernels);
  ASSERT_EQ(t.collectives_per_step(), 2u);
  EXPECT_EQ(t.collectives[0].elements, 1'000'000u);
  EXPECT_EQ(t.collectives[0].bytes_per_element, 4);
  EXPECT_NEAR(t.mean_collective_s(0), 2e-3, 1e-12);
  EXPECT_NEAR(t.mean_collective_s(1), 2.5e-3, 1e-12);

  // As a model: the first bucket starts at +6 ms, when Linear_1's backward has just ended (Linear_0's ends at
  // +7 ms), so it is Linear_1's gradient; the second starts at +7 ms: Linear_0's. Times per sample: / 4.
  const Model m = model_from_trace(t, "nccl-two-buckets.json", "net", 4);
  ASSERT_EQ(m.layers.size(), 2u);
  ASSERT_EQ(m.layers[1].tensors.size(), 1u);
  EXPECT_EQ(m.tensors[static_cast<std::size_t>(m.layers[1].tensors[0])].elements, 1'000'000u);
  ASSERT_EQ(m.layers[0].tensors.size(), 1u);
  EXPECT_EQ(m.tensors[static_cast<std::size_t>(m.layers[0].tensors[0])].elements, 250'000u);
  EXPECT_NEAR(m.layers[1].backward_s_per_sample, 3e-3 / 4, 1e-15);
}

TEST(KinetoTrace, RecordedMpiRunMatchesItsPlan) {
  // The recorded run executed emulated-tiny's plan: its 3 traced steps (the MPI backend traces the first 3), the
  // layers of mlp-small, and one collective per bucket with exactly the bucket's gradient elements.
  const KinetoTrace t = read_kineto_trace("tests/data/trace/emulated-tiny-mpi.json");
  const SimulationRun run = simulate_scenario("scenarios/emulated-tiny.json", {}, 0, Fidelity::Analytical);
  ASSERT_EQ(t.steps.size(), 3u);
  ASSERT_EQ(t.modules.size(), run.plan.model.layers.size());
  for (std::size_t i = 0; i < t.modules.size(); ++i) EXPECT_EQ(t.modules[i].name, run.plan.model.layers[i].name);
  ASSERT_EQ(t.collectives_per_step(), run.plan.buckets.size());
  std::uint64_t traced = 0, planned = 0;
  for (std::size_t k = 0; k < run.plan.buckets.size(); ++k) {
    traced += t.collectives[k].elements;
    planned += run.plan.buckets[k].elements;
  }
  EXPECT_EQ(traced, planned);
  EXPECT_EQ(traced, 669'706u);  // mlp-small's parameters: every gradient communicated once per step
  // The backend waits at least each layer's scenario time (FLOPs x 64 / 1e10 FLOP/s), never less.
  for (std::size_t i = 0; i < t.modules.size(); ++i) {
    const Layer& l = run.plan.model.layers[i];
    EXPECT_GE(t.modules[i].forward_s, l.forward_flops_per_sample * 64 / 1e10);
    EXPECT_GE(t.modules[i].backward_s, l.backward_flops_per_sample * 64 / 1e10);
  }
  // Its model: mlp-small's parameter count in the traced buckets, and it simulates.
  const Model m = model_from_trace(t, "emulated-tiny-mpi.json", "traced", 64);
  EXPECT_EQ(m.parameters(), 669'706u);
  const SimulationRun traced_run =
      simulate_scenario("tests/data/trace/emulated-tiny-traced.json", {}, 0, Fidelity::Analytical);
  EXPECT_EQ(traced_run.plan.buckets.size(), run.plan.buckets.size());
  EXPECT_GT(traced_run.result.step_time_s, 0);
}

TEST(KinetoTrace, RealPyTorchDdpGlooTrace) {
  // tests/data/trace/ddp-gloo-mlp-small.json: PyTorch 1.13 (Debian's python3-torch, built without Kineto, so the
  // legacy array format without args) running scripts/trace_ddp_gloo.py: mlp-small under DDP with gloo, 4 ranks on
  // this machine, bucket_cap_mb=1; the schedule records 3 active steps. DDP fills buckets in reverse parameter order
  // up to 1 MiB (its first bucket's limit, dist._DEFAULT_FIRST_BUCKET_BYTES, and bucket_cap_mb): fc3 and fc2
  // (267 786 floats = 1.07 MB) close the first, fc1 (401 920 floats) the second, so 2 gloo allreduces per step.
  const KinetoTrace t = read_kineto_trace("tests/data/trace/ddp-gloo-mlp-small.json");
  ASSERT_EQ(t.steps.size(), 3u);
  EXPECT_EQ(t.collective_source, CollectiveSource::WorkSpans);
  EXPECT_EQ(t.collectives_per_step(), 2u);
  // 5, not 6: the last step's second gloo span is not in the file (the profiler stopped with the step, before gloo's
  // worker thread had closed its span); the reader counts what is there.
  EXPECT_EQ(t.collectives.size(), 5u);
  for (const TracedCollective& c : t.collectives) {
    EXPECT_EQ(c.name, "all_reduce");
    EXPECT_EQ(c.elements, 0u);  // this PyTorch writes no sizes
    EXPECT_GT(c.duration_s, 0);
  }
  for (const TracedStep& s : t.steps) EXPECT_LE(s.compute_s, s.duration_s);
  EXPECT_GT(t.mean_exposed_comm_s(), 0);
  EXPECT_LT(t.mean_exposed_comm_s(), t.mean_step_s());
  // No module spans and no sizes: not enough for a model, and the error says which.
  try {
    model_from_trace(t, "ddp-gloo-mlp-small.json", "", 64);
    ADD_FAILURE() << "a model from a trace without modules";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("nn.Module"), std::string::npos);
  }
}

TEST(KinetoTrace, RealPyTorchDdpNcclTraceOnAGpu) {
  // tests/data/trace/resnet50-ddp-nccl-h100.json.gz: PyTorch 2.11 (CUDA 13.0, its NCCL 2.28.9) on one H100 running
  // scripts/trace_ddp_nccl.py: torchvision's ResNet-50 under DDP with NCCL, one rank, batch 64, bf16 autocast; the
  // schedule records 2 active steps; gzip -9 of what it exported (the profiler's use_gzip writes the same format).
  const KinetoTrace t = read_kineto_trace("tests/data/trace/resnet50-ddp-nccl-h100.json.gz");
  // 2 steps: Kineto also writes each ProfilerStep on the GPU's timeline (cat gpu_user_annotation), not a step.
  ASSERT_EQ(t.steps.size(), 2u);
  // One rank: NCCL's in-place sums do nothing (no kernel), so the collectives are the record_param_comms spans,
  // without c10d's "wait" records (no elements). DDP's 25 MiB buckets (its first bucket 1 MiB) hold every gradient
  // once: 5 allreduces per step whose elements add up to ResNet-50's 25 557 032 parameters (torchvision's
  // ResNet50_Weights.IMAGENET1K_V1 meta num_params).
  EXPECT_EQ(t.collective_source, CollectiveSource::Records);
  ASSERT_EQ(t.collectives_per_step(), 5u);
  std::uint64_t elements = 0;
  for (const TracedCollective& c : t.collectives) {
    if (c.step != 0) continue;
    elements += c.elements;
    EXPECT_EQ(c.name, "allreduce");
  }
  EXPECT_EQ(elements, 25'557'032u);
  // Before each backward DDP broadcasts the module buffers from rank 0: the 53 BatchNorm layers' running mean and
  // variance, 2 x (64 + 1408 + 3584 + 10240 + 11264) = 53 120 floats (the channels of bn1 and of layers 1-4, with
  // their downsample BNs), and their 53 num_batches_tracked counters (int64): not gradients, kept apart.
  ASSERT_EQ(t.forward_collectives.size(), 4u);
  EXPECT_EQ(t.forward_collectives[0].elements, 53'120u);
  EXPECT_EQ(t.forward_collectives[0].dtype, "Float");
  EXPECT_EQ(t.forward_collectives[1].elements, 53u);
  EXPECT_EQ(t.forward_collectives[1].dtype, "Long");
  // GPU work runs after the host queued it: a module's times are its launched kernels', never more than the GPU
  // work of the steps (compute = the union of the non-NCCL kernels, copies and memsets).
  double modules_s = 0;
  for (const TracedModule& m : t.modules) modules_s += m.forward_s + m.backward_s;
  double compute_s = 0;
  for (const TracedStep& s : t.steps) compute_s += s.compute_s / static_cast<double>(t.steps.size());
  EXPECT_GT(modules_s, 0.5 * compute_s);  // the layers launch most of it (the rest: optimizer, loss, DDP's copies)
  EXPECT_LE(modules_s, compute_s);
  // The steps last 58.466 and 61.322 ms; the union of their kernels, copies and memsets is 18.197 and 18.195 ms
  // (computed from the trace's events by a separate script: Python's json, interval union within each host step).
  EXPECT_NEAR(t.mean_step_s(), (58.466442 + 61.32205) / 2 * 1e-3, 1e-9);
  EXPECT_NEAR(compute_s, 18.1961e-3, 1e-6);
  const Model m = model_from_trace(t, "resnet50-ddp-nccl-h100.json.gz", "", 64);
  EXPECT_EQ(m.parameters(), 25'557'032u);
  EXPECT_NE(m.description.find("2 collective(s) of 53173 elements"), std::string::npos) << m.description;
}

TEST(KinetoTrace, ModuleTimesAreTheGpuWorkTheyLaunched) {
  // A module whose host span lasts 100 us launches one kernel (correlation 7) that runs 40 us on the GPU, later; its
  // backward op (20 us on the host) launches one of 30 us (correlation 8). The model's times are the GPU's: 40 and
  // 30 us, not the host's 100 and 20.
  TempDir dir;
  const KinetoTrace t = read_events(dir, R"(
    {"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":1,"tid":1,"ts":0,"dur":1000},
    {"ph":"X","cat":"python_function","name":"nn.Module: Linear_0","pid":1,"tid":1,"ts":10,"dur":100},
    {"ph":"X","cat":"cpu_op","name":"aten::linear","pid":1,"tid":1,"ts":20,"dur":80,"args":{"Sequence number":5}},
    {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":50,"dur":5,"args":{"correlation":7}},
    {"ph":"X","cat":"cpu_op","name":"autograd::engine::evaluate_function: AddmmBackward0","pid":1,"tid":2,"ts":300,
     "dur":20,"args":{"Sequence number":5}},
    {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":2,"ts":305,"dur":5,"args":{"correlation":8}},
    {"ph":"X","cat":"record_param_comms","name":"record_param_comms","pid":1,"tid":2,"ts":400,"dur":5,
     "args":{"Collective name":"allreduce","dtype":"Float","In msg nelems":10,"Out msg nelems":10}},
    {"ph":"X","cat":"kernel","name":"gemm","pid":0,"tid":7,"ts":200,"dur":40,"args":{"correlation":7}},
    {"ph":"X","cat":"kernel","name":"gemm_backward","pid":0,"tid":7,"ts":330,"dur":30,"args":{"correlation":8}})");
  ASSERT_EQ(t.modules.size(), 1u);
  EXPECT_NEAR(t.modules[0].forward_s, 40e-6, 1e-12);
  EXPECT_NEAR(t.modules[0].backward_s, 30e-6, 1e-12);
  EXPECT_NEAR(t.steps[0].compute_s, 70e-6, 1e-12);  // the two kernels
  EXPECT_NEAR(t.steps[0].backward_start_s, 300e-6, 1e-12);
  ASSERT_EQ(t.collectives.size(), 1u);  // after the backward began: a gradient's
  // The step lasts 1000 us; the GPU computes 70 us and the collective spans 5: the GPU idles 925 us, 92.5 % of the
  // step, which `validate --trace` says (against any prediction).
  const SimulationRun run = simulate_scenario("scenarios/emulated-tiny.json", {}, 0, Fidelity::Analytical);
  const validate::TraceComparison c = validate::compare_with_trace(t, run);
  EXPECT_TRUE(std::any_of(c.notes.begin(), c.notes.end(), [](const std::string& n) {
    return n.find("the GPU idles 0.925 ms per step") != std::string::npos;
  }));
}

TEST(KinetoTrace, ComputeBesideNcclKernelsIsTakenAtFullSpeed) {
  // A GPU of 100 SMs (deviceProperties numSms). Linear_0's kernel runs 0-100 us; an NCCL kernel of 20 blocks (grid
  // [20, 1, 1], one per channel) runs 50-150 us. For its last 50 us the gemm had 80 of the 100 SMs, so it ran at 0.8
  // of its speed (sim/step/interference.hpp): its work at full speed is 50 + 50 x 0.8 = 90 us. Its backward kernel
  // (200-230 us) ran alone: 30 us. Without numSms, or without the grid, the kernels' own 100 us.
  const auto trace = [](const std::string& device_properties, const std::string& grid) {
    return std::string(R"({)") + device_properties + R"("traceEvents": [
    {"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":1,"tid":1,"ts":0,"dur":1000},
    {"ph":"X","cat":"python_function","name":"nn.Module: Linear_0","pid":1,"tid":1,"ts":0,"dur":100},
    {"ph":"X","cat":"cpu_op","name":"aten::linear","pid":1,"tid":1,"ts":0,"dur":100,"args":{"Sequence number":5}},
    {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":1,"dur":1,"args":{"correlation":7}},
    {"ph":"X","cat":"cpu_op","name":"autograd::engine::evaluate_function: AddmmBackward0","pid":1,"tid":2,"ts":40,
     "dur":160,"args":{"Sequence number":5}},
    {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":2,"ts":41,"dur":1,"args":{"correlation":8}},
    {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":3,"ts":45,"dur":1,"args":{"correlation":9}},
    {"ph":"X","cat":"kernel","name":"gemm","pid":0,"tid":7,"ts":0,"dur":100,"args":{"correlation":7}},
    {"ph":"X","cat":"kernel","name":"gemm_backward","pid":0,"tid":7,"ts":200,"dur":30,"args":{"correlation":8}},
    {"ph":"X","cat":"kernel","name":"ncclDevKernel_AllReduce_Sum_f32_RING_LL","pid":0,"tid":20,"ts":50,"dur":100,
     "args":{"correlation":9,"Collective name":"allreduce","dtype":"Float","In msg nelems":64,"Out msg nelems":64)" +
           grid + R"(}}]})";
  };
  TempDir dir;
  const auto forward_s = [&](const std::string& document) {
    const std::string path = (dir.path() / "t.json").string();
    std::ofstream(path) << document;
    const KinetoTrace t = read_kineto_trace(path);
    EXPECT_NEAR(t.modules.at(0).backward_s, 30e-6, 1e-12);
    return t.modules.at(0).forward_s;
  };
  const std::string sms = R"("deviceProperties": [{"id": 0, "numSms": 100}], )";
  EXPECT_NEAR(forward_s(trace(sms, R"(,"grid":[20,1,1])")), 90e-6, 1e-12);
  EXPECT_NEAR(forward_s(trace("", R"(,"grid":[20,1,1])")), 100e-6, 1e-12);
  EXPECT_NEAR(forward_s(trace(sms, "")), 100e-6, 1e-12);
}

// A prediction on a GPU topology written as Kineto writes a CUDA job (kernels, launches, NCCL kernels with their
// grids, numSms) and imported back: the model is the one that was simulated, and simulating it again gives the same
// step. ResNet-50 on 4 DGX A100 (108 SMs, no concurrent_slowdown): every layer's time is its compute at full speed
// (the slowdown the NCCL kernels' SMs caused is taken out, and the simulator puts it back), and each bucket's
// collective is issued when its last gradient is ready, so its tensor sits on the layer whose backward ends then
// (conv1 for the last bucket): the same buckets overlap the same compute. On DGX H100 the slowdown beside a
// collective has a further factor 1 + c (c = 0.0378, memory traffic) that a trace does not tell apart: the imported
// compute is the simulated one up to that factor.
TEST(KinetoTrace, AGpuPredictionImportedBackSimulatesTheSameStep) {
  for (const std::string topology : {"dgx-a100", "dgx-h100"}) {
    SCOPED_TRACE(topology);
    const std::vector<std::string> sets = {"topology=" +
                                           std::filesystem::absolute("topologies/" + topology + ".json").string()};
    const SimulationRun run = simulate_scenario("scenarios/resnet50-dgx-a100.json", sets, 0, Fidelity::Analytical);
    TempDir dir;
    const std::string trace_path = (dir.path() / "t.json").string(), model_path = (dir.path() / "m.json").string();
    std::ofstream(trace_path) << kineto_trace(run.result, run.plan, run.topology->library()).dump();
    const Model imported =
        model_from_trace(read_kineto_trace(trace_path), trace_path, "imported", run.plan.batch_per_gpu);
    std::ofstream(model_path) << model_file_text(imported);
    EXPECT_EQ(imported.parameters(), run.plan.model.parameters());
    EXPECT_EQ(imported.tensors.size(), run.plan.buckets.size());
    const double c = run.topology->library().concurrent_slowdown;
    double imported_compute_s = 0;
    for (const Layer& l : imported.layers)
      imported_compute_s += (l.forward_s_per_sample + l.backward_s_per_sample) * run.plan.batch_per_gpu;
    // Equal up to rounding: every time passes through the engine's picosecond quantum (218 tasks, under 1e-10 s).
    const double rounding_s = 1e-9;
    EXPECT_GE(imported_compute_s, run.plan.compute_s - rounding_s);
    EXPECT_LE(imported_compute_s, run.plan.compute_s * (1 + c) + rounding_s);
    std::vector<std::string> again = sets;
    again.push_back("model=" + model_path);
    again.push_back(R"(strategy.fusion={"mode":"none"})");
    const SimulationRun rerun = simulate_scenario("scenarios/resnet50-dgx-a100.json", again, 0, Fidelity::Analytical);
    if (c == 0)
      EXPECT_NEAR(rerun.result.step_time_s, run.result.step_time_s, rounding_s);
    else
      EXPECT_NEAR(rerun.result.step_time_s, run.result.step_time_s, c * run.result.step_time_s);
  }
}

// Under priority forward_order with 4 MiB partitions, the next step's forward starts while the last pieces still
// run, so a piece can start inside the next ProfilerStep or before that step's backward; what places it is when the
// framework issued it (record_param_comms and its launch), in its own step after its gradients. Every piece comes
// back as a gradient of its step: ResNet-50's 25 557 032 parameters in as many tensors as the step has collectives.
TEST(KinetoTrace, PartitionedCollectivesBelongToTheStepThatIssuedThem) {
  const SimulationRun run =
      simulate_scenario("scenarios/resnet50-dgx-a100.json",
                        {R"(strategy.priority="forward_order")", "strategy.partition_mb=4"}, 0, Fidelity::Analytical);
  TempDir dir;
  const std::string path = (dir.path() / "t.json").string();
  std::ofstream(path) << kineto_trace(run.result, run.plan, run.topology->library()).dump();
  const KinetoTrace t = read_kineto_trace(path);
  std::size_t collectives = 0;
  for (const Task& task : run.plan.step_plan(0).tasks) collectives += task.kind == TaskKind::Collective;
  EXPECT_EQ(t.collectives_per_step(), collectives);
  EXPECT_TRUE(t.forward_collectives.empty());
  const Model imported = model_from_trace(t, path, "imported", run.plan.batch_per_gpu);
  EXPECT_EQ(imported.parameters(), 25557032u);
  EXPECT_EQ(imported.tensors.size(), collectives);
}

TEST(KinetoTrace, NcclKernelsBelongWhereTheHostLaunchedThem) {
  // Two steps of 1000 us. In step 1 the host launches an NCCL broadcast at 100 us (correlation 1), before the backward
  // begins at 300 us, but the GPU runs it at 320-330 us; it launches an allreduce at 900 us (correlation 2) that the
  // GPU runs at 1010-1050 us, inside step 2's span. By launch time the broadcast is the forward's (not a gradient)
  // and the allreduce is step 1's gradient, of 40 us.
  TempDir dir;
  const KinetoTrace t = read_events(dir, R"(
    {"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":1,"tid":1,"ts":0,"dur":1000},
    {"ph":"X","cat":"user_annotation","name":"ProfilerStep#2","pid":1,"tid":1,"ts":1000,"dur":1000},
    {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernelExC","pid":1,"tid":1,"ts":100,"dur":5,"args":{"correlation":1}},
    {"ph":"X","cat":"cpu_op","name":"autograd::engine::evaluate_function: AddmmBackward0","pid":1,"tid":2,"ts":300,
     "dur":20},
    {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernelExC","pid":1,"tid":2,"ts":900,"dur":5,"args":{"correlation":2}},
    {"ph":"X","cat":"kernel","name":"ncclDevKernel_Broadcast_RING_LL","pid":0,"tid":7,"ts":320,"dur":10,
     "args":{"correlation":1,"Collective name":"broadcast","dtype":"Float","In msg nelems":8,"Out msg nelems":8}},
    {"ph":"X","cat":"kernel","name":"ncclDevKernel_AllReduce_Sum_f32_RING_LL","pid":0,"tid":7,"ts":1010,"dur":40,
     "args":{"correlation":2,"Collective name":"allreduce","dtype":"Float","In msg nelems":64,"Out msg nelems":64}})");
  ASSERT_EQ(t.forward_collectives.size(), 1u);
  EXPECT_EQ(t.forward_collectives[0].elements, 8u);
  ASSERT_EQ(t.collectives.size(), 1u);
  EXPECT_EQ(t.collectives[0].step, 0);
  EXPECT_EQ(t.collectives[0].elements, 64u);
  EXPECT_NEAR(t.collectives[0].issued_s, 900e-6, 1e-12);
  EXPECT_NEAR(t.collectives[0].duration_s, 40e-6, 1e-12);
}

TEST(KinetoTrace, APredictionComparedWithItsOwnTraceHasNoError) {
  // simulate --trace-format kineto writes what `validate --trace` reads: the step time, exposed communication
  // (step minus compute, Result's definition) and every collective must come back as predicted.
  const SimulationRun run = simulate_scenario("scenarios/emulated-tiny.json", {}, 0, Fidelity::Analytical);
  TempDir dir;
  const std::string path = (dir.path() / "predicted.json").string();
  {
    std::ofstream out(path);
    out << kineto_trace(run.result, run.plan, run.topology->library()).dump();
  }
  const KinetoTrace t = read_kineto_trace(path);
  const validate::TraceComparison c = validate::compare_with_trace(t, run);
  ASSERT_EQ(c.rows.size(), 2 + run.plan.buckets.size());
  for (const validate::TraceRow& r : c.rows) EXPECT_NEAR(r.error(), 0, 1e-9) << r.what;
  EXPECT_TRUE(c.notes.empty());
}

// Two more self-comparisons that used to show errors. Local SGD averaging after steps 0 and 2 of 3 (k 2 from
// begin_step 1) traces steps 0-2, whose mean is not the steady state's (from step 1): the step time is predicted for
// the traced steps themselves. One allreduce per tensor on 2 streams starts a layer's weight and bias at the same
// instant: both sides order such a tie alike (the longer first, then the plan's order).
TEST(KinetoTrace, SelfComparisonsOfLocalSgdAndTiedCollectivesHaveNoError) {
  const std::vector<std::vector<std::string>> cases = {
      {R"(strategy.localsgd={"k_steps":2,"begin_step":1})", "steps=3"},
      {R"(strategy.fusion={"mode":"none"})", "strategy.nccl_comm_num=2", R"(framework={"name":"none"})"}};
  for (const std::vector<std::string>& sets : cases) {
    SCOPED_TRACE(sets.front());
    const SimulationRun run = simulate_scenario("scenarios/emulated-tiny.json", sets, 0, Fidelity::Analytical);
    TempDir dir;
    const std::string path = (dir.path() / "predicted.json").string();
    std::ofstream(path) << kineto_trace(run.result, run.plan, run.topology->library()).dump();
    const validate::TraceComparison c = validate::compare_with_trace(read_kineto_trace(path), run);
    for (const validate::TraceRow& r : c.rows) EXPECT_NEAR(r.error(), 0, 1e-9) << r.what;
    for (const std::string& note : c.notes) EXPECT_EQ(note.find("elements traced"), std::string::npos) << note;
  }
}

// The same on a GPU trace (ResNet-50 on 4 DGX A100): stage-3 sharding's gathers of parameters before the backward
// are set apart on both sides (they are no gradients), and casts to fp16 are kernels, so the trace's compute holds
// them and so does the predicted compute it is compared with (every task but the collectives, as a union).
TEST(KinetoTrace, GpuSelfComparisonsHaveNoError) {
  const std::vector<std::vector<std::string>> cases = {
      {}, {R"(strategy.sharding={"stage":3})", R"(strategy.comm_dtype="fp16")"}, {R"(strategy.comm_dtype="bf16")"}};
  for (const std::vector<std::string>& sets : cases) {
    SCOPED_TRACE(sets.empty() ? "plain" : sets.front());
    const SimulationRun run = simulate_scenario("scenarios/resnet50-dgx-a100.json", sets, 0, Fidelity::Analytical);
    TempDir dir;
    const std::string path = (dir.path() / "predicted.json").string();
    std::ofstream(path) << kineto_trace(run.result, run.plan, run.topology->library()).dump();
    const validate::TraceComparison c = validate::compare_with_trace(read_kineto_trace(path), run);
    for (const validate::TraceRow& r : c.rows) EXPECT_NEAR(r.error(), 0, 1e-9) << r.what;
    EXPECT_TRUE(c.notes.empty()) << c.notes.front();
  }
}

// Under priority forward_order the next step's forward starts while the last collectives still run: the exported
// ProfilerStep spans end where the next begins (as prof.step() spans do), 18, 20 and 20 ms on 4 layers of 1 Mi
// elements at 1 ms per MiB (the Result's steps), so the trace's mean step is the prediction's, 58 / 3 ms.
TEST(KinetoTrace, StepSpansDoNotOverlapUnderForwardOrder) {
  Json doc = Json::parse(read_file("tests/data/training/priority-3layer.json"));
  doc["topology"] = std::filesystem::absolute("tests/data/training/cluster-2x2-1ms-per-mib.json").string();
  doc["model"] = std::filesystem::absolute("tests/data/training/model-4x1m.json").string();
  doc["device"] = {{"name", "test"}, {"peak_flops", 1e12}, {"efficiency", 1}, {"memory_Bps", 3e18}, {"source", "t"}};
  doc["batch_per_gpu"] = 1;
  doc["steps"] = 3;
  doc["strategy"] = {{"fusion", {{"mode", "none"}}}, {"priority", "forward_order"}};
  TempDir dir;
  const std::string scenario = (dir.path() / "s.json").string(), path = (dir.path() / "t.json").string();
  std::ofstream(scenario) << doc.dump();
  const SimulationRun run = simulate_scenario(scenario, {}, 0, Fidelity::Analytical);
  std::ofstream(path) << kineto_trace(run.result, run.plan, run.topology->library()).dump();
  const KinetoTrace t = read_kineto_trace(path);
  ASSERT_EQ(t.steps.size(), 3u);
  for (std::size_t s = 0; s < 3; ++s) EXPECT_NEAR(t.steps[s].duration_s, run.result.steps_s[s], 1e-9) << s;
  EXPECT_NEAR(t.steps[1].start_s, t.steps[0].start_s + t.steps[0].duration_s, 1e-9);
  EXPECT_NEAR(validate::compare_with_trace(t, run).rows.at(0).error(), 0, 1e-9);
}

// A sharded step reduce-scatters the gradients and all-gathers the parameters back (stage 2 after backward, stage 3
// also before each layer's backward): only the reduce-scatters are gradients, so the model imported from the trace
// of either stage has mlp-small's 669 706 parameters once, not once per collective.
TEST(KinetoTrace, ShardedTracesCountEachParameterOnce) {
  for (const char* stage : {R"(strategy.sharding={"stage":2})", R"(strategy.sharding={"stage":3})"}) {
    SCOPED_TRACE(stage);
    const SimulationRun run = simulate_scenario("scenarios/emulated-tiny.json", {stage}, 0, Fidelity::Analytical);
    TempDir dir;
    const std::string path = (dir.path() / "sharded.json").string();
    std::ofstream(path) << kineto_trace(run.result, run.plan, run.topology->library()).dump();
    const Model m = model_from_trace(read_kineto_trace(path), path, "", 1);
    EXPECT_EQ(m.parameters(), run.plan.model.parameters());
    EXPECT_EQ(m.parameters(), 669'706u);
  }
}

TEST(KinetoTrace, ModuleSpansOutsideTheStepsDoNotCount) {
  // Both steps run Linear_0 for 1000 us. After the last step ends (21000 us) another Linear_0 of 5000 us and an
  // Eval_0, and before the first (1000 us) a Warmup_0: none is inside a ProfilerStep span, so Linear_0 keeps its
  // mean of 1 ms (counted, the extra span would make it (1000 + 1000 + 5000) / 2 = 3.5 ms) and no layer is added.
  TempDir dir;
  const std::string path = edited_two_buckets(dir, [](Json& events) {
    events.push_back(Json::parse(
        R"({"ph":"X","cat":"python_function","name":"nn.Module: Linear_0","pid":1,"tid":1,"ts":30000,"dur":5000})"));
    events.push_back(Json::parse(
        R"({"ph":"X","cat":"python_function","name":"nn.Module: Eval_0","pid":1,"tid":1,"ts":36000,"dur":1000})"));
    events.push_back(Json::parse(
        R"({"ph":"X","cat":"python_function","name":"nn.Module: Warmup_0","pid":1,"tid":1,"ts":0,"dur":500})"));
  });
  const KinetoTrace t = read_kineto_trace(path);
  ASSERT_EQ(t.modules.size(), 2u);
  EXPECT_EQ(t.modules[0].name, "Linear_0");
  EXPECT_EQ(t.modules[1].name, "Linear_1");
  EXPECT_NEAR(t.modules[0].forward_s, 1e-3, 1e-12);
}

TEST(KinetoTrace, ValuesTheModelLoaderWouldRefuseAreRefused) {
  // A model file holds tensors of at most 2^50 elements and times of at most 100 days (kMaxElements,
  // kMaxSimulatedSeconds): a trace asking for more is refused at the field that asks, never written as a model the
  // loader then refuses.
  TempDir dir;
  auto error_in = [&](auto edit) {
    const std::string path = edited_two_buckets(dir, edit);
    return error_of([&] { model_from_trace(read_kineto_trace(path), path, "", 1); });
  };
  // 2^62 elements in one allreduce.
  EXPECT_NE(error_in([](Json& e) {
              e[14]["args"]["In msg nelems"] = std::int64_t{1} << 62;
            }).find("traceEvents[14].args.In msg nelems: must be at most 2^50"),
            std::string::npos);
  // A forward of 1e18 us (3e4 years).
  EXPECT_NE(error_in([](Json& e) { e[3]["dur"] = 1e18; }).find("traceEvents[3].dur: must be at most"),
            std::string::npos);
  // Every timestamp times 1e300: beyond 2^53 us a double has no microseconds left, so every span would last 0.
  EXPECT_NE(error_in([](Json& e) {
              for (Json& event : e)
                if (event.contains("ts")) event["ts"] = event["ts"].get<double>() * 1e300;
            }).find("traceEvents[1].ts: must be within +-2^53 us"),
            std::string::npos);
  // Two allreduces of 2^50 floats each pass one by one, but the model's tensors would add up to 2^51: the model
  // is checked as the loader reads it before it is returned. Its layer 0 (Linear_0) holds the second bucket, layer 1
  // the first, so the sum passes 2^50 at layers[1]'s tensor.
  const std::string sum = error_in([](Json& e) {
    for (int i : {14, 16}) e[i]["args"]["In msg nelems"] = e[i]["args"]["Out msg nelems"] = std::int64_t{1} << 50;
  });
  EXPECT_NE(sum.find("edited.json (as a model file): layers[1].params[0].elements: the tensors add up past 2^50"),
            std::string::npos)
      << sum;
}

TEST(KinetoTrace, CollectivesThatAreNoGradientBucketAreRefused) {
  // The reader takes every collective after the backward began for a gradient bucket; an all-to-all (expert
  // parallelism's dispatch) or a group of 0 ranks is no such thing: refused at the field.
  TempDir dir;
  auto read_error = [&](auto edit) {
    const std::string path = edited_two_buckets(dir, edit);
    return error_of([&] { read_kineto_trace(path); });
  };
  EXPECT_NE(read_error([](Json& e) {
              e[14]["args"]["Collective name"] = "alltoall";
            }).find("traceEvents[14].args.Collective name: \"alltoall\" is not a collective commsim models"),
            std::string::npos);
  EXPECT_NE(read_error([](Json& e) {
              e[16]["args"]["Group size"] = 0;
            }).find("traceEvents[16].args.Group size: must be an integer in [1, 2^22]"),
            std::string::npos);
  // A broadcast is read (the simulator models it: a hierarchical allreduce's last phase) but is no bucket of
  // gradients, so no model is made from a trace that has one after its backward began.
  const std::string path = edited_two_buckets(dir, [](Json& e) { e[16]["args"]["Collective name"] = "broadcast"; });
  const KinetoTrace t = read_kineto_trace(path);
  EXPECT_NE(error_of([&] { model_from_trace(t, path, "", 1); }).find("traceEvents[16].args.Collective name"),
            std::string::npos);
}

TEST(KinetoTrace, ZeroLengthStepsAndCollectivesAreRefused) {
  // validate --trace divides by the traced step and collective times (its error is (predicted - traced) / traced):
  // a step or a collective that lasted 0 us was not measured, and is refused rather than shown as a 0.0 % error.
  TempDir dir;
  for (const auto& [event, field] : {std::pair{1, "traceEvents[1].dur"}, std::pair{14, "traceEvents[14].dur"}}) {
    const std::string path = edited_two_buckets(dir, [event = event](Json& e) { e[event]["dur"] = 0; });
    const std::string error = error_of([&] { read_kineto_trace(path); });
    EXPECT_EQ(error.rfind(path + ": " + field + ": ", 0), 0u) << error;
  }
}

TEST(KinetoTrace, BadTracesNameTheEventAndField) {
  TempDir dir;
  auto error_of = [&](const std::string& text) {
    const std::string path = (dir.path() / "t.json").string();
    std::ofstream(path) << text;
    try {
      read_kineto_trace(path);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(error_of(R"({"traceEvents": []})").find("ProfilerStep"), std::string::npos);
  {
    // A gzip header followed by bytes that are no deflate stream, and the shipped trace cut after 1000 bytes: one
    // line each, naming the file and what is wrong with it.
    const std::string corrupt = (dir.path() / "corrupt.json.gz").string(), cut = (dir.path() / "cut.json.gz").string();
    const char header_then_garbage[] = "\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03 this is not deflate data";
    std::ofstream(corrupt, std::ios::binary).write(header_then_garbage, sizeof header_then_garbage - 1);
    std::ifstream shipped("tests/data/trace/resnet50-ddp-nccl-h100.json.gz", std::ios::binary);
    std::string head(1000, '\0');
    shipped.read(head.data(), static_cast<std::streamsize>(head.size()));
    std::ofstream(cut, std::ios::binary) << head;
    // A file that expands beyond its limit stops there (read_json_file's is kMaxGunzippedBytes; the shipped trace
    // expands to 9 791 921 bytes, beyond 1 MB).
    try {
      gunzipped_text("tests/data/trace/resnet50-ddp-nccl-h100.json.gz", 1'000'000);
      ADD_FAILURE() << "expanded past the limit";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("expands to more than 1000000 bytes"), std::string::npos) << e.what();
    }
    EXPECT_EQ(gunzipped_text("tests/data/trace/resnet50-ddp-nccl-h100.json.gz", 9'791'921).size(), 9'791'921u);
    // The shipped trace copied under a name without .gz is still read as gzip (its first bytes, 1f 8b, say so): the
    // same 2 steps as the original.
    const std::string renamed = (dir.path() / "renamed.json").string();
    std::filesystem::copy_file("tests/data/trace/resnet50-ddp-nccl-h100.json.gz", renamed);
    EXPECT_EQ(read_kineto_trace(renamed).steps.size(),
              read_kineto_trace("tests/data/trace/resnet50-ddp-nccl-h100.json.gz").steps.size());
    for (const auto& [path, what] : {std::pair{corrupt, "corrupt compressed data"}, std::pair{cut, "cut short"}}) {
      try {
        read_kineto_trace(path);
        ADD_FAILURE() << "read a broken gzip file " << path;
      } catch (const InputError& e) {
        EXPECT_EQ(std::string(e.what()).rfind(path, 0), 0u) << e.what();
        EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
        EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
      }
    }
  }
  EXPECT_NE(error_of(R"({"events": []})").find("traceEvents"), std::string::npos);
  const std::string step = R"({"ph":"X","name":"ProfilerStep#1","ts":0,"dur":10})";
  EXPECT_NE(error_of(R"({"traceEvents": [)" + step +
                     R"(,{"ph":"X","name":"record_param_comms","cat":"cpu_op","ts":1,"dur":1,
                        "args":{"Collective name":"allreduce","dtype":"Float","Out msg nelems":4}}]})")
                .find("traceEvents[1].args.In msg nelems"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"traceEvents": [)" + step + R"(,{"ph":"X","name":"x","ts":1,"dur":-1}]})")
                .find("traceEvents[1].dur"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"traceEvents": [)" + step +
                     R"(,{"ph":"X","name":"record_param_comms","ts":1,"dur":1,
                        "args":{"Collective name":"allreduce","dtype":"Quaternion","In msg nelems":4,
                                "Out msg nelems":4}}]})")
                .find("traceEvents[1].args.dtype"),
            std::string::npos);
  // The device's SM count and an NCCL kernel's grid, which the compute's correction reads, must be what Kineto writes.
  const std::string nccl_kernel = R"(,{"ph":"X","cat":"kernel","name":"ncclDevKernel_AllReduce_Sum_f32_RING_LL",
      "ts":2,"dur":1,"args":{"Collective name":"allreduce","dtype":"Float","In msg nelems":4,"Out msg nelems":4)";
  for (const char* sms : {R"("108")", "-1", "0", "107.5"})
    EXPECT_NE(error_of(std::string(R"({"deviceProperties": [{"id": 0, "numSms": )") + sms + R"(}], "traceEvents": [)" +
                       step + "]}")
                  .find("deviceProperties[0].numSms"),
              std::string::npos)
        << sms;
  EXPECT_NE(error_of(R"({"deviceProperties": {}, "traceEvents": [)" + step + "]}").find("deviceProperties"),
            std::string::npos);
  for (const char* grid : {"[-5,1,1]", "[2.5,1,1]", R"(["24",1,1])", "24", "[]"})
    EXPECT_NE(error_of(R"({"deviceProperties": [{"id": 0, "numSms": 108}], "traceEvents": [)" + step + nccl_kernel +
                       R"(,"grid":)" + grid + "}}]}")
                  .find("traceEvents[1].args.grid"),
              std::string::npos)
        << grid;
  // A CPU process group's work span and the record issued with it come in pairs: one without the other is named.
  const std::string record = R"(,{"ph":"X","cat":"cpu_op","name":"record_param_comms","pid":1,"tid":2,"ts":1,"dur":0,
      "args":{"Collective name":"allreduce","dtype":"Float","In msg nelems":4,"Out msg nelems":4}})";
  const std::string work = R"(,{"ph":"X","cat":"cpu_op","name":"mpi:all_reduce","pid":1,"tid":2,"ts":1,"dur":3})";
  const std::string later_work = R"(,{"ph":"X","cat":"cpu_op","name":"mpi:all_reduce","pid":1,"tid":2,"ts":5,"dur":3})";
  EXPECT_NE(error_of(R"({"traceEvents": [)" + step + record + work + later_work + "]}").find("traceEvents[3]"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"traceEvents": [)" + step + record + record + work + "]}").find("no work span"),
            std::string::npos);
}

// A trace of DGC's sparse exchange holds all-gathers of the selected values after the backward and no reduce-scatter
// (sharded training's gathers of parameters come with reduce-scatters of the gradients): the gradients' sizes are not
// in it, so from-trace refuses it, naming the first such all-gather.
TEST(KinetoTrace, ASparseExchangeOfSelectedGradientsIsRefused) {
  const SimulationRun run = simulate_scenario(
      "scenarios/emulated-tiny.json", {R"(strategy.dgc={"rampup_begin_step":0,"rampup_step":1,"sparsity":[0.99]})"}, 0,
      Fidelity::Analytical);
  TempDir dir;
  const std::string path = (dir.path() / "dgc.json").string();
  std::ofstream(path) << kineto_trace(run.result, run.plan, run.topology->library()).dump();
  try {
    model_from_trace(read_kineto_trace(path), path, "dgc", 64);
    ADD_FAILURE() << "imported a DGC trace";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("args.Collective name: an all-gather after the backward began and no "
                                         "reduce-scatter"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace commsim::test
