/* The search's jobs on threads: each thread takes the next mesh, runs its job, and whoever
 * finishes the job the merge waits for merges every finished job in mesh order, so the result
 * does not depend on the number of threads or on which finishes first. */
#include <pthread.h>
#include <stdlib.h>

#include "search_internal.h"

enum { AHEAD_PER_THREAD = 4 };

typedef struct pool {
	const shs__searcher *s;
	const char (*meshes)[SHS_SEARCH_TEXT];
	uint32_t n, window;
	bool pinned;
	shs__search_merge_fn merge;
	shs__search_stop_fn stop;
	void *user;
	pthread_mutex_t lock;       /* guards everything below, and the merge */
	pthread_cond_t moved;       /* the merge moved on, or the pool halted */
	uint32_t next, merged;      /* the next mesh to start, the next to merge */
	shs__search_job **done;     /* per mesh: its finished job until merged (owned) */
	bool halt;                  /* start no more jobs */
	int rc;
	shs_err e;
} pool;

/* Merges the finished jobs from p->merged on, in order (with the lock held). */
static void merge_ready(pool *p)
{
	while (p->merged < p->n && p->done[p->merged]) {
		shs__search_job *j = p->done[p->merged];
		int rc = p->rc == SHS_OK ? p->merge(p->user, p->merged, j) : p->rc;
		if (rc != SHS_OK && p->rc == SHS_OK) {
			p->rc = rc;
			p->halt = true;
		}
		shs__search_job_free(j);
		free(j);
		p->done[p->merged++] = NULL;
	}
	pthread_cond_broadcast(&p->moved);
}

/* Takes the next mesh to run (with the lock held): its index, or UINT32_MAX when there is none
 * or the pool halts. Waits while the merge lags too far behind. */
static uint32_t claim(pool *p)
{
	while (!p->halt && p->next < p->n && p->next >= p->merged + p->window)
		pthread_cond_wait(&p->moved, &p->lock);
	if (!p->halt && p->next < p->n && p->stop && p->stop(p->user))
		p->halt = true;
	if (p->halt || p->next >= p->n) {
		pthread_cond_broadcast(&p->moved);
		return UINT32_MAX;
	}
	return p->next++;
}

static void *worker(void *arg)
{
	pool *p = arg;
	uint32_t k;

	pthread_mutex_lock(&p->lock);
	while ((k = claim(p)) != UINT32_MAX) {
		shs__search_job *j;
		pthread_mutex_unlock(&p->lock);
		j = calloc(1, sizeof(*j));
		if (j)
			shs__search_job_run(p->s, p->meshes[k], p->pinned, j);
		pthread_mutex_lock(&p->lock);
		if (!j) {
			if (p->rc == SHS_OK)
				p->rc = shs_seterr(&p->e, SHS_ENOMEM, "search: out of memory");
			p->halt = true;
			pthread_cond_broadcast(&p->moved);
			break;
		}
		p->done[k] = j;
		merge_ready(p);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

int shs__search_pool(const shs__searcher *s, const char (*meshes)[SHS_SEARCH_TEXT], uint32_t n,
		     bool pinned, uint32_t threads, shs__search_merge_fn merge,
		     shs__search_stop_fn stop, void *user, shs_err *e)
{
	pool p = { .s = s, .meshes = meshes, .n = n, .pinned = pinned, .merge = merge,
		   .stop = stop, .user = user };
	pthread_t *tid = NULL;
	uint32_t started = 0;
	int rc = SHS_OK;

	threads = threads < 1 ? 1 : threads > SHS_MAX_THREADS ? SHS_MAX_THREADS : threads;
	p.window = AHEAD_PER_THREAD * threads;
	p.done = calloc(n + 1, sizeof(*p.done));
	if (threads > 1)
		tid = calloc(threads, sizeof(*tid));
	if (!p.done || (threads > 1 && !tid))
		rc = shs_seterr(e, SHS_ENOMEM, "search: out of memory");
	if (rc == SHS_OK && pthread_mutex_init(&p.lock, NULL))
		rc = shs_seterr(e, SHS_ENOMEM, "search: cannot make a lock");
	if (rc == SHS_OK && pthread_cond_init(&p.moved, NULL)) {
		pthread_mutex_destroy(&p.lock);
		rc = shs_seterr(e, SHS_ENOMEM, "search: cannot make a condition variable");
	}
	if (rc == SHS_OK) {
		/* the calling thread works too; threads that cannot start are done without */
		for (uint32_t t = 1; t < threads; t++)
			if (!pthread_create(&tid[started], NULL, worker, &p))
				started++;
		worker(&p);
		for (uint32_t t = 0; t < started; t++)
			pthread_join(tid[t], NULL);
		/* jobs finished after a failure were never merged */
		for (uint32_t k = 0; k < n; k++) {
			shs__search_job_free(p.done[k]);
			free(p.done[k]);
		}
		pthread_cond_destroy(&p.moved);
		pthread_mutex_destroy(&p.lock);
		rc = p.rc;
		if (rc != SHS_OK && p.e.code)
			*e = p.e;
	}
	free(p.done);
	free(tid);
	return rc;
}
