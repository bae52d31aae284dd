/* Calls into plugin code, watched: a crash or an exit() inside one names the plugin, and one
 * still running past the host's deadline ends the process naming it. */
#define _POSIX_C_SOURCE 200809L /* sigaction, siginfo_t, pthread_condattr_setclock */

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "host_internal.h"

/* Why a crash handler rather than a forked probe: a plugin may crash on the thousandth
 * instruction as well as on the first, and a compiler that loaded the pass cannot be forked
 * safely (its threads). The handler names the plugin, puts back the handler it replaced and
 * lets the signal go on to it, so the process ends as it would have (or its owner's handler
 * runs). */

enum {
	POLL_NS = 100000000,        /* how often the watchdog looks, past the deadline */
	MSG_MAX = 1024              /* one message of the watchdog */
};

/* The call this thread is in, for the crash and exit handlers (initial-exec: reading it from
 * a signal handler allocates nothing). */
static _Thread_local shs_host_call tls_call __attribute__((tls_model("initial-exec")));

static const int guarded[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT };
static const char *const guarded_names[] = { "SIGSEGV", "SIGBUS", "SIGFPE", "SIGILL",
					     "SIGABRT" };
#define N_GUARDED (sizeof(guarded) / sizeof(guarded[0]))
static struct sigaction replaced[N_GUARDED];
static pthread_once_t installed = PTHREAD_ONCE_INIT;

static int64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* Writes n bytes of s to standard error at once (write(2) alone is async-signal-safe). */
static void write_all(const char *s, size_t n)
{
	while (n) {
		ssize_t w = write(STDERR_FILENO, s, n);
		if (w <= 0 && errno != EINTR)
			return;
		if (w > 0) {
			s += w;
			n -= (size_t)w;
		}
	}
}

static void say(const char *s)
{
	write_all(s, s ? strlen(s) : 0);
}

/* A handler's message, put together in full before one write, so that two threads' messages
 * (two plugin calls crashing at once) come out whole rather than interleaved piece by piece.
 * A path is at most PATH_MAX; what does not fit is cut, the line still ended. */
typedef struct note {
	char b[2 * 4096];
	size_t n;
} note;

static void add(note *m, const char *s)
{
	while (s && *s && m->n < sizeof(m->b))
		m->b[m->n++] = *s++;
}

/* "shardsearch: plugin PATH (strategy NAME) in its WHAT of INSTR" of call c, then tail, on
 * standard error in one write. */
static void say_call(const shs_host_call *c, const char *tail, const char *tail2,
		     const char *tail3)
{
	note m = { .n = 0 };

	add(&m, "shardsearch: plugin ");
	add(&m, c->path);
	if (c->strategy) {
		add(&m, " (strategy ");
		add(&m, c->strategy);
		add(&m, ")");
	}
	add(&m, " in its ");
	add(&m, c->what);
	if (c->instr) {
		add(&m, " of ");
		add(&m, c->instr);
	}
	add(&m, tail);
	add(&m, tail2);
	add(&m, tail3);
	if (m.n == sizeof(m.b))
		m.b[m.n - 1] = '\n';
	write_all(m.b, m.n);
}

static void on_crash(int sig, siginfo_t *si, void *ctx)
{
	size_t k = 0;

	(void)ctx;
	while (k < N_GUARDED - 1 && guarded[k] != sig)
		k++;
	if (tls_call.path) {
		say_call(&tls_call, ": crashed (", guarded_names[k], ")\n");
		tls_call.path = NULL;
	}
	/* the handler this one replaced takes the signal: a fault repeats when this returns, a
	 * signal sent (kill, raise, abort) is sent again */
	sigaction(sig, &replaced[k], NULL);
	if (si->si_code <= 0)
		raise(sig);
}

/* exit() inside a plugin's call: the run did not finish, whatever status the plugin gave. */
static void on_exit_check(void)
{
	if (!tls_call.path)
		return;
	say_call(&tls_call, ": called exit(); the run did not finish\n", NULL, NULL);
	_exit(SHS_HOST_DEATH_STATUS);
}

static void install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_crash;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	for (size_t k = 0; k < N_GUARDED; k++)
		sigaction(guarded[k], &sa, &replaced[k]);
	atexit(on_exit_check);
}

void shs__host_guard_install(void)
{
	pthread_once(&installed, install);
}

/* ---- Entering and leaving a call ---- */

