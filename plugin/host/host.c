/* The plugin host: loads a strategy plugin with dlopen after checking its ABI, keeps its
 * strategies, unloads them; the instructions already warned about. */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host_internal.h"

/* Each field of the sizes word fits its bits (or the fields would overlap): 8 for the limits,
 * shs_pdim, shs_pshape, shs_plist and the pointer, 16 for shs_pspec. */
_Static_assert(SHS_PLUGIN_MAX_RANK < 256 && SHS_PLUGIN_MAX_AXES < 256 &&
	       sizeof(shs_pdim) < 256 && sizeof(shs_pspec) < 65536 && sizeof(shs_pshape) < 256 &&
	       sizeof(shs_plist) < 256 && sizeof(void *) < 256, "a sizes word field overflows");

enum {
	WARN_MAX = 2048,       /* one warning's text */
	SEEN_MIN_CAP = 64,     /* first capacity of the warned-about set */
	GROW_MIN = 8           /* first capacity of a growing array */
};

shs_host *shs_host_new(shs_warn_fn warn, void *user)
{
	shs_host *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	if (pthread_mutex_init(&h->lock, NULL)) {
		free(h);
		return NULL;
	}
	if (pthread_mutex_init(&h->watch_lock, NULL)) {
		pthread_mutex_destroy(&h->lock);
		free(h);
		return NULL;
	}
	h->warn = warn;
	h->user = user;
	h->reg.h = h;
	return h;
}

/* Lets every strategy registered from index from on release its user data (newest first),
 * then forgets them. */
static void destroy_strategies(shs_host *h, uint32_t from)
{
	for (uint32_t k = h->n_strats; k-- > from;) {
		const shs_host_strat *st = &h->strats[k];
		shs_host_call *call;

		if (!st->s.destroy)
			continue;
		call = shs__host_enter(h, st->plugin < h->n_plugins ? h->plugins[st->plugin].path :
				       h->reg.path, st->s.name, "destroy", NULL);
		st->s.destroy(st->s.user);
		shs__host_leave(call);
	}
	h->n_strats = from;
}

void shs_host_free(shs_host *h)
{
	if (!h)
		return;
	destroy_strategies(h, 0);
	shs__host_unwatch(h);
	free(h->strats);
	free(h->seen);
	for (uint32_t k = h->n_plugins; k-- > 0;) {
		dlclose(h->plugins[k].dl);
		free(h->plugins[k].path);
	}
	free(h->plugins);
	pthread_mutex_destroy(&h->lock);
	pthread_mutex_destroy(&h->watch_lock);
	free(h);
}

void shs__host_warn(const shs_host *h, const char *fmt, ...)
{
	char msg[WARN_MAX];
	va_list ap;

	if (!h || !h->warn)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* the lock is not part of the host's value: warning from a const host is fine */
	pthread_mutex_lock((pthread_mutex_t *)&h->lock);
	h->warn(h->user, msg);
	pthread_mutex_unlock((pthread_mutex_t *)&h->lock);
}

uint32_t shs_host_plugin_count(const shs_host *h)
{
	return h ? h->n_plugins : 0;
}

const char *shs_host_plugin_path(const shs_host *h, uint32_t k)
{
	return h && k < h->n_plugins ? h->plugins[k].path : NULL;
}

/* ---- The set of instructions already warned about ---- */

static uint32_t seen_hash(const shs_host_seen *s)
{
	uint64_t x = (uint64_t)(uintptr_t)s->m * 0x9e3779b97f4a7c15u;

	x ^= (uint64_t)(uintptr_t)s->c * 0xc2b2ae3d27d4eb4fu;
	x ^= (uint64_t)(uintptr_t)s->i * 0x165667b19e3779f9u;
	x ^= (uint64_t)(unsigned)s->why;
	x ^= x >> 29;
	return (uint32_t)(x ^ (x >> 32));
}

static bool seen_same(const shs_host_seen *x, const shs_host_seen *y)
{
	return x->m == y->m && x->c == y->c && x->i == y->i && x->why == y->why;
}

