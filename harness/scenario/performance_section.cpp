#include "harness/scenario/performance_section.h"

#include <cmath>
#include <string>

namespace trainrepro {

const EnumSpellings<PerfFigure>& perf_figure_spellings() {
  static const EnumSpellings<PerfFigure> spellings = {
      {PerfFigure::step_time, "step_time"},
      {PerfFigure::samples_per_second, "samples_per_second"},
      {PerfFigure::tokens_per_second, "tokens_per_second"},
      {PerfFigure::peak_tensor_bytes, "peak_tensor_bytes"},
      {PerfFigure::peak_host_bytes, "peak_host_bytes"},
      {PerfFigure::peak_cuda_reserved_bytes, "peak_cuda_reserved_bytes"},
      {PerfFigure::mfu, "mfu"},
  };
  return spellings;
}

const EnumSpellings<PerfLoop>& perf_loop_spellings() {
  static const EnumSpellings<PerfLoop> spellings = {
      {PerfLoop::harness, "harness"},
      {PerfLoop::engine, "engine"},
      {PerfLoop::engine_with_probes, "engine_with_probes"},
      {PerfLoop::hand_written, "hand_written"},
      {PerfLoop::python_eager, "python_eager"},
  };
  return spellings;
}

const char* perf_figure_name(PerfFigure figure) {
  return spelling_of(figure, perf_figure_spellings());
}

namespace {

// "measure": ["step_time", "peak_tensor_bytes"]; each name once.
std::vector<PerfFigure> read_measure(ObjectReader& section) {
  std::vector<PerfFigure> figures;
  section.note_known("measure");
  if (!section.has("measure")) return figures;
  const std::vector<std::string> names = section.optional_string_list("measure");
  if (names.empty()) section.fail("measure", "expected at least one figure, found an empty list");
  for (size_t i = 0; i < names.size(); ++i) {
    bool known = false;
    for (const auto& [figure, spelling] : perf_figure_spellings()) {
      if (names[i] != spelling) continue;
      known = true;
      for (PerfFigure seen : figures) {
        if (seen == figure) {
          section.fail_at("/measure/" + std::to_string(i), "\"" + names[i] + "\" is listed twice");
        }
      }
      figures.push_back(figure);
    }
    if (!known) {
      std::string allowed;
      for (const auto& [figure, spelling] : perf_figure_spellings()) {
        allowed += (allowed.empty() ? "\"" : ", \"") + std::string(spelling) + "\"";
      }
      section.fail_at("/measure/" + std::to_string(i),
                      "expected one of " + allowed + ", found \"" + names[i] + "\"");
    }
  }
  return figures;
}

// "expect": {"step_time": [0.8, 1.2], "peak_tensor_bytes": [-0.1, 0.1]}
std::vector<ExponentExpectation> read_exponent_expectations(ObjectReader& expect) {
  std::vector<ExponentExpectation> expectations;
  for (const auto& [figure, spelling] : perf_figure_spellings()) {
    expect.note_known(spelling);
    if (!expect.has(spelling)) continue;
    const nlohmann::json& range = expect.required_value(spelling);
    const bool pair = range.is_array() && range.size() == 2 && range[0].is_number() &&
                      range[1].is_number();
    if (!pair || range[0].get<double>() > range[1].get<double>()) {
      expect.fail(spelling, "expected [at_least, at_most], two numbers in order (the fitted "
                            "exponent's range), found " + describe_json_value(range));
    }
    expectations.push_back({figure, range[0].get<double>(), range[1].get<double>()});
  }
  expect.reject_unknown_keys();
  return expectations;
}

ScalingSpec read_scaling(ObjectReader& scaling, const nlohmann::json& document) {
  ScalingSpec spec;
  spec.pointer = scaling.required_string("pointer");
  // What the pointer names in this file: nothing for a malformed pointer, a missing key or an
  // array index that is no number ("/model/options/dims/x").
  const nlohmann::json* named = nullptr;
  try {
    const nlohmann::json::json_pointer pointer(spec.pointer);
    if (!spec.pointer.empty() && document.contains(pointer)) named = &document.at(pointer);
  } catch (const nlohmann::json::exception&) {
    named = nullptr;
  }
  if (named == nullptr || !named->is_number()) {
    scaling.fail("pointer", "expected the JSON pointer of a number in this scenario file (the "
                            "dimension to sweep, such as \"/model/options/layers\"), but \"" +
                                spec.pointer + "\" names " +
                                (named ? describe_json_value(*named) : std::string("nothing")));
  }
  const nlohmann::json& values = scaling.required_value("values");
  if (!values.is_array() || values.size() < 2) {
    scaling.fail("values", "expected at least 2 numbers to sweep, found " +
                               describe_json_value(values));
  }
  for (size_t i = 0; i < values.size(); ++i) {
    if (!values[i].is_number() || values[i].get<double>() <= 0.0 ||
        !std::isfinite(values[i].get<double>())) {
      scaling.fail_at("/values/" + std::to_string(i),
                      "expected a positive number (an exponent is fitted on log scales), found " +
                          describe_json_value(values[i]));
    }
    for (double seen : spec.values) {
      if (seen == values[i].get<double>()) {
        scaling.fail_at("/values/" + std::to_string(i), "this value is listed twice");
      }
    }
    spec.values.push_back(values[i].get<double>());
  }
  ObjectReader expect = scaling.optional_object("expect");
  spec.expect = read_exponent_expectations(expect);
  scaling.reject_unknown_keys();
  return spec;
}

}  // namespace

std::optional<PerformanceSpec> read_performance_section(ObjectReader& root,
                                                        const nlohmann::json& document) {
  root.note_known("performance");
  if (!root.has("performance")) return std::nullopt;
  ObjectReader section = root.required_object("performance");
  PerformanceSpec spec;
  spec.warmup_steps = section.optional_int("warmup_steps", spec.warmup_steps, 0);
  spec.measured_steps = section.optional_int("measured_steps", spec.measured_steps, 1);
  // Two repetitions per side are the fewest a rank test can tell apart at all.
  spec.repetitions = section.optional_int("repetitions", spec.repetitions, 2);
  spec.measure = read_measure(section);
  spec.loop = section.optional_enum("loop", PerfLoop::harness, perf_loop_spellings());
  section.note_known("target");
  if (section.has("target")) {
    ObjectReader target = section.required_object("target");
    spec.target = PerfTarget{target.required_string("benchmark"),
                             target.optional_number("at_most", 0.0, 0.0)};
    if (!target.has("at_most") || spec.target->at_most <= 0.0) {
      target.fail("at_most", "expected the largest ratio allowed, a positive number (1.05: this "
                             "step may take 5 % longer than the other benchmark's)");
    }
    target.reject_unknown_keys();
  }
  section.note_known("scaling");
  if (section.has("scaling")) {
    ObjectReader scaling = section.required_object("scaling");
    spec.scaling = read_scaling(scaling, document);
  }
  section.reject_unknown_keys();
  return spec;
}

}  // namespace trainrepro
