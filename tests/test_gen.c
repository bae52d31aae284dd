/* Placeholder for the gen suite; its owner replaces this file. */
#include <CUnit/CUnit.h>
CU_TestInfo gen_tests[] = { CU_TEST_INFO_NULL };
