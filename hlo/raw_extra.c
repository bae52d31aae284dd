/* The statistics, result_accuracy and origin attributes any instruction may carry: their text as
 * XLA prints it (hlo_instruction.cc StatisticsVizToString and ResultAccuracy printing,
 * hlo_original_value.cc) and their protobuf messages (StatisticsViz 82, ResultAccuracy 91,
 * OriginalValueProto 88). */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto_internal.h"
#include "raw_attrs.h"
#include "raw_scan.h"
#include "shs_limits.h"
#include "text_print.h"

enum { WHY = 160 };

/* One node of an origin tree, in pre-order: path from the root; a leaf names the original
 * instruction (name, index) or nothing (an empty leaf). */
typedef struct onode {
	shs_i64s path;
	bool leaf, named;
	const char *name;
	size_t name_len;
	shs_i64s index;
} onode;

/* A parsed value of one of the three attributes. */
typedef struct extra {
	/* statistics */
	int64_t vis_index;
	uint32_t n_stats;
	const char **stat_names;
	size_t *stat_lens;
	double *stat_vals;
	/* result_accuracy: mode 0 default, 1 highest; or a tolerance */
	bool tolerance;
	int mode;
	double atol, rtol;
	int64_t ulps;
	/* origin */
	bool synthetic;
	uint32_t n_nodes, room;
	onode *nodes;
} extra;

/* ---- Parsing --------------------------------------------------------------------------------- */

static int stats_parse(shs__scan *c, shs_arena *a, extra *x)
{
	uint32_t room = 0;
	int rc = shs__scan_need(c, '{');

	while (!rc && !shs__scan_eat(c, '}')) {
		const char *name;
		size_t len;
		double v;

		if ((x->n_stats || room) && (rc = shs__scan_need(c, ',')))
			break;
		if ((rc = shs__scan_word(c, &name, &len)) || (rc = shs__scan_need(c, '=')))
			break;
		if (!room) { /* the first: the index of the statistic to show */
			room = 8;
			x->stat_names = shs_arena_alloc(a, room * sizeof(*x->stat_names));
			x->stat_lens = shs_arena_alloc(a, room * sizeof(*x->stat_lens));
			x->stat_vals = shs_arena_alloc(a, room * sizeof(*x->stat_vals));
			if (!x->stat_names || !x->stat_lens || !x->stat_vals)
				return SHS_ENOMEM;
			rc = shs__scan_int(c, 0, &x->vis_index);
			continue;
		}
		if ((rc = shs__scan_number(c, &v)))
			break;
		if (x->n_stats == room) {
			const char **nn = shs_arena_alloc(a, 2 * room * sizeof(*nn));
			size_t *nl = shs_arena_alloc(a, 2 * room * sizeof(*nl));
			double *nv = shs_arena_alloc(a, 2 * room * sizeof(*nv));

			if (!nn || !nl || !nv || room > UINT32_MAX / 2)
				return SHS_ENOMEM;
			memcpy(nn, x->stat_names, room * sizeof(*nn));
			memcpy(nl, x->stat_lens, room * sizeof(*nl));
			memcpy(nv, x->stat_vals, room * sizeof(*nv));
			x->stat_names = nn, x->stat_lens = nl, x->stat_vals = nv;
			room *= 2;
		}
		x->stat_names[x->n_stats] = name;
		x->stat_lens[x->n_stats] = len;
		x->stat_vals[x->n_stats++] = v;
	}
	return rc;
}

static bool word_is(const char *s, size_t n, const char *w)
{
	size_t k;

	for (k = 0; k < n && w[k]; k++)
		if (tolower((unsigned char)s[k]) != w[k])
			return false;
	return k == n && !w[k];
}

static int tolerance_parse(shs__scan *c, extra *x)
{
	int rc = shs__scan_need(c, '{');
	bool first = true;

	x->tolerance = true;
	while (!rc && !shs__scan_eat(c, '}')) {
		const char *w;
		size_t n;

		if ((!first && (rc = shs__scan_need(c, ','))) || (rc = shs__scan_word(c, &w, &n)) ||
		    (rc = shs__scan_need(c, '=')))
			break;
		first = false;
		if (word_is(w, n, "atol"))
			rc = shs__scan_number(c, &x->atol);
		else if (word_is(w, n, "rtol"))
			rc = shs__scan_number(c, &x->rtol);
		else if (word_is(w, n, "ulps"))
			rc = shs__scan_int(c, 0, &x->ulps);
		else
			rc = shs__scan_fail(c, "a tolerance has atol, rtol and ulps");
	}
	if (!rc && (x->atol < 0 || x->rtol < 0))
		rc = shs__scan_fail(c, "a tolerance is not negative");
	return rc;
}

