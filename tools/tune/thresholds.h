// Every statistical threshold of the tuner, in one place: the search's
// verdicts (SearchOptions' defaults) and the reports of --verify and --check
// (FormatVerify, FormatCheck) read them here.
#pragma once

namespace actgrad::tune {

// Significance level of the one-sided Mann-Whitney U tests: a challenger
// beats the incumbent only at p < kAlpha (the second look: p < kAlpha / 2 over
// the pooled samples); --verify marks a choice faster or slower than the
// default, and --check confirms a miss, at the same level.
inline constexpr double kAlpha = 0.05;

// The median gain a challenger also needs (2 %: the size of the noise
// between runs on one machine); --check counts a shipping choice slower than
// the untuned default only past it.
inline constexpr double kMinGain = 0.02;

// --check: how much slower than the best found a shipping choice may be
// (--tolerance, in %; also where its confirmation round starts).
inline constexpr double kCheckTolerance = 0.05;

}  // namespace actgrad::tune
