// User-given text (a file name, a JSON value) may carry control bytes (NUL, ESC, and the C1
// controls such as U+009B, which some terminals read as ESC [): printed raw they cut a message
// short or drive the terminal. Messages show them escaped, as \x00, \x1b or \u009b.
#pragma once
#include <cstddef>
#include <string>

namespace trainrepro {

enum class LineBreaks { escaped, kept };

// `text` with every control character escaped; with LineBreaks::kept, '\n' stays a line break
// (for the harness's own multi-line texts that may quote a scenario).
std::string printable(const std::string& text, LineBreaks line_breaks = LineBreaks::escaped);

// `text` quoted and escaped for a one-line message, cut to its first `at_most` bytes (the
// length said) when longer: a 10,000-character argument is named, not repeated.
std::string printable_excerpt(const std::string& text, size_t at_most = 60);

// The last `at_most` bytes of another program's output (pip's, DeepSpeed's), escaped with its
// line breaks kept, for a message that shows why that program failed.
std::string printable_output_tail(const std::string& text, size_t at_most = 4000);

}  // namespace trainrepro
