// The error band a calibrated topology carries, for the commands that predict from it (collective, simulate, sweep,
// recommend), as `validate` derives it (validate/band.hpp, docs/calibration.md "Error bands").
#pragma once

#include <string>

namespace commsim {

// The largest +-relative band of the topology file's calibrated link classes (sources.calibration.link_classes.*
// .band_rel, 2 x the RMS relative residual of each class's fit, written by `commsim calibrate`) and of its fitted
// NCCL model (library.fitted_band_rel, `calibrate --from-nccl-tests`); 0 for a topology that was not calibrated.
//
// Why the largest: a collective's time is a sum of latency and size / bandwidth terms of the link classes it
// crosses; scaling every class's terms by at most (1 + band) scales that sum by at most (1 + band), so the largest
// class band bounds the relative band of any collective and of any communication time.
double calibration_band_rel(const std::string& topology_path);

}  // namespace commsim
