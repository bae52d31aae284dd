/* Writing a whole output file safely: atomically for regular files, in place for devices. */
#ifndef SHS_FILE_WRITE_H
#define SHS_FILE_WRITE_H

/* libc only, no other header of ours: tools/pipeline, which links nothing of the library,
 * compiles file_write.c into itself. */
#include <stdbool.h>
#include <stddef.h>

#if defined(__GNUC__)
#define SHS_FILE_MUST_USE __attribute__((warn_unused_result))
#else
#define SHS_FILE_MUST_USE
#endif

enum {
	SHS_FILE_WHY_MAX = 128,   /* a why buffer this long holds every reason untruncated */
	SHS_FILE_NAME_TRIES = 16  /* temporary names tried before giving up with EEXIST */
};

/*
 * Writes data[0..len) as the whole content of path. data is borrowed, only read.
 *  - path a symlink (dangling or not): what follows applies to the file it leads to, and the
 *    link stays a link.
 *  - an existing character or block device, FIFO or socket: opened without O_CREAT and
 *    written in place, so it stays what it was (a FIFO blocks until it has a reader).
 *  - a directory: EISDIR.
 *  - a regular file or a new name: written to a temporary in the same folder, synced, then
 *    renamed over it (the folder synced after), so readers see the old content or the new,
 *    never a mix. The temporary
 *    is unnamed (O_TMPFILE) until complete, else a fresh random ".NAME.XXXXXX" created with
 *    O_EXCL, so a symlink planted at a temporary name is never followed. A replaced file's
 *    permission bits are kept; a new file gets 0666 less the umask. No temporary is left
 *    behind on failure, nor on SIGINT, SIGTERM or SIGHUP with shs_file_write_clean_on_signals
 *    (only SIGKILL on a filesystem without O_TMPFILE can leave a ".NAME.XXXXXX").
 * Returns 0 or an errno value, with why[0..why_cap) (may be NULL) set to a short reason that
 * does not name the path: "cannot write: Permission denied", "write failed: No space left on
 * device", "is a directory".
 */
int shs_file_write(const char *path, const void *data, size_t len, char *why, size_t why_cap)
	SHS_FILE_MUST_USE;

/* Installs handlers of SIGINT, SIGTERM and SIGHUP (those not ignored) that remove the named
 * temporary of a write in progress, then end the process by the same signal. For programs
 * (the command, tools/pipeline): a library leaves its host's signals alone. The unnamed
 * temporary needs none: the kernel drops it with the process. */
void shs_file_write_clean_on_signals(void);

/* For tests: writes the next temporary name to try for a target in folder dir named base
 * into out[0..cap). Returns 0, or an errno value (ENAMETOOLONG) that ends the write. */
typedef int (*shs_file_namer)(void *arg, const char *dir, const char *base, char *out,
			      size_t cap);

/* For tests: what shs__file_write_hooked does differently from shs_file_write. */
typedef struct shs_file_hooks {
	shs_file_namer next_name; /* NULL: random ".BASE.XXXXXX" names */
	void *arg;                /* borrowed, passed to next_name */
	bool named_only;          /* skip the unnamed O_TMPFILE temporary (the fallback path) */
	void (*named)(void *arg, const char *tmp); /* called once a temporary has its name */
} shs_file_hooks;

/* For tests: shs_file_write with hooks (NULL: none), so a test can plant files at exactly the
 * temporary names that will be tried, on either path. hooks is borrowed for the call. */
int shs__file_write_hooked(const char *path, const void *data, size_t len,
			   const shs_file_hooks *hooks, char *why, size_t why_cap)
	SHS_FILE_MUST_USE;

#endif
