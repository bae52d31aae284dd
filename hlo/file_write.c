/* Writing a whole output file safely: atomically for regular files, in place for devices. */

/* O_TMPFILE, linkat's AT_SYMLINK_FOLLOW and getrandom are Linux extensions that the project's
 * _POSIX_C_SOURCE=200809L alone hides; a feature macro must come before any header. */
#define _GNU_SOURCE

#include "file_write.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

enum {
	MODE_NEW = 0666,        /* a new file's mode, less the umask, as open(2) would give it */
	MODE_BITS = 07777,      /* the permission bits a replaced file keeps */
	RANDOM_CHARS = 6,       /* random characters of a temporary name, as mkstemp's XXXXXX */
	RANDOM_ALPHABET = 64,   /* letters a random byte picks from (a power of two: no bias) */
	SYMLINK_HOPS = 40,      /* dangling links followed by hand before ELOOP, as the kernel */
	PROC_FD_PATH_MAX = 32,  /* "/proc/self/fd/" and an int */
	TRY_NAMED = -1          /* the unnamed temporary cannot be used here: try a named one */
};

/* The named temporary being written, for a signal that ends the process meanwhile (one write
 * at a time is covered: the command and the pipeline write one file at a time). */
static char pending[PATH_MAX];
static volatile sig_atomic_t has_pending;
static const int cleanup_signals[] = { SIGINT, SIGTERM, SIGHUP };

static const char alphabet[RANDOM_ALPHABET + 1] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* One write: the content, the resolved target split into its folder and name, and where the
 * reason of a failure goes. */
typedef struct job {
	const void *data;
	size_t len;
	const shs_file_hooks *hooks;
	char *why;
	size_t why_cap;
	const char *target;
	char *dir;        /* the target's folder ("." for a bare name) */
	const char *base; /* the target's last component, inside target */
	bool keep_mode;
	mode_t mode;      /* the replaced file's permission bits, when keep_mode */
} job;

/* Sets j's why to the formatted reason; returns err. */
static int fail(const job *j, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(const job *j, int err, const char *fmt, ...)
{
	va_list ap;

	if (j->why && j->why_cap) {
		va_start(ap, fmt);
		vsnprintf(j->why, j->why_cap, fmt, ap);
		va_end(ap);
	}
	return err;
}

/* Sets j's why to "what: " and err's text; returns err. */
static int fail_with(const job *j, int err, const char *what)
{
	return fail(j, err, "%s: %s", what, strerror(err));
}

/* Fills buf[0..n) from /dev/urandom; returns 0 or an errno value. */
static int urandom_bytes(unsigned char *buf, size_t n)
{
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	size_t done = 0;
	int err = 0;

	if (fd < 0)
		return errno;
	while (done < n && !err) {
		ssize_t got = read(fd, buf + done, n - done);

		if (got > 0)
			done += (size_t)got;
		else if (got == 0)
			err = EIO;
		else if (errno != EINTR)
			err = errno;
	}
	close(fd);
	return err;
}

/* Fills buf[0..n) with random bytes (getrandom, else /dev/urandom); returns 0 or an errno. */
static int random_bytes(unsigned char *buf, size_t n)
{
	size_t done = 0;

	while (done < n) {
		ssize_t got = getrandom(buf + done, n - done, GRND_NONBLOCK);

		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) /* ENOSYS, or EAGAIN before the pool is ready: urandom never blocks */
			return urandom_bytes(buf + done, n - done);
		done += (size_t)got;
	}
	return 0;
}

/* The default namer: "DIR/.BASE." and RANDOM_CHARS random letters. */
static int random_name(const char *dir, const char *base, char *out, size_t cap)
{
	unsigned char r[RANDOM_CHARS];
	int n = snprintf(out, cap, "%s/.%s.", dir, base);
	int err;

	if (n < 0 || (size_t)n + RANDOM_CHARS >= cap)
		return ENAMETOOLONG;
	err = random_bytes(r, sizeof(r));
	if (err)
		return err;
	for (size_t k = 0; k < sizeof(r); k++)
		out[n + k] = alphabet[r[k] % RANDOM_ALPHABET];
	out[n + RANDOM_CHARS] = '\0';
	return 0;
}

