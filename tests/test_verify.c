/* Tests: verify. */
#include "test_util.h"

CU_TestInfo verify_tests[] = {
	CU_TEST_INFO_NULL,
};
