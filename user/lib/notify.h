/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The service manager's readiness protocol (sd_notify(3)): one datagram of KEY=VALUE lines to
 * the AF_UNIX socket named by $NOTIFY_SOCKET, set by systemd for a Type=notify unit. systemd
 * documents the protocol as stable and meant to be spoken without libsystemd, which Debian
 * ships in a -dev package the build would otherwise need for these few lines (see
 * docs/install.md). With $NOTIFY_SOCKET unset every call is a no-op that succeeds.
 */
#ifndef SLUICE_NOTIFY_H
#define SLUICE_NOTIFY_H

#include <stdint.h>

/* Send one state change ("READY=1", "RELOADING=1\nMONOTONIC_USEC=...", "STOPPING=1",
 * "STATUS=..."). 0 when sent or when there is no manager to tell; -errno otherwise. */
int sl_notify(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The watchdog interval the manager asked for (WATCHDOG_USEC, for this process per
 * WATCHDOG_PID), in microseconds; 0 when there is none. */
uint64_t sl_notify_watchdog_usec(void);

#endif
