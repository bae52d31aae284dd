/* Shared helpers for the CUnit suites. */
#include "test_util.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

const char *shs_test_hlo_path(const char *name)
{
	static char path[4096];

	snprintf(path, sizeof(path), "%s/%s", SHS_HLO_DIR, name);
	return path;
}

const char *shs_test_tmp_path(const char *name)
{
	static char path[4096];

	mkdir(SHS_TEST_TMP, 0777);
	snprintf(path, sizeof(path), "%s/%s", SHS_TEST_TMP, name);
	return path;
}

const char *shs_test_write_tmp(const char *name, const char *text)
{
	const char *path = shs_test_tmp_path(name);
	FILE *f = fopen(path, "w");

	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs(text, f);
	fclose(f);
	return path;
}

uint8_t *shs_test_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *data = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET))
		goto out;
	data = malloc((size_t)n + 1);
	if (data && fread(data, 1, (size_t)n, f) != (size_t)n) {
		free(data);
		data = NULL;
		goto out;
	}
	if (data) {
		data[n] = 0;
		*len = (size_t)n;
	}
out:
	fclose(f);
	return data;
}

shs_module *shs_test_parse(const char *text)
{
	shs_module *m = NULL;
	shs_err e = { 0 };
	int rc = shs_text_load(text, strlen(text), "inline.hlo", &m, &e);

	if (rc != SHS_OK)
		fprintf(stderr, "\n  parse failed: %s\n", e.msg);
	CU_ASSERT_EQUAL_FATAL(rc, SHS_OK);
	return m;
}

shs_module *shs_test_copy(const shs_module *m)
{
	shs_buf b = { 0 };
	shs_module *copy;

	shs_text_print(&b, m, NULL);
	copy = shs_test_parse(b.data);
	shs_buf_free(&b);
	return copy;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void add_dir(const char *dir, char ***list, size_t *n, size_t *cap)
{
	DIR *d = opendir(dir);
	struct dirent *ent;

	if (!d)
		return;
	while ((ent = readdir(d))) {
		size_t l = strlen(ent->d_name);
		char *p;

		if (l < 5 || strcmp(ent->d_name + l - 4, ".hlo"))
			continue;
		if (*n == *cap) {
			*cap = *cap ? *cap * 2 : 64;
			*list = realloc(*list, *cap * sizeof(**list));
		}
		p = malloc(strlen(dir) + l + 2);
		sprintf(p, "%s/%s", dir, ent->d_name);
		(*list)[(*n)++] = p;
	}
	closedir(d);
}

char **shs_test_corpus(size_t *n)
{
	char **list = NULL;
	size_t cap = 0;
	char sub[4096];

	*n = 0;
	add_dir(SHS_HLO_DIR, &list, n, &cap);
	snprintf(sub, sizeof(sub), "%s/xla-fuzz", SHS_HLO_DIR);
	add_dir(sub, &list, n, &cap);
	if (*n)
		qsort(list, *n, sizeof(*list), cmp_str);
	return list;
}

shs_gen_config shs_test_preset(const char *name)
{
	shs_gen_config c;
	shs_err e = { 0 };

	memset(&c, 0, sizeof(c));
	SHS_ASSERT_OK(shs_gen_preset(name, &c, &e), &e);
	return c;
}

shs_module *shs_test_generate(const char *preset, const char *const *set)
{
	shs_gen_config g = shs_test_preset(preset);
	shs_module *m = NULL;
	shs_err e = { 0 };

	for (; set && set[0]; set += 2)
		SHS_ASSERT_OK(shs_gen_config_set(&g, set[0], set[1], &e), &e);
	SHS_ASSERT_OK(shs_gen_module(&g, &m, NULL, &e), &e);
	return m;
}

shs_host *shs_test_host(void)
{
	shs_host *h = shs_host_new(NULL, NULL);
	shs_err e = { 0 };

	CU_ASSERT_PTR_NOT_NULL_FATAL(h);
	CU_ASSERT_TRUE_FATAL(shs_host_load_dir(h, SHS_STRATEGY_DIR, &e) > 0);
	return h;
}

void shs_test_book_catalog(shs_hw_catalog *c)
{
	shs_hw_catalog_builtin(c);
	for (uint32_t k = 0; k < c->n; k++) {
		shs_hardware *h = &c->hw[k];
		if (!strcmp(h->name, "v5p"))
			h->hbm_bytes = 96e9; /* the book's table (Google states 95 GiB) */
		h->matmul_eff = h->hbm_eff = h->bmm_hbm_eff = h->ici_eff = h->nvlink_eff =
			h->scaleout_eff = h->dcn_eff = 0;
		h->matmul_tile = 0;
		h->windowed_einsum_bytes = 0;
	}
}

shs_mesh shs_test_mesh(uint32_t n, const char *const *names, const int64_t *sizes)
{
	shs_mesh mesh;

	memset(&mesh, 0, sizeof(mesh));
	mesh.n_axes = n;
	for (uint32_t k = 0; k < n; k++) {
		mesh.names[k] = names[k];
		mesh.sizes[k] = sizes[k];
	}
	return mesh;
}

void shs_test_plan_evaluate(shs_host *h, const shs_hw_catalog *cat, const shs_cluster_spec *spec,
			    const shs_module *m, const char *plan, const shs_eval_options *o,
			    shs_cluster *c, shs_plan **p, shs_eval *ev)
{
	shs_plan_request *r = calloc(1, sizeof(*r));
	char meshtext[256];
	shs_err e = { 0 };

	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	SHS_ASSERT_OK(shs_cluster_make(cat, spec, c, &e), &e);
	shs_hw_chip(&c->hw, &r->chip);
	shs_mesh_text(&c->mesh, meshtext, sizeof(meshtext));
	SHS_ASSERT_OK(shs_plan_parse_mesh(r, meshtext, &e), &e);
	if (strstr(plan, ".json"))
		SHS_ASSERT_OK(shs_plan_load_json(r, plan, &e), &e);
	else
		SHS_ASSERT_OK(shs_plan_parse_kind(r, plan, &e), &e);
	SHS_ASSERT_OK(shs_plan_make(h, m, r, p, &e), &e);
	SHS_ASSERT_OK(shs_evaluate(m, *p, c, o, ev, &e), &e);
	free(r);
}

void shs_test_eval_free(shs_test_eval *s)
{
	shs_eval_free(&s->ev);
	shs_plan_free(s->p);
	shs_host_free(s->h);
	shs_module_free(s->m);
	free(s);
}
