#include "sim/step/step_simulator.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "sim/collective/nccl_model.hpp"
#include "sim/core/error.hpp"
#include "sim/engine/executor.hpp"
#include "sim/network/flow_partition.hpp"
#include "sim/result/step_metrics.hpp"
#include "sim/step/interference.hpp"
#include "sim/step/shared_bandwidth.hpp"
#include "sim/step/unrolled_steps.hpp"

namespace commsim {
namespace {

constexpr double kMaxRingTransfers = 1 << 15;
// The most operations lumped: the partition's graph takes ~100 bytes per operation beside the schedule's 32 (routes,
// dependencies, classes), so beyond ~16 M operations (1.7 GB) the full schedules run instead. The aggregated rings
// of a 65 536-GPU step are 9.6 M.
constexpr std::uint64_t kMaxLumpedOperations = 1 << 24;

// Collectives that differ only in where their vector starts in the buffer (offset) take the same time and share a
// cached schedule and price; every other field of the spec can change them.
using ScheduleKey = CollectiveKey;
ScheduleKey key_of(CollectiveSpec c) {
  c.offset = 0;
  return collective_key(c);
}

class StepRunner final : public EventHandler {
 public:
  StepRunner(const Plan& plan, const Topology& topo, Fidelity fidelity, FlowLumping lumping)
      : plan_(plan),
        topo_(topo),
        fidelity_(fidelity),
        shared_(queue_, [this](int t) { collective_done(t); }),
        compute_(queue_, topo.library().sms, topo.library().concurrent_slowdown, [this](int t) { finish(t); }) {
    if (fidelity != Fidelity::Flow) return;
    check_network_size(fidelity, topo);
    if (lumping == FlowLumping::Classes) lump_collectives();
    network_ = quotient_ ? make_quotient_flow_network(topo, queue_, *quotient_) : make_flow_network(topo, queue_);
  }

  // Runs one step to completion; returns its duration.
  TimePs run(const StepPlan& step, double factor, const std::vector<int>* trace_ranks, int step_index, Result& out) {
    return run_ordered(step, factor, trace_ranks, step_index, out, nullptr);
  }

  // The run's steps as one timeline (priority forward_order); each step lasts from its first forward's start to
  // the next step's.
  std::vector<StepMeasure> run_unrolled(const Plan& plan, const TraceSelection& trace, Result& out) {
    const UnrolledSteps u = unroll_steps(plan);
    run_ordered(u.tasks, 1.0, nullptr, -1, out, &u);
    std::vector<StepMeasure> steps;
    for (int s = 0; s < plan.steps(); ++s) {
      const std::size_t first = u.first_task[s], last = u.first_task[s + 1];
      const StepPlan& step = plan.step_plan(s);
      std::vector<TaskInterval<TimePs>> intervals;
      for (std::size_t i = first; i < last; ++i)
        intervals.push_back({u.tasks.tasks[i].stream, u.tasks.tasks[i].kind == TaskKind::Compute, start_[i], end_[i]});
      steps.push_back({.seconds = ps_to_seconds(start_[last] - start_[first]),
                       .breakdown = step_breakdown(intervals, plan_.streams, [](TimePs d) { return ps_to_seconds(d); }),
                       .bytes_sent = plan_bytes_sent(step)});
      if (!trace.traces(s)) continue;
      const std::vector<int> ranks = trace.ranks.empty() || !plan.symmetric_ranks
                                         ? std::vector<int>{plan.critical_rank[static_cast<std::size_t>(s)]}
                                         : trace.ranks;
      trace_step(step, ranks, s, out, first);
    }
    return steps;
  }

