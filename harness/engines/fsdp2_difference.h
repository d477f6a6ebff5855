// Why a scenario's verdict on FSDP2 (`run --engine fsdp2`) differs from the one DeepSpeed's
// semantics give it: a loop habit whose harm comes from DeepSpeed's engine, not from the loop, so
// the FSDP2 run of the same habit matches the golden. Said beside the verdict, for the
// "Outcome by engine" table; the verdict itself is the measurement and stays as judged.
#pragma once
#include <optional>
#include <string>

#include "harness/scenario/scenario.h"
#include "harness/verdict/verdict.h"

namespace trainrepro {

// The explanation for an FSDP2 verdict that differs, from the habit the scenario sets: a
// not-reproduced one (the expected diagnosis did not show: the run passed) or a failed one whose
// habit only DeepSpeed's engine makes right; nothing when no habit explains it.
std::optional<std::string> fsdp2_difference(const Scenario& scenario, const Verdict& verdict);

}  // namespace trainrepro