/* Puts the next temporary name to try into out[0..cap); returns 0 or an errno value. */
static int next_name(const job *j, char *out, size_t cap)
{
	if (j->hooks && j->hooks->next_name)
		return j->hooks->next_name(j->hooks->arg, j->dir, j->base, out, cap);
	return random_name(j->dir, j->base, out, cap);
}

/* A malloc'ed copy of the folder part of path ("." when it has none); NULL when out of memory. */
static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		return strdup(".");
	if (slash == path)
		return strdup("/");
	return strndup(path, (size_t)(slash - path));
}

/* The path the dangling symlink link points to, relative targets taken from link's folder.
 * *out is malloc'ed (caller frees with free()). Returns 0 or an errno value. */
static int follow_link(const char *link, char **out)
{
	char text[PATH_MAX];
	ssize_t n = readlink(link, text, sizeof(text));
	char *dir;
	size_t cap;

	if (n < 0)
		return errno;
	if ((size_t)n == sizeof(text))
		return ENAMETOOLONG;
	text[n] = '\0';
	if (text[0] == '/') {
		*out = strdup(text);
		return *out ? 0 : ENOMEM;
	}
	dir = dir_of(link);
	if (!dir)
		return ENOMEM;
	cap = strlen(dir) + 1 + (size_t)n + 1;
	*out = malloc(cap);
	if (*out)
		snprintf(*out, cap, "%s/%s", dir, text);
	free(dir);
	return *out ? 0 : ENOMEM;
}

/* The file path names once its symlinks are followed: path itself when it is no symlink or
 * does not exist, its realpath, or (dangling links) the missing name the last link points to.
 * *out is malloc'ed (caller frees with free()). Returns 0 or an errno value. */
static int resolve(const char *path, char **out)
{
	char *cur = strdup(path);
	int err = 0;

	if (!cur)
		return ENOMEM;
	for (int hops = 0;; hops++) {
		struct stat st;
		char *next;

		if (lstat(cur, &st) != 0) {
			if (errno != ENOENT)
				err = errno;
			break;
		}
		if (!S_ISLNK(st.st_mode))
			break;
		if (hops == SYMLINK_HOPS) {
			err = ELOOP;
			break;
		}
		next = realpath(cur, NULL);
		if (!next && errno != ENOENT) {
			err = errno;
			break;
		}
		if (next) {
			free(cur);
			cur = next;
			break;
		}
		err = follow_link(cur, &next);
		if (err)
			break;
		free(cur);
		cur = next;
	}
	if (err) {
		free(cur);
		return err;
	}
	*out = cur;
	return 0;
}

/* Writes all of j's data to fd, gives it the kept mode (with_mode), and syncs it. Returns 0 or
 * an errno value, with the reason in j. */
static int fill(const job *j, int fd, bool with_mode)
{
	size_t done = 0;

	while (done < j->len) {
		ssize_t w = write(fd, (const char *)j->data + done, j->len - done);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return fail_with(j, errno, "write failed");
		if (w == 0)
			return fail(j, EIO, "write failed: no progress");
		done += (size_t)w;
	}
	if (with_mode && fchmod(fd, j->mode) != 0)
		return fail_with(j, errno, "cannot write");
	/* FIFOs, sockets and some devices cannot be synced, and say so with EINVAL or EROFS */
	if (fsync(fd) != 0 && errno != EINVAL && errno != EROFS)
		return fail_with(j, errno, "write failed");
	return 0;
}

/* Writes the device, FIFO or socket path leads to in place, opening it through its links as a
 * shell would (so /dev/stdout works); seen is what stat said it was. */
