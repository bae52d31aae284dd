/* Users of each instruction of one computation, as a CSR list. */
#ifndef SHS_USERS_H
#define SHS_USERS_H

#include <stdint.h>

#include "ir.h"

/* u->list[u->first[v] .. u->first[v + 1]) are the instructions that read value v, each once (an
 * instruction reading v twice is one user), in program order. Owned by u. */
typedef struct shs_users {
	uint32_t *first; /* n_instrs + 1 */
	uint32_t *list;
} shs_users;

/* Builds the users of c's instructions into *u (the caller's, freed with shs_users_free;
 * nothing is left held after a failure). SHS_OK or SHS_ENOMEM (no message: the caller names
 * the work). */
int shs_users_make(const shs_computation *c, shs_users *u);
void shs_users_free(shs_users *u);

/* How many instructions read v. */
static inline uint32_t shs_users_count(const shs_users *u, uint32_t v)
{
	return u->first[v + 1] - u->first[v];
}

#endif
