/* Folders of plugins: one folder in name order, the built-in folder beside the library or the
 * program, and the default set (built-in, SHARDSEARCH_PLUGIN_PATH when asked, the host's own). */
#define _GNU_SOURCE /* dladdr1, struct link_map */

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host_internal.h"

enum {
	PATH_MAX_LEN = 4096, /* a plugin or folder path */
	GROW_MIN = 8         /* first capacity of the list of names */
};

static const char plugin_suffix[] = ".so";
static const char path_env[] = "SHARDSEARCH_PLUGIN_PATH";

static bool is_plugin_name(const char *name)
{
	size_t n = strlen(name), k = sizeof(plugin_suffix) - 1;

	return name[0] != '.' && n > k && !strcmp(name + n - k, plugin_suffix);
}

static int cmp_names(const void *x, const void *y)
{
	return strcmp(*(char *const *)x, *(char *const *)y);
}

static void free_names(char **names, size_t n)
{
	for (size_t k = 0; k < n; k++)
		free(names[k]);
	free(names);
}

/* The plugin file names of dir, sorted (caller frees with free_names). */
static int list_plugins(const char *dir, char ***out, size_t *n_out, shs_err *e)
{
	DIR *d = opendir(dir);
	struct dirent *ent;
	char **names = NULL, **grown;
	size_t n = 0, cap = 0;
	int rc = SHS_OK;

	if (!d)
		return shs_seterr(e, SHS_EIO, "%s: %s", dir, strerror(errno));
	while ((ent = readdir(d))) {
		if (!is_plugin_name(ent->d_name))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : GROW_MIN;
			grown = realloc(names, cap * sizeof(*names));
			if (!grown)
				goto out_nomem;
			names = grown;
		}
		names[n] = strdup(ent->d_name);
		if (!names[n])
			goto out_nomem;
		n++;
	}
	if (n)
		qsort(names, n, sizeof(*names), cmp_names);
	*out = names;
	*n_out = n;
	goto out_close;
out_nomem:
	free_names(names, n);
	rc = shs_seterr(e, SHS_ENOMEM, "%s: out of memory", dir);
out_close:
	closedir(d);
	return rc;
}

int shs_host_load_dir(shs_host *h, const char *dir, shs_err *e)
{
	char **names = NULL, path[PATH_MAX_LEN];
	size_t n = 0;
	int loaded = 0, rc;

	if (!h || !dir)
		return shs_seterr(e, SHS_EINVAL, "shs_host_load_dir: NULL host or folder");
	rc = list_plugins(dir, &names, &n, e);
	if (rc != SHS_OK)
		return rc;
	for (size_t k = 0; k < n; k++) {
		shs_err why = { 0 };

		if (snprintf(path, sizeof(path), "%s/%s", dir, names[k]) >= (int)sizeof(path)) {
			shs__host_warn(h, "%s/%s: path too long", dir, names[k]);
			continue;
		}
		rc = shs_host_load(h, path, &why);
		if (rc == SHS_ENOMEM) {
			loaded = shs_seterr(e, rc, "%s", why.msg);
			break;
		}
		if (rc == SHS_OK)
			loaded++;
		else
			shs__host_warn(h, "%s", why.msg);
	}
	free_names(names, n);
	return loaded;
}

/* ---- The default folders ---- */

static bool is_dir(const char *path)
{
	struct stat st;

	return !stat(path, &st) && S_ISDIR(st.st_mode);
}

bool shs__host_builtin_dir(const char *object_path, char *out, size_t n)
{
	/* a build tree (strategies beside the library or the command), an installed library
	 * (PREFIX/lib/shardsearch/plugins beside it), an installed command (PREFIX/bin) */
	static const char *const rel[] = { "/strategies", "/shardsearch/plugins",
					   "/../lib/shardsearch/plugins" };
	const char *slash;
	int len;

	if (!object_path || !n)
		return false;
	slash = strrchr(object_path, '/');
	len = slash ? (int)(slash - object_path) : 1;
	if (!slash)
		object_path = ".";
	for (size_t k = 0; k < sizeof(rel) / sizeof(rel[0]); k++) {
		int w = snprintf(out, n, "%.*s%s", len, object_path, rel[k]);

		if (w > 0 && (size_t)w < n && is_dir(out))
			return true;
	}
	out[0] = '\0';
	return false;
}