static int accuracy_parse(shs__scan *c, extra *x)
{
	const char *w;
	size_t n;
	int rc = shs__scan_need(c, '{');

	if (!rc && !(rc = shs__scan_word(c, &w, &n)) && !(rc = shs__scan_need(c, '='))) {
		if (word_is(w, n, "tolerance")) {
			rc = tolerance_parse(c, x);
		} else if (!word_is(w, n, "mode")) {
			rc = shs__scan_fail(c, "expected mode= or tolerance=");
		} else if (!(rc = shs__scan_word(c, &w, &n))) {
			x->mode = word_is(w, n, "highest") ? 1 : word_is(w, n, "default") ? 0 : -1;
			if (x->mode < 0)
				rc = shs__scan_fail(c, "the mode is default or highest");
		}
	}
	return rc ? rc : shs__scan_need(c, '}');
}

static onode *new_node(shs_arena *a, extra *x, const shs_i64s *path)
{
	onode *n;

	if (x->n_nodes == x->room) {
		onode *grown;

		if (x->room > UINT32_MAX / 2)
			return NULL;
		x->room = x->room ? 2 * x->room : 8;
		if (!(grown = shs_arena_alloc(a, x->room * sizeof(*grown))))
			return NULL;
		if (x->n_nodes)
			memcpy(grown, x->nodes, x->n_nodes * sizeof(*grown));
		x->nodes = grown;
	}
	n = &x->nodes[x->n_nodes++];
	memset(n, 0, sizeof(*n));
	n->path.n = path->n;
	if (path->n && !(n->path.v = shs_arena_memdup(a, path->v, path->n * sizeof(int64_t))))
		return NULL;
	return n;
}

/* VALUE := {} | {"name"} | {"name" {i,...}} | ( VALUE, ... ); path: where it is. */
static int value_parse(shs__scan *c, shs_arena *a, extra *x, shs_i64s *path)
{
	onode *n = new_node(a, x, path);
	int64_t child = 0, at[SHS_MAX_NESTING + 1];
	int rc;

	if (!n)
		return SHS_ENOMEM;
	if (shs__scan_eat(c, '{')) {
		n->leaf = true;
		if (shs__scan_eat(c, '}'))
			return SHS_OK;
		n->named = true;
		if ((rc = shs__scan_quoted(c, &n->name, &n->name_len)))
			return rc;
		shs__scan_blanks(c);
		if (c->s[c->pos] == '{' && (rc = shs__scan_ints(c, a, '{', '}', 0, &n->index)))
			return rc;
		return shs__scan_need(c, '}');
	}
	if ((rc = shs__scan_need(c, '(')))
		return rc;
	if (path->n >= SHS_MAX_NESTING)
		return shs__scan_fail(c, "the origin nests too deep");
	if (path->n)
		memcpy(at, path->v, path->n * sizeof(*at));
	while (!shs__scan_eat(c, ')')) {
		shs_i64s sub = { path->n + 1, at };

		if (child && (rc = shs__scan_need(c, ',')))
			return rc;
		at[path->n] = child++;
		if ((rc = value_parse(c, a, x, &sub)))
			return rc;
	}
	return SHS_OK;
}

static int origin_parse(shs__scan *c, shs_arena *a, extra *x)
{
	shs_i64s root = { 0, NULL };
	int rc = shs__scan_need(c, '{');

	shs__scan_blanks(c);
	if (!rc && c->s[c->pos] == '[') {
		const char *w;
		size_t n;

		c->pos++;
		if (!(rc = shs__scan_word(c, &w, &n)) && !word_is(w, n, "synthetic_call"))
			rc = shs__scan_fail(c, "expected [synthetic_call]");
		x->synthetic = true;
		if (!rc)
			rc = shs__scan_need(c, ']');
	} else if (!rc) {
		rc = value_parse(c, a, x, &root);
	}
	return rc ? rc : shs__scan_need(c, '}');
}

