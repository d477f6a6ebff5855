// What the readers of the DeepSpeed config's sections share (deepspeed_config.cpp reads the top
// level and calls one reader per section:
// deepspeed_{optimizer,scheduler,zero,precision}_config.cpp; deepspeed_schema_check.cpp checks a
// section against the release's pydantic schema). Internal to harness/scenario: nothing outside the
// config's readers includes it.
#pragma once
#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/json/json_fields.h"
#include "harness/scenario/deepspeed_config.h"
#include "harness/scenario/pydantic_error.h"

namespace trainrepro::deepspeed_sections {

// Hugging Face's Trainer replaces "auto" before DeepSpeed sees the config; DeepSpeed itself
// cannot read it, and neither can we.
[[noreturn]] inline void fail_on_auto(const ObjectReader& section, const std::string& key) {
  section.fail(key,
               "found the string \"auto\": \"auto\" is filled in by the Hugging Face "
               "Trainer, not by DeepSpeed; write the value it resolves to");
}

inline bool is_auto(const nlohmann::json& value) { return value.is_string() && value == "auto"; }

inline void warn_about_unread_keys(const ObjectReader& section, const std::string& why,
                                   std::vector<std::string>& warnings,
                                   const std::set<std::string>& quiet_keys = {}) {
  for (const std::string& key : section.unknown_keys()) {
    if (quiet_keys.count(key)) continue;
    warnings.push_back(section.file() + ":" + section.pointer_to(key) + ": " + why);
  }
}

inline bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// The section readers, in the order read_deepspeed_config calls them: each reads its section of
// `section` (the config's top level) into `result`.
void read_zero_optimization(ObjectReader& section, const DeepSpeedRelease& release,
                            DeepSpeedConfig& result);
void read_optimizer(ObjectReader& section, const DeepSpeedRelease& release,
                    DeepSpeedConfig& result);
void read_scheduler(ObjectReader& section, const DeepSpeedRelease& release,
                    DeepSpeedConfig& result);
void read_precision(ObjectReader& section, const DeepSpeedRelease& release,
                    DeepSpeedConfig& result);

// deepspeed_schema_check.cpp: a section against its release's pydantic model.

// The keys of `value` (the section at `schema_pointer` inside the DeepSpeed config) that its
// release's pydantic model does not know; none where the release does not validate it.
std::vector<std::string> keys_outside_schema(const DeepSpeedRelease& release,
                                             const std::string& schema_pointer,
                                             const nlohmann::json& value);

// One pydantic model's ValidationError as it is put together: its errors in pydantic's order
// (pydantic_error.h), the kind of the first, and what we say after DeepSpeed's text.
struct ModelRefusal {
  std::vector<PydanticError> errors;
  std::optional<ConfigErrorKind> kind;
  std::vector<std::string> notes;
  std::vector<std::string> forbidden_at;                        // JSON pointers, in order
  std::vector<std::pair<std::string, std::string>> typo_hints;  // (key as written, closest)
};

// An error for each key of `section` (reading `value`, the section at `schema_pointer` inside
// the config) that the release's model does not know, in the file's order.
void add_forbidden_keys(const ObjectReader& section, const DeepSpeedRelease& release,
                        const std::string& schema_pointer, const nlohmann::json& value,
                        ModelRefusal& refusal);

// DeepSpeedConfig validates its pydantic sections while reading params, after the removed keys
// and before the batch arithmetic; the first refusal is the one the user sees.
void refuse_model(const ModelRefusal& refusal, const std::string& model, const std::string& file,
                  const DeepSpeedRelease& release, DeepSpeedConfig& result);

// A section DeepSpeed validates with one model of its own (`section` reads `value`): keys
// outside its schema are refused, the others the reference engine does not read are warned
// about as ignored.
void check_validated_section(const ObjectReader& section, const DeepSpeedRelease& release,
                             const std::string& schema_pointer, const nlohmann::json& value,
                             const std::string& why_ignored, DeepSpeedConfig& result);

// An integer as pydantic's lax mode reads one: an integer, a whole float, a string of digits or a
// boolean; nothing for anything else.
std::optional<int64_t> lax_integer(const nlohmann::json& value);

// Whether the release's pydantic model of `schema_pointer` has `key` (0.16.9 reads fewer keys).
bool release_reads(const DeepSpeedRelease& release, const std::string& schema_pointer,
                   const std::string& key);

}  // namespace trainrepro::deepspeed_sections
