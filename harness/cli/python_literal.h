// Text as a Python string literal that Python reads back as exactly that text, whatever it holds:
// how `trainrepro export --python` puts a scenario's text into a script as data, never as code.
#pragma once
#include <string>
#include <string_view>

namespace trainrepro {

// A single-quoted, non-raw Python 3 string literal of `utf8` (valid UTF-8, else
// std::invalid_argument), written in printable ASCII only: the quote and the backslash escaped,
// a line feed, tab and carriage return written \n, \t and \r, every other character outside
// ' '..'~' written as \xNN, \uNNNN or \UNNNNNNNN. So no quote can
// end the literal early, no line break can appear in it, no backslash is left to combine with
// what follows (\N{…}, a line continuation), no NUL or non-ASCII byte reaches the source, and
// no character can render differently from what Python reads (bidirectional controls).
std::string python_string_literal(std::string_view utf8);

}  // namespace trainrepro
