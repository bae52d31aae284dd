/* Tests: outputs replaced atomically, devices kept as devices, planted links never followed. */
#define _XOPEN_SOURCE 700 /* mknod and S_IFCHR are XSI */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "file_write.h"
#include "test_util.h"

enum {
	MAX_ENTRIES = 64,   /* entries a case folder may hold */
	PLANTED = 5,        /* symlinks planted at the first temporary names */
	MODE_PRIVATE = 0600,
	MODE_ODD = 0751,
	MODE_BITS = 07777,
	MODE_NEW = 0666,
	MODE_DIR = 0777,
	NULL_MAJOR = 1, NULL_MINOR = 3, /* /dev/null's device number */
	FULL_MAJOR = 1, FULL_MINOR = 7  /* /dev/full's */
};

static const char content[] = "HloModule written\n";

/* Removes path and, when it is a folder, everything in it. */
static void remove_tree(const char *path)
{
	struct stat st;
	DIR *d;
	struct dirent *ent;

	if (lstat(path, &st) != 0)
		return;
	if (!S_ISDIR(st.st_mode)) {
		unlink(path);
		return;
	}
	d = opendir(path);
	while (d && (ent = readdir(d))) {
		char sub[PATH_MAX];

		if (!strcmp(ent->d_name, ".") || !strcmp(ent->d_name, ".."))
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", path, ent->d_name);
		remove_tree(sub);
	}
	if (d)
		closedir(d);
	rmdir(path);
}

/* A fresh, empty folder for one case; static buffer, valid until the next call. */
static const char *case_dir(const char *name)
{
	static char dir[PATH_MAX];

	snprintf(dir, sizeof(dir), "%s", shs_test_tmp_path("write"));
	mkdir(dir, MODE_DIR);
	snprintf(dir, sizeof(dir), "%s/%s", shs_test_tmp_path("write"), name);
	remove_tree(dir);
	SHS_ASSERT_INT_EQ(mkdir(dir, MODE_DIR), 0);
	return dir;
}

/* dir/name in out[0..PATH_MAX); returns out. */
static char *join(char *out, const char *dir, const char *name)
{
	int n = snprintf(out, PATH_MAX, "%s/%s", dir, name);

	CU_ASSERT_FATAL(n > 0 && n < PATH_MAX);
	return out;
}

/* Creates path holding text, with permission bits mode. */
static void put_file(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");

	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs(text, f);
	SHS_ASSERT_INT_EQ(fclose(f), 0);
	SHS_ASSERT_INT_EQ(chmod(path, mode), 0);
}

/* Asserts path holds exactly want. */
static void assert_content(const char *path, const char *want)
{
	size_t len = 0;
	uint8_t *got = shs_test_read_file(path, &len);

	if (!got)
		fprintf(stderr, "\n  %s: cannot read: %s\n", path, strerror(errno));
	CU_ASSERT_PTR_NOT_NULL_FATAL(got);
	SHS_ASSERT_STR_EQ((const char *)got, want);
	free(got);
}

/* The permission bits of path (following links). */
static mode_t mode_of(const char *path)
{
	struct stat st;

	SHS_ASSERT_INT_EQ(stat(path, &st), 0);
	return st.st_mode & MODE_BITS;
}