shs_host_call *shs__host_enter(const shs_host *h, const char *path, const char *strategy,
			       const char *what, const char *instr)
{
	shs_host_call *slots = (shs_host_call *)h->calls; /* the slots are not h's value */
	shs_host_call *slot = NULL;

	tls_call = (shs_host_call){ .path = path, .strategy = strategy, .what = what,
				    .instr = instr };
	if (!h->watching)
		return NULL;
	for (uint32_t k = 0; k < SHS_HOST_CALL_SLOTS && !slot; k++) {
		const char *none = NULL;
		if (__atomic_compare_exchange_n(&slots[k].path, &none, path, false,
						__ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
			slot = &slots[k];
	}
	if (!slot) /* more calls at once than slots: this one goes unwatched */
		return NULL;
	slot->strategy = strategy;
	slot->what = what;
	slot->instr = instr;
	__atomic_store_n(&slot->start_ns, now_ns(), __ATOMIC_RELEASE);
	return slot;
}

void shs__host_leave(shs_host_call *slot)
{
	tls_call.path = NULL;
	if (!slot)
		return;
	__atomic_store_n(&slot->start_ns, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&slot->path, NULL, __ATOMIC_RELEASE);
}

/* ---- The watchdog ---- */

/* A watched call that started more than the grace ago, or NULL. */
static const shs_host_call *overdue(const shs_host *h, int64_t now)
{
	for (uint32_t k = 0; k < SHS_HOST_CALL_SLOTS; k++) {
		int64_t start = __atomic_load_n(&h->calls[k].start_ns, __ATOMIC_ACQUIRE);
		if (start && now - start > (int64_t)(SHS_HOST_GRACE_S * 1e9))
			return &h->calls[k];
	}
	return NULL;
}

/* Names the overdue call c and ends the process: the thread it holds, and whatever the plugin
 * locked, cannot be taken back. */
static void end_overdue(const shs_host *h, const shs_host_call *c, int64_t now)
{
	char msg[MSG_MAX];
	int64_t start = __atomic_load_n(&c->start_ns, __ATOMIC_ACQUIRE);

	snprintf(msg, sizeof(msg), "shardsearch: plugin %s%s%s%s in its %s%s%s: has not "
		 "returned for %.1f s, past the time budget of %g s; ending the process\n",
		 c->path ? c->path : "?", c->strategy ? " (strategy " : "",
		 c->strategy ? c->strategy : "", c->strategy ? ")" : "", c->what,
		 c->instr ? " of " : "", c->instr ? c->instr : "", (double)(now - start) / 1e9,
		 h->budget_s);
	say(msg);
	_exit(SHS_HOST_DEATH_STATUS);
}

static struct timespec at(int64_t ns)
{
	return (struct timespec){ .tv_sec = ns / 1000000000, .tv_nsec = ns % 1000000000 };
}

static void *watch(void *arg)
{
	shs_host *h = arg;

	pthread_mutex_lock(&h->watch_lock);
	while (!h->watch_stop) {
		int64_t now = now_ns();
		const shs_host_call *c;
		struct timespec until;

		if (now >= h->deadline_ns && (c = overdue(h, now)))
			end_overdue(h, c, now);
		until = at(now < h->deadline_ns ? h->deadline_ns : now + POLL_NS);
		pthread_cond_timedwait(&h->watch_wake, &h->watch_lock, &until);
	}
	pthread_mutex_unlock(&h->watch_lock);
	return NULL;
}

int shs_host_watch(shs_host *h, double budget_s, shs_err *e)
{
	pthread_condattr_t attr;
	int rc;

	if (!h || !(budget_s > 0))
		return shs_seterr(e, SHS_EINVAL, "shs_host_watch: NULL host or no budget");
	if (h->watching)
		return shs_seterr(e, SHS_EINVAL, "shs_host_watch: already watched");
	if (budget_s > SHS_HOST_BUDGET_MAX_S)
		budget_s = SHS_HOST_BUDGET_MAX_S;
	if (pthread_condattr_init(&attr))
		return shs_seterr(e, SHS_ENOMEM, "watchdog: out of memory");
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	rc = pthread_cond_init(&h->watch_wake, &attr);
	pthread_condattr_destroy(&attr);
	if (rc)
		return shs_seterr(e, SHS_ENOMEM, "watchdog: out of memory");
	h->budget_s = budget_s;
	h->deadline_ns = now_ns() + (int64_t)(budget_s * 1e9);
	h->watch_stop = false;
	h->watching = true;
	if (pthread_create(&h->watchdog, NULL, watch, h)) {
		h->watching = false;
		pthread_cond_destroy(&h->watch_wake);
		return shs_seterr(e, SHS_ENOMEM, "watchdog: cannot start a thread");
	}
	return SHS_OK;
}

void shs__host_unwatch(shs_host *h)
{
	if (!h->watching)
		return;
	pthread_mutex_lock(&h->watch_lock);
	h->watch_stop = true;
	pthread_cond_signal(&h->watch_wake);
	pthread_mutex_unlock(&h->watch_lock);
	pthread_join(h->watchdog, NULL);
	pthread_cond_destroy(&h->watch_wake);
	h->watching = false;
}
