#include "models/parameter_names.h"

#include <algorithm>
#include <set>
#include <type_traits>
#include <variant>

namespace trainrepro {
namespace {

bool any_within(const std::vector<std::string>& names, const std::string& entry) {
  return std::any_of(names.begin(), names.end(),
                     [&](const std::string& name) { return name_is_within(name, entry); });
}

bool any_selects(const std::vector<std::string>& entries, const std::string& name) {
  return std::any_of(entries.begin(), entries.end(),
                     [&](const std::string& entry) { return name_is_within(name, entry); });
}

// "7" of "blocks.7.ln1" as an index below `repeats`, with what follows it ("" or ".ln1");
// -1 when the entry does not name one of the repeated modules.
int64_t repeated_index(const ParameterNaming& naming, const std::string& entry,
                       std::string& rest) {
  const std::string head = naming.repeated + ".";
  if (naming.repeated.empty() || entry.compare(0, head.size(), head) != 0) return -1;
  const size_t start = head.size();
  size_t end = start;
  while (end < entry.size() && entry[end] >= '0' && entry[end] <= '9') ++end;
  const size_t digits = end - start;
  // named_parameters() writes indices without leading zeros; 19 digits may overflow int64.
  if (digits == 0 || digits > 18 || (digits > 1 && entry[start] == '0')) return -1;
  const int64_t index = std::stoll(entry.substr(start, digits));
  if (index >= naming.repeats) return -1;
  rest = entry.substr(end);
  if (!rest.empty() && rest[0] != '.') return -1;
  return index;
}

}  // namespace

ParameterNaming parameter_naming(const ModelOptions& options) {
  return std::visit(
      [](const auto& model) -> ParameterNaming {
        using Options = std::decay_t<decltype(model)>;
        ParameterNaming naming;
        if constexpr (std::is_same_v<Options, TorchScriptOptions>) {
          naming.before = model.parameter_names;  // read from the file when it loaded
        } else if constexpr (std::is_same_v<Options, MlpOptions>) {
          naming.repeated = "layers";
          naming.repeats = static_cast<int64_t>(model.dims.size()) - 1;
          naming.inside = {"weight", "bias"};
        } else {
          naming.before = {"token_embedding.weight", "position_embedding.weight"};
          naming.repeated = "blocks";
          naming.repeats = model.layers;
          naming.inside = {"ln1.weight",     "ln1.bias",       "attn_qkv.weight", "attn_qkv.bias",
                           "attn_out.weight", "attn_out.bias", "ln2.weight",      "ln2.bias",
                           "mlp_in.weight",  "mlp_in.bias",    "mlp_out.weight",  "mlp_out.bias"};
          naming.after = {"ln_f.weight", "ln_f.bias", "head.weight", "head.bias"};
        }
        return naming;
      },
      options);
}

bool name_is_within(const std::string& name, const std::string& entry) {
  if (entry.empty() || name.compare(0, entry.size(), entry) != 0) return false;
  return name.size() == entry.size() || name[entry.size()] == '.';
}

bool selects_a_parameter(const ParameterNaming& naming, const std::string& entry) {
  if (any_within(naming.before, entry) || any_within(naming.after, entry)) return true;
  if (naming.repeats > 0 && entry == naming.repeated) return true;
  std::string rest;
  if (repeated_index(naming, entry, rest) < 0) return false;
  return rest.empty() || any_within(naming.inside, rest.substr(1));
}

bool leaves_a_parameter_out(const ParameterNaming& naming,
                            const std::vector<std::string>& entries) {
  for (const auto* names : {&naming.before, &naming.after}) {
    for (const std::string& name : *names) {
      if (!any_selects(entries, name)) return true;
    }
  }
  if (naming.repeats == 0 || any_selects(entries, naming.repeated)) return false;
  // Only the repeated modules the entries mention can be covered; with more modules than that,
  // one is surely left out. Otherwise look at the mentioned ones' names (as many as entries).
  std::set<int64_t> mentioned;
  for (const std::string& entry : entries) {
    std::string rest;
    const int64_t index = repeated_index(naming, entry, rest);
    if (index >= 0) mentioned.insert(index);
  }
  if (static_cast<int64_t>(mentioned.size()) < naming.repeats) return true;
  for (int64_t index : mentioned) {
    for (const std::string& inside : naming.inside) {
      if (!any_selects(entries, naming.repeated + "." + std::to_string(index) + "." + inside)) {
        return true;
      }
    }
  }
  return false;
}

std::vector<std::string> all_parameter_names(const ParameterNaming& naming) {
  std::vector<std::string> names = naming.before;
  for (int64_t i = 0; i < naming.repeats; ++i) {
    for (const std::string& inside : naming.inside) {
      names.push_back(naming.repeated + "." + std::to_string(i) + "." + inside);
    }
  }
  names.insert(names.end(), naming.after.begin(), naming.after.end());
  return names;
}

std::string describe_parameter_names(const ParameterNaming& naming) {
  std::vector<std::string> names = naming.before;
  if (naming.repeats > 0) {
    const std::string range = naming.repeats == 1
                                  ? "0"
                                  : "<0-" + std::to_string(naming.repeats - 1) + ">";
    for (const std::string& inside : naming.inside) {
      names.push_back(naming.repeated + "." + range + "." + inside);
    }
  }
  names.insert(names.end(), naming.after.begin(), naming.after.end());
  std::string text;
  for (const std::string& name : names) text += (text.empty() ? "" : ", ") + name;
  return text;
}

}  // namespace trainrepro