static int parse(shs_arena *a, shs__raw_kind k, const char *value, extra *x, char *why,
		 size_t cap)
{
	shs__scan c = { value, 0, why, cap };
	int rc;

	memset(x, 0, sizeof(*x));
	rc = k == SHS__RAW_STATISTICS ? stats_parse(&c, a, x)
		: k == SHS__RAW_RESULT_ACCURACY ? accuracy_parse(&c, x) : origin_parse(&c, a, x);
	return rc ? rc : shs__scan_end(&c, "the value");
}

/* ---- Printing -------------------------------------------------------------------------------- */

/* Whether node j lies under node i (its path extends i's). */
static bool under(const onode *i, const onode *j)
{
	return j->path.n > i->path.n &&
	       (!i->path.n || !memcmp(i->path.v, j->path.v, i->path.n * sizeof(int64_t)));
}

/* Prints node k of the pre-order list and its subtree; returns the index after the subtree. */
static uint32_t node_print(shs_buf *b, const extra *x, uint32_t k)
{
	const onode *n = &x->nodes[k];
	uint32_t next = k + 1, kids = 0;

	if (n->leaf || next >= x->n_nodes || !under(n, &x->nodes[next])) {
		if (!n->named) {
			shs_buf_puts(b, n->leaf ? "{}" : "()");
			return next;
		}
		shs_buf_puts(b, "{\"");
		shs_buf_put(b, n->name, n->name_len);
		shs_buf_putc(b, '"');
		if (n->index.n) {
			shs_buf_putc(b, ' ');
			shs__put_i64_braced(b, &n->index);
		}
		shs_buf_putc(b, '}');
		return next;
	}
	shs_buf_putc(b, '(');
	while (next < x->n_nodes && under(n, &x->nodes[next])) {
		if (kids++)
			shs_buf_puts(b, ", ");
		next = node_print(b, x, next);
	}
	shs_buf_putc(b, ')');
	return next;
}

/* The text XLA prints, or "" for a value XLA does not print (no statistics, default accuracy). */
static void print(shs_buf *b, shs__raw_kind k, const extra *x)
{
	if (k == SHS__RAW_STATISTICS) {
		if (!x->n_stats)
			return;
		shs_buf_printf(b, "{visualizing_index=%" PRId64, x->vis_index);
		for (uint32_t i = 0; i < x->n_stats; i++) {
			shs_buf_putc(b, ',');
			shs_buf_put(b, x->stat_names[i], x->stat_lens[i]);
			shs_buf_printf(b, "=%.6g", x->stat_vals[i]);
		}
		shs_buf_putc(b, '}');
	} else if (k == SHS__RAW_RESULT_ACCURACY) {
		if (x->tolerance)
			shs_buf_printf(b, "{tolerance={atol=%g,rtol=%g,ulps=%" PRId64 "}}", x->atol,
				       x->rtol, x->ulps);
		else if (x->mode == 1)
			shs_buf_puts(b, "{mode=highest}");
	} else {
		shs_buf_putc(b, '{');
		if (x->synthetic)
			shs_buf_puts(b, "[synthetic_call]");
		else if (x->n_nodes)
			node_print(b, x, 0);
		shs_buf_putc(b, '}');
	}
}

int shs__extra_canonical(shs_arena *a, shs__raw_kind k, const char *value,
			 const char **canonical, char *why, size_t cap)
{
	extra x;
	shs_buf b = { 0 };
	int rc = parse(a, k, value, &x, why, cap);

	if (rc)
		return rc;
	print(&b, k, &x);
	return shs__raw_keep_text(a, &b, value, canonical);
}

/* ---- IR -> proto ----------------------------------------------------------------------------- */

