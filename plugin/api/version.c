/* The library version string (the project's, from CMake). */
#include "shardsearch.h"

const char *shs_version(void)
{
	return SHS_VERSION_STRING;
}
