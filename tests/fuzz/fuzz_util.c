/* Shared helpers of the libFuzzer targets (fuzz_util.h). */
#define _GNU_SOURCE /* memfd_create */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz_util.h"

enum { PATH_MAX_TEXT = 64 };

void fuzz_check_failure(const char *parser, int rc, const shs_err *e)
{
	if (rc == SHS_OK || e->msg[0])
		return;
	fprintf(stderr, "fuzz: %s failed with %d and no message\n", parser, rc);
	abort();
}

void fuzz_require(bool cond, const char *what, const char *detail)
{
	if (cond)
		return;
	fprintf(stderr, "fuzz: %s does not hold%s%s\n", what, detail ? ": " : "",
		detail ? detail : "");
	abort();
}

char *fuzz_strndup(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	fuzz_require(s != NULL, "memory for a copy of the input", NULL);
	if (size)
		memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

const char *fuzz_as_file(const uint8_t *data, size_t size)
{
	static int fd = -1;
	static char path[PATH_MAX_TEXT];

	if (fd < 0) {
		fd = memfd_create("fuzz-input", MFD_CLOEXEC);
		fuzz_require(fd >= 0, "memfd_create", NULL);
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	}
	fuzz_require(ftruncate(fd, 0) == 0, "truncating the input file", NULL);
	fuzz_require(!size || pwrite(fd, data, size, 0) == (ssize_t)size,
		     "writing the input file", NULL);
	return path;
}
