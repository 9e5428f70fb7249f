// `mpirun -n K commsim sweep ...`: each rank evaluates the rows k with k mod K = rank (of the whole grid, or of the
// shard's rows with --shard); rank 0 gathers them and writes what one process writes. Bad input is found by every
// rank alike and reported once (hw::run_on_rank). A rank that gets SIGINT/SIGTERM itself (Slurm's scancel signals every
// process of the job) stops after its rows in flight and rank 0 writes the rows gathered, marked partial. Ctrl-C to
// mpirun is not forwarded: Open MPI's mpirun kills the ranks, so nothing is written (and nothing is left half-written).
#include <algorithm>
#include <cstdlib>
#include <thread>

#include "cli/sweep_cmd.hpp"
#include "sim/core/error.hpp"

#ifdef COMMSIM_HAVE_MPI
#include "hw/mpi/mpi_backend.hpp"
#include "hw/mpi/text_collectives.hpp"
#endif

namespace commsim::cli {

#ifdef COMMSIM_HAVE_MPI

namespace {

// --jobs by default: this host's cores shared among the ranks on it (OMPI_COMM_WORLD_LOCAL_SIZE), at least one.
int default_jobs_per_rank() {
  const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  const int ranks_here = local ? std::max(1, std::atoi(local)) : 1;
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / ranks_here);
}

}  // namespace

int run_sweep_on_ranks(const SweepOptions& o) {
  hw::MpiSession session(nullptr, nullptr);
  return hw::run_on_rank(session, [&] {
    const std::optional<explore::ShardSpec> shard = checked_shard(o);
    const explore::SweepGrid grid = explore::prepare_sweep(o.request);
    // Rank 0 alone creates the folder; every rank learns whether it could, so that all stop alike.
    std::string problem;
    if (session.rank() == 0) try {
        explore::create_output_dir(o.out);
      } catch (const InputError& e) {
        problem = e.what();
      }
    problem = hw::broadcast_text_from_root(problem);
    if (!problem.empty()) throw InputError(problem);

    const std::vector<std::size_t> rows = rows_to_run(grid.variants.size(), shard);
    std::vector<std::size_t> mine;
    for (std::size_t k = session.rank(); k < rows.size(); k += session.size()) mine.push_back(rows[k]);
    explore::InterruptGuard guard;
    const explore::Sweep part = explore::evaluate_rows(grid, mine, o.jobs > 0 ? o.jobs : default_jobs_per_rank(), guard,
                                                       session.rank() == 0 ? "configurations on rank 0" : "");
    Json records = Json::array();
    for (std::size_t i = 0; i < part.rows.size(); ++i)
      records.push_back(explore::row_record(part.grid_row(i), part.rows[i]));
    const std::vector<std::string> gathered =
        hw::gather_text_to_root(Json{{"signal", part.stopped_by_signal}, {"rows", records}}.dump());
    if (session.rank() != 0) return explore::sweep_exit_code(part);

    guard.writing();
    explore::Sweep sweep = grid.definition;
    for (std::size_t r = 0; r < gathered.size(); ++r) {
      const Json from_rank = Json::parse(gathered[r]);
      sweep.stopped_by_signal = std::max(sweep.stopped_by_signal, from_rank.at("signal").get<int>());
      for (const Json& record : from_rank.at("rows")) {
        auto [row, e] = explore::parse_row_record(record, "rank " + std::to_string(r), "rows");
        sweep.grid_rows.push_back(row);
        sweep.rows.push_back(std::move(e));
      }
    }
    explore::normalise_rows(sweep);
    write_results(sweep, grid.hash, shard, o.out);
    return explore::sweep_exit_code(sweep);
  });
}

#else

int run_sweep_on_ranks(const SweepOptions&) {
  throw InputError("mpirun", "",
                   "this commsim was built without MPI (COMMSIM_MPI=OFF): run the sweep in one process, or split it "
                   "with --shard I/N");
}

#endif

}  // namespace commsim::cli
