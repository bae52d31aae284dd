/* OpSharding <-> shs_sharding. */
#include "sharding.h"
