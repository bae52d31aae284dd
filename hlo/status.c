/* Error record formatting and status names. */
#include "status.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int shs_seterr(shs_err *e, int code, const char *fmt, ...)
{
	va_list ap;

	if (!e)
		return code;
	e->code = code;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	return code;
}

int shs_vseterr_at(shs_err *e, int code, const char *at, const char *fmt, va_list ap)
{
	char what[SHS_ERRMSG_MAX];

	vsnprintf(what, sizeof(what), fmt, ap);
	return shs_seterr(e, code, "%s: %s", at, what);
}

int shs_err_prefix(shs_err *e, const char *fmt, ...)
{
	char old[SHS_ERRMSG_MAX];
	size_t n;
	va_list ap;

	if (!e)
		return SHS_EINVAL;
	memcpy(old, e->msg, sizeof(old));
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	n = strlen(e->msg);
	if (n + 2 < sizeof(e->msg)) {
		memcpy(e->msg + n, ": ", 2);
		n += 2;
		size_t k = strnlen(old, sizeof(e->msg) - n - 1);

		memcpy(e->msg + n, old, k);
		e->msg[n + k] = '\0';
	}
	return e->code;
}

const char *shs_strerror(int code)
{
	switch (code) {
	case SHS_OK: return "ok";
	case SHS_EINVAL: return "invalid argument";
	case SHS_ENOMEM: return "out of memory";
	case SHS_EIO: return "i/o error";
	case SHS_EPARSE: return "parse error";
	case SHS_EVERIFY: return "verification failed";
	case SHS_EUNSUPPORTED: return "unsupported";
	case SHS_ENOFIT: return "does not fit";
	default: return "unknown error";
	}
}
