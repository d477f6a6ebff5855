// A section of the DeepSpeed config against its release's pydantic model: the keys it refuses
// (one ValidationError per model, as pydantic words it) and the integers it reads in lax mode.
#include "harness/scenario/deepspeed_sections.h"

#include <cctype>
#include <cmath>

namespace trainrepro::deepspeed_sections {
namespace {

std::string join(const std::vector<std::string>& parts, const std::string& separator) {
  std::string joined;
  for (const std::string& part : parts) joined += (joined.empty() ? "" : separator) + part;
  return joined;
}

const ValidatedSection* validated_section(const DeepSpeedRelease& release,
                                          const std::string& schema_pointer) {
  for (const ValidatedSection& section : release.validated_sections) {
    if (section.pointer == schema_pointer) return &section;
  }
  return nullptr;
}

}  // namespace

// The keys of `value` (the section at `schema_pointer` inside the DeepSpeed config) that its
// release's pydantic model does not know; none where the release does not validate it.
std::vector<std::string> keys_outside_schema(const DeepSpeedRelease& release,
                                             const std::string& schema_pointer,
                                             const nlohmann::json& value) {
  std::vector<std::string> outside;
  const ValidatedSection* schema = validated_section(release, schema_pointer);
  if (schema == nullptr || !value.is_object()) return outside;
  for (const auto& item : value.items()) {
    if (!contains(schema->keys, item.key())) outside.push_back(item.key());
  }
  return outside;
}

// An error for each key of `section` (reading `value`, the section at `schema_pointer` inside
// the config) that the release's model does not know, in the file's order.
void add_forbidden_keys(const ObjectReader& section, const DeepSpeedRelease& release,
                        const std::string& schema_pointer, const nlohmann::json& value,
                        ModelRefusal& refusal) {
  const ValidatedSection* schema = validated_section(release, schema_pointer);
  if (schema == nullptr || !value.is_object()) return;
  // pydantic names a nested model's key by its dotted path inside the model's own section.
  const size_t nested = schema_pointer.find('/', 1);
  const std::string prefix =
      nested == std::string::npos ? "" : schema_pointer.substr(nested + 1) + ".";
  for (const std::string& key : section.keys_in_file_order()) {
    if (contains(schema->keys, key)) continue;
    refusal.errors.push_back({prefix + key, extra_forbidden_text(value.at(key))});
    if (!refusal.kind) refusal.kind = ConfigErrorKind::unknown_section_key;
    refusal.forbidden_at.push_back(section.pointer_to(key));
    const std::string closest = closest_spelling(key, schema->keys);
    if (!closest.empty()) refusal.typo_hints.emplace_back(key, closest);
  }
}

// DeepSpeedConfig validates its pydantic sections while reading params, after the removed keys
// and before the batch arithmetic; the first refusal is the one the user sees.
void refuse_model(const ModelRefusal& refusal, const std::string& model, const std::string& file,
                  const DeepSpeedRelease& release, DeepSpeedConfig& result) {
  if (result.refused_while_reading || refusal.errors.empty()) return;
  std::vector<std::string> notes = refusal.notes;
  if (!refusal.forbidden_at.empty()) {
    std::string note = "at " + file + ":" + join(refusal.forbidden_at, ", ") + "; DeepSpeed " +
                       release.version + " refuses any key its schema does not know";
    std::vector<std::string> hints;
    for (const auto& [written, closest] : refusal.typo_hints) {
      hints.push_back("\"" + closest + "\"" +
                      (refusal.forbidden_at.size() == 1 ? "" : " for \"" + written + "\""));
    }
    if (!hints.empty()) note += ": did you mean " + join(hints, ", ") + "?";
    notes.push_back(note);
  }
  result.refused_while_reading = ConfigError{
      *refusal.kind, validation_error_line(model, refusal.errors) + " (" + join(notes, "; ") + ")"};
}

// A section DeepSpeed validates with one model of its own (`section` reads `value`): keys
// outside its schema are refused, the others the reference engine does not read are warned
// about as ignored.
void check_validated_section(const ObjectReader& section, const DeepSpeedRelease& release,
                             const std::string& schema_pointer, const nlohmann::json& value,
                             const std::string& why_ignored, DeepSpeedConfig& result) {
  ModelRefusal refusal;
  add_forbidden_keys(section, release, schema_pointer, value, refusal);
  if (const ValidatedSection* schema = validated_section(release, schema_pointer)) {
    refuse_model(refusal, schema->model, section.file(), release, result);
  }
  const std::vector<std::string> outside = keys_outside_schema(release, schema_pointer, value);
  warn_about_unread_keys(section, why_ignored, result.warnings,
                         std::set<std::string>(outside.begin(), outside.end()));
}

// An integer as pydantic's lax mode reads one: an integer, a whole float, a string of digits or a
// boolean; nothing for anything else.
std::optional<int64_t> lax_integer(const nlohmann::json& value) {
  if (value.is_boolean()) return value.get<bool>() ? 1 : 0;
  if (value.is_number_integer()) return value.get<int64_t>();
  if (value.is_number_float()) {
    const double number = value.get<double>();
    if (std::isfinite(number) && number == std::floor(number) && std::fabs(number) < 1e18) {
      return static_cast<int64_t>(number);
    }
    return std::nullopt;
  }
  if (value.is_string()) {
    const std::string text = value.get<std::string>();
    size_t digits_from = !text.empty() && (text[0] == '-' || text[0] == '+') ? 1 : 0;
    if (text.size() == digits_from || text.size() > 18) return std::nullopt;
    for (size_t i = digits_from; i < text.size(); ++i) {
      if (!std::isdigit(static_cast<unsigned char>(text[i]))) return std::nullopt;
    }
    return std::stoll(text);
  }
  return std::nullopt;
}

// Whether the release's pydantic model of `schema_pointer` has `key` (0.16.9 reads fewer keys).
bool release_reads(const DeepSpeedRelease& release, const std::string& schema_pointer,
                   const std::string& key) {
  for (const ValidatedSection& validated : release.validated_sections) {
    if (validated.pointer == schema_pointer) return contains(validated.keys, key);
  }
  return false;
}

}  // namespace trainrepro::deepspeed_sections
