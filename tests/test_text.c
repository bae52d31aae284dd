/* Tests: text. */
#include "test_util.h"

CU_TestInfo text_tests[] = {
	CU_TEST_INFO_NULL,
};
