/* Plan requests: the mesh and plan names from the command line, parameter paths, freeing plans. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "plan_internal.h"

enum { AXIS_NAME_MAX = 32, DECIMAL = 10 };

static bool valid_axis_name(const char *s, size_t n)
{
	if (!n || n >= AXIS_NAME_MAX || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
		return false;
	for (size_t k = 1; k < n; k++)
		if (!isalnum((unsigned char)s[k]) && s[k] != '_')
			return false;
	return true;
}

int shs_plan_parse_mesh(shs_plan_request *r, const char *text, shs_err *e)
{
	shs_mesh mesh = { 0 };
	char names[SHS_MESH_MAX_AXES][AXIS_NAME_MAX];
	const char *p = text;

	while (p && *p) {
		const char *eq = strchr(p, '='), *comma;
		char *end;
		long long size;
		if (!eq)
			return shs_seterr(e, SHS_EINVAL, "mesh '%s': want NAME=SIZE,... (e.g. "
					  "fsdp=16,tensor=4)", text);
		if (mesh.n_axes == SHS_MESH_MAX_AXES)
			return shs_seterr(e, SHS_EINVAL, "mesh '%s': more than %d axes", text,
					  SHS_MESH_MAX_AXES);
		if (!valid_axis_name(p, (size_t)(eq - p)))
			return shs_seterr(e, SHS_EINVAL, "mesh '%s': bad axis name '%.*s'", text,
					  (int)(eq - p), p);
		memcpy(names[mesh.n_axes], p, (size_t)(eq - p));
		names[mesh.n_axes][eq - p] = '\0';
		errno = 0;
		size = strtoll(eq + 1, &end, DECIMAL);
		comma = end;
		if (errno || end == eq + 1 || size < 1 || size > (1ll << 20) ||
		    (*comma && *comma != ','))
			return shs_seterr(e, SHS_EINVAL,
					  "mesh '%s': axis '%s' needs a size from 1 to 1048576",
					  text, names[mesh.n_axes]);
		for (uint32_t k = 0; k < mesh.n_axes; k++)
			if (!strcmp(names[k], names[mesh.n_axes]))
				return shs_seterr(e, SHS_EINVAL, "mesh '%s': axis '%s' twice", text,
						  names[k]);
		mesh.sizes[mesh.n_axes++] = size;
		p = *comma ? comma + 1 : NULL;
	}
	if (!mesh.n_axes)
		return shs_seterr(e, SHS_EINVAL, "mesh '%s' has no axis", text);
	memcpy(r->axis_names, names, sizeof(names));
	r->mesh = mesh;
	for (uint32_t k = 0; k < mesh.n_axes; k++)
		r->mesh.names[k] = r->axis_names[k];
	return SHS_OK;
}

int shs_plan_set_mesh(shs_plan_request *r, const shs_mesh *mesh, shs_err *e)
{
	if (!mesh->n_axes || mesh->n_axes > SHS_MESH_MAX_AXES)
		return shs_seterr(e, SHS_EINVAL, "mesh: %u axes (1 to %d)", mesh->n_axes,
				  SHS_MESH_MAX_AXES);
	for (uint32_t k = 0; k < mesh->n_axes; k++)
		if (!valid_axis_name(mesh->names[k], strlen(mesh->names[k])) || mesh->sizes[k] < 1)
			return shs_seterr(e, SHS_EINVAL, "mesh: axis %u ('%s', size %lld) cannot be "
					  "named", k, mesh->names[k], (long long)mesh->sizes[k]);
	r->mesh = *mesh;
	for (uint32_t k = 0; k < mesh->n_axes; k++) {
		memcpy(r->axis_names[k], mesh->names[k], strlen(mesh->names[k]) + 1);
		r->mesh.names[k] = r->axis_names[k];
	}
	return SHS_OK;
}

int shs_plan_parse_kind(shs_plan_request *r, const char *name, shs_err *e)
{
	static const struct {
		const char *name;
		shs_plan_kind kind;
		bool state_only;
	} kinds[] = { { "dp", SHS_PLAN_DP, false }, { "fsdp", SHS_PLAN_FSDP, false },
		      { "tp", SHS_PLAN_TP, false }, { "fsdp+tp", SHS_PLAN_FSDP_TP, false },
		      { "zero1", SHS_PLAN_FSDP, true }, { "zero1+tp", SHS_PLAN_FSDP_TP, true } };
	static const char *const axes[] = { "+cp", "+ep", "+pp" };
	size_t n = strlen(name);
	bool cut = true;

	/* the search's names end with what the mesh's context, expert and stage axes add */
	while (cut) {
		cut = false;
		for (size_t k = 0; k < sizeof(axes) / sizeof(axes[0]); k++)
			if (n > strlen(axes[k]) &&
			    !strncmp(name + n - strlen(axes[k]), axes[k], strlen(axes[k]))) {
				n -= strlen(axes[k]);
				cut = true;
			}
	}
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
		if (strlen(kinds[k].name) == n && !strncmp(kinds[k].name, name, n)) {
			r->kind = kinds[k].kind;
			r->fsdp_state_only = kinds[k].state_only;
			return SHS_OK;
		}
	return shs_seterr(e, SHS_EINVAL, "unknown plan '%s' (plans: dp, fsdp, tp, fsdp+tp, zero1, "
			  "zero1+tp, with +cp, +ep, +pp as the search names them, or a plan file "
			  ".json)", name);
}

