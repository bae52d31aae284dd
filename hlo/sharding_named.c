/* Named-axis shardings and their XLA form on a mesh. */
#include "sharding.h"
