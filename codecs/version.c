/* The linked library's version, for callers to compare with the headers' NCCLZ_VERSION_CODE. */
#include "ncclz/version.h"

int ncclzVersion(void) { return NCCLZ_VERSION_CODE; }

const char *ncclzVersionString(void) { return NCCLZ_VERSION_STRING; }
