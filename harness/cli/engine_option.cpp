#include "harness/cli/engine_option.h"

#include <iostream>
#include <stdexcept>

#include "harness/distributed/mpi_session.h"
#include "harness/verdict/verdict.h"
#include "harness/worker/managed_release.h"

namespace trainrepro {

EngineOption read_engine_option(const std::string& text) {
  EngineOption option;
  EngineChoice engine;
  try {
    engine = parse_engine_choice(text);
  } catch (const std::invalid_argument& error) {
    std::cerr << error.what() << "\n";
    option.exit_code = kExitBadInput;
    return option;
  }
  if (!engine.deepspeed && !engine.fsdp2) return option;
  if (launched_by_mpi()) {
    std::cerr << "--engine " << text
              << " starts one Python process per rank itself; run it without mpirun or srun\n";
    option.exit_code = kExitBadInput;
    return option;
  }
  try {
    option.deepspeed = deepspeed_python_for(engine);
  } catch (const DeepSpeedReleaseError& error) {
    std::cerr << error.what() << "\n";
    option.exit_code = kExitBadInput;
  } catch (const DeepSpeedPythonError& error) {
    std::cerr << error.what() << "\n";
    option.exit_code = kExitInfrastructure;
  }
  return option;
}

}  // namespace trainrepro