/* The file type bits of path itself (not following links). */
static mode_t type_of(const char *path)
{
	struct stat st;

	SHS_ASSERT_INT_EQ(lstat(path, &st), 0);
	return st.st_mode & S_IFMT;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Asserts dir holds exactly the entries of want (NULL-terminated, any order): no leftover
 * temporaries, nothing created by following a link. */
static void assert_only(const char *dir, const char *const *want)
{
	char *got[MAX_ENTRIES], *wanted[MAX_ENTRIES];
	size_t n_got = 0, n_want = 0;
	bool same;
	DIR *d = opendir(dir);
	struct dirent *ent;

	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	while ((ent = readdir(d)) && n_got < MAX_ENTRIES)
		if (strcmp(ent->d_name, ".") && strcmp(ent->d_name, ".."))
			got[n_got++] = strdup(ent->d_name);
	closedir(d);
	while (want[n_want] && n_want < MAX_ENTRIES) {
		wanted[n_want] = (char *)want[n_want];
		n_want++;
	}
	qsort(got, n_got, sizeof(*got), cmp_name);
	qsort(wanted, n_want, sizeof(*wanted), cmp_name);
	same = n_got == n_want;
	for (size_t k = 0; same && k < n_got; k++)
		same = got[k] && !strcmp(got[k], wanted[k]);
	if (!same) {
		fprintf(stderr, "\n  %s holds:", dir);
		for (size_t k = 0; k < n_got; k++)
			fprintf(stderr, " '%s'", got[k] ? got[k] : "(no memory)");
		fprintf(stderr, "\n  want:");
		for (size_t k = 0; k < n_want; k++)
			fprintf(stderr, " '%s'", wanted[k]);
		fprintf(stderr, "\n");
	}
	for (size_t k = 0; k < n_got; k++)
		free(got[k]);
	CU_ASSERT_TRUE_FATAL(same);
}

/* Asserts shs_file_write(path) succeeds, printing its reason otherwise. */
static void write_ok(const char *path, const shs_file_hooks *hooks)
{
	char why[SHS_FILE_WHY_MAX];
	int err = shs__file_write_hooked(path, content, strlen(content), hooks, why, sizeof(why));

	if (err)
		fprintf(stderr, "\n  %s: %s\n", path, why);
	SHS_ASSERT_INT_EQ(err, 0);
}

/* Asserts writing path fails with want_err and a reason starting with want_why. */
static void write_fails(const char *path, const shs_file_hooks *hooks, int want_err,
			const char *want_why)
{
	char why[SHS_FILE_WHY_MAX];
	int err = shs__file_write_hooked(path, content, strlen(content), hooks, why, sizeof(why));

	SHS_ASSERT_INT_EQ(err, want_err);
	if (strncmp(why, want_why, strlen(want_why)))
		SHS_ASSERT_STR_EQ(why, want_why);
}

/* The mode a new file gets: 0666 less the umask (this test is single-threaded). */
static mode_t new_file_mode(void)
{
	mode_t mask = umask(0);

	umask(mask);
	return MODE_NEW & ~mask;
}

/* Hooks taking the unnamed O_TMPFILE path, then the named fallback. */
static const shs_file_hooks both_paths[] = { { .named_only = false }, { .named_only = true } };

static void writes_a_new_file(void)
{
	for (size_t k = 0; k < sizeof(both_paths) / sizeof(both_paths[0]); k++) {
		const char *dir = case_dir("new");
		char out[PATH_MAX];

		write_ok(join(out, dir, "out.hlo"), &both_paths[k]);
		assert_content(out, content);
		SHS_ASSERT_INT_EQ(type_of(out), S_IFREG);
		SHS_ASSERT_INT_EQ(mode_of(out), new_file_mode());
		assert_only(dir, (const char *[]){ "out.hlo", NULL });
	}
}

static void replaces_a_file_and_keeps_its_mode(void)
{
	static const mode_t modes[] = { MODE_PRIVATE, MODE_ODD };

	for (size_t k = 0; k < sizeof(both_paths) / sizeof(both_paths[0]); k++)
		for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
			const char *dir = case_dir("replace");
			char out[PATH_MAX];
			struct stat before, after;

			put_file(join(out, dir, "out.pb"), "old content, longer than the new one\n",
				 modes[m]);
			SHS_ASSERT_INT_EQ(stat(out, &before), 0);
			write_ok(out, &both_paths[k]);
			assert_content(out, content);
			SHS_ASSERT_INT_EQ(mode_of(out), modes[m]);
			/* a new inode renamed into place, not the old one rewritten */
			SHS_ASSERT_INT_EQ(stat(out, &after), 0);
			CU_ASSERT_NOT_EQUAL(before.st_ino, after.st_ino);
			assert_only(dir, (const char *[]){ "out.pb", NULL });
		}
}

static void a_symlink_stays_a_symlink(void)
{
	const char *dir = case_dir("symlink");
	char link[PATH_MAX], real[PATH_MAX], target[PATH_MAX], text[PATH_MAX];
	ssize_t n;

	SHS_ASSERT_INT_EQ(mkdir(join(real, dir, "real"), MODE_DIR), 0);
	put_file(join(target, real, "target.hlo"), "old\n", MODE_PRIVATE);
	SHS_ASSERT_INT_EQ(symlink("real/target.hlo", join(link, dir, "link.hlo")), 0);
	write_ok(link, NULL);
	SHS_ASSERT_INT_EQ(type_of(link), S_IFLNK);
	n = readlink(link, text, sizeof(text) - 1);
	SHS_ASSERT_INT_EQ(n, (ssize_t)strlen("real/target.hlo"));
	text[n] = '\0';
	SHS_ASSERT_STR_EQ(text, "real/target.hlo");
	assert_content(target, content);
	SHS_ASSERT_INT_EQ(mode_of(target), MODE_PRIVATE);
	assert_only(dir, (const char *[]){ "link.hlo", "real", NULL });
	assert_only(real, (const char *[]){ "target.hlo", NULL });
}