  // Runs `step`; with `ordered`, a communication stream starts the ready task of the earliest (step, layer) first.
  TimePs run_ordered(const StepPlan& step, double factor, const std::vector<int>* trace_ranks, int step_index,
                     Result& out, const UnrolledSteps* ordered) {
    step_ = &step;
    ordered_ = ordered;
    factor_ = factor;
    const std::size_t n = step.tasks.size();
    pending_.assign(n, 0);
    start_.assign(n, 0);
    end_.assign(n, 0);
    ready_at_.assign(n, queue_.now());
    kernel_start_.assign(n, 0);
    kernel_end_.assign(n, 0);
    dependents_.assign(n, {});
    queues_.assign(plan_.streams + 1, {});
    head_.assign(plan_.streams + 1, 0);
    busy_.assign(plan_.streams + 1, false);
    ready_.assign(plan_.streams + 1, {});
    runs_.clear();
    channels_.assign(n, 0);
    for (std::size_t i = 0; i < n; ++i) {
      const Task& t = step.tasks[i];
      pending_[i] = static_cast<int>(t.deps.size());
      for (int d : t.deps) dependents_[d].push_back(static_cast<int>(i));
      queues_[t.stream].push_back(static_cast<int>(i));
    }
    remaining_ = n;
    for (std::size_t i = 0; i < n; ++i)
      if (pending_[i] == 0) make_ready(static_cast<int>(i));
    const TimePs begin = step_start_ = queue_.now();
    for (int s = 0; s <= plan_.streams; ++s) try_start(s);
    queue_.run();
    COMMSIM_CHECK(remaining_ == 0, "step did not finish: a task waits forever");
    if (trace_ranks) trace_step(step, *trace_ranks, step_index, out);
    last_step_ = {.seconds = ps_to_seconds(queue_.now() - begin),
                  .breakdown = step_breakdown(task_intervals(step, start_, end_), plan_.streams,
                                              [](TimePs d) { return ps_to_seconds(d); }),
                  .bytes_sent = plan_bytes_sent(step)};
    return queue_.now() - begin;
  }

  // Payload: task << 2 | phase.
  enum Phase : std::uint64_t { kDone = 0, kLatencyOver = 1, kOverheadBeforeOver = 2, kOverheadAfterOver = 3 };
  void on_event(std::uint64_t payload) override {
    const int task = static_cast<int>(payload >> 2);
    switch (payload & 3) {
      case kLatencyOver:  // latency phase of an analytical collective is over: its bandwidth term now shares
        shared_.add(task, bandwidth_work_[task]);
        return;
      case kOverheadBeforeOver:
        start_collective(task);
        return;
      default:
        finish(task);
    }
  }

  // The step's events, once per rank shown, with their details and the flows from gradients to collectives.
  void trace_step(const StepPlan& step, const std::vector<int>& ranks, int step_index, Result& out,
                  std::size_t first = 0) {
    std::map<int, int> backward_of_layer;
    for (std::size_t i = 0; i < step.tasks.size(); ++i)
      if (step.tasks[i].gradient_layer >= 0) backward_of_layer[step.tasks[i].gradient_layer] = static_cast<int>(i);
    for (int rank : ranks) {
      for (std::size_t i = 0; i < step.tasks.size(); ++i) {
        const Task& t = step.tasks[i];
        TraceEvent e{t.label, t.stream, ps_to_seconds(start_[first + i]),
                     ps_to_seconds(end_[first + i] - start_[first + i])};
        e.step = step_index;
        e.rank = rank;
        e.task = static_cast<int>(i);
        e.args = task_details(t);
        if (t.kind == TaskKind::Collective) {
          e.issued_s = ps_to_seconds(ready_at_[first + i]);
          e.kernel_start_s = ps_to_seconds(kernel_start_[first + i]);
          e.kernel_end_s = ps_to_seconds(kernel_end_[first + i]);
          std::set<int> sources;
          for (int tensor : t.tensors)
            if (auto it = backward_of_layer.find(plan_.model.tensors[tensor].layer); it != backward_of_layer.end())
              sources.insert(it->second);
          e.flow_from.assign(sources.begin(), sources.end());
        }
        out.trace.push_back(std::move(e));
      }
    }
  }

