// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The fuzzer's seeds as regression tests: every file of tests/fuzz/upcli_seeds (or
 * $UPCLI_SEEDS) run through tests/fuzz/fuzz_upcli.c's checks, which abort on a failure
 * (whole, split and bytewise parsing agree; a whole answer is within its bounds, clean, and
 * reads back the same as passed on). Built like the other unit tests, so under ASan and
 * UBSan too; `make fuzz-upcli` runs the fuzzer itself.
 */
#include "unit.h"

#include <dirent.h>

#include "../fuzz/fuzz_upcli.c"

static void seeds(void **state)
{
	const char *dir = getenv("UPCLI_SEEDS") ? getenv("UPCLI_SEEDS") : "tests/fuzz/upcli_seeds";
	static uint8_t buf[65536];
	struct dirent *e;
	DIR *d = opendir(dir);
	int n = 0;

	(void)state;
	if (!d)
		fail_msg("cannot open %s (run from the repository's top, or set UPCLI_SEEDS)", dir);
	while ((e = readdir(d))) {
		char path[512];
		size_t len;
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		f = fopen(path, "rb");
		assert_non_null(f);
		len = fread(buf, 1, sizeof(buf), f);
		fclose(f);
		fuzz_what = path;
		LLVMFuzzerTestOneInput(buf, len);
		n++;
	}
	closedir(d);
	print_message("%d seeds from %s\n", n, dir);
	assert_true(n >= 30); /* the seeds are there, not an empty directory */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(seeds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
