// User-given text (a file name, a JSON value) may carry control bytes (NUL, ESC, and the C1
// controls such as U+009B, which some terminals read as ESC [): printed raw they cut a message
// short or drive the terminal. Messages show them escaped, as \x00, \x1b or \u009b.
#pragma once
#include <string>

namespace trainrepro {

enum class LineBreaks { escaped, kept };

// `text` with every control character escaped; with LineBreaks::kept, '\n' stays a line break
// (for the harness's own multi-line texts that may quote a scenario).
std::string printable(const std::string& text, LineBreaks line_breaks = LineBreaks::escaped);

}  // namespace trainrepro