static int write_in_place(const job *j, const char *path, const struct stat *seen)
{
	int fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
	struct stat st;
	int err;

	if (fd < 0)
		return fail_with(j, errno, "cannot write");
	if (fstat(fd, &st) != 0)
		err = fail_with(j, errno, "cannot write");
	else if (st.st_dev != seen->st_dev || st.st_ino != seen->st_ino)
		err = fail(j, EAGAIN, "cannot write: replaced while being opened");
	else
		err = fill(j, fd, false);
	if (close(fd) != 0 && !err)
		err = fail_with(j, errno, "write failed");
	return err;
}

/* Makes a rename in folder dir durable (fsync of the folder); best effort: a folder that
 * cannot be opened or synced leaves the rename as the filesystem keeps it. */
static void sync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return;
	(void)fsync(fd);
	close(fd);
}

/* Closes fd, the complete temporary (also named tmp when named), and renames tmp over the
 * target. On any failure, err on entry included, tmp is removed. Returns 0 or an errno value
 * (reason in j). */
static int commit(const job *j, int fd, const char *tmp, bool named, int err)
{
	if (close(fd) != 0 && !err)
		err = fail_with(j, errno, "write failed");
	if (named && !err && rename(tmp, j->target) != 0)
		err = fail_with(j, errno, "cannot write");
	if (named && err)
		unlink(tmp);
	has_pending = 0;
	if (named && !err)
		sync_dir(j->dir);
	return err;
}

/* Tells the test hooks, if any, that the temporary now has the name tmp. */
static void now_named(const job *j, const char *tmp)
{
	if (j->hooks && j->hooks->named)
		j->hooks->named(j->hooks->arg, tmp);
}

/* The reason when every temporary name tried was taken. */
static int names_taken(const job *j)
{
	return fail(j, EEXIST, "cannot write: %d temporary names beside it are taken",
		    SHS_FILE_NAME_TRIES);
}

/* Kernels before 3.11 (EISDIR) and filesystems without O_TMPFILE (EOPNOTSUPP) refuse it. */
static bool tmpfile_unsupported(int err)
{
	return err == EOPNOTSUPP || err == EISDIR || err == EINVAL || err == ENOSYS;
}

/* No /proc (ENOENT), or a filesystem that cannot link (EPERM, EOPNOTSUPP). */
static bool link_unsupported(int err)
{
	return err == ENOENT || err == EPERM || err == EOPNOTSUPP || err == EINVAL || err == ENOSYS;
}

/* Gives the unnamed file open at fd a fresh temporary name, left in tmp[0..cap). Returns 0, an
 * errno value (reason in j), or TRY_NAMED when the system cannot link it. */
static int link_name(const job *j, int fd, char *tmp, size_t cap)
{
	char proc[PROC_FD_PATH_MAX];
	int err = EEXIST;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	for (int k = 0; k < SHS_FILE_NAME_TRIES && err == EEXIST; k++) {
		err = next_name(j, tmp, cap);
		if (err)
			return fail_with(j, err, "cannot write");
		/* linkat never follows, nor replaces, what is already at tmp */
		has_pending = 0;
		snprintf(pending, sizeof(pending), "%s", tmp);
		err = linkat(AT_FDCWD, proc, AT_FDCWD, tmp, AT_SYMLINK_FOLLOW) == 0 ? 0 : errno;
		has_pending = !err;
	}
	if (!err)
		now_named(j, tmp);
	if (err == EEXIST)
		return names_taken(j);
	if (err && link_unsupported(err))
		return TRY_NAMED;
	if (err)
		return fail_with(j, err, "cannot write");
	return 0;
}

/* Writes through an unnamed O_TMPFILE temporary, named only once complete. Returns 0, an errno
 * value (reason in j), or TRY_NAMED when this folder or system does not support it. */
static int via_unnamed(const job *j)
{
	char tmp[PATH_MAX];
	int fd = open(j->dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, MODE_NEW);
	int err;

	if (fd < 0) {
		if (tmpfile_unsupported(errno))
			return TRY_NAMED;
		return fail_with(j, errno, "cannot write");
	}
	err = fill(j, fd, j->keep_mode);
	if (!err)
		err = link_name(j, fd, tmp, sizeof(tmp));
	return commit(j, fd, tmp, !err, err);
}

