/* Without NCCLZ_MPI: the MPI transport is absent, and says so. */
#include "ncclz/exec.h"

#include <stddef.h>

int ncclzMpiAvailable(void) { return 0; }
ncclzStatus ncclzMpiInit(int *argc, char ***argv) {
  return ncclzSetError(NCCLZ_ERR_ARG, "ncclz was built without MPI (NCCLZ_MPI=OFF)");
}
void ncclzMpiFinalize(void) {}
ncclzTransport *ncclzMpiTransportCreate(void) { return NULL; }