  nlohmann::json task_details(const Task& t) {
    nlohmann::json args = {{"kind", t.kind == TaskKind::Compute      ? "compute"
                                    : t.kind != TaskKind::Collective ? "local work"
                                                                     : "collective"}};
    if (t.bucket >= 0) args["bucket"] = t.bucket;
    if (t.gradient_layer >= 0) {
      nlohmann::json produced = nlohmann::json::array();
      for (int tensor : plan_.model.layers[t.gradient_layer].tensors)
        produced.push_back(plan_.model.tensors[tensor].name);
      args["gradients"] = produced;
    }
    if (t.kind != TaskKind::Collective) return args;
    const CollectiveSpec& c = t.collective;
    args["op"] = std::string(to_string(c.op));
    args["bytes"] = c.bytes;
    args["bytes_sent_per_rank"] = t.bytes_sent_per_rank;
    args["channels"] = c.channels;
    // What runs: NCCL's choice on an NCCL topology, else the closed form's; once per distinct collective.
    auto [cached, fresh] = choice_cache_.try_emplace(key_of(c));
    if (fresh) {
      if (uses_library_model(c, topo_) && c.algorithm != Algorithm::Hierarchical) {
        const nccl::Estimate e = nccl::predict(c, topo_);
        cached->second = {{"algorithm", std::string(to_string(e.algorithm))},
                          {"protocol", std::string(to_string(e.protocol))},
                          {"channels", e.channels}};
      } else {
        cached->second = {
            {"algorithm", std::string(to_string(choose_algorithm(c, topo_, fidelity_ != Fidelity::Analytical)))}};
      }
    }
    args.update(cached->second);
    nlohmann::json tensors = nlohmann::json::array();
    for (int tensor : t.tensors) tensors.push_back(plan_.model.tensors[tensor].name);
    args["tensors"] = tensors;
    return args;
  }

  const LinkUsage* usage() const { return network_ ? &network_->usage() : nullptr; }
  StepMeasure last_step_;  // the step run last

 private:
  // Under forward_order a communication stream keeps its ready tasks ordered by (step, earliest layer, task).
  bool by_priority(int stream) const { return ordered_ != nullptr && stream > 0; }
  void make_ready(int id) {
    const int stream = step_->tasks[id].stream;
    if (by_priority(stream)) ready_[stream].insert({ordered_->step_of[id], ordered_->layer_of[id], id});
  }
  // The task `stream` runs next, if one can start: the head of its list (FIFO), or its first ready task by priority.
  int next_task(int stream) {
    if (busy_[stream]) return -1;
    if (by_priority(stream)) {
      if (ready_[stream].empty()) return -1;
      const int id = std::get<2>(*ready_[stream].begin());
      ready_[stream].erase(ready_[stream].begin());
      return id;
    }
    if (head_[stream] >= queues_[stream].size()) return -1;
    const int id = queues_[stream][head_[stream]];
    if (pending_[id] > 0) return -1;
    ++head_[stream];
    return id;
  }
  void try_start(int stream) {
    const int id = next_task(stream);
    if (id < 0) return;
    busy_[stream] = true;
    start_[id] = queue_.now();
    const Task& t = step_->tasks[id];
    switch (t.kind) {
      case TaskKind::Compute:
        compute_.start(id, seconds_to_ps(t.seconds * factor_, "compute time of " + t.label));
        break;
      case TaskKind::Cast:
      case TaskKind::TopK:
        queue_.schedule(add_ps(queue_.now(), seconds_to_ps(t.seconds, "time of " + t.label)), this, event(id, kDone));
        break;
      case TaskKind::Collective: {
        // The fixed costs before it: a wait for the first cycle boundary after its gradients were ready (Horovod's
        // background loop negotiates there and then runs that cycle's responses one after another), then the
        // framework's and the library's work on this stream.
        TimePs begin = queue_.now();
        if (t.start_grid_s > 0) {
          const TimePs grid = std::max<TimePs>(1, seconds_to_ps(t.start_grid_s, "cycle of " + t.label));
          // Cycles counted from the step's start, as the plan groups its responses, from when the gradients were
          // ready: a cast or selection on this stream prepares them (Horovod compresses before it enqueues).
          const TimePs tolerance = seconds_to_ps(Task::kCycleTolerance_s, "cycle tolerance");
          const TimePs since = gradients_ready(t) - step_start_;
          begin = std::max(begin, step_start_ + (since > tolerance ? since - tolerance + grid - 1 : 0) / grid * grid);
        }
        begin = add_ps(begin, seconds_to_ps(t.overhead_before_s, "fixed cost before " + t.label));
        if (begin == queue_.now())
          start_collective(id);
        else
          queue_.schedule(begin, this, event(id, kOverheadBeforeOver));
        break;
      }
    }
  }
  // When a collective's gradients were ready: its dependencies' ends, through the cast or selection that prepares it.
  TimePs gradients_ready(const Task& t) const {
    TimePs ready = step_start_;
    for (int d : t.deps) {
      const Task& dep = step_->tasks[static_cast<std::size_t>(d)];
      ready =
          std::max(ready, dep.kind == TaskKind::Cast || dep.kind == TaskKind::TopK ? gradients_ready(dep)
                                                                                   : end_[static_cast<std::size_t>(d)]);
    }
    return ready;
  }
  static std::uint64_t event(int task, Phase phase) { return (static_cast<std::uint64_t>(task) << 2) | phase; }

