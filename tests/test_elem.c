/* Tests: elem. */
#include "test_util.h"

CU_TestInfo elem_tests[] = {
	CU_TEST_INFO_NULL,
};
