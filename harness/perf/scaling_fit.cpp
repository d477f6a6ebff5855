#include "harness/perf/scaling_fit.h"

#include <cmath>
#include <cstddef>
#include <sstream>
#include <stdexcept>
#include <string>

namespace trainrepro {
namespace {

// Logarithms need positive values; infinities would poison every sum.
void check_positive(const std::vector<double>& values, const char* name) {
  for (size_t i = 0; i < values.size(); ++i) {
    if (!(values[i] > 0.0) || !std::isfinite(values[i])) {
      std::ostringstream message;
      message << "fit_power_law: " << name << "[" << i << "] = " << values[i]
              << " is not a finite positive number";
      throw std::invalid_argument(message.str());
    }
  }
}

}  // namespace

PowerLawFit fit_power_law(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() != y.size()) {
    throw std::invalid_argument("fit_power_law: " + std::to_string(x.size()) + " x values but " +
                                std::to_string(y.size()) + " y values");
  }
  if (x.size() < 2) {
    throw std::invalid_argument("fit_power_law: " + std::to_string(x.size()) +
                                " point(s), at least 2 are needed");
  }
  check_positive(x, "x");
  check_positive(y, "y");

  const size_t n = x.size();
  std::vector<double> lx(n), ly(n);
  double mean_x = 0.0, mean_y = 0.0;
  for (size_t i = 0; i < n; ++i) {
    lx[i] = std::log(x[i]);
    ly[i] = std::log(y[i]);
    mean_x += lx[i];
    mean_y += ly[i];
  }
  mean_x /= static_cast<double>(n);
  mean_y /= static_cast<double>(n);

  // Centred sums: more accurate than the textbook sum-of-squares form when logs are large.
  double sxx = 0.0, sxy = 0.0, syy = 0.0;
  for (size_t i = 0; i < n; ++i) {
    const double dx = lx[i] - mean_x, dy = ly[i] - mean_y;
    sxx += dx * dx;
    sxy += dx * dy;
    syy += dy * dy;
  }
  if (sxx == 0.0) {
    std::ostringstream message;
    message << "fit_power_law: every x is " << x[0] << ", so no exponent can be fitted";
    throw std::invalid_argument(message.str());
  }

  PowerLawFit fit;
  fit.exponent = sxy / sxx;
  fit.coefficient = std::exp(mean_y - fit.exponent * mean_x);
  // With every y the same the flat line fits exactly; r² would be 0/0, and 1 says "exact fit".
  if (syy == 0.0) {
    fit.r_squared = 1.0;
  } else {
    double residual = 0.0;
    for (size_t i = 0; i < n; ++i) {
      const double e = ly[i] - (mean_y + fit.exponent * (lx[i] - mean_x));
      residual += e * e;
    }
    fit.r_squared = 1.0 - residual / syy;
  }
  return fit;
}

}  // namespace trainrepro
