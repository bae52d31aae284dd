/* The error record every fallible function of the library fills in. The status codes are the
 * public ones (enum shs_status of shardsearch.h, the installed contract every layer shares). */
#ifndef SHS_STATUS_H
#define SHS_STATUS_H

#include <stdarg.h>
#include <stddef.h>

#include "shardsearch.h"

#if defined(__GNUC__)
#define SHS_PRINTF(f, a) __attribute__((format(printf, f, a)))
#define SHS_MUST_USE __attribute__((warn_unused_result))
#else
#define SHS_PRINTF(f, a)
#define SHS_MUST_USE
#endif

enum { SHS_ERRMSG_MAX = 1024 };

/* The last error: a code and a message naming the file, computation and instruction at fault. */
typedef struct shs_err {
	int code;
	char msg[SHS_ERRMSG_MAX];
} shs_err;

/* Sets e (which may be NULL) to code and the formatted message; returns code. */
int shs_seterr(shs_err *e, int code, const char *fmt, ...) SHS_PRINTF(3, 4);

/* Sets e to code and "at: " followed by the formatted message; returns code. */
int shs_vseterr_at(shs_err *e, int code, const char *at, const char *fmt, va_list ap);

/* Puts "prefix: " in front of e's message, keeping its code; returns the code. */
int shs_err_prefix(shs_err *e, const char *fmt, ...) SHS_PRINTF(2, 3);

#endif