static int stats_to(const shs__ps *c, const extra *x, Xla__HloInstructionProto *p)
{
	Xla__StatisticsViz *v = shs__ps_new_msg(c, &xla__statistics_viz__descriptor);

	if (!v || !(v->statistics = shs_arena_alloc(c->a, (x->n_stats + 1) * sizeof(void *))))
		return shs__ps_nomem(c);
	v->stat_index_to_visualize = x->vis_index;
	for (uint32_t i = 0; i < x->n_stats; i++) {
		Xla__Statistic *s = shs__ps_new_msg(c, &xla__statistic__descriptor);

		if (!s || !(s->stat_name = shs_arena_strndup(c->a, x->stat_names[i],
							      x->stat_lens[i])))
			return shs__ps_nomem(c);
		s->stat_val = x->stat_vals[i];
		v->statistics[i] = s;
	}
	v->n_statistics = x->n_stats;
	p->statistics_viz = v;
	return SHS_OK;
}

static int accuracy_to(const shs__ps *c, const extra *x, Xla__HloInstructionProto *p)
{
	Xla__ResultAccuracy *r = shs__ps_new_msg(c, &xla__result_accuracy__descriptor);
	Xla__ResultAccuracy__Tolerance *t;

	if (!r)
		return shs__ps_nomem(c);
	if (x->tolerance) {
		if (!(t = shs__ps_new_msg(c, &xla__result_accuracy__tolerance__descriptor)))
			return shs__ps_nomem(c);
		t->atol = x->atol;
		t->rtol = x->rtol;
		t->ulps = x->ulps;
		r->specs_case = XLA__RESULT_ACCURACY__SPECS_TOLERANCE;
		r->tolerance = t;
	} else {
		r->specs_case = XLA__RESULT_ACCURACY__SPECS_MODE;
		r->mode = x->mode ? XLA__RESULT_ACCURACY__MODE__HIGHEST
				  : XLA__RESULT_ACCURACY__MODE__DEFAULT;
	}
	p->result_accuracy = r;
	return SHS_OK;
}

static int origin_to(const shs__ps *c, const extra *x, Xla__HloInstructionProto *p)
{
	Xla__OriginalValueProto *o = shs__ps_new_msg(c, &xla__original_value_proto__descriptor);

	if (!o || (x->n_nodes && !(o->elements = shs_arena_alloc(c->a, x->n_nodes *
								    sizeof(void *)))))
		return shs__ps_nomem(c);
	o->is_synthetic_call = x->synthetic;
	for (uint32_t k = 0; !x->synthetic && k < x->n_nodes; k++) {
		const onode *n = &x->nodes[k];
		Xla__OriginalValueElementProto *e =
			shs__ps_new_msg(c, &xla__original_value_element_proto__descriptor);
		Xla__OriginalArrayProto *arr;

		if (!e)
			return shs__ps_nomem(c);
		e->n_shape_index = n->path.n;
		e->shape_index = n->path.v;
		if (n->named) {
			arr = shs__ps_new_msg(c, &xla__original_array_proto__descriptor);
			if (!arr || !(arr->instruction_name = shs_arena_strndup(c->a, n->name,
										 n->name_len)))
				return shs__ps_nomem(c);
			arr->n_shape_index = n->index.n;
			arr->shape_index = n->index.v;
			e->original_array = arr;
		}
		o->elements[o->n_elements++] = e;
	}
	p->original_value = o;
	return SHS_OK;
}

int shs__extra_to(const shs__ps *c, int k, const char *value, Xla__HloInstructionProto *p)
{
	char why[WHY];
	extra x;
	int rc = parse(c->a, (shs__raw_kind)k, value, &x, why, sizeof(why));

	if (rc == SHS_ENOMEM)
		return shs__ps_nomem(c);
	if (rc)
		return shs__ps_fail(c, rc, "%s", why);
	return k == SHS__RAW_STATISTICS ? stats_to(c, &x, p)
		: k == SHS__RAW_RESULT_ACCURACY ? accuracy_to(c, &x, p) : origin_to(c, &x, p);
}

/* ---- proto -> IR ----------------------------------------------------------------------------- */

static int cmp_paths(const void *a, const void *b)
{
	const onode *x = a, *y = b;

	for (uint32_t k = 0; k < x->path.n && k < y->path.n; k++)
		if (x->path.v[k] != y->path.v[k])
			return x->path.v[k] < y->path.v[k] ? -1 : 1;
	return (x->path.n > y->path.n) - (x->path.n < y->path.n);
}