static void a_dangling_symlink_gets_its_target_made(void)
{
	const char *dir = case_dir("dangling");
	char link[PATH_MAX], real[PATH_MAX], target[PATH_MAX];

	SHS_ASSERT_INT_EQ(mkdir(join(real, dir, "real"), MODE_DIR), 0);
	SHS_ASSERT_INT_EQ(symlink("real/made.hlo", join(link, dir, "link.hlo")), 0);
	write_ok(link, NULL);
	SHS_ASSERT_INT_EQ(type_of(link), S_IFLNK);
	assert_content(join(target, real, "made.hlo"), content);
	assert_only(dir, (const char *[]){ "link.hlo", "real", NULL });
	assert_only(real, (const char *[]){ "made.hlo", NULL });
}

/* A namer giving DIR/.BASE.plantN for N = 0, 1, ...: names a test can plant files at. */
typedef struct plant_namer {
	int next;
} plant_namer;

static int plant_name(void *arg, const char *dir, const char *base, char *out, size_t cap)
{
	plant_namer *p = arg;
	int n = snprintf(out, cap, "%s/.%s.plant%d", dir, base, p->next++);

	return n < 0 || (size_t)n >= cap ? ENAMETOOLONG : 0;
}

/* Plants symlinks at the first count names plant_name gives for dir/out.pb: even ones to the
 * victim file, odd ones dangling to a file an attacker wants made. Their names go to names[]
 * (NULL-terminated, malloc'ed: caller frees each). */
static void plant(const char *dir, int count, char **names)
{
	plant_namer p = { 0 };

	for (int k = 0; k < count; k++) {
		char path[PATH_MAX], to[PATH_MAX];

		SHS_ASSERT_INT_EQ(plant_name(&p, dir, "out.pb", path, sizeof(path)), 0);
		join(to, dir, k % 2 ? "made-by-attack" : "victim");
		SHS_ASSERT_INT_EQ(symlink(to, path), 0);
		names[k] = strdup(strrchr(path, '/') + 1);
	}
	names[count] = NULL;
}

static void planted_symlinks_are_not_followed(void)
{
	for (size_t k = 0; k < sizeof(both_paths) / sizeof(both_paths[0]); k++) {
		const char *dir = case_dir("planted");
		char out[PATH_MAX], victim[PATH_MAX], made[PATH_MAX];
		char *names[PLANTED + 3];
		plant_namer p = { 0 };
		shs_file_hooks hooks = { .next_name = plant_name, .arg = &p,
					 .named_only = both_paths[k].named_only };

		put_file(join(victim, dir, "victim"), "victim\n", MODE_PRIVATE);
		plant(dir, PLANTED, names);
		write_ok(join(out, dir, "out.pb"), &hooks);
		assert_content(out, content);
		assert_content(victim, "victim\n");
		CU_ASSERT_EQUAL(access(join(made, dir, "made-by-attack"), F_OK), -1);
		/* the names tried: every planted one and one more */
		SHS_ASSERT_INT_EQ(p.next, PLANTED + 1);
		names[PLANTED] = "out.pb";
		names[PLANTED + 1] = "victim";
		names[PLANTED + 2] = NULL;
		assert_only(dir, (const char *const *)names);
		for (int n = 0; n < PLANTED; n++)
			free(names[n]);
	}
}

static void every_name_taken_fails_and_leaves_nothing(void)
{
	for (size_t k = 0; k < sizeof(both_paths) / sizeof(both_paths[0]); k++) {
		const char *dir = case_dir("taken");
		char out[PATH_MAX], victim[PATH_MAX];
		char *names[SHS_FILE_NAME_TRIES + 2];
		plant_namer p = { 0 };
		shs_file_hooks hooks = { .next_name = plant_name, .arg = &p,
					 .named_only = both_paths[k].named_only };

		put_file(join(victim, dir, "victim"), "victim\n", MODE_PRIVATE);
		plant(dir, SHS_FILE_NAME_TRIES, names);
		write_fails(join(out, dir, "out.pb"), &hooks, EEXIST, "cannot write: ");
		assert_content(victim, "victim\n");
		names[SHS_FILE_NAME_TRIES] = "victim";
		names[SHS_FILE_NAME_TRIES + 1] = NULL;
		assert_only(dir, (const char *const *)names);
		for (int n = 0; n < SHS_FILE_NAME_TRIES; n++)
			free(names[n]);
	}
}

