/* Tests: sharding. */
#include "test_util.h"

CU_TestInfo sharding_tests[] = {
	CU_TEST_INFO_NULL,
};