static int origin_from(const shs__pl *c, const Xla__OriginalValueProto *o, extra *x)
{
	x->synthetic = o->is_synthetic_call;
	if (x->synthetic || !o->n_elements)
		return SHS_OK;
	if (o->n_elements > UINT32_MAX ||
	    !(x->nodes = shs_arena_calloc(c->a, o->n_elements, sizeof(*x->nodes))))
		return shs__pl_nomem(c);
	for (size_t k = 0; k < o->n_elements; k++) {
		const Xla__OriginalValueElementProto *e = o->elements[k];
		onode *n = &x->nodes[k];

		if (e->n_shape_index > SHS_MAX_NESTING)
			return shs__pl_fail(c, SHS_EPARSE, "origin: an element nests too deep");
		n->path.n = (uint32_t)e->n_shape_index;
		n->path.v = e->shape_index;
		n->named = e->original_array != NULL;
		if (n->named) {
			n->name = e->original_array->instruction_name;
			n->name_len = strlen(n->name);
			n->index.n = (uint32_t)e->original_array->n_shape_index;
			n->index.v = e->original_array->shape_index;
		}
	}
	x->n_nodes = (uint32_t)o->n_elements;
	/* pre-order is the order of the paths; a node nothing lies under is a leaf */
	qsort(x->nodes, x->n_nodes, sizeof(*x->nodes), cmp_paths);
	for (uint32_t k = 0; k < x->n_nodes; k++)
		x->nodes[k].leaf = k + 1 == x->n_nodes || !under(&x->nodes[k], &x->nodes[k + 1]);
	return SHS_OK;
}

int shs__extra_from(const shs__pl *c, const Xla__HloInstructionProto *p, shs_raw_attr *out,
		    uint32_t *n)
{
	static const shs__raw_kind kinds[] = { SHS__RAW_STATISTICS, SHS__RAW_RESULT_ACCURACY,
					       SHS__RAW_ORIGIN };
	int rc = SHS_OK;

	for (size_t i = 0; rc == SHS_OK && i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		const Xla__StatisticsViz *v = p->statistics_viz;
		const Xla__ResultAccuracy *r = p->result_accuracy;
		shs_buf b = { 0 };
		extra x;

		memset(&x, 0, sizeof(x));
		if (kinds[i] == SHS__RAW_STATISTICS && v && v->n_statistics) {
			size_t ns = v->n_statistics;

			if (ns > UINT32_MAX ||
			    !(x.stat_names = shs_arena_alloc(c->a, ns * sizeof(char *))) ||
			    !(x.stat_lens = shs_arena_alloc(c->a, ns * sizeof(size_t))) ||
			    !(x.stat_vals = shs_arena_alloc(c->a, ns * sizeof(double))))
				return shs__pl_nomem(c);
			x.vis_index = v->stat_index_to_visualize;
			for (size_t s = 0; s < v->n_statistics; s++) {
				x.stat_names[s] = v->statistics[s]->stat_name;
				x.stat_lens[s] = strlen(x.stat_names[s]);
				x.stat_vals[s] = v->statistics[s]->stat_val;
			}
			x.n_stats = (uint32_t)v->n_statistics;
		} else if (kinds[i] == SHS__RAW_RESULT_ACCURACY && r) {
			x.tolerance = r->specs_case == XLA__RESULT_ACCURACY__SPECS_TOLERANCE;
			x.mode = r->specs_case == XLA__RESULT_ACCURACY__SPECS_MODE && r->mode;
			if (x.tolerance && r->tolerance) {
				x.atol = r->tolerance->atol;
				x.rtol = r->tolerance->rtol;
				x.ulps = r->tolerance->ulps;
			}
		} else if (kinds[i] == SHS__RAW_ORIGIN && p->original_value) {
			rc = origin_from(c, p->original_value, &x);
		} else {
			continue;
		}
		if (rc == SHS_OK)
			print(&b, kinds[i], &x);
		if (rc == SHS_OK && b.len) {
			const char *t = b.oom ? NULL : shs_arena_strdup(c->a, b.data);

			rc = t ? SHS_OK : shs__pl_nomem(c);
			if (t)
				out[(*n)++] = (shs_raw_attr){ shs__raw_name(kinds[i]), t };
		}
		shs_buf_free(&b);
	}
	return rc;
}
