/* The CUnit runner: every suite, or the one named on the command line. */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <string.h>

/* Each suite's table, then the runner's list of them: SHS_SUITE(name) rows of suites.h. */
#define SHS_SUITE(name) extern CU_TestInfo name##_tests[];
#include "suites.h"
#undef SHS_SUITE

static CU_SuiteInfo suites[] = {
#define SHS_SUITE(name) { #name, NULL, NULL, NULL, NULL, name##_tests },
#include "suites.h"
#undef SHS_SUITE
	CU_SUITE_INFO_NULL,
};

int main(int argc, char **argv)
{
	CU_SuiteInfo one[2] = { CU_SUITE_INFO_NULL, CU_SUITE_INFO_NULL };
	CU_SuiteInfo *run = suites;
	unsigned failures;

	if (argc > 1) {
		for (CU_SuiteInfo *s = suites; s->pName; s++)
			if (!strcmp(s->pName, argv[1]))
				one[0] = *s;
		if (!one[0].pName) {
			fprintf(stderr, "shs_tests: no suite named '%s'\n", argv[1]);
			return 2;
		}
		run = one;
	}
	if (CU_initialize_registry() != CUE_SUCCESS || CU_register_suites(run) != CUE_SUCCESS) {
		fprintf(stderr, "shs_tests: %s\n", CU_get_error_msg());
		return 2;
	}
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	failures = CU_get_number_of_failures() + CU_get_number_of_tests_failed();
	if (CU_get_number_of_tests_run() == 0) {
		fprintf(stderr, "shs_tests: no test ran\n");
		failures = 1;
	}
	CU_cleanup_registry();
	return failures ? 1 : 0;
}
