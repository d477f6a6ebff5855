#include "harness/cli/engine_option.h"

#include <iostream>
#include <stdexcept>

#include "harness/distributed/mpi_session.h"
#include "harness/files/environment_values.h"
#include "harness/files/install_locations.h"
#include "harness/verdict/verdict.h"
#include "harness/worker/managed_release.h"

namespace trainrepro {

EngineOption read_engine_option(const std::string& text, int probe_timeout_seconds) {
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
    if (engine.release) offline_requested();  // a misspelt TRAINREPRO_OFFLINE, even if installed
    option.deepspeed = deepspeed_python_for(engine, probe_timeout_seconds);
  } catch (const DeepSpeedReleaseError& error) {
    std::cerr << error.what() << "\n";
    option.exit_code = kExitBadInput;
  } catch (const EnvironmentValueError& error) {
    std::cerr << error.what() << "\n";
    option.exit_code = kExitBadInput;
  } catch (const CacheFolderError& error) {
    std::cerr << error.what() << "\n";
    option.exit_code = kExitInfrastructure;
  } catch (const DeepSpeedPythonError& error) {
    std::cerr << error.what() << "\n";
    option.exit_code = kExitInfrastructure;
  }
  return option;
}

}  // namespace trainrepro
