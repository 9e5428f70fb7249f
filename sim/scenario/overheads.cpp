#include "sim/scenario/overheads.hpp"

namespace commsim {
namespace overheads {
std::string_view embedded_table_json();  // generated from libraries/overheads.json at build time
}

namespace {

const Json& table() {
  static const Json doc = Json::parse(overheads::embedded_table_json());
  return doc;
}

std::string_view library_key(LibraryKind kind) {
  switch (kind) {
    case LibraryKind::Nccl:
      return "nccl";
    case LibraryKind::Mpi:
      return "mpi";
    case LibraryKind::Generic:
      break;
  }
  return "generic";
}

std::optional<double> non_negative(JsonFields& f, const std::string& key, double most) {
  if (!f.has(key)) return std::nullopt;
  return f.number_within(key, 0, most);
}

}  // namespace

std::string known_frameworks() {
  std::string names;
  for (auto& [name, value] : table().at("frameworks").items()) names += (names.empty() ? "" : ", ") + name;
  return names;
}

Framework parse_framework(JsonFields f) {
  Framework fw;
  fw.name = f.string("name");
  if (!table().at("frameworks").contains(fw.name))
    f.fail("name", "unknown framework \"" + fw.name + "\" (" + known_frameworks() + ")");
  // Bounds: a second per collective or bucket, ten passes, a minute of cycle are far past any real value.
  fw.launch_us = non_negative(f, "launch_us", 1e6);
  fw.per_bucket_us = non_negative(f, "per_bucket_us", 1e6);
  fw.copy_in_passes = non_negative(f, "copy_in_passes", 10);
  fw.copy_out_passes = non_negative(f, "copy_out_passes", 10);
  fw.cycle_ms = non_negative(f, "cycle_ms", 60e3);
  // A framework that starts its collectives when they are ready has no cycle to set (cycle_ms is Horovod's
  // HOROVOD_CYCLE_TIME); giving it one would delay every bucket of a framework that does not wait.
  if (fw.cycle_ms.value_or(0) > 0 && !table().at("frameworks").at(fw.name).value("fuses_per_cycle", false))
    f.fail("cycle_ms", fw.name + " has no negotiation cycle (cycle_ms is Horovod's HOROVOD_CYCLE_TIME)");
  f.string_or("source", "");
  f.reject_unknown();
  return fw;
}

Overheads resolve_overheads(const Framework& fw, LibraryKind library) {
  const Json& lib = table().at("libraries").at(std::string(library_key(library)));
  const Json& row = table().at("frameworks").at(fw.name);
  Overheads o;
  o.launch_s = fw.launch_us.value_or(lib.at("launch_us").get<double>()) * 1e-6;
  o.per_bucket_s = fw.per_bucket_us.value_or(row.at("per_bucket_us").get<double>()) * 1e-6;
  o.copy_in_passes = fw.copy_in_passes.value_or(row.at("copy_in_passes").get<double>());
  o.copy_out_passes = fw.copy_out_passes.value_or(row.at("copy_out_passes").get<double>());
  o.cycle_s = fw.cycle_ms.value_or(row.at("cycle_ms").get<double>()) * 1e-3;
  o.copies_are_casts = row.value("copies_are_casts", false);
  o.fuses_per_cycle = row.value("fuses_per_cycle", false);
  return o;
}

}  // namespace commsim
