/* XLA sharding: text form, checks, equality. */
#include "sharding.h"
