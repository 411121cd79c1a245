// Small robust statistics for the tuner: medians, quantiles, spread and the
// Mann-Whitney U test used to decide whether a challenger beats the incumbent.
#pragma once
#include <vector>

namespace actgrad::tune {

double Quantile(std::vector<double> v, double q);  // linear interpolation; NaN if empty
double Median(const std::vector<double>& v);
// Spread in percent of the median: half the interquartile range / median.
double SpreadPct(const std::vector<double>& v);
double GeoMean(const std::vector<double>& v);

// One-sided Mann-Whitney U test of H1 "values in a tend to be smaller than
// values in b". Returns the p-value: exact (by counting) when there are no
// ties and both samples are small, else the normal approximation with tie
// and continuity corrections. 1.0 when either sample is empty.
double MannWhitneyLessP(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace actgrad::tune