/* The slot of key in tab[0..cap): where it is, or the empty slot where it goes. */
static shs_host_seen *seen_slot(shs_host_seen *tab, uint32_t cap, const shs_host_seen *key)
{
	uint32_t k = seen_hash(key) & (cap - 1);

	while (tab[k].i && !seen_same(&tab[k], key))
		k = (k + 1) & (cap - 1);
	return &tab[k];
}

static bool seen_grow(shs_host *h)
{
	uint32_t cap = h->cap_seen ? h->cap_seen * 2 : SEEN_MIN_CAP;
	shs_host_seen *tab;

	if (cap < h->cap_seen)
		return false;
	tab = calloc(cap, sizeof(*tab));
	if (!tab)
		return false;
	for (uint32_t k = 0; k < h->cap_seen; k++)
		if (h->seen[k].i)
			*seen_slot(tab, cap, &h->seen[k]) = h->seen[k];
	free(h->seen);
	h->seen = tab;
	h->cap_seen = cap;
	return true;
}

bool shs__host_first_time(shs_host *h, const void *m, const void *c, const void *i, int why)
{
	shs_host_seen key = { m, c, i, why }, *slot;
	bool first = false;

	if (!i)
		return true;
	pthread_mutex_lock(&h->lock);
	if ((h->n_seen + 1) * 2 <= h->cap_seen || seen_grow(h)) {
		slot = seen_slot(h->seen, h->cap_seen, &key);
		first = !slot->i;
		if (first) {
			*slot = key;
			h->n_seen++;
		}
	}
	pthread_mutex_unlock(&h->lock);
	return first;
}

/* ---- Loading one plugin ---- */

static int reserve_plugin(shs_host *h, shs_err *e)
{
	shs_host_plugin *p;
	uint32_t cap;

	if (h->n_plugins < h->cap_plugins)
		return SHS_OK;
	cap = h->cap_plugins ? h->cap_plugins * 2 : GROW_MIN;
	p = realloc(h->plugins, cap * sizeof(*p));
	if (!p)
		return shs_seterr(e, SHS_ENOMEM, "plugins: out of memory");
	h->plugins = p;
	h->cap_plugins = cap;
	return SHS_OK;
}

/* The path of the loaded plugin with handle dl, or NULL. */
static const char *loaded_as(const shs_host *h, const void *dl)
{
	for (uint32_t k = 0; k < h->n_plugins; k++)
		if (h->plugins[k].dl == dl)
			return h->plugins[k].path;
	return NULL;
}

/* The address of a symbol of dl as the type the caller wants (object or function). */
static bool find_symbol(void *dl, const char *name, void *out, size_t size)
{
	void *sym;

	dlerror();
	sym = dlsym(dl, name);
	if (!sym)
		return false;
	memcpy(out, &sym, size);
	return true;
}

/* What differs between sizes words a (the plugin's) and b (the host's), into buf. */
static void sizes_diff(uint64_t a, uint64_t b, char *buf, size_t n)
{
	static const struct { const char *what; unsigned shift, bits; } fields[] = {
		{ "max rank", 0, 8 }, { "max axes", 8, 8 }, { "sizeof(shs_pdim)", 16, 8 },
		{ "sizeof(shs_pspec)", 24, 16 }, { "sizeof(shs_pshape)", 40, 8 },
		{ "sizeof(shs_plist)", 48, 8 }, { "pointer bytes", 56, 8 },
	};
	size_t used = 0;

	buf[0] = '\0';
	for (size_t k = 0; k < sizeof(fields) / sizeof(fields[0]) && used < n; k++) {
		uint64_t mask = (1ull << fields[k].bits) - 1;
		uint64_t x = a >> fields[k].shift & mask, y = b >> fields[k].shift & mask;
		if (x != y)
			used += (size_t)snprintf(buf + used, n - used, "%s%s %llu, host %llu",
						 used ? "; " : "", fields[k].what,
						 (unsigned long long)x, (unsigned long long)y);
	}
}

/* Whether the plugin file at path is ours and speaks this host's ABI version with its sizes
 * word: read from the file, before dlopen runs its constructors or anything else of it. */
