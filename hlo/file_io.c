/* Loading modules from files and saving them (atomically, or in place on a device). */
#include "io.h"
#include "file_write.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && !strcmp(s + n - k, suffix);
}

shs_format shs_format_from_path(const char *path)
{
	if (ends_with(path, ".pb") || ends_with(path, ".binpb") || ends_with(path, ".proto.bin"))
		return SHS_FORMAT_PROTO;
	if (ends_with(path, ".hlo") || ends_with(path, ".txt") || ends_with(path, ".hlotxt"))
		return SHS_FORMAT_TEXT;
	return SHS_FORMAT_AUTO;
}

/* Reads all of path into a malloc'ed buffer with a NUL after the data: to its end, whatever
 * its size says (a pipe, /dev/stdin, a process substitution say 0), up to the input limit. A
 * FIFO is opened without waiting for a writer: with none, it reads as empty. */
static int read_all(const char *path, uint8_t **out, size_t *out_len, shs_err *e)
{
	const size_t max = (size_t)SHS_MAX_INPUT_MB << 20;
	int fd = open(path, O_RDONLY | O_NONBLOCK);
	struct stat st;
	uint8_t *data = NULL;
	size_t len = 0, cap;
	ssize_t n = 0;
	int rc = SHS_OK;

	if (fd < 0)
		return shs_seterr(e, SHS_EIO, "%s: cannot open: %s", path, strerror(errno));
	if (fstat(fd, &st) != 0 || fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0) {
		rc = shs_seterr(e, SHS_EIO, "%s: %s", path, strerror(errno));
		goto out_close;
	}
	if (S_ISDIR(st.st_mode)) {
		rc = shs_seterr(e, SHS_EIO, "%s: is a directory", path);
		goto out_close;
	}
	if ((uint64_t)st.st_size > max) {
		rc = shs_seterr(e, SHS_ENOMEM, "%s: %lld bytes is larger than the %d MiB limit", path,
				(long long)st.st_size, SHS_MAX_INPUT_MB);
		goto out_close;
	}
	/* as large as the file says, plus its NUL; grown only if more comes */
	cap = st.st_size > 0 ? (size_t)st.st_size + 1 : 1 << 16;
	if (!(data = malloc(cap))) {
		rc = shs_seterr(e, SHS_ENOMEM, "%s: out of memory", path);
		goto out_close;
	}
	for (;;) {
		if (len + 1 == cap) { /* full: grow only when there is more */
			uint8_t probe, *grown;
			do
				n = read(fd, &probe, 1);
			while (n < 0 && errno == EINTR);
			if (n <= 0)
				goto read_done;
			if (cap > max) {
				rc = shs_seterr(e, SHS_ENOMEM, "%s: larger than the %d MiB limit",
						path, SHS_MAX_INPUT_MB);
				goto out_free;
			}
			if (!(grown = realloc(data, cap * 2))) {
				rc = shs_seterr(e, SHS_ENOMEM, "%s: out of memory", path);
				goto out_free;
			}
			data = grown;
			cap *= 2;
			data[len++] = probe;
		}
		n = read(fd, data + len, cap - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = shs_seterr(e, SHS_EIO, "%s: read failed: %s", path, strerror(errno));
			goto out_free;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
read_done:
	if (n < 0) {
		rc = shs_seterr(e, SHS_EIO, "%s: read failed: %s", path, strerror(errno));
		goto out_free;
	}
	data[len] = 0;
	*out = data;
	*out_len = len;
	data = NULL;
out_free:
	free(data);
out_close:
	close(fd);
	return rc;
}

/* HLO text opens, after blanks, with "HloModule" or a comment; anything else is taken for
 * binary protobuf, whose loader then says precisely what is wrong with it. */
static shs_format sniff(const uint8_t *data, size_t len)
{
	size_t i = 0;

	while (i < len && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r'))
		i++;
	if (len - i >= 9 && !memcmp(data + i, "HloModule", 9))
		return SHS_FORMAT_TEXT;
	if (len - i >= 2 && data[i] == '/' && (data[i + 1] == '*' || data[i + 1] == '/'))
		return SHS_FORMAT_TEXT;
	return SHS_FORMAT_PROTO;
}

int shs_module_load_file(const char *path, shs_format fmt, shs_module **out, shs_err *e)
{
	uint8_t *data = NULL;
	size_t len = 0;
	int rc;

	*out = NULL;
	rc = read_all(path, &data, &len, e);
	if (rc != SHS_OK)
		return rc;
	if (fmt == SHS_FORMAT_AUTO)
		fmt = shs_format_from_path(path);
	rc = shs_module_load_bytes(data, len, path, fmt, out, e);
	free(data);
	return rc;
}

int shs_module_load_bytes(const uint8_t *data, size_t len, const char *origin, shs_format fmt,
			  shs_module **out, shs_err *e)
{
	int rc;

	*out = NULL;
	if (fmt == SHS_FORMAT_AUTO)
		fmt = sniff(data, len);
	if (fmt == SHS_FORMAT_PROTO)
		rc = shs_proto_load(data, len, origin, out, e);
	else
		rc = shs_text_load((const char *)data, len, origin, out, e);
	if (rc == SHS_OK)
		(*out)->source_format = fmt;
	return rc;
}

/* Writes data as the whole of path with shs_file_write: atomically for a regular file, in
 * place for a device. Errors read "PATH: cannot write: ..." or "PATH: write failed: ...". */
static int write_file(const char *path, const void *data, size_t len, shs_err *e)
{
	char why[SHS_FILE_WHY_MAX];
	int err = shs_file_write(path, data, len, why, sizeof(why));

	if (!err)
		return SHS_OK;
	return shs_seterr(e, err == ENOMEM ? SHS_ENOMEM : SHS_EIO, "%s: %s", path, why);
}

int shs_module_save_file(const shs_module *m, const char *path, shs_format fmt, shs_err *e)
{
	int rc;

	if (fmt == SHS_FORMAT_AUTO)
		fmt = shs_format_from_path(path);
	if (fmt == SHS_FORMAT_AUTO)
		return shs_seterr(e, SHS_EINVAL,
				  "%s: cannot tell the format from the extension (use .pb or .hlo)", path);
	if (fmt == SHS_FORMAT_PROTO) {
		uint8_t *bytes = NULL;
		size_t len = 0;

		rc = shs_proto_save(m, m->from_hlo_proto, &bytes, &len, e);
		if (rc == SHS_OK)
			rc = write_file(path, bytes, len, e);
		else
			shs_err_prefix(e, "%s", path);
		free(bytes);
	} else {
		shs_buf b = { 0 };

		shs_text_print(&b, m, NULL);
		if (b.oom)
			rc = shs_seterr(e, SHS_ENOMEM, "%s: out of memory printing the module", path);
		else
			rc = write_file(path, b.data ? b.data : "", b.len, e);
		shs_buf_free(&b);
	}
	return rc;
}
