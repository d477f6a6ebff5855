// Reads a DeepSpeed config file as DeepSpeed does: DeepSpeedConfig loads a config *file* with
// hjson (hjson-py 3.x, `hjson.load`, keys repeated in one object refused). hjson is JSON plus:
// comments (#, //, /* */), commas optional at line ends and trailing, the root object's braces
// optional, keys without quotes, strings in single quotes or ''' multi-line ''' quotes, and
// quoteless strings that run to the end of the line ("train_batch_size": GBSIZE reads as the
// string "GBSIZE"). A config pasted from a repository may use any of these, and DeepSpeed trains
// with it; trainrepro must read it the same way rather than call it invalid JSON. One deliberate
// difference: a \u escape of a lone UTF-16 surrogate, which Python keeps in a str, is an error
// here (it has no UTF-8 form).
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "harness/json/json_fields.h"

namespace trainrepro {

// The value `text` holds, read as hjson-py reads it. A syntax error, a key given twice in one
// object, nesting beyond `max_depth` or a number beyond a 64-bit float is a ScenarioError naming
// `display_path` and the line:column (or, for a repeated key, its JSON pointer). `key_order`,
// when given, receives every object's keys in the order the text writes them.
nlohmann::json parse_hjson(const std::string& text, const std::string& display_path,
                           size_t max_depth, KeyOrder* key_order = nullptr);

}  // namespace trainrepro
