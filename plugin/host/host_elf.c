/* A plugin's ABI words read from its ELF file, before dlopen runs any of its code. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host_internal.h"

/* The ELF class, byte order and machine of this host: a plugin must match all three. */
#if UINTPTR_MAX == UINT64_MAX
#define HOST_CLASS ELFCLASS64
typedef Elf64_Ehdr host_ehdr;
typedef Elf64_Shdr host_shdr;
typedef Elf64_Sym host_sym;
#define HOST_ST_TYPE ELF64_ST_TYPE
#else
#define HOST_CLASS ELFCLASS32
typedef Elf32_Ehdr host_ehdr;
typedef Elf32_Shdr host_shdr;
typedef Elf32_Sym host_sym;
#define HOST_ST_TYPE ELF32_ST_TYPE
#endif
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define HOST_DATA ELFDATA2LSB
#else
#define HOST_DATA ELFDATA2MSB
#endif
#if defined(__x86_64__)
#define HOST_MACHINE EM_X86_64
#elif defined(__aarch64__)
#define HOST_MACHINE EM_AARCH64
#elif defined(__i386__)
#define HOST_MACHINE EM_386
#elif defined(__arm__)
#define HOST_MACHINE EM_ARM
#elif defined(__riscv)
#define HOST_MACHINE EM_RISCV
#elif defined(__powerpc64__)
#define HOST_MACHINE EM_PPC64
#else
#define HOST_MACHINE EM_NONE /* unknown here: dlopen judges the machine */
#endif

/* The mapped file being read. */
typedef struct elf_file {
	const unsigned char *p;
	size_t size;
	const host_ehdr *eh;
	const host_shdr *sh;    /* e_shnum section headers */
} elf_file;

/* Whether [off, off + len) lies inside the file. */
static bool inside(const elf_file *f, uint64_t off, uint64_t len)
{
	return off <= f->size && len <= f->size - off;
}

/* The header and section table of f, checked; a message in e otherwise. */
static int read_headers(elf_file *f, const char *path, shs_err *e)
{
	const host_ehdr *eh = (const void *)f->p;

	if (f->size < sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG))
		return shs_seterr(e, SHS_EINVAL, "%s: not an ELF shared object", path);
	if (eh->e_ident[EI_CLASS] != HOST_CLASS || eh->e_ident[EI_DATA] != HOST_DATA ||
	    (HOST_MACHINE != EM_NONE && eh->e_machine != HOST_MACHINE))
		return shs_seterr(e, SHS_EINVAL, "%s: built for another machine (ELF class %u, "
				  "machine %u)", path, eh->e_ident[EI_CLASS], eh->e_machine);
	if (eh->e_type != ET_DYN)
		return shs_seterr(e, SHS_EINVAL, "%s: not a shared object (ELF type %u)", path,
				  eh->e_type);
	if (eh->e_shentsize != sizeof(host_shdr) || !eh->e_shnum ||
	    !inside(f, eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(host_shdr)) ||
	    eh->e_shoff % _Alignof(host_shdr))
		return shs_seterr(e, SHS_EINVAL, "%s: no readable section headers (the ABI is "
				  "read from them before loading)", path);
	f->eh = eh;
	f->sh = (const void *)(f->p + eh->e_shoff);
	return SHS_OK;
}

/* The bytes of defined dynamic symbol name (at least len of them) in *out, or NULL in *out
 * when f does not define it. *is_func tells a function from data. SHS_EINVAL when the table
 * or the symbol points outside the file. */
static int find_dynsym(const elf_file *f, const char *name, size_t len, const void **out,
		       bool *is_func, const char *path, shs_err *e)
{
	size_t name_len = strlen(name);

	*out = NULL;
	for (uint32_t s = 0; s < f->eh->e_shnum; s++) {
		const host_shdr *sym = &f->sh[s], *str;
		uint64_t n;

		if (sym->sh_type != SHT_DYNSYM)
			continue;
		if (sym->sh_link >= f->eh->e_shnum || sym->sh_entsize != sizeof(host_sym) ||
		    !inside(f, sym->sh_offset, sym->sh_size) || sym->sh_offset % _Alignof(host_sym))
			goto bad;
		str = &f->sh[sym->sh_link];
		if (!inside(f, str->sh_offset, str->sh_size))
			goto bad;
		n = sym->sh_size / sizeof(host_sym);
		for (uint64_t k = 1; k < n; k++) {
			const host_sym *y = (const host_sym *)(f->p + sym->sh_offset) + k;
			const host_shdr *in;

			if (y->st_shndx == SHN_UNDEF || y->st_shndx >= f->eh->e_shnum ||
			    y->st_name >= str->sh_size || str->sh_size - y->st_name <= name_len ||
			    memcmp(f->p + str->sh_offset + y->st_name, name, name_len + 1))
				continue;
			*is_func = HOST_ST_TYPE(y->st_info) == STT_FUNC;
			if (*is_func) {
				*out = f->p; /* defined: its bytes are not read */
				return SHS_OK;
			}
			in = &f->sh[y->st_shndx];
			if (y->st_size < len || in->sh_type == SHT_NOBITS ||
			    y->st_value < in->sh_addr || y->st_value - in->sh_addr > in->sh_size ||
			    !inside(f, in->sh_offset + (y->st_value - in->sh_addr), len))
				return shs_seterr(e, SHS_EINVAL, "%s: %s is not a %zu-byte constant",
						  path, name, len);
			*out = f->p + in->sh_offset + (y->st_value - in->sh_addr);
			return SHS_OK;
		}
	}
	return SHS_OK;
bad:
	return shs_seterr(e, SHS_EINVAL, "%s: a broken dynamic symbol table", path);
}

/* Reads f's words into *abi. */
static int read_abi(const elf_file *f, shs__host_abi *abi, const char *path, shs_err *e)
{
	const void *init, *version, *sizes;
	bool func = false;
	int rc;

	rc = find_dynsym(f, "shs_plugin_init", 0, &init, &func, path, e);
	if (rc == SHS_OK)
		rc = find_dynsym(f, "shs_plugin_abi_version", sizeof(uint32_t), &version, &func,
				 path, e);
	if (rc == SHS_OK && version)
		rc = find_dynsym(f, "shs_plugin_abi_sizes", sizeof(uint64_t), &sizes, &func,
				 path, e);
	if (rc != SHS_OK)
		return rc;
	abi->has_init = init != NULL;
	abi->has_version = version != NULL;
	abi->has_sizes = version && sizes;
	if (version)
		memcpy(&abi->version, version, sizeof(abi->version));
	if (abi->has_sizes)
		memcpy(&abi->sizes, sizes, sizeof(abi->sizes));
	return SHS_OK;
}

int shs__host_elf_abi(const char *path, shs__host_abi *abi, shs_err *e)
{
	elf_file f = { 0 };
	struct stat st;
	void *map;
	int fd, rc;

	*abi = (shs__host_abi){ 0 };
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return shs_seterr(e, SHS_EIO, "%s: %s", path, strerror(errno));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size <= 0) {
		rc = shs_seterr(e, SHS_EIO, "%s: not a regular file", path);
		close(fd);
		return rc;
	}
	/* mapped as dlopen maps it (a file cut short meanwhile faults either way) */
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return shs_seterr(e, SHS_EIO, "%s: %s", path, strerror(errno));
	f.p = map;
	f.size = (size_t)st.st_size;
	rc = read_headers(&f, path, e);
	if (rc == SHS_OK)
		rc = read_abi(&f, abi, path, e);
	munmap(map, f.size);
	return rc;
}