/* The file this code was loaded from: libshardsearch.so, or the executable it is linked into. */
static bool own_object(char *out, size_t n)
{
	int (*fn)(shs_host *, const char *const *, bool, shs_err *) = shs_host_load_default;
	void *self, *extra = NULL;
	Dl_info info;
	struct link_map *map;
	ssize_t len;

	out[0] = '\0';
	memcpy(&self, &fn, sizeof(self));
	if (!dladdr1(self, &info, &extra, RTLD_DL_LINKMAP) || !info.dli_fname)
		return false;
	map = extra;
	if (map && map->l_name && map->l_name[0]) {
		snprintf(out, n, "%s", info.dli_fname);
		return true;
	}
	len = readlink("/proc/self/exe", out, n - 1);
	if (len <= 0) {
		out[0] = '\0';
		return false;
	}
	out[len] = '\0';
	return true;
}

/* Loads dir when it is readable; a folder that cannot be read is a warning. */
static int load_optional(shs_host *h, const char *dir, int *loaded, shs_err *e)
{
	shs_err why = { 0 };
	int rc = shs_host_load_dir(h, dir, &why);

	if (rc == SHS_ENOMEM)
		return shs_seterr(e, rc, "%s", why.msg);
	if (rc < 0) {
		shs__host_warn(h, "%s", why.msg);
		return SHS_OK;
	}
	*loaded += rc;
	return SHS_OK;
}

/* Whether folder dir of the environment may give plugins: an absolute path (not one that means
 * another folder in each working directory) to a folder others cannot write (where no one
 * else can plant a plugin); a warning says why not. */
static bool trusted_dir(const shs_host *h, const char *dir)
{
	struct stat st;

	if (dir[0] != '/') {
		shs__host_warn(h, "%s: %s: not an absolute path; skipped", path_env, dir);
		return false;
	}
	if (stat(dir, &st) || !S_ISDIR(st.st_mode))
		return true; /* the load says it cannot be read */
	if (st.st_mode & S_IWOTH) {
		shs__host_warn(h, "%s: %s: writable by others; skipped", path_env, dir);
		return false;
	}
	return true;
}

/* Loads each trusted folder of the colon-separated list (empty entries skipped). */
static int load_path_list(shs_host *h, const char *list, int *loaded, shs_err *e)
{
	char dir[PATH_MAX_LEN];

	while (*list) {
		size_t len = strcspn(list, ":");
		int rc;

		if (len && len < sizeof(dir)) {
			memcpy(dir, list, len);
			dir[len] = '\0';
			rc = trusted_dir(h, dir) ? load_optional(h, dir, loaded, e) : SHS_OK;
			if (rc != SHS_OK)
				return rc;
		} else if (len) {
			shs__host_warn(h, "%s: a folder path longer than %d bytes", path_env,
				       PATH_MAX_LEN);
		}
		list += len + (list[len] == ':');
	}
	return SHS_OK;
}

int shs_host_load_default(shs_host *h, const char *const *extra_dirs, bool from_env,
			  shs_err *e)
{
	char self[PATH_MAX_LEN], dir[PATH_MAX_LEN];
	const char *env;
	int loaded = 0, rc;

	if (!h)
		return shs_seterr(e, SHS_EINVAL, "shs_host_load_default: NULL host");
	if (own_object(self, sizeof(self)) && shs__host_builtin_dir(self, dir, sizeof(dir))) {
		rc = load_optional(h, dir, &loaded, e);
		if (rc != SHS_OK)
			return rc;
	} else {
		shs__host_warn(h, "no built-in strategies folder found beside %s",
			       self[0] ? self : "this program");
	}
	env = from_env ? getenv(path_env) : NULL;
	if (env) {
		rc = load_path_list(h, env, &loaded, e);
		if (rc != SHS_OK)
			return rc;
	}
	for (size_t k = 0; extra_dirs && extra_dirs[k]; k++) {
		rc = shs_host_load_dir(h, extra_dirs[k], e);
		if (rc < 0)
			return rc;
		loaded += rc;
	}
	return loaded;
}
