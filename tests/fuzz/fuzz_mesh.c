/* libFuzzer target: mesh text ("fsdp=16@xy,tensor=4@z") laid on three clusters
 * (shs_cluster_make: a v5p slice, a two-slice v5e, H100 nodes) and read as a plan's mesh
 * (shs_plan_parse_mesh): each parses or fails with a message; a mesh printed without its
 * layout parses back to the same axes. */
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "fuzz_util.h"
#include "plan.h"

enum { MESH_TEXT_MAX = 1024 };

static const shs_cluster_spec specs[] = {
	{ .hardware = "v5p", .topology = "4x4x8", .slices = 1 },
	{ .hardware = "v5e", .devices = 16, .slices = 2 },
	{ .hardware = "h100", .devices = 64, .slices = 1 },
};

/* m printed as "name=size,..." parses back to the same names and sizes. */
static void check_mesh_text(const shs_mesh *m)
{
	char text[MESH_TEXT_MAX];
	shs_plan_request *r = calloc(1, sizeof(*r));
	shs_err e = { 0 };
	int rc;

	fuzz_require(r != NULL, "memory for a plan request", NULL);
	shs_mesh_text(m, text, sizeof(text));
	rc = shs_plan_parse_mesh(r, text, &e);
	fuzz_require(rc == SHS_OK, "a printed mesh parses back", e.msg);
	fuzz_require(r->mesh.n_axes == m->n_axes, "the reparsed mesh has as many axes", text);
	for (uint32_t k = 0; k < m->n_axes; k++)
		fuzz_require(!strcmp(r->mesh.names[k], m->names[k]) &&
			     r->mesh.sizes[k] == m->sizes[k], "the reparsed axes are the same",
			     text);
	free(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_strndup(data, size);
	shs_hw_catalog *cat = malloc(sizeof(*cat));
	shs_cluster *c = malloc(sizeof(*c));
	shs_plan_request *r = calloc(1, sizeof(*r));
	shs_err e = { 0 };
	int rc;

	fuzz_require(cat && c && r, "memory for a catalog, a cluster and a request", NULL);
	shs_hw_catalog_builtin(cat);
	for (size_t k = 0; k < sizeof(specs) / sizeof(specs[0]); k++) {
		shs_cluster_spec spec = specs[k];
		char about[MESH_TEXT_MAX] = "";

		spec.mesh = text;
		rc = shs_cluster_make(cat, &spec, c, &e);
		fuzz_check_failure("shs_cluster_make", rc, &e);
		if (rc != SHS_OK)
			continue;
		shs_cluster_describe(c, about, sizeof(about));
		check_mesh_text(&c->mesh);
	}
	rc = shs_plan_parse_mesh(r, text, &e);
	fuzz_check_failure("shs_plan_parse_mesh", rc, &e);
	if (rc == SHS_OK)
		check_mesh_text(&r->mesh);
	free(r);
	free(c);
	free(cat);
	free(text);
	return 0;
}
