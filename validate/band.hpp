// Error bands of a calibrated prediction (docs/calibration.md, "Error bands").
//
// Two independent sources of uncertainty, combined in quadrature on each side:
//  - the model: every calibrated link class's transfer time is uncertain by +-band_rel (2 x the RMS relative
//    residual of its fitted line, with the bench runs' spread for the collective fit's class); the scenario is
//    re-simulated with all calibrated links slower by that factor (slow_s) and faster (fast_s), so the band follows how
//    much of the step is communication on which class;
//  - the measurement: the steps of one run vary; step_time_spread_s is half their interquartile range, so their
//    standard deviation is sigma = spread / 0.6745 (normal distribution) and the band takes +-2 sigma.
//   low  = predicted - sqrt((predicted - fast_s)^2 + (2 sigma)^2)
//   high = predicted + sqrt((slow_s - predicted)^2 + (2 sigma)^2)
#pragma once

namespace commsim::validate {

// Standard deviations on each side of the band.
inline constexpr double kBandSigmas = 2.0;
// Half the interquartile range of a normal distribution, in standard deviations.
inline constexpr double kHalfIqrPerSigma = 0.6744897501960817;

struct Band {
  double low_s = 0, high_s = 0;  // low_s >= 0
  // Closed interval, widened by 1e-9 relative so that a value equal to a bound up to rounding counts as inside.
  bool contains(double seconds) const { return seconds >= low_s * (1 - 1e-9) && seconds <= high_s * (1 + 1e-9); }
};

// Measurement noise half-width: kBandSigmas standard deviations of a step, estimated from half the IQR.
double measurement_half_width(double spread_s);

Band prediction_band(double predicted_s, double fast_s, double slow_s, double measured_spread_s);

// Whether two measured step times are distinguishable: their difference exceeds the quadrature sum of the two
// noise half-widths.
bool distinguishable(double a_s, double a_spread_s, double b_s, double b_spread_s);

}  // namespace commsim::validate
