/* Tests: proto. */
#include "test_util.h"

CU_TestInfo proto_tests[] = {
	CU_TEST_INFO_NULL,
};
