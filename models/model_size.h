// Sizes that follow from a model's options alone, without building it: what the resource check
// needs before anything is allocated (a model of dims [100000, 100000, 10] would take 40 GB just
// to exist). A unit test checks the parameter counts against built models, so a change to a
// model's layers that forgets this file fails there. To add a model: add its case to both.
#pragma once
#include <cstdint>

#include "models/data_zoo.h"
#include "models/model_zoo.h"

namespace trainrepro {

// Every trainable element. Saturates at INT64_MAX rather than wrapping.
int64_t parameter_count(const ModelOptions& options);

// Elements one sample keeps alive for backward, generously counted (every layer's input and
// output, attention scores included). Saturates at INT64_MAX.
int64_t activation_elements_per_sample(const ModelOptions& model, const DataOptions& data);

// Whether samples are token sequences (generated or from a file), whose loss counts tokens.
bool holds_token_data(const DataOptions& data);

// Tokens one sample holds: its sequence length for token data, 1 for feature data.
int64_t tokens_per_sample(const DataOptions& data);

// Elements one sample of data takes (inputs and targets, the mask included).
int64_t data_elements_per_sample(const DataOptions& data);

}  // namespace trainrepro
