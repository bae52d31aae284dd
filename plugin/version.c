/* The library version string. */
#include "shardsearch.h"

const char *shs_version(void)
{
	return "0.1.0";
}