/* Creates a fresh temporary with O_EXCL, as mkstemp does, named in tmp[0..cap); *fd is open on
 * it. Returns 0 or an errno value (reason in j). */
static int create_named(const job *j, char *tmp, size_t cap, int *fd)
{
	int err = EEXIST;

	for (int k = 0; k < SHS_FILE_NAME_TRIES && err == EEXIST; k++) {
		err = next_name(j, tmp, cap);
		if (err)
			return fail_with(j, err, "cannot write");
		/* O_EXCL fails on anything at tmp, a planted symlink included: nothing is followed */
		has_pending = 0;
		snprintf(pending, sizeof(pending), "%s", tmp);
		*fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			   MODE_NEW);
		err = *fd < 0 ? errno : 0;
		has_pending = !err;
	}
	if (!err)
		now_named(j, tmp);
	if (err == EEXIST)
		return names_taken(j);
	if (err)
		return fail_with(j, err, "cannot write");
	return 0;
}

/* Writes through a fresh named temporary, then renames it. Returns 0 or an errno value. */
static int via_named(const job *j)
{
	char tmp[PATH_MAX];
	int fd = -1;
	int err = create_named(j, tmp, sizeof(tmp), &fd);

	if (err)
		return err;
	return commit(j, fd, tmp, true, fill(j, fd, j->keep_mode));
}

/* Writes atomically through a temporary beside j's target. */
static int write_replacing(job *j)
{
	const char *slash = strrchr(j->target, '/');
	int err;

	j->base = slash ? slash + 1 : j->target;
	if (!*j->base) /* "new/": the name of a folder, not of a file */
		return fail(j, EISDIR, "is a directory");
	j->dir = dir_of(j->target);
	if (!j->dir)
		return fail_with(j, ENOMEM, "cannot write");
	err = j->hooks && j->hooks->named_only ? TRY_NAMED : via_unnamed(j);
	if (err == TRY_NAMED)
		err = via_named(j);
	free(j->dir);
	j->dir = NULL;
	return err;
}

int shs__file_write_hooked(const char *path, const void *data, size_t len,
			   const shs_file_hooks *hooks, char *why, size_t why_cap)
{
	job j = { .data = data, .len = len, .hooks = hooks, .why = why, .why_cap = why_cap };
	char *target = NULL;
	struct stat st;
	int err;

	if (why && why_cap)
		why[0] = '\0';
	if (stat(path, &st) == 0) {
		if (S_ISDIR(st.st_mode))
			return fail(&j, EISDIR, "is a directory");
		if (!S_ISREG(st.st_mode))
			return write_in_place(&j, path, &st);
		j.keep_mode = true;
		j.mode = st.st_mode & MODE_BITS;
	} else if (errno != ENOENT) {
		return fail_with(&j, errno, "cannot write");
	}
	err = resolve(path, &target);
	if (err)
		return fail_with(&j, err, "cannot write");
	j.target = target;
	err = write_replacing(&j);
	free(target);
	return err;
}

int shs_file_write(const char *path, const void *data, size_t len, char *why, size_t why_cap)
{
	return shs__file_write_hooked(path, data, len, NULL, why, why_cap);
}

/* Removes the named temporary being written, if any, then lets the signal end the process as
 * it would have (async-signal-safe: unlink, sigaction, raise). */
static void on_ending_signal(int sig)
{
	struct sigaction dfl;

	if (has_pending)
		unlink(pending);
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigemptyset(&dfl.sa_mask);
	sigaction(sig, &dfl, NULL);
	raise(sig);
}

void shs_file_write_clean_on_signals(void)
{
	struct sigaction sa, old;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_ending_signal;
	sigemptyset(&sa.sa_mask);
	for (size_t k = 0; k < sizeof(cleanup_signals) / sizeof(cleanup_signals[0]); k++) {
		/* a signal the program was started ignoring (nohup) stays ignored */
		if (sigaction(cleanup_signals[k], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
			continue;
		sigaction(cleanup_signals[k], &sa, NULL);
	}
}
