// Fixed costs around each gradient collective that the collective's own model does not contain: the library's
// host-side launch (per collective) and the framework's per-bucket work (hook and stream synchronisation, copies
// into and out of the flat bucket buffer, a negotiation cycle). Constants: libraries/overheads.json (compiled in),
// each with what it covers and its source; a scenario's `framework` block picks the framework and may override them.
#pragma once

#include <optional>
#include <string>

#include "sim/core/json_fields.hpp"
#include "sim/topology/library.hpp"

namespace commsim {

// A scenario's `framework` block: a framework of the table and, optionally, values that replace the table's.
struct Framework {
  std::string name = "none";  // none, commsim_mpi, pytorch_ddp, horovod
  std::optional<double> launch_us, per_bucket_us, copy_in_passes, copy_out_passes, cycle_ms;
};

// What a step pays around each collective, resolved for the topology's library.
struct Overheads {
  double launch_s = 0;         // per collective: the library's host-side launch (not in NCCL's baseLat)
  double per_bucket_s = 0;     // per bucket: the framework's hook, event record/wait, work object
  double copy_in_passes = 0;   // passes over the bucket's bytes before its collective (into the flat buffer)
  double copy_out_passes = 0;  // passes over the bucket's bytes after it (back into the gradients)
  double cycle_s = 0;          // a bucket's collective starts at the next multiple of this (Horovod's cycle)
  // The copies are the casts when the gradients travel narrower (the MPI executor packs by casting): the plan's cast
  // task then prices them, and no copy pass is charged besides.
  bool copies_are_casts = false;
  // Horovod: the buckets are the tensors ready at the same cycle boundary, fused while the threshold is not exceeded,
  // and a bucket of one tensor is not copied (sim/plan/plan.cpp make_buckets, StepBuilder::communicate).
  bool fuses_per_cycle = false;
};

// Reads the block; throws InputError naming the field for an unknown framework, an unknown key or a negative value.
Framework parse_framework(JsonFields f);
Overheads resolve_overheads(const Framework& framework, LibraryKind library);
// The frameworks the table knows, comma-separated (for messages).
std::string known_frameworks();

}  // namespace commsim
