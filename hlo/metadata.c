/* OpMetadata text form and quoted strings. */
#include "metadata.h"
