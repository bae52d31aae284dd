/* Bounded-depth pre-scan of protobuf bytes. */
#include "io.h"
