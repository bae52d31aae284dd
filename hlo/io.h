/* Reading and writing modules: binary protobuf, HLO text, files; verification and hashing. */
#ifndef SHS_IO_H
#define SHS_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "ir.h"
#include "status.h"

typedef enum shs_format {
	SHS_FORMAT_AUTO = 0, /* by file extension (.pb / .hlo / .txt), else by content */
	SHS_FORMAT_PROTO,    /* binary HloProto or HloModuleProto */
	SHS_FORMAT_TEXT      /* HLO text */
} shs_format;

/* Largest input accepted (bytes) and the memory a load may use per input byte beyond a floor. */
enum { SHS_LOAD_BUDGET_FLOOR_MB = 64, SHS_LOAD_BUDGET_PER_BYTE = 32 };

/* About how many IR bytes one input byte becomes (the MaxText module: 4.6 from text and from
 * protobuf); loaders reserve that much arena up front. */
enum { SHS_IR_BYTES_PER_INPUT_BYTE = 5 };

/* Parses a binary HloProto or bare HloModuleProto held in buf[0..len), telling them apart by
 * content. origin names the input in messages ("model.pb"). On success *out is a new module;
 * caller frees with shs_module_free(). buf is only read. Unknown fields at every level the IR
 * keeps (module, computation, instruction, HloProto) are kept for shs_proto_save. A string
 * holding a NUL byte, a name that is no HLO identifier and a computation or instruction name
 * used twice are refused (SHS_EPARSE): the module could not be kept or written as text.
 * Returns SHS_OK, SHS_EPARSE, SHS_EUNSUPPORTED or SHS_ENOMEM with the reason in e. */
int shs_proto_load(const uint8_t *buf, size_t len, const char *origin, shs_module **out,
		   shs_err *e) SHS_MUST_USE;

/* Serialises m as an HloProto (as_hlo_proto) or a bare HloModuleProto. On success *out (caller
 * frees with free()) holds *out_len bytes. Returns SHS_OK, SHS_EUNSUPPORTED (an attribute kept
 * only as text cannot be written as protobuf; e names it) or SHS_ENOMEM. */
int shs_proto_save(const shs_module *m, bool as_hlo_proto, uint8_t **out,
		   size_t *out_len, shs_err *e) SHS_MUST_USE;

/* Whether a text header attribute (by name) is module configuration, which HloModuleProto has
 * no field for (allow_spmd_sharding_propagation_to_parameters / _output,
 * alias_passthrough_params): shs_proto_save leaves it out, as XLA does. name: borrowed, valid
 * until this returns. */
bool shs_header_attr_is_config(const char *name);

/* Calls note(name, ctx) for each header attribute of m that shs_proto_save leaves out because
 * it is module configuration: num_partitions, replica_count and those above. m: borrowed, valid
 * until this returns. */
void shs_proto_config_attrs(const shs_module *m, void (*note)(const char *name, void *ctx),
			    void *ctx);

/* Parses HLO text text[0..len). origin names the input in messages, which read
 * "origin:LINE:COL: what is wrong". On success *out is a new module; caller frees with
 * shs_module_free(). Returns SHS_OK, SHS_EPARSE, SHS_ENOMEM, SHS_EUNSUPPORTED (valid syntax this
 * version cannot hold: f8/f4 constants, layout attributes other than T/E/S) or SHS_EINVAL. */
int shs_text_load(const char *text, size_t len, const char *origin, shs_module **out,
		  shs_err *e) SHS_MUST_USE;

/* Appends the HLO text of m to b, in style (NULL: the style m was read in). */
void shs_text_print(shs_buf *b, const shs_module *m, const shs_text_style *style);

/* Pieces of it, for a rewrite that writes a module as text: the header line (and the blank line
 * after it), and computation c (ENTRY when it is m's entry), where each instruction i for which
 * replace(user, i, b) returns true is what that call appended instead (replace NULL: none).
 * All borrowed for the call. */
typedef bool (*shs_text_replace_fn)(void *user, uint32_t i, shs_buf *b);
void shs_text_print_header(shs_buf *b, const shs_module *m, const shs_text_style *style);
void shs_text_print_comp(shs_buf *b, const shs_module *m, uint32_t c,
			 const shs_text_style *style, shs_text_replace_fn replace, void *user);
/* One instruction line of computation c, under `name` (NULL: its own), its operand k named
 * operands[k] (operands NULL, or an entry NULL: as c names it), never as the root: for a
 * replace callback that renames what it keeps or what it reads. */
void shs_text_print_instr(shs_buf *b, const shs_module *m, uint32_t c, uint32_t i,
			  const char *name, const char *const *operands,
			  const shs_text_style *style);

/* Reads path, in fmt (AUTO: the extension decides, .pb/.hlo/.txt, else the content). On success
 * *out is a new module; caller frees with shs_module_free(). Errors name the path: SHS_EIO,
 * SHS_EPARSE, SHS_EUNSUPPORTED, SHS_ENOMEM. */
int shs_module_load_file(const char *path, shs_format fmt, shs_module **out,
			 shs_err *e) SHS_MUST_USE;

/* Parses data[0..len) in fmt (AUTO: HLO text when it opens, after blanks, with "HloModule" or
 * a comment, else protobuf); origin names it in messages. As shs_proto_load / shs_text_load. */
int shs_module_load_bytes(const uint8_t *data, size_t len, const char *origin,
			  shs_format fmt, shs_module **out, shs_err *e) SHS_MUST_USE;

/* Writes m to path in fmt (AUTO: by extension; .pb keeps the HloProto/HloModuleProto kind the
 * module was read as), as shs_file_write writes: a regular file or a new path through a
 * temporary in its folder renamed into place (a failure or a kill leaves no partial output and
 * the old file's mode stays), a device or FIFO in place, a symlink's target for the link.
 * Returns SHS_OK, SHS_EIO, SHS_EUNSUPPORTED or SHS_ENOMEM. */
int shs_module_save_file(const shs_module *m, const char *path, shs_format fmt,
			 shs_err *e) SHS_MUST_USE;

/* The format a path's extension names, or SHS_FORMAT_AUTO when it names none. */
shs_format shs_format_from_path(const char *path);

/* Checks m: ids unique, operands and callees resolved and before their users, no cycles,
 * shapes consistent (dot, broadcast, transpose, reshape, reduce, tuple, get-tuple-element,
 * parameters, while, call, conditional, elementwise). Returns SHS_OK or SHS_EVERIFY (e names the
 * computation and the instruction), SHS_ENOMEM, or SHS_EINVAL for a NULL module. */
int shs_module_verify(const shs_module *m, shs_err *e) SHS_MUST_USE;

/* Structural hashes (XXH3 64) that ignore names and ids: an instruction's covers its opcode,
 * shape, attributes and its operands' hashes (so two identical layers hash alike); a
 * computation's covers its instructions and root. Sharding and metadata are not included.
 * out receives one hash per instruction of c, in order. Returns SHS_OK, SHS_ENOMEM, or
 * SHS_EINVAL when the module breaks the order a verified module has (verify it first). */
int shs_comp_hash(const shs_module *m, const shs_computation *c, uint64_t *out_instr,
		  uint64_t *out_comp, shs_err *e);

/* Hashes of every computation of m into out[m->n_comps] (callees' hashes feed their callers').
 * Returns SHS_OK, SHS_ENOMEM or SHS_EINVAL (as shs_comp_hash). */
int shs_module_hash(const shs_module *m, uint64_t *out, shs_err *e);

#endif