static void a_fifo_is_written_in_place(void)
{
	const char *dir = case_dir("fifo");
	char fifo[PATH_MAX], got[sizeof(content)] = { 0 };
	int rfd;

	SHS_ASSERT_INT_EQ(mkfifo(join(fifo, dir, "pipe"), MODE_PRIVATE), 0);
	/* a reader first, or opening the FIFO to write would wait for one */
	rfd = open(fifo, O_RDONLY | O_NONBLOCK);
	CU_ASSERT_FATAL(rfd >= 0);
	write_ok(fifo, NULL);
	SHS_ASSERT_INT_EQ(read(rfd, got, sizeof(got) - 1), (ssize_t)strlen(content));
	close(rfd);
	SHS_ASSERT_STR_EQ(got, content);
	SHS_ASSERT_INT_EQ(type_of(fifo), S_IFIFO);
	assert_only(dir, (const char *[]){ "pipe", NULL });
}

/* Makes a character device dir/name numbered maj:mnr, its path in path[0..PATH_MAX); false
 * (with a note) when this test may not (not root, or no CAP_MKNOD). */
static bool make_device(const char *dir, const char *name, unsigned maj, unsigned mnr,
			char *path)
{
	if (geteuid() != 0) {
		printf("\n    note: not root: no device node made, its check is skipped ");
		return false;
	}
	if (mknod(join(path, dir, name), S_IFCHR | MODE_NEW, makedev(maj, mnr)) != 0) {
		printf("\n    note: mknod: %s: its check is skipped ", strerror(errno));
		return false;
	}
	return true;
}

/* Asserts path is still the character device maj:mnr. */
static void assert_device(const char *path, unsigned maj, unsigned mnr)
{
	struct stat st;

	SHS_ASSERT_INT_EQ(lstat(path, &st), 0);
	SHS_ASSERT_INT_EQ(st.st_mode & S_IFMT, S_IFCHR);
	SHS_ASSERT_INT_EQ(major(st.st_rdev), maj);
	SHS_ASSERT_INT_EQ(minor(st.st_rdev), mnr);
}

static void a_device_stays_a_device(void)
{
	const char *dir = case_dir("device");
	char dev[PATH_MAX], link[PATH_MAX];
	bool made = make_device(dir, "null", NULL_MAJOR, NULL_MINOR, dev);

	if (made) {
		write_ok(dev, NULL);
		assert_device(dev, NULL_MAJOR, NULL_MINOR);
		/* through a symlink too: the device is written, the link stays */
		SHS_ASSERT_INT_EQ(symlink("null", join(link, dir, "link")), 0);
		write_ok(link, NULL);
		SHS_ASSERT_INT_EQ(type_of(link), S_IFLNK);
		assert_device(dev, NULL_MAJOR, NULL_MINOR);
		assert_only(dir, (const char *[]){ "null", "link", NULL });
	}
	/* as root, only once a private node passed: a broken writer would replace /dev/null */
	if (made || geteuid() != 0) {
		write_ok("/dev/null", NULL);
		assert_device("/dev/null", NULL_MAJOR, NULL_MINOR);
	}
}

static void dev_full_fails_with_enospc(void)
{
	const char *dir = case_dir("full");
	char dev[PATH_MAX];
	bool made = make_device(dir, "full", FULL_MAJOR, FULL_MINOR, dev);

	if (made) {
		write_fails(dev, NULL, ENOSPC, "write failed: No space left on device");
		assert_device(dev, FULL_MAJOR, FULL_MINOR);
		assert_only(dir, (const char *[]){ "full", NULL });
	}
	/* as root, only once a private node passed: a broken writer would replace /dev/full */
	if (made || geteuid() != 0) {
		write_fails("/dev/full", NULL, ENOSPC, "write failed: No space left on device");
		assert_device("/dev/full", FULL_MAJOR, FULL_MINOR);
	}
}

