/* Tests: badinput. */
#include "test_util.h"

CU_TestInfo badinput_tests[] = {
	CU_TEST_INFO_NULL,
};
