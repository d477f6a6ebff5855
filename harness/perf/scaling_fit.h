// How a figure grows with a size (step time against batch size, memory against parameters):
// fitting y ≈ c · x^k gives the exponent k, which says linear, quadratic or worse in one number
// that does not depend on the machine's speed.
#pragma once
#include <vector>

namespace trainrepro {

// y ≈ c · x^k fitted by least squares on (log x, log y)
struct PowerLawFit {
  double exponent = 0.0;     // k
  double coefficient = 0.0;  // c
  double r_squared = 0.0;    // of the fit in log-log space; 1 when every point lies on the line
};

// Throws std::invalid_argument saying what was found when x and y differ in size, hold fewer
// than 2 points, hold a value that is not a finite positive number, or when every x is the same.
PowerLawFit fit_power_law(const std::vector<double>& x, const std::vector<double>& y);

}  // namespace trainrepro
