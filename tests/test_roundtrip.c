/* Tests: roundtrip. */
#include "test_util.h"

CU_TestInfo roundtrip_tests[] = {
	CU_TEST_INFO_NULL,
};