static int check_abi(const char *path, shs_err *e)
{
	shs__host_abi abi;
	char diff[SHS_ERRMSG_MAX / 2];
	int rc = shs__host_elf_abi(path, &abi, e);

	if (rc != SHS_OK)
		return rc;
	if (!abi.has_init)
		return shs_seterr(e, SHS_EINVAL,
				  "%s: no shs_plugin_init (not a shardsearch plugin)", path);
	if (!abi.has_version)
		return shs_seterr(e, SHS_EINVAL,
				  "%s: no shs_plugin_abi_version (not a shardsearch plugin)", path);
	if (abi.version != SHS_PLUGIN_ABI_VERSION)
		return shs_seterr(e, SHS_EINVAL, "%s: built for plugin ABI %u, this host speaks %u",
				  path, abi.version, SHS_PLUGIN_ABI_VERSION);
	if (!abi.has_sizes)
		return shs_seterr(e, SHS_EINVAL, "%s: no shs_plugin_abi_sizes (build it with "
				  "SHS_PLUGIN_DEFINE of this shardsearch_plugin.h)", path);
	if (abi.sizes != SHS_PLUGIN_SIZES) {
		sizes_diff(abi.sizes, SHS_PLUGIN_SIZES, diff, sizeof(diff));
		return shs_seterr(e, SHS_EINVAL, "%s: built with other limits or struct sizes than "
				  "this host (sizes word 0x%016llx, host 0x%016llx: %s)", path,
				  (unsigned long long)abi.sizes,
				  (unsigned long long)SHS_PLUGIN_SIZES, diff);
	}
	return SHS_OK;
}

/* Runs dl's init; on failure removes what it registered. */
static int init_plugin(shs_host *h, const char *path, void *dl, shs_err *e)
{
	shs_plugin_init_fn init = NULL;
	uint32_t before = h->n_strats;
	shs_host_call *call;
	int rc;

	if (!find_symbol(dl, "shs_plugin_init", &init, sizeof(init)))
		return shs_seterr(e, SHS_EINVAL,
				  "%s: no shs_plugin_init (not a shardsearch plugin)", path);
	h->reg = (struct shs_registry){ .h = h, .path = path, .plugin = h->n_plugins,
					.first = h->n_strats, .open = true };
	call = shs__host_enter(h, path, NULL, "init", NULL);
	rc = init(&h->reg, shs__host_api());
	shs__host_leave(call);
	h->reg.open = false;
	if (rc == 0)
		return SHS_OK;
	destroy_strategies(h, before);
	if (h->reg.has_err)
		return shs_seterr(e, SHS_EINVAL, "%s: init failed: %s", path, h->reg.err);
	return shs_seterr(e, SHS_EINVAL, "%s: init failed (returned %d, no reason given)", path,
			  rc);
}

int shs_host_load(shs_host *h, const char *path, shs_err *e)
{
	const char *why, *other;
	shs_host_call *call;
	char *copy;
	void *dl;
	int rc;

	if (!h || !path)
		return shs_seterr(e, SHS_EINVAL, "shs_host_load: NULL host or path");
	rc = reserve_plugin(h, e);
	if (rc == SHS_OK)
		rc = check_abi(path, e);
	if (rc != SHS_OK)
		return rc;
	shs__host_guard_install();
	dlerror();
	call = shs__host_enter(h, path, NULL, "constructors", NULL);
	dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	shs__host_leave(call);
	if (!dl) {
		why = dlerror();
		why = why ? why : "cannot be loaded";
		if (!strncmp(why, path, strlen(path)))
			return shs_seterr(e, SHS_EIO, "%s", why);
		return shs_seterr(e, SHS_EIO, "%s: %s", path, why);
	}
	other = loaded_as(h, dl);
	if (other) {
		rc = shs_seterr(e, SHS_EINVAL, "%s: already loaded (as %s)", path, other);
		goto out_close;
	}
	copy = strdup(path);
	if (!copy) {
		rc = shs_seterr(e, SHS_ENOMEM, "%s: out of memory", path);
		goto out_close;
	}
	rc = init_plugin(h, path, dl, e);
	if (rc != SHS_OK)
		goto out_free;
	h->plugins[h->n_plugins++] = (shs_host_plugin){ .path = copy, .dl = dl };
	return SHS_OK;
out_free:
	free(copy);
out_close:
	dlclose(dl);
	return rc;
}
