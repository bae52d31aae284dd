/* Constant literals in HLO text. */
#include "ir.h"
