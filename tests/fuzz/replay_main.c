/*
 * Replay driver for fuzz targets without libFuzzer (what CI runs): every
 * file of the corpus directory argv[1] goes through LLVMFuzzerTestOneInput,
 * then REPLAY_MUTATIONS pseudo-random mutations of them, from a fixed seed
 * (printed; argv[2] overrides it, argv[3] the count) so a failure replays
 * exactly.  A crash or abort in the target fails the test; otherwise the
 * driver exits 0.  Files are read in name order for determinism.
 */
#include <dirent.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define REPLAY_SEED	 UINT64_C(0x5eed5a17c0ffee01)
#define REPLAY_MUTATIONS 20000
#define REPLAY_FILE_MAX	 (1u << 20)
#define REPLAY_GROW	 256

struct input {
	uint8_t *p;
	size_t n;
};

static uint64_t next(uint64_t *s)
{
	/* splitmix64: tiny and good enough to pick mutations. */
	uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

static int load(const char *dir, const char *name, struct input *in)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "rb");
	if (!f)
		return -1;
	in->p = malloc(REPLAY_FILE_MAX);
	if (!in->p) {
		fclose(f);
		return -1;
	}
	in->n = fread(in->p, 1, REPLAY_FILE_MAX, f);
	fclose(f);
	return 0;
}

static int load_corpus(const char *dir, struct input **out, int *count)
{
	struct dirent **ents;
	struct input *in;
	int n = scandir(dir, &ents, NULL, alphasort), k = 0;

	if (n < 0) {
		perror(dir);
		return -1;
	}
	in = calloc((size_t)n + 1, sizeof(*in));
	for (int i = 0; i < n; i++) {
		if (in && ents[i]->d_name[0] != '.' &&
		    !load(dir, ents[i]->d_name, &in[k]))
			k++;
		free(ents[i]);
	}
	free(ents);
	if (!in || k == 0) {
		fprintf(stderr, "replay: no inputs in %s\n", dir);
		free(in);
		return -1;
	}
	*out = in;
	*count = k;
	return 0;
}

/* One random edit of buf (length *n, capacity cap). */
static void mutate_once(uint8_t *buf, size_t *n, size_t cap, uint64_t *s,
			const struct input *other)
{
	static const uint8_t special[] = { 0, 1, 0x7f, 0x80, 0xfe, 0xff };
	size_t pos = *n ? next(s) % *n : 0;

	switch (next(s) % 7) {
	case 0: /* flip a bit */
		if (*n)
			buf[pos] ^= (uint8_t)(1u << (next(s) % 8));
		break;
	case 1: /* random byte */
		if (*n)
			buf[pos] = (uint8_t)next(s);
		break;
	case 2: /* boundary byte */
		if (*n)
			buf[pos] = special[next(s) % sizeof(special)];
		break;
	case 3: /* insert a byte */
		if (*n < cap) {
			memmove(buf + pos + 1, buf + pos, *n - pos);
			buf[pos] = (uint8_t)next(s);
			(*n)++;
		}
		break;
	case 4: /* delete a byte */
		if (*n) {
			memmove(buf + pos, buf + pos + 1, *n - pos - 1);
			(*n)--;
		}
		break;
	case 5: /* truncate */
		*n = pos;
		break;
	default: /* splice the tail of another input */
		if (other->n) {
			size_t from = next(s) % other->n;
			size_t len = other->n - from;

			if (len > cap - pos)
				len = cap - pos;
			memcpy(buf + pos, other->p + from, len);
			*n = pos + len;
		}
		break;
	}
}

int main(int argc, char **argv)
{
	uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 0) : REPLAY_SEED;
	long count = argc > 3 ? strtol(argv[3], NULL, 0) : REPLAY_MUTATIONS;
	struct input *in;
	uint8_t *buf;
	int n;

	if (argc < 2) {
		fprintf(stderr, "usage: %s CORPUS_DIR [SEED [COUNT]]\n",
			argv[0]);
		return 2;
	}
	if (load_corpus(argv[1], &in, &n))
		return 1;
	for (int i = 0; i < n; i++)
		LLVMFuzzerTestOneInput(in[i].p, in[i].n);
	printf("replay: %d corpus inputs; seed 0x%016" PRIx64
	       ", %ld mutations\n",
	       n, seed, count);
	fflush(stdout);
	buf = malloc(REPLAY_FILE_MAX + REPLAY_GROW);
	if (!buf)
		return 1;
	for (long m = 0; m < count; m++) {
		const struct input *src = &in[next(&seed) % (uint64_t)n];
		size_t len = src->n, cap = src->n + REPLAY_GROW;
		int edits = 1 + (int)(next(&seed) % 4);

		memcpy(buf, src->p, len);
		for (int e = 0; e < edits; e++)
			mutate_once(buf, &len, cap, &seed,
				    &in[next(&seed) % (uint64_t)n]);
		LLVMFuzzerTestOneInput(buf, len);
	}
	printf("replay: done\n");
	for (int i = 0; i < n; i++)
		free(in[i].p);
	free(in);
	free(buf);
	return 0;
}