  void start_collective(int id) {
    const Task& t = step_->tasks[id];
    kernel_start_[id] = queue_.now();
    if (topo_.library().sms > 0) compute_.add_channels(channels_[id] = channels_of(t.collective));
    running_.insert(id);
    const bool beside_another = running_.size() >= 2 && step_delay_s_ > 0;
    if (fidelity_ == Fidelity::Analytical) {
      auto [latency, total] = closed_form(t.collective);
      bandwidth_work_[id] = total - latency;
      queue_.schedule(add_ps(queue_.now(), latency), this, event(id, kLatencyOver));
      // The hops' delays of the collectives beside each other, each counted once: time the shared network loses
      // (a job of no collective's). The one that ran alone until now is counted whole.
      if (beside_another)
        for (int other : running_)
          if (other == id || running_.size() == 2) shared_.add(SharedBandwidth::kNoTask, hop_delays(other));
    } else {
      const Schedule& schedule = schedule_for(t.collective);
      runs_.push_back(std::make_unique<ScheduleRun>(schedule, t.collective.reduce_Bps, *network_, queue_,
                                                    [this, id] { collective_done(id); }));
      if (beside_another) set_running_extra_bytes(&contended_extra_bytes_);
      runs_.back()->start();
    }
  }
  // Analytical: what the step delays of one hop add to collective `task` (CommLibrary::concurrent_step_delay_s).
  TimePs hop_delays(int task) {
    CollectiveSpec delayed = step_->tasks[task].collective;
    delayed.hop_delay_s = step_delay_s_;
    return closed_form(delayed).second - closed_form(step_->tasks[task].collective).second;
  }
  // Flow: every running collective's transfers from now on carry `extra` bytes beside their own (nullptr: none).
  void set_running_extra_bytes(const ScheduleRun::ExtraBytes* extra) {
    for (const std::unique_ptr<ScheduleRun>& run : runs_)
      if (!run->done()) run->set_extra_bytes(extra);
  }
  // Beside another collective, a transfer also carries what its path moves in the step delay.
  double path_delay_bytes(int src, int dst) {
    auto [it, added] = path_Bps_.try_emplace({src, dst}, 0.0);
    if (added) it->second = topo_.path_cost(src, dst).bottleneck_Bps;
    return step_delay_s_ * it->second;
  }
  // The collective's transfers are over: it frees its SMs; the stream still pays the fixed cost after it.
  void collective_done(int id) {
    kernel_end_[id] = queue_.now();
    running_.erase(id);
    if (running_.size() == 1 && fidelity_ == Fidelity::Flow) set_running_extra_bytes(nullptr);
    if (channels_[id] > 0) compute_.add_channels(-channels_[id]), channels_[id] = 0;
    const double after_s = step_->tasks[id].overhead_after_s;
    if (after_s > 0)
      queue_.schedule(add_ps(queue_.now(), seconds_to_ps(after_s, "fixed cost after " + step_->tasks[id].label)), this,
                      event(id, kOverheadAfterOver));
    else
      finish(id);
  }

