# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The demo's chart: goodput, shed rate and queue wait p99 per tenant over time.
# gnuplot -e "csv='...'; out='...'; n=4" scripts/demo_chart.gp
set terminal svg size 1100,900 dynamic noenhanced font "sans,11" background rgb "white"
set output out
set datafile separator ","
set key outside right top autotitle columnheader
set grid
set lmargin 10
set rmargin 22
set xrange [0:*]
set multiplot layout 3,1 title "sluice demo: a Monday forced reset on one tenant, then a Manila morning"
set xlabel ""
set ylabel "goodput (logins/s in time)"
plot for [i=3:2+n] csv using 1:i with lines lw 2
set ylabel "shed (429/s)"
plot for [i=3+n:2+2*n] csv using 1:i with lines lw 2
set ylabel "queue wait p99 (ms)"
set xlabel "seconds"
plot for [i=3+2*n:2+3*n] csv using 1:i with lines lw 2
unset multiplot