void shs_param_path(const shs_instr *p, char *buf, size_t cap)
{
	const char *src = p->metadata && p->metadata->op_name ? p->metadata->op_name : p->name;
	size_t n = 0;

	if (!cap)
		return;
	for (const char *s = src; *s && n + 1 < cap; s++) {
		if (s[0] == '[' && (s[1] == '\'' || s[1] == '"')) {
			buf[n++] = '/';
			s++;
		} else if ((s[0] == '\'' || s[0] == '"') && s[1] == ']') {
			s++;
		} else {
			buf[n++] = *s;
		}
	}
	buf[n] = '\0';
}

void shs_decision_free(shs_decision *d)
{
	free(d->colls);
	d->colls = NULL;
	d->n_colls = 0;
}

int shs_decision_set_specs(shs_decision *d, shs_arena *a, const shs_pspec *leaves,
			   uint32_t n_leaves, const shs_pspec *req, uint32_t n_req,
			   const uint32_t *req_first, uint32_t n_operands)
{
	shs_pspec *l = d->leaves, *q = d->req;
	uint32_t *first = d->req_first;

	if (!req)
		n_req = 0;
	if (n_leaves > d->leaves_cap && !(l = shs_arena_alloc(a, n_leaves * sizeof(*l))))
		return SHS_ENOMEM;
	if (n_req > d->req_cap && !(q = shs_arena_alloc(a, n_req * sizeof(*q))))
		return SHS_ENOMEM;
	/* an instruction's operand count never changes: its offsets' room is made once */
	if (!first && !(first = shs_arena_alloc(a, (n_operands + 1u) * sizeof(*first))))
		return SHS_ENOMEM;
	if (l != d->leaves) {
		d->leaves = l;
		d->leaves_cap = n_leaves;
	}
	if (q != d->req) {
		d->req = q;
		d->req_cap = n_req;
	}
	d->req_first = first;
	memcpy(d->leaves, leaves, n_leaves * sizeof(*leaves));
	d->n_leaves = n_leaves;
	if (n_req)
		memcpy(d->req, req, n_req * sizeof(*req));
	if (req)
		memcpy(first, req_first, (n_operands + 1u) * sizeof(*first));
	else
		memset(first, 0, (n_operands + 1u) * sizeof(*first));
	d->n_req = n_req;
	return SHS_OK;
}

void shs_plan_free(shs_plan *p)
{
	if (!p)
		return;
	for (uint32_t c = 0; p->d && c < p->n_comps; c++) {
		for (uint32_t i = 0; p->d[c] && i < p->n_instrs[c]; i++)
			shs_decision_free(&p->d[c][i]);
		free(p->d[c]);
	}
	free(p->d);
	shs_arena_free(p->arena);
	free(p->n_instrs);
	free(p);
}
