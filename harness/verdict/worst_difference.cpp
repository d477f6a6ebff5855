// The worst difference of a step's comparison, in the words a mismatch is reported with.
#include "harness/verdict/training_findings.h"

#include <cstdio>

namespace trainrepro::training_findings {

std::string format_number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", value);
  return text;
}

std::string describe_worst(const std::vector<TensorComparison>& comparisons) {
  const TensorComparison* worst = nullptr;
  // Judged against a precision twin: the whole model decides (compare_model_with_twin).
  if (!comparisons.empty() && comparisons.front().twin_rms_error >= 0.0) {
    const TensorComparison& whole = comparisons.front();
    return whole.name + ": RMS error " + format_number(whole.rms_error) +
           " vs the precision twin's " + format_number(whole.twin_rms_error) + " (" +
           format_number(whole.tolerance_used * 100.0) + "% of the limit " +
           format_number(kPrecisionTwinFactor) + "x the twin's; max abs error " +
           format_number(whole.max_abs_error) + ", norm ratio " + format_number(whole.norm_ratio) +
           ", cosine " + format_number(whole.cosine) + ")";
  }
  for (const TensorComparison& comparison : comparisons) {
    if (!worst || comparison.tolerance_used > worst->tolerance_used) worst = &comparison;
  }
  if (!worst) return "";
  if (!worst->shape_mismatch.empty()) return worst->name + ": " + worst->shape_mismatch;
  std::string index;
  for (int64_t i : worst->worst_index) index += (index.empty() ? "" : ",") + std::to_string(i);
  return worst->name + "[" + index + "]: " + format_number(worst->worst_actual) + " vs golden " +
         format_number(worst->worst_expected) + " (max abs error " +
         format_number(worst->max_abs_error) + ", max rel error " +
         format_number(worst->max_rel_error) + ", " + format_number(worst->tolerance_used * 100.0) +
         "% of tolerance, norm ratio " + format_number(worst->norm_ratio) + ", cosine " +
         format_number(worst->cosine) +
         (worst->twin_rms_error >= 0.0
              ? ", RMS error " + format_number(worst->rms_error) + " vs the precision twin's " +
                    format_number(worst->twin_rms_error) + ", limit " +
                    format_number(kPrecisionTwinFactor) + "x the twin's"
              : std::string()) +
         ")";
}

}  // namespace trainrepro::training_findings
