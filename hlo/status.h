/* Status codes and the error record every fallible function of the library fills in. */
#ifndef SHS_STATUS_H
#define SHS_STATUS_H

#include <stdarg.h>
#include <stddef.h>

#if defined(__GNUC__)
#define SHS_API __attribute__((visibility("default")))
#define SHS_PRINTF(f, a) __attribute__((format(printf, f, a)))
#define SHS_MUST_USE __attribute__((warn_unused_result))
#else
#define SHS_API
#define SHS_PRINTF(f, a)
#define SHS_MUST_USE
#endif

/* Action functions return SHS_OK or one of these negative codes. */
enum shs_status {
	SHS_OK = 0,
	SHS_EINVAL = -1,      /* a bad argument from the caller */
	SHS_ENOMEM = -2,      /* out of memory, or over the input's memory budget */
	SHS_EIO = -3,         /* a file could not be read or written */
	SHS_EPARSE = -4,      /* malformed input: protobuf or HLO text */
	SHS_EVERIFY = -5,     /* well-formed input that breaks an HLO rule */
	SHS_EUNSUPPORTED = -6 /* valid input that this version cannot represent */
};

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

/* A short fixed name for a status code ("parse error", ...); never NULL. */
SHS_API const char *shs_strerror(int code);

#endif
