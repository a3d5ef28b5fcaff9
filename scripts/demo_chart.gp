# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The demo's chart, from scripts/demo_sample.py's CSV and scripts/demo.sh's phases.csv:
#   1. per tenant, offered load (requests reaching the gateway) against goodput (logins
#      answered 200 in time), and its reservation in logins/s at the measured cost;
#   2. per tenant, queue wait (admission to a worker): p99 and mean, log scale, and the pool's
#      hashes per second beside them (the right axis);
#   3. the edge: connections passed and shed per second by source class, and the SYNs it
#      answered with a cookie (charged nothing) on the right axis.
# Every panel shades and names the phases the demo ran.
#   gnuplot -e "csv='demo.csv'; phases='phases.csv'; out='sluice-demo.png'; \
#               tenants='acme globex initech umbrella'; classes='hosting residential ...'" \
#           scripts/demo_chart.gp
# Why every tenant's wait moves together (measured: docs/operations.md, "The demo's chart").
if (!exists("deadline_ms")) deadline_ms = 3000
if (!exists("note")) note = "Why the waits move together: the reserved\n" . \
	"lane is one queue, for every tenant's\n" . \
	"reserved work. On this shared machine the\n" . \
	"Argon2id workers get less CPU than the\n" . \
	"capacity the demo measured, so reserved\n" . \
	"work alone (acme's whole reservation and\n" . \
	"the others' logins) can outrun the pool\n" . \
	"when hashes/s (black) dip: the lane backs\n" . \
	"up for all alike. LIFO, switched on by\n" . \
	"acme's backlog, serves the newest first.\n" . \
	"Nothing waits past the " . sprintf("%.0f", deadline_ms / 1000.0) . " s deadline (dropped)."
set terminal pngcairo size 1600,1250 noenhanced font "sans,10" background rgb "white"
set output out
set datafile separator ","
set datafile columnheaders
set datafile missing ""

# The phases: start, end, name per line.
stats phases using 1 nooutput
np = STATS_records
array ps[np]
array pe[np]
array pn[np]
stats phases using (ps[int($0) + 1] = $1, pe[int($0) + 1] = $2, pn[int($0) + 1] = strcol(3), 0) nooutput
stats csv using 1 nooutput
tmax = STATS_max

shade(i) = (i % 2) ? "#eef2f8" : "#f8f4ec"
tcolor(i) = word("#7b2cbf #1b9e77 #2b83ba #e6a100 #d7301f #666666", (i - 1) % 6 + 1)
ccolor(i) = word("#d7301f #1b9e77 #2b83ba #7b2cbf #888888 #e6a100", (i - 1) % 6 + 1)
nt = words(tenants)
nc = words(classes)

# Shade and name the phases on the panel about to be plotted (objects and labels reset).
phase_marks = 'unset object; unset label; do for [i=1:np] { \
	set object i rect from ps[i], graph 0 to pe[i], graph 1 fc rgb shade(i) fs solid 1.0 noborder behind; \
	set label i pn[i] at (ps[i] + pe[i]) / 2.0, graph 0.98 center front font "sans,9" tc rgb "#444444" }'

set grid xtics ytics lc rgb "#dddddd"
# The key right of the right axis' labels, every panel at the same width.
set key at graph 1.09, graph 1 left top vertical Left reverse samplen 2 spacing 1.1 font "sans,9"
set lmargin at screen 0.07
set rmargin at screen 0.76
set xrange [0:tmax]
set multiplot layout 3,1 title "sluice demo: a Monday reset on acme, the Manila office on initech, floods at the edge" font "sans,12"

# 1. offered against goodput, and the reservation
@phase_marks
set ylabel "logins per second"
set yrange [0:*]
set xlabel ""
plot for [i=1:nt] csv using 1:(column("offered_".word(tenants, i))) with lines lw 1 dt 2 lc rgb tcolor(i) title word(tenants, i)." offered", \
     for [i=1:nt] csv using 1:(column("goodput_".word(tenants, i))) with lines lw 2.5 lc rgb tcolor(i) title word(tenants, i)." goodput", \
     for [i=1:nt] csv using 1:(column("resv_".word(tenants, i))) with lines lw 1 dt 3 lc rgb tcolor(i) title word(tenants, i)." reservation"

# 2. queue wait
@phase_marks
if (strlen(note) > 0) set label np + 1 note at graph 1.09, graph 0.5 left front font "sans,8.5" tc rgb "#222222"
set ylabel "queue wait (ms, log)"
set y2label "hashes per second"
set y2tics
set y2range [0:*]
set logscale y
set yrange [0.1:*]
plot for [i=1:nt] csv using 1:(v = column("wait_p99_".word(tenants, i)), v > 0 ? v : NaN) with linespoints lw 2 pt 7 ps 0.4 lc rgb tcolor(i) title word(tenants, i)." p99", \
     for [i=1:nt] csv using 1:(v = column("wait_mean_".word(tenants, i)), v > 0 ? v : NaN) with lines lw 1 dt 2 lc rgb tcolor(i) title word(tenants, i)." mean", \
     csv using 1:"hashes" axes x1y2 with lines lw 1.5 lc rgb "#000000" title "hashes/s, all tenants (right)"
unset logscale y

# 3. the edge
@phase_marks
set ylabel "connections per second"
set y2label "SYNs per second"
set y2tics
set yrange [0:*]
set y2range [0:*]
set xlabel "seconds since the demo began"
plot for [i=1:nc] csv using 1:(column("edge_pass_".word(classes, i))) with lines lw 2 lc rgb ccolor(i) title word(classes, i)." passed", \
     for [i=1:nc] csv using 1:(column("edge_shed_".word(classes, i))) with lines lw 1.5 dt 2 lc rgb ccolor(i) title word(classes, i)." shed", \
     csv using 1:"edge_syn" axes x1y2 with lines lw 1 lc rgb "#999999" title "SYNs cookie-answered (uncharged)"
unset multiplot
