/* Tests: hash. */
#include "test_util.h"

CU_TestInfo hash_tests[] = {
	CU_TEST_INFO_NULL,
};
