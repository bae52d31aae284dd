/* HLO text tokens. */
#include "ir.h"