static void a_directory_fails(void)
{
	const char *dir = case_dir("directory");
	char sub[PATH_MAX], link[PATH_MAX], slash[PATH_MAX];

	SHS_ASSERT_INT_EQ(mkdir(join(sub, dir, "sub"), MODE_DIR), 0);
	write_fails(sub, NULL, EISDIR, "is a directory");
	SHS_ASSERT_INT_EQ(symlink("sub", join(link, dir, "link")), 0);
	write_fails(link, NULL, EISDIR, "is a directory");
	write_fails(join(slash, dir, "new/"), NULL, EISDIR, "is a directory");
	SHS_ASSERT_INT_EQ(type_of(sub), S_IFDIR);
	SHS_ASSERT_INT_EQ(type_of(link), S_IFLNK);
	assert_only(dir, (const char *[]){ "sub", "link", NULL });
	assert_only(sub, (const char *[]){ NULL });
}

static void a_missing_folder_fails(void)
{
	for (size_t k = 0; k < sizeof(both_paths) / sizeof(both_paths[0]); k++) {
		const char *dir = case_dir("missing");
		char out[PATH_MAX];

		write_fails(join(out, dir, "no-such-folder/out.pb"), &both_paths[k], ENOENT,
			    "cannot write: No such file or directory");
		assert_only(dir, (const char *[]){ NULL });
	}
}

static void empty_content_makes_an_empty_file(void)
{
	const char *dir = case_dir("empty");
	char out[PATH_MAX], why[SHS_FILE_WHY_MAX];

	put_file(join(out, dir, "out.hlo"), "old\n", MODE_PRIVATE);
	SHS_ASSERT_INT_EQ(shs_file_write(out, "", 0, why, sizeof(why)), 0);
	assert_content(out, "");
	assert_only(dir, (const char *[]){ "out.hlo", NULL });
}

/* The named hook of a write that ends by sig once its temporary has a name. */
static void signal_once_named(void *arg, const char *tmp)
{
	(void)tmp;
	raise(*(const int *)arg);
}

/* A write ended by SIGINT, SIGTERM or SIGHUP once its temporary is named (both paths: the
 * unnamed temporary gets its name just before the rename) leaves no temporary and no output,
 * and the process ends by that signal (the write runs in a child). */
static void an_ending_signal_leaves_no_temporary(void)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };

	for (size_t s = 0; s < sizeof(sigs) / sizeof(sigs[0]); s++) {
		for (size_t k = 0; k < sizeof(both_paths) / sizeof(both_paths[0]); k++) {
			const char *dir = case_dir("signal");
			int sig = sigs[s], status = 0;
			shs_file_hooks hooks = { .named_only = both_paths[k].named_only,
						 .named = signal_once_named, .arg = &sig };
			char out[PATH_MAX], why[SHS_FILE_WHY_MAX];
			pid_t child;

			join(out, dir, "out.pb");
			fflush(NULL);
			child = fork();
			CU_ASSERT_TRUE_FATAL(child >= 0);
			if (child == 0) {
				shs_file_write_clean_on_signals();
				(void)!shs__file_write_hooked(out, content, strlen(content),
							      &hooks, why, sizeof(why));
				_exit(0); /* the signal should have ended it first */
			}
			SHS_ASSERT_INT_EQ(waitpid(child, &status, 0), child);
			CU_ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == sig);
			assert_only(dir, (const char *[]){ NULL });
		}
	}
}

CU_TestInfo write_tests[] = {
	{ "writes a new file (0666 less the umask)", writes_a_new_file },
	{ "replaces a file atomically and keeps its mode", replaces_a_file_and_keeps_its_mode },
	{ "a symlink stays a symlink, its target gets the content", a_symlink_stays_a_symlink },
	{ "a dangling symlink gets its target made", a_dangling_symlink_gets_its_target_made },
	{ "symlinks planted at temporary names are not followed", planted_symlinks_are_not_followed },
	{ "every temporary name taken: fails, leaves nothing", every_name_taken_fails_and_leaves_nothing },
	{ "a FIFO is written in place", a_fifo_is_written_in_place },
	{ "a device node stays a device", a_device_stays_a_device },
	{ "/dev/full fails with ENOSPC and stays a device", dev_full_fails_with_enospc },
	{ "a directory is refused", a_directory_fails },
	{ "a missing folder fails", a_missing_folder_fails },
	{ "empty content makes an empty file", empty_content_makes_an_empty_file },
	{ "SIGINT, SIGTERM, SIGHUP mid-write leave no temporary",
	  an_ending_signal_leaves_no_temporary },
	CU_TEST_INFO_NULL,
};
