/* Tests: metadata. */
#include "test_util.h"

CU_TestInfo metadata_tests[] = {
	CU_TEST_INFO_NULL,
};