  void finish(int id) {
    end_[id] = queue_.now();
    --remaining_;
    const int stream = step_->tasks[id].stream;
    busy_[stream] = false;
    for (int d : dependents_[id])
      if (--pending_[d] == 0) {
        ready_at_[d] = queue_.now();
        make_ready(d);
        try_start(step_->tasks[d].stream);
      }
    try_start(stream);
  }

  std::pair<TimePs, TimePs> closed_form(const CollectiveSpec& c) {
    auto key = key_of(c);
    auto it = closed_cache_.find(key);
    if (it != closed_cache_.end()) return it->second;
    if (uses_library_model(c, topo_)) {  // the library's own model: NCCL's algorithm, protocol and channels
      const LibraryPrediction e = library_prediction(c, topo_);
      const TimePs latency = seconds_to_ps(e.latency_s);
      return closed_cache_[key] = {latency, std::max(latency, seconds_to_ps(e.seconds))};
    }
    CollectiveSpec zero = c;
    zero.bytes = 0;
    const TimePs latency = seconds_to_ps(closed_form_seconds(zero, topo_), "collective latency");
    const TimePs total = std::max(latency, seconds_to_ps(closed_form_seconds(c, topo_), "collective time"));
    return closed_cache_[key] = {latency, total};
  }
  // The SMs a collective occupies: NCCL's channels launched for its size (one CTA each), else the spec's channels.
  int channels_of(const CollectiveSpec& c) {
    auto key = key_of(c);
    if (auto it = channels_cache_.find(key); it != channels_cache_.end()) return it->second;
    const bool nccl_alone = uses_library_model(c, topo_) && c.algorithm != Algorithm::Hierarchical;
    return channels_cache_[key] = std::max(1, nccl_alone ? nccl::predict(c, topo_).channels : c.channels);
  }
  // Every collective of the plan's steps on the flow network once per class of operations it cannot tell apart
  // (flow_partition.hpp): the schedules become their lumped forms, the network the quotient of the link classes.
  // The partition holds for any timing of the collectives, so it is made once, before the first step.
  void lump_collectives() {
    std::vector<ScheduleKey> keys;
    std::vector<const Schedule*> full;
    for (const StepPlan& step : plan_.step_plans)
      for (const Task& t : step.tasks)
        if (t.kind == TaskKind::Collective && !schedules_.contains(key_of(t.collective))) {
          keys.push_back(key_of(t.collective));
          full.push_back(&schedule_for(t.collective));
        }
    std::uint64_t operations = 0;
    for (const Schedule* s : full) operations += s->ops.size();
    if (operations > kMaxLumpedOperations) return;
    std::optional<LumpedSchedules> lumped = lump_schedules(full, topo_);
    if (!lumped) return;  // the full schedules run
    for (std::size_t i = 0; i < keys.size(); ++i) *schedules_[keys[i]] = std::move(lumped->schedules[i]);
    quotient_ = std::move(lumped->quotient);
  }
  const Schedule& schedule_for(const CollectiveSpec& c) {
    auto key = key_of(c);
    auto it = schedules_.find(key);
    if (it != schedules_.end()) return *it->second;
    // Over the link classes every flow must be a lumped one: a collective the plan's steps did not list would run
    // its full schedule on the quotient, wrongly.
    COMMSIM_CHECK(!quotient_, "a collective outside the lumped plan: " + std::string(to_string(c.op)) + " of " +
                                  std::to_string(c.bytes) + " bytes");
    auto s = std::make_unique<Schedule>();
    std::vector<OpId> frontier(topo_.ranks(), kNoOp);
    CollectiveSpec spec = c;
    // Rings of more than kMaxRingTransfers transfers run as one flow per edge (CollectiveSpec::aggregate).
    const double p = topo_.ranks();
    spec.aggregate = 2 * (p - 1) * p * c.channels > kMaxRingTransfers;
    generate(spec, topo_, *s, frontier);
    return *(schedules_[key] = std::move(s));
  }

