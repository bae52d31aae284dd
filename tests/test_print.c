/* Tests: print. */
#include "test_util.h"

CU_TestInfo print_tests[] = {
	CU_TEST_INFO_NULL,
};
