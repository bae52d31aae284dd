/* shardsearch public host API (grows with the plugin, search and pass issues). */
#ifndef SHARDSEARCH_H
#define SHARDSEARCH_H

#include "status.h"

/* The library version, "MAJOR.MINOR.PATCH". Static storage; never NULL. */
SHS_API const char *shs_version(void);

#endif