  const Plan& plan_;
  const Topology& topo_;
  Fidelity fidelity_;
  EventQueue queue_;
  std::optional<LinkQuotient> quotient_;  // with lumped collectives: the link classes network_ runs on
  std::unique_ptr<NetworkModel> network_;
  SharedBandwidth shared_;
  SlowedCompute compute_;
  std::vector<int> channels_;  // per task: the channels of a running collective that slow compute
  // Per task: when its dependencies were done, and a collective's kernel (its transfers, without the fixed costs).
  std::vector<TimePs> ready_at_, kernel_start_, kernel_end_;
  std::map<ScheduleKey, int> channels_cache_;
  const StepPlan* step_ = nullptr;
  const UnrolledSteps* ordered_ = nullptr;                  // forward_order: the steps and layers of the tasks
  std::vector<std::set<std::tuple<int, int, int>>> ready_;  // forward_order, per stream: (step, layer, task)
  double factor_ = 1;
  const double step_delay_s_ = topo_.library().concurrent_step_delay_s;
  std::set<int> running_;  // the collectives whose transfers run now
  std::map<std::pair<int, int>, double> path_Bps_;
  const ScheduleRun::ExtraBytes contended_extra_bytes_ = [this](int src, int dst) {
    return path_delay_bytes(src, dst);
  };
  std::vector<int> pending_;
  std::vector<TimePs> start_, end_;
  TimePs step_start_ = 0;
  std::vector<std::vector<int>> dependents_;
  std::vector<std::vector<int>> queues_;
  std::vector<std::size_t> head_;
  std::vector<bool> busy_;
  std::size_t remaining_ = 0;
  std::map<int, TimePs> bandwidth_work_;
  std::map<ScheduleKey, std::pair<TimePs, TimePs>> closed_cache_;
  std::map<ScheduleKey, nlohmann::json> choice_cache_;  // the trace's algorithm / protocol / channels
  std::map<ScheduleKey, std::unique_ptr<Schedule>> schedules_;
  std::vector<std::unique_ptr<ScheduleRun>> runs_;
};

}  // namespace

Result simulate_plan(const Plan& plan, const Topology& topology, Fidelity fidelity, const TraceSelection& trace,
                     FlowLumping lumping) {
  Result r = plan_result(plan, "sim", std::string(to_string(fidelity)));
  r.notes = plan.notes;
  StepRunner runner(plan, topology, fidelity, lumping);
  if (plan.priority == CommPriority::ForwardOrder) {
    summarize_steps(plan, runner.run_unrolled(plan, trace, r), SteadyStatistic::Mean, r);
    // The links' busy time of the whole timeline (one step more than the run), per step.
    if (const LinkUsage* u = runner.usage())
      for (int c = 0; c < kLinkClassCount; ++c)
        if (u->busy_s[c] > 0)
          r.link_class_busy_s[std::string(to_string(static_cast<LinkClass>(c)))] = u->busy_s[c] / (plan.steps() + 1);
    return r;
  }
  const int steady = plan.steps() - plan.steady_from;
  std::vector<StepMeasure> steps;
  LinkUsage before{};
  for (int s = 0; s < plan.steps(); ++s) {
    // The simulated timeline is the step's critical rank; every rank asked for where all ranks are alike.
    const std::vector<int> traced_ranks =
        trace.ranks.empty() || !plan.symmetric_ranks ? std::vector<int>{plan.critical_rank[s]} : trace.ranks;
    runner.run(plan.step_plan(s), plan.compute_factor[s], trace.traces(s) ? &traced_ranks : nullptr, s, r);
    steps.push_back(runner.last_step_);
    const LinkUsage* u = runner.usage();  // cumulative since step 0: a step's share is the difference
    if (!u) continue;
    for (int c = 0; c < kLinkClassCount && s >= plan.steady_from; ++c) {
      const double busy = u->busy_s[c] - before.busy_s[c];
      if (busy > 0) r.link_class_busy_s[std::string(to_string(static_cast<LinkClass>(c)))] += busy / steady;
    }
    before = *u;
  }
  summarize_steps(plan, steps, SteadyStatistic::Mean, r);
  return r;
}

}  // namespace commsim
