/* The CUnit runner: every suite, or the one named on the command line. */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <string.h>

extern CU_TestInfo elem_tests[], sharding_tests[], metadata_tests[], text_tests[],
	print_tests[], proto_tests[], protobad_tests[], verify_tests[], hash_tests[],
	roundtrip_tests[], badinput_tests[], analysis_tests[], genconfig_tests[], gen_tests[],
	host_tests[], dotplugin_tests[], strategies_tests[], propagate_tests[],
	hardware_tests[], cluster_tests[], book_tests[], evaluate_tests[], search_tests[],
	write_tests[];

static CU_SuiteInfo suites[] = {
	{ "elem", NULL, NULL, NULL, NULL, elem_tests },
	{ "sharding", NULL, NULL, NULL, NULL, sharding_tests },
	{ "metadata", NULL, NULL, NULL, NULL, metadata_tests },
	{ "text", NULL, NULL, NULL, NULL, text_tests },
	{ "print", NULL, NULL, NULL, NULL, print_tests },
	{ "proto", NULL, NULL, NULL, NULL, proto_tests },
	{ "protobad", NULL, NULL, NULL, NULL, protobad_tests },
	{ "verify", NULL, NULL, NULL, NULL, verify_tests },
	{ "hash", NULL, NULL, NULL, NULL, hash_tests },
	{ "roundtrip", NULL, NULL, NULL, NULL, roundtrip_tests },
	{ "badinput", NULL, NULL, NULL, NULL, badinput_tests },
	{ "analysis", NULL, NULL, NULL, NULL, analysis_tests },
	{ "genconfig", NULL, NULL, NULL, NULL, genconfig_tests },
	{ "gen", NULL, NULL, NULL, NULL, gen_tests },
	{ "host", NULL, NULL, NULL, NULL, host_tests },
	{ "dotplugin", NULL, NULL, NULL, NULL, dotplugin_tests },
	{ "strategies", NULL, NULL, NULL, NULL, strategies_tests },
	{ "propagate", NULL, NULL, NULL, NULL, propagate_tests },
	{ "hardware", NULL, NULL, NULL, NULL, hardware_tests },
	{ "cluster", NULL, NULL, NULL, NULL, cluster_tests },
	{ "book", NULL, NULL, NULL, NULL, book_tests },
	{ "evaluate", NULL, NULL, NULL, NULL, evaluate_tests },
	{ "search", NULL, NULL, NULL, NULL, search_tests },
	{ "write", NULL, NULL, NULL, NULL, write_tests },
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
