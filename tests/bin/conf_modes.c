// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * conf_modes: what the config parser makes of a file's modes, for tests/net/test_install.sh
 * (the installed sluice.conf must start everything in monitor mode). One line each:
 *
 *   class NAME MODE / tenant NAME MODE / detector NAME MODE / counter NAME MODE
 *
 * counters only when the file has a gateway (they act nowhere else). Exit 1, with the
 * parser's problems on stderr, if the file does not load.
 *
 * Usage: conf_modes FILE
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "config.h"

int main(int argc, char **argv)
{
	static struct sl_config c;
	char err[8192];
	int i;

	if (argc != 2) {
		fprintf(stderr, "usage: conf_modes FILE\n");
		return 2;
	}
	if (sl_config_load(argv[1], NULL, &c, err, sizeof(err))) {
		fputs(err, stderr);
		return 1;
	}
	for (i = 0; i < c.n_classes; i++)
		printf("class %s %s\n", c.classes[i].name, sl_mode_name(c.classes[i].mode));
	for (i = 0; i < c.n_tenants; i++)
		printf("tenant %s %s\n", c.tenants[i].name, sl_mode_name(c.tenants[i].mode));
	for (i = 0; i < SL_DET_N; i++)
		printf("detector %s %s\n", sl_detector_name(i), sl_mode_name(c.stream.det[i].mode));
	for (i = 0; c.gw.present && i < SL_CTR_N; i++)
		printf("counter %s %s\n", sl_counter_name(i), sl_mode_name(c.counter_mode[i]));
	return 0;
}
